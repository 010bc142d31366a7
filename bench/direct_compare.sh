#!/usr/bin/env bash
# Direct-mode hits side by side, in one run: the 2000-block text module and the smallest corpus
# module served through their manifests, the 2000-block module served by the canonical path
# (--no-direct), and `cp` of the same artefact (a process start plus the copy), with and
# without an fsync of the copy (a hit fsyncs its output).
#
#   bash bench/direct_compare.sh [RUNS] [ARTEFACT_MIB]     (default 21 runs, 16 MiB)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-21}
mib=${2:-16}
cargo build --release --locked --bins >/dev/null 2>&1 || cargo build --release --locked --bins >/dev/null
exec python3 bench/direct_compare.py "$runs" "$mib" "${CARGO_TARGET_DIR:-target}/release/mlir-cache-key"
