#!/usr/bin/env bash
# PyPI's gcp-storage-emulator (an emulator of the GCS JSON API, not Google's service) for the
# GCS test: installed in its own venv (target/gcs-emulator, made once), started in memory on a
# free loopback port with one bucket.
#
#   scripts/gcs-emulator.sh start DIR   writes DIR/env (MCK_TEST_GCS_HOST, MCK_TEST_GCS_BUCKET)
#                                       and prints it
#   scripts/gcs-emulator.sh stop DIR
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=2026.7.19
BUCKET=mck-test
venv=$PWD/target/gcs-emulator

die() { echo "gcs-emulator.sh: $*" >&2; exit 1; }

install() {
  if [ -x "$venv/bin/gcp-storage-emulator" ]; then return; fi
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "gcp-storage-emulator==$VERSION" >&2
}

start() {
  local dir=$1
  install
  mkdir -p "$dir"
  [ ! -e "$dir/env" ] || die "$dir already holds an emulator (stop it first)"
  local port
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$venv/bin/gcp-storage-emulator" start --host 127.0.0.1 --port "$port" --in-memory \
    --default-bucket "$BUCKET" -q >"$dir/gcs.log" 2>&1 &
  echo $! >"$dir/gcs.pid"
  for _ in $(seq 100); do
    if curl -sf "http://127.0.0.1:$port/storage/v1/b/$BUCKET" >/dev/null; then break; fi
    sleep 0.1
  done
  curl -sf "http://127.0.0.1:$port/storage/v1/b/$BUCKET" >/dev/null \
    || { cat "$dir/gcs.log" >&2; die "the emulator did not answer on port $port"; }
  printf 'MCK_TEST_GCS_HOST=127.0.0.1:%s\nMCK_TEST_GCS_BUCKET=%s\n' "$port" "$BUCKET" >"$dir/env"
  cat "$dir/env"
}

stop() {
  local dir=$1
  if [ -e "$dir/gcs.pid" ]; then
    kill "$(cat "$dir/gcs.pid")" 2>/dev/null || true
    rm -f "$dir/gcs.pid"
  fi
  rm -f "$dir/env"
}

case "${1:-}" in
  start) [ $# = 2 ] || die "usage: gcs-emulator.sh start DIR"; start "$2" ;;
  stop) [ $# = 2 ] || die "usage: gcs-emulator.sh stop DIR"; stop "$2" ;;
  *) die "usage: gcs-emulator.sh start DIR | stop DIR" ;;
esac
