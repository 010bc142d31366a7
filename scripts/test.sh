#!/usr/bin/env bash
# Runs every test: formatting and lints, the cargo tests (unit, integration,
# real processes), and the lit + FileCheck suite over the mlir-opt plugin.
# Installs missing Debian packages first (needs root; see scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

cargo fmt --check
cargo clippy --locked --all-targets -- -D warnings
cargo build --locked
cargo test --locked
