#!/usr/bin/env bash
# The fuzz campaign of BENCHMARKS.md: byte mutations of real corpus bytecode
# through `mlir-cache-key key` (tests/fuzz_key.rs, 2 jobs); it fails on any
# crash (signal, abort, panic) or hang. Mutants that crashed or hung MLIR's
# reader in its child process, and any failure, are saved for study.
#
#   bash scripts/fuzz-key.sh [MUTATIONS (100000)] [SEED (1)]
set -euo pipefail
cd "$(dirname "$0")/.."
export MCK_FUZZ_MUTATIONS="${1:-100000}" MCK_FUZZ_SEED="${2:-1}"
export MCK_FUZZ_OUT="${MCK_FUZZ_OUT:-${CARGO_TARGET_DIR:-target}/fuzz-key}"
cargo test --locked -p mlir-cache-key --test tests fuzz_key:: -- --nocapture
