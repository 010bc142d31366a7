#!/usr/bin/env bash
# The main job on a real module from the corpus: install what is missing,
# build, then canonicalise, key and cache a JAX-lowered TPU module with a
# Pallas kernel. Installs Debian packages as root (see scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
cargo build --release --locked

bin=target/release/mlir-cache-key
module=tests/data/corpus/tpu/tpu_pallas_add.nounzip.a.generic.mlir
other=tests/data/corpus/tpu/tpu_pallas_add.nounzip.b.generic.mlir

echo "== kernels embedded in $module"
"$bin" kernels "$module"
echo "== canonical digest of $module and of its relocated twin"
"$bin" canon --digest "$module"
"$bin" canon --digest "$other"
