#!/usr/bin/env bash
# A direct hit on the 2000-block module as 34 MB of text against one on the smallest corpus
# module (a tiny artefact, so only the lookup differs), before and after, interleaved in one
# run: BEFORE and AFTER are directories holding both binaries of a release build each
# (mlir-cache-key and mlir-cache-key-mlir), e.g. of main and of this branch.
#
#   bash bench/direct_sizes.sh BEFORE_DIR AFTER_DIR [RUNS]     (default 15 runs; BEFORE_DIR - : none)
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 bench/direct_sizes.py "${3:-15}" "$1/mlir-cache-key" "$2/mlir-cache-key"
