#!/usr/bin/env bash
# Creates (idempotently) one Python venv per tested JAX release under
# target/py-matrix/<release>, all from one wheel directory (target/py-wheels,
# downloaded once), and builds the manylinux wheel once (scripts/build-wheels.sh)
# and installs it into each. Prints "<release> <venv>" per line.
#   scripts/python-matrix.sh              # every release of the matrix
#   scripts/python-matrix.sh 0.10.2       # only these
#   scripts/python-matrix.sh --venvs [R…] # the venvs with JAX and pytest, without our wheel
#                                         # (test.sh makes them while the Rust builds run)
#   scripts/python-matrix.sh --pip-check  # `pip install ./python` into a fresh Python 3.11
#                                         # venv with jax 0.10.2; jax.jit must hit our cache
#   scripts/python-matrix.sh --wheel-check  # the same with target/wheels' manylinux_2_28 wheel
#                                         # (scripts/build-wheels.sh), no Rust on PATH, on Python
#                                         # 3.11 (jax 0.10.2) and 3.12 (jax 0.12.0.1); its
#                                         # mlir-cache-key must be native
set -euo pipefail
cd "$(dirname "$0")/.."

# The last patch of each minor line; jax ≥ 0.11 needs Python ≥ 3.12, and 0.10.2
# is the newest JAX pip offers on Python 3.11.
# 0.8.0 and 0.8.1 (their own key recipe) are made only on request, to generate their
# parity vectors; the cargo tests check those without JAX.
declare -A PYTHON_OF=([0.8.0]=3.11 [0.8.1]=3.11 [0.8.3]=3.11 [0.9.2]=3.11 [0.10.2]=3.11
  [0.11.2]=3.12 [0.12.0.1]=3.12)
