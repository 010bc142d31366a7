#!/usr/bin/env bash
# The main job on a real module from the corpus: install what is missing
# (Debian packages, as root), build, then key and cache a JAX-lowered TPU
# module that embeds a Pallas kernel.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
cargo build --release --locked

bin=target/release/mlir-cache-key
a=tests/data/corpus/tpu/tpu_pallas_add.nounzip.a.generic.mlir
b=tests/data/corpus/tpu/tpu_pallas_add.nounzip.b.generic.mlir   # same code, other source locations
cache=target/example-cache
out=target/example-out
rm -rf "$cache" "$out" && mkdir -p "$out"

step() { printf '\n== %s\n' "$*"; }

step "kernels embedded in $a"
"$bin" kernels "$a"

step "JAX-compatible key, with JAX's trace (stderr)"
"$bin" key "$a" --compiler-version 0.12.0.1 --platform tpu --platform-version "TPU v5 lite" \
  --device-kind "TPU v5 lite" --explain
step "the relocated twin gets the same key"
"$bin" key "$b" --compiler-version 0.12.0.1 --platform tpu --platform-version "TPU v5 lite" \
  --device-kind "TPU v5 lite"

# The "compiler" here is mlir-opt writing bytecode; any compiler works the same way.
compile() {
  "$bin" --log-level info exec --cache-dir "$cache" --input "$1" --output "$2" -- \
    /usr/lib/llvm-22/bin/mlir-opt --allow-unregistered-dialect --emit-bytecode "$1" -o "$2"
}
step "first compilation: a miss, the compiler runs and its output is stored"
compile "$a" "$out/a.mlirbc"
step "the twin, from another path: a hit, the compiler does not run"
compile "$b" "$out/b.mlirbc"
cmp "$out/a.mlirbc" "$out/b.mlirbc" && echo "identical artefacts"
step "the first file again: a direct hit (its bytes are known: no parse, MLIR not even loaded)"
compile "$a" "$out/a2.mlirbc"
cmp "$out/a.mlirbc" "$out/a2.mlirbc" && echo "identical artefacts"

step "cache contents"
"$bin" cache list --cache-dir "$cache"
"$bin" cache stats --cache-dir "$cache"
step "why it compiled, and what the hits saved (--html FILE for a page with plots)"
"$bin" report --cache-dir "$cache" --since 1h --html "$out/report.html"
echo "the same as one page: $out/report.html"
