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

# lit + FileCheck over the plugin and the CLI (uses target/debug).
/usr/lib/llvm-22/bin/lit -sv lit-tests

# The C++ shim built by CMake against the installed MLIR, and its smoke test.
cmake -S cmake -B target/cmake -G Ninja -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir >/dev/null
cmake --build target/cmake
ctest --test-dir target/cmake --output-on-failure
