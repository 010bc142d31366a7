#!/usr/bin/env bash
# Proof that every lit test rejects wrong output: each test's `// MUTANT:`
# lines name wrong outputs (the same digest twice, unstripped output, an
# option ignored, an error that exits 0, ...); lit-tests/mutants/run.py feeds
# each one to its test through a mutant mlir-opt / mlir-cache-key and fails
# unless the test FAILS on it (and passes through identity wrappers).
#
# Usage: scripts/lit-mutants.sh [BUILD_DIR] [TEST...]
#   BUILD_DIR: where mlir-cache-key and libmlir_cache_key.so are
#              [default: target/debug]; TESTs are paths under lit-tests/.
# Needs only the build and /usr/lib/llvm-22/bin (lit, FileCheck, mlir-opt).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-target/debug}
shift || true
exec python3 lit-tests/mutants/run.py --build "$build" --llvm-bin /usr/lib/llvm-22/bin "$@"
