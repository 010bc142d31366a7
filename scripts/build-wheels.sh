#!/usr/bin/env bash
# The Python package as files pip installs with no Rust and no LLVM: the abi3 wheel (one for
# every CPython >= 3.10) for manylinux_2_28 — glibc 2.28 and newer: RHEL/Rocky 8, Ubuntu 20.04,
# Debian 11 — linked by maturin with zig (PyPI's ziglang) against that glibc, and the sdist.
# `auditwheel show` must name a platform tag no newer than manylinux_2_28.
#
#   bash scripts/build-wheels.sh        → target/wheels/mlir_cache_key-VERSION-….whl and .tar.gz
#
# The wheel's `mlir-cache-key` command is native, not Python's console-script wrapper (whose
# interpreter start-up alone is twice the 10 ms a `cache stats` may take): mck-cli's MLIR-free
# program (mlir-cache-key-without-mlir), linked by cargo-zigbuild against glibc 2.28 (no symbol
# version newer may be needed), goes in as `mlir_cache_key-VERSION.data/scripts/mlir-cache-key`,
# which pip installs into the venv's bin/, executable. The entry point of the same name that
# pyproject.toml declares (for `pip install ./python` and the sdist, which build no program) is
# taken out of the wheel's entry_points.txt. maturin makes the wheel; PyPI's `wheel unpack` and
# `wheel pack` add the one and drop the other, and `wheel pack` rewrites RECORD.
#
# The version is the workspace's (Cargo.toml); python/Cargo.toml and python/pyproject.toml must
# say the same, and the script stops if they do not. The tools live in their own venv,
# target/wheel-tools, made once (and topped up when the list below changes).
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "build-wheels.sh: $*" >&2; exit 1; }

newest_allowed=28 # manylinux_2_28
tools=$PWD/target/wheel-tools
out=$PWD/target/wheels

tool_versions=("maturin==1.16.0" "ziglang==0.17.1" "auditwheel==6.8.2" "cargo-zigbuild==0.24.0"
  "wheel==0.48.0")
if [ "$(cat "$tools/.versions" 2>/dev/null)" != "${tool_versions[*]}" ]; then
  [ -x "$tools/bin/python3" ] || python3 -m venv "$tools"
  "$tools/bin/pip" install --quiet --disable-pip-version-check "${tool_versions[@]}"
  echo "${tool_versions[*]}" >"$tools/.versions"
fi

workspace_version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)
[ -n "$workspace_version" ] || die "no [workspace.package] version in Cargo.toml"
for file in python/Cargo.toml python/pyproject.toml; do
  grep -q "^version = \"$workspace_version\"" "$file" ||
    die "$file does not say version = \"$workspace_version\" (the workspace's)"
done

rm -rf "$out"
mkdir -p "$out"
# maturin and cargo-zigbuild run zig through the Python on PATH (`python3 -m ziglang`): the tools'.
export PATH="$tools/bin:$PATH"
(cd python && "$tools/bin/maturin" build --release --locked --zig \
  --compatibility "manylinux_2_$newest_allowed" --out "$out")
(cd python && "$tools/bin/maturin" sdist --out "$out")
wheel=$(ls "$out"/mlir_cache_key-"$workspace_version"-*.whl)

# The native command, linked against glibc 2.28; objdump -T lists the symbol versions it needs.
"$tools/bin/cargo-zigbuild" zigbuild --release --locked -p mck-cli \
  --bin mlir-cache-key-without-mlir --target "x86_64-unknown-linux-gnu.2.$newest_allowed"
native=$PWD/target/x86_64-unknown-linux-gnu/release/mlir-cache-key-without-mlir
[ "$(head -c4 "$native" | od -An -c | tr -d ' ')" = '177ELF' ] || die "$native is not an ELF program"
glibc_needed=$(objdump -T "$native" | grep -o 'GLIBC_2\.[0-9][0-9.]*' | sort -uV | tail -n1)
[ -n "$glibc_needed" ] || die "objdump -T found no GLIBC symbol version in $native"
glibc_minor=$(sed 's/GLIBC_2\.\([0-9]*\).*/\1/' <<<"$glibc_needed")
[ "$glibc_minor" -le "$newest_allowed" ] ||
  die "$native needs $glibc_needed, newer than glibc 2.$newest_allowed:" \
    "$(objdump -T "$native" | grep -F "$glibc_needed" | head -n5)"
native_says=$("$native" --version)
[[ "$native_says" == "mlir-cache-key $workspace_version "* ]] ||
  die "$native --version says \"$native_says\", not version $workspace_version"

# Into the wheel as a script, and out of it the entry point of the same name.
unpacked=$(mktemp -d)
trap 'rm -rf "$unpacked"' EXIT
"$tools/bin/wheel" unpack --dest "$unpacked" "$wheel" >/dev/null
root=$unpacked/mlir_cache_key-$workspace_version
install -D -m 755 "$native" "$root/mlir_cache_key-$workspace_version.data/scripts/mlir-cache-key"
entry_points=$root/mlir_cache_key-$workspace_version.dist-info/entry_points.txt
grep -q '^mlir-cache-key *=' "$entry_points" ||
  die "the wheel's entry_points.txt has no mlir-cache-key: $(cat "$entry_points")"
sed -i '/^mlir-cache-key *=/d' "$entry_points"
# A [console_scripts] header with no entry under it says nothing: then the file goes.
grep -q '=' "$entry_points" || rm "$entry_points"
rm "$wheel"
# maturin dates every member 1980-01-01; so does `wheel pack` with this.
SOURCE_DATE_EPOCH=315532800 "$tools/bin/wheel" pack --dest-dir "$out" "$root" >/dev/null
[ -f "$wheel" ] || die "wheel pack did not make $(basename "$wheel"): $(ls "$out")"

# RECORD names every member with its hash and size, the script is an executable ELF file, and
# no entry point named mlir-cache-key is left.
"$tools/bin/python3" - "$wheel" <<'PY'
import base64, csv, hashlib, io, sys, zipfile
wheel = zipfile.ZipFile(sys.argv[1])
names = wheel.namelist()
record = next(n for n in names if n.endswith(".dist-info/RECORD"))
rows = {row[0]: row[1:] for row in csv.reader(io.StringIO(wheel.read(record).decode())) if row}
assert sorted(rows) == sorted(names), f"RECORD and the wheel differ: {set(rows) ^ set(names)}"
for name in names:
    if name != record:
        data = wheel.read(name)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert rows[name] == [f"sha256={digest}", str(len(data))], f"RECORD is wrong for {name}"
script = wheel.getinfo(next(n for n in names if n.endswith(".data/scripts/mlir-cache-key")))
assert (script.external_attr >> 16) & 0o111, f"{script.filename} is not executable"
assert wheel.read(script.filename)[:4] == b"\x7fELF", f"{script.filename} is not an ELF file"
for name in names:
    if name.endswith(".dist-info/entry_points.txt"):
        assert "mlir-cache-key" not in wheel.read(name).decode(), f"{name} still names it"
PY

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
echo "build-wheels.sh: $(basename "$wheel") ($tag per auditwheel; its mlir-cache-key native," \
  "needing $glibc_needed at most) and the sdist in $out" >&2
