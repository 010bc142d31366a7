#!/usr/bin/env bash
# Installs every Debian package the build and the tests need, skipping what is present.
# Runs as root (apt-get); idempotent: a second run installs nothing.
set -euo pipefail

packages=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libclang1-22 libclang-common-22-dev libpolly-22-dev libzstd-dev
  cmake ninja-build python3
  redis-server  # the remote-tier tests run a real Redis (brings redis-cli)
  strace  # tests/cli_no_fsync.rs and python/tests/test_hit_cost.py: a hit makes no fsync
  iproute2  # tests/cli_netns.rs: hosts as network namespaces (ip netns, veth, a bridge, tc tbf)
  openssl  # tests/cli_remote_tls.rs: a CA, server and client certificates made at test time
  stunnel4  # tests/cli_remote_tls.rs: TLS in front of Garage (s3:// over HTTPS with a private CA)
  binutils  # scripts/build-wheels.sh: objdump -T, the glibc versions the wheel's program needs
  time  # GNU time: a child's own peak RSS (tests/common/mod.rs, peak_rss_kib)
  chromium fonts-dejavu-core  # crates/report/tests/html_in_chromium.rs: the HTML report rendered headless
  postgresql  # tests/cli_registry_postgres.rs: a shared registry on a real PostgreSQL (scripts/postgres.sh)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: installing packages needs root (apt-get); run as root or install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: all Debian packages present" >&2
fi

for tool in mlir-opt FileCheck lit not llvm-config; do
  [ -x "/usr/lib/llvm-22/bin/$tool" ] || { echo "setup: /usr/lib/llvm-22/bin/$tool missing after install" >&2; exit 1; }
done
for tool in redis-server redis-cli strace ip tc /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "setup: $tool missing after install" >&2; exit 1; }
done
# scripts/postgres.sh runs the newest /usr/lib/postgresql/<major>/bin (not PATH).
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null \
  || { echo "setup: no /usr/lib/postgresql/*/bin/initdb after installing postgresql" >&2; exit 1; }
