#!/usr/bin/env bash
# Creates (idempotently) the Python test venv at target/py-venv with the JAX
# version the integration pins (CPU wheels), pytest (with xdist), maturin and filelock;
# prints the venv's path. A second run installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="$PWD/target/py-venv"
requirements=(jax==0.12.0.1 jaxlib==0.12.0.1 pytest pytest-xdist maturin filelock)
stamp="$venv/.mck-requirements"

# jax 0.12 needs Python >= 3.12 (the extension itself is abi3 for >= 3.10).
# Under pyenv with no version selected, `python3.12` is a shim that fails:
# then pick the installed 3.12 or 3.13 explicitly.
find_python() {
  local candidate
  for candidate in python3.12 python3.13 python3; do
    if command -v "$candidate" >/dev/null &&
      "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      command -v "$candidate"
      return
    fi
  done
  if command -v pyenv >/dev/null; then
    local version
    version=$(pyenv versions --bare | grep -E '^3\.1[23]\.[0-9]+$' | sort -V | head -n1 || true)
    if [ -n "$version" ]; then
      echo "$(pyenv root)/versions/$version/bin/python3"
      return
    fi
  fi
  echo "python-venv: no Python >= 3.12 found (jax 0.12 needs it)" >&2
  exit 1
}

if [ ! -x "$venv/bin/python" ]; then
  python=$(find_python)
  echo "python-venv: creating $venv with $("$python" --version)" >&2
  "$python" -m venv "$venv"
fi

if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "${requirements[*]}" ]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${requirements[@]}" >&2
  echo "${requirements[*]}" >"$stamp"
fi

echo "$venv"