MATRIX=(0.8.3 0.9.2 0.10.2 0.11.2 0.12.0.1)
venvs_only=false
if [ "${1:-}" = "--venvs" ]; then venvs_only=true; shift; fi
releases=("$@")
[ ${#releases[@]} -gt 0 ] || releases=("${MATRIX[@]}")

wheels="$PWD/target/py-wheels"
mkdir -p "$wheels" target/py-matrix

find_python() { # minor version, e.g. 3.11
  local candidate
  for candidate in "python$1" "$(pyenv root 2>/dev/null)/versions/$1."*/bin/python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c "import sys; sys.exit(f'{sys.version_info[0]}.{sys.version_info[1]}' != '$1')" 2>/dev/null; then
      command -v "$candidate"
      return
    fi
  done
  echo "python-matrix: no Python $1 found" >&2
  exit 1
}

pip_quiet=(--quiet --disable-pip-version-check)

# Installs the package into a fresh venv of Python $1 with jax $2 from $3 (./python: built from
# source as `pip install ./python` does; or a wheel file: installed with no Rust on PATH), then
# jax.jit must miss in one process and hit in the next, and the venv's `mlir-cache-key cache
# stats --json` must count those hits. From a wheel that command must be the native program,
# the only mlir-cache-key in bin/, printing what `python -m mlir_cache_key` prints.
check_install() {
  local python=$1 jax=$2 source=$3 fresh
  fresh=$(mktemp -d)
  "$(find_python "$python")" -m venv "$fresh/venv"
  "$fresh/venv/bin/pip" download "${pip_quiet[@]}" -d "$wheels" "jax==$jax" "jaxlib==$jax" maturin >&2
  "$fresh/venv/bin/pip" install "${pip_quiet[@]}" --no-index --find-links "$wheels" \
    "jax==$jax" "jaxlib==$jax" >&2
  local path=$PATH
  if [ "$source" != ./python ]; then
    # What a user without Rust has: no cargo, no rustc, nothing of ~/.cargo.
    path=$(tr ':' '\n' <<<"$PATH" | grep -v '\.cargo' | paste -sd:)
    if PATH=$path command -v cargo >/dev/null || PATH=$path command -v rustc >/dev/null; then
      echo "python-matrix: cargo or rustc is still on PATH without ~/.cargo" >&2; exit 1
    fi
  fi
  PATH=$path "$fresh/venv/bin/pip" install "${pip_quiet[@]}" --find-links "$wheels" "$source" >&2
  for run in first second; do
    PATH=$path JAX_PLATFORMS=cpu "$fresh/venv/bin/python" - "$fresh/cache" "$run" <<'PY'
import sys
import jax, jax.numpy as jnp
from jax._src import monitoring
import mlir_cache_key.jax as mj
events = []
monitoring.register_event_listener(lambda event, **kw: events.append(event))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
mj.install(sys.argv[1])
jax.jit(lambda x: jnp.sin(x) * 2)(jnp.arange(8.0)).block_until_ready()
hits = events.count("/jax/compilation_cache/cache_hits")
misses = events.count("/jax/compilation_cache/cache_misses")
# The first process compiles (the program and its input's iota); the second only hits.
ok = (hits == 0 < misses) if sys.argv[2] == "first" else (misses == 0 < hits)
assert ok, f"{sys.argv[2]} run: {hits} hits, {misses} misses"
assert mj.installed().stats()["hits" if hits else "puts"] >= 1
print(f"install-check: jax {jax.__version__}, {sys.argv[2]} run: {hits} hit(s), {misses} miss(es)")
PY
  done
  PATH=$path "$fresh/venv/bin/mlir-cache-key" cache stats --json --cache-dir "$fresh/cache" |
    "$fresh/venv/bin/python" -c '
import json, sys
stats = json.load(sys.stdin)
assert stats["hits"] >= 1 and stats["entries"] >= 1, stats
print("install-check: mlir-cache-key of the venv, cache stats:", stats["hits"], "hit(s),",
      stats["entries"], "entries")'
  if [ "$source" != ./python ]; then
    # The wheel's mlir-cache-key is the native program (no Python start-up), the only one in
    # bin/, and says what `python -m mlir_cache_key` (the extension module) says.
    local command=$fresh/venv/bin/mlir-cache-key
    [ "$(head -c4 "$command" | od -An -c | tr -d ' ')" = '177ELF' ] || {
      echo "python-matrix: $command is not an ELF program: $(file -b "$command")" >&2; exit 1; }
    [ "$(ls "$fresh/venv/bin" | grep -c '^mlir-cache-key')" = 1 ] || {
      echo "python-matrix: more than one mlir-cache-key in bin/: $(ls "$fresh/venv/bin")" >&2; exit 1; }
    local args native_says python_says
    for args in "--version" "cache stats --json --cache-dir $fresh/cache"; do
      # shellcheck disable=SC2086 # the words of $args
      native_says=$(PATH=$path "$command" $args)
      # shellcheck disable=SC2086
      python_says=$(PATH=$path "$fresh/venv/bin/python" -m mlir_cache_key $args)
      [ -n "$native_says" ] && [ "$native_says" = "$python_says" ] || {
        echo "python-matrix: mlir-cache-key $args and python -m mlir_cache_key $args differ:" >&2
        diff <(echo "$native_says") <(echo "$python_says") >&2
        exit 1
      }
    done
    echo "install-check: the venv's mlir-cache-key is native; --version and cache stats --json" \
      "agree with python -m mlir_cache_key"
  fi
  rm -rf "$fresh"
}

if [ "${1:-}" = "--pip-check" ]; then
  check_install 3.11 0.10.2 ./python
  exit 0
fi

# The wheel of scripts/build-wheels.sh, installed where there is no Rust, on both Pythons.
if [ "${1:-}" = "--wheel-check" ]; then
  wheel=$(ls target/wheels/mlir_cache_key-*-abi3-manylinux_2_28_x86_64.whl)
  check_install 3.11 0.10.2 "$wheel"
  check_install 3.12 0.12.0.1 "$wheel"
  exit 0
fi

# JAX, its jaxlib and pytest: downloaded once into the shared directory, then installed
# offline from it; a second run installs nothing.
for release in "${releases[@]}"; do
  minor=${PYTHON_OF[$release]:-}
  [ -n "$minor" ] || { echo "python-matrix: $release is not known (${!PYTHON_OF[*]})" >&2; exit 1; }
  venv="$PWD/target/py-matrix/$release"
  requirements=("jax==$release" "jaxlib==$release" pytest pytest-xdist filelock)
  stamp="$venv/.mck-requirements"
  if [ ! -x "$venv/bin/python" ]; then
    "$(find_python "$minor")" -m venv "$venv"
  fi
  if [ "$(cat "$stamp" 2>/dev/null)" != "${requirements[*]}" ]; then
    rm -f "$venv/.mck-extension"
    "$venv/bin/pip" download "${pip_quiet[@]}" -d "$wheels" "${requirements[@]}" >&2
    "$venv/bin/pip" install "${pip_quiet[@]}" --no-index --find-links "$wheels" "${requirements[@]}" >&2
    echo "${requirements[*]}" >"$stamp"
  fi
done
$venvs_only && exit 0

# The wheel pip users get (scripts/build-wheels.sh: manylinux_2_28, abi3, its native
# mlir-cache-key) is the one every venv tests; built once per state of its sources.
# Everything it is built from (the extension links the MLIR-free crates: their sources,
# data included by them, manifests and the workspace they inherit from), and nothing else: a
# changed crate test must not rebuild the release wheel and reinstall it in every venv.
sources_stamp=$(find Cargo.toml Cargo.lock python/Cargo.toml python/Cargo.lock python/pyproject.toml \
  python/src python/mlir_cache_key scripts/build-wheels.sh crates -path '*/target' -prune \
  -o -name __pycache__ -prune -o -type f \( -path 'crates/*/src/*' -o -path 'crates/*/Cargo.toml' \
  -o -path 'crates/*/build.rs' -o ! -path 'crates/*' \) -print | sort | xargs cat | sha256sum | cut -c1-16)
extension=$(ls target/wheels/mlir_cache_key-*-abi3-manylinux_2_28_x86_64.whl 2>/dev/null | head -n1 || true)
if [ -z "$extension" ] || [ "$(cat target/wheels/.sources-stamp 2>/dev/null)" != "$sources_stamp" ]; then
  bash scripts/build-wheels.sh >&2
  echo "$sources_stamp" >target/wheels/.sources-stamp
  extension=$(ls target/wheels/mlir_cache_key-*-abi3-manylinux_2_28_x86_64.whl)
fi
extension=$PWD/$extension

for release in "${releases[@]}"; do
  venv="$PWD/target/py-matrix/$release"
  if [ "$(cat "$venv/.mck-extension" 2>/dev/null)" != "$sources_stamp" ]; then
    "$venv/bin/pip" install "${pip_quiet[@]}" --no-deps --force-reinstall "$extension" >&2
    echo "$sources_stamp" >"$venv/.mck-extension"
  fi
  echo "$release $venv"
done
