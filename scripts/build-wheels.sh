#!/usr/bin/env bash
# The Python package as files pip installs with no Rust and no LLVM: the abi3 wheel (one for
# every CPython >= 3.10) for manylinux_2_28 — glibc 2.28 and newer: RHEL/Rocky 8, Ubuntu 20.04,
# Debian 11 — linked by maturin with zig (PyPI's ziglang) against that glibc, and the sdist.
# `auditwheel show` must name a platform tag no newer than manylinux_2_28.
#
#   bash scripts/build-wheels.sh        → target/wheels/mlir_cache_key-VERSION-….whl and .tar.gz
#
# The version is the workspace's (Cargo.toml); python/Cargo.toml and python/pyproject.toml must
# say the same, and the script stops if they do not. The tools live in their own venv,
# target/wheel-tools, made once.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "build-wheels.sh: $*" >&2; exit 1; }

newest_allowed=28 # manylinux_2_28
tools=$PWD/target/wheel-tools
out=$PWD/target/wheels

if [ ! -x "$tools/bin/auditwheel" ]; then
  python3 -m venv "$tools"
  "$tools/bin/pip" install --quiet --disable-pip-version-check \
    "maturin==1.16.0" "ziglang==0.17.1" "auditwheel==6.8.2"
fi

workspace_version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
[ -n "$workspace_version" ] || die "no [workspace.package] version in Cargo.toml"
for file in python/Cargo.toml python/pyproject.toml; do
  grep -q "^version = \"$workspace_version\"" "$file" ||
    die "$file does not say version = \"$workspace_version\" (the workspace's)"
done

rm -rf "$out"
mkdir -p "$out"
# maturin runs zig through the Python on PATH (`python3 -m ziglang`): the tools' own.
export PATH="$tools/bin:$PATH"
(cd python && "$tools/bin/maturin" build --release --locked --zig \
  --compatibility "manylinux_2_$newest_allowed" --out "$out")
(cd python && "$tools/bin/maturin" sdist --out "$out")

wheel=$(ls "$out"/mlir_cache_key-"$workspace_version"-*.whl)
"$tools/bin/auditwheel" show "$wheel" | tee "$out/auditwheel.txt"
tag=$(grep -o 'manylinux_2_[0-9]*_x86_64' "$out/auditwheel.txt" | head -n1)
[ -n "$tag" ] || die "auditwheel named no manylinux tag for $wheel"
minor=$(sed 's/manylinux_2_\([0-9]*\)_.*/\1/' <<<"$tag")
[ "$minor" -le "$newest_allowed" ] ||
  die "$wheel needs $tag, newer than manylinux_2_$newest_allowed"
case "$wheel" in
  *manylinux_2_"$newest_allowed"*) ;;
  *) die "$wheel is not tagged manylinux_2_$newest_allowed" ;;
esac
ls -l "$out"
echo "build-wheels.sh: $(basename "$wheel") ($tag per auditwheel) and the sdist in $out" >&2
