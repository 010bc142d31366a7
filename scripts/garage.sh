#!/usr/bin/env bash
# A real Garage (S3-compatible object store) for the S3 tests.
#
#   scripts/garage.sh install      cargo install garage --locked, unless a garage binary is
#                                  already on PATH or in ~/.cargo/bin (a warm machine reuses it)
#   scripts/garage.sh start DIR    installs if needed, then starts a 3-node cluster in DIR:
#                                  free ports, replication factor 3, the layout applied, a
#                                  bucket and a key made with Garage's own CLI; writes the
#                                  settings tests read to DIR/env and prints them
#   scripts/garage.sh stop DIR     stops that cluster's nodes (DIR/node*/pid)
#
# GARAGE_BIND (default 127.0.0.1) is the address every node listens on: the network-namespace
# tests bind it to a bridge so other namespaces reach it. DIR/env holds:
#   MCK_TEST_S3_ENDPOINT MCK_TEST_S3_REGION MCK_TEST_S3_BUCKET
#   MCK_TEST_S3_ACCESS_KEY_ID MCK_TEST_S3_SECRET_ACCESS_KEY MCK_TEST_GARAGE_DIR
set -euo pipefail
. "$(dirname "$0")/nodes.sh"

GARAGE_VERSION=2.5.0
NODES=3
REGION=garage
BUCKET=mck-test

die() { echo "garage.sh: $*" >&2; exit 1; }

garage_bin() {
  if command -v garage >/dev/null 2>&1; then command -v garage
  elif [ -x "$HOME/.cargo/bin/garage" ]; then echo "$HOME/.cargo/bin/garage"
  else return 1
  fi
}

install() {
  if bin=$(garage_bin); then
    echo "garage.sh: using $bin ($("$bin" --version 2>/dev/null | head -1))" >&2
    return
  fi
  echo "garage.sh: building garage $GARAGE_VERSION (cargo install --locked; ~15 min on 2 cores)" >&2
  # Its own target dir: nothing of the workspace's build is reused or disturbed.
  env -u CARGO_TARGET_DIR -u RUSTFLAGS cargo install garage --version "$GARAGE_VERSION" --locked >&2
  garage_bin >/dev/null || die "cargo install garage finished but no garage binary is on PATH or in ~/.cargo/bin"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("'"$1"'", 0)); print(s.getsockname()[1])'
}

# Waits until node $1 of the cluster in $2 accepts TCP connections on $3:$4; fails (with the
# node's log) if the node has exited or after 10 s. A node writes its key, which `node id`
# reads, before it listens, so a command sent on the id alone can be refused.
wait_listening() {
  local n=$1 dir=$2 host=$3 port=$4
  for _ in $(seq 200); do
    if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then return 0; fi
    kill -0 "$(cat "$dir/node$n/pid")" 2>/dev/null || {
      cat "$dir/node$n/log" >&2; echo "garage.sh: node $n exited before listening on $host:$port" >&2
      return 1
    }
    sleep 0.05
  done
  cat "$dir/node$n/log" >&2; echo "garage.sh: node $n is not listening on $host:$port after 10 s" >&2
  return 1
}

# Runs a Garage CLI command, again up to 20 times over 4 s while the cluster settles (a peer
# just connected, a layout just applied); its last error is what the caller sees.
settled() {
  local out
  for _ in $(seq 20); do
    if out=$("$@" 2>&1); then printf '%s\n' "$out"; return 0; fi
    sleep 0.2
  done
  printf '%s\n' "$out" >&2
  return 1
}

# One try at a cluster in $1 (see start); non-zero, nodes left for the caller to stop, if any
# step fails (a port taken between choosing and binding it, a node that never listens).
start_once() {
  local dir=$1 bind=$2 bin=$3
  local secret; secret=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
  local n s3_port rpc_port
  for n in $(seq "$NODES"); do
    rpc_port=$(free_port "$bind"); s3_port=$(free_port "$bind")
    rm -rf "$dir/node$n"; mkdir -p "$dir/node$n/meta" "$dir/node$n/data"
    cat >"$dir/node$n/garage.toml" <<EOF
metadata_dir = "$dir/node$n/meta"
data_dir = "$dir/node$n/data"
db_engine = "sqlite"
metadata_fsync = false
data_fsync = false
replication_factor = $NODES
rpc_bind_addr = "$bind:$rpc_port"
rpc_public_addr = "$bind:$rpc_port"
rpc_secret = "$secret"

[s3_api]
s3_region = "$REGION"
api_bind_addr = "$bind:$s3_port"
root_domain = ".s3.garage.localhost"
EOF
    echo "$s3_port" >"$dir/node$n/s3_port"
    echo "$rpc_port" >"$dir/node$n/rpc_port"
    RUST_LOG=warn "$bin" -c "$dir/node$n/garage.toml" server >"$dir/node$n/log" 2>&1 &
    echo $! >"$dir/node$n/pid"
  done
  local cli=("$bin" -c "$dir/node1/garage.toml") id
  for n in $(seq "$NODES"); do
    wait_listening "$n" "$dir" "$bind" "$(cat "$dir/node$n/rpc_port")" || return 1
    wait_listening "$n" "$dir" "$bind" "$(cat "$dir/node$n/s3_port")" || return 1
    id=$(settled "$bin" -c "$dir/node$n/garage.toml" node id -q) || return 1
    echo "$id" >"$dir/node$n/id"
    [ "$n" = 1 ] || settled "${cli[@]}" node connect "$id" >/dev/null || return 1
  done
  for n in $(seq "$NODES"); do
    settled "${cli[@]}" layout assign -z dc1 -c 1G "$(cut -d@ -f1 "$dir/node$n/id")" >/dev/null \
      || return 1
  done
  settled "${cli[@]}" layout apply --version 1 >/dev/null || return 1
  settled "${cli[@]}" bucket create "$BUCKET" >/dev/null || return 1
  local key; key=$(settled "${cli[@]}" key create mck-test-key) || return 1
  local key_id secret_key
  key_id=$(sed -n 's/^Key ID: *//p' <<<"$key")
  secret_key=$(sed -n 's/^Secret key: *//p' <<<"$key")
  [ -n "$key_id" ] && [ -n "$secret_key" ] || {
    echo "garage.sh: cannot read the key from garage key create: $key" >&2; return 1
  }
  settled "${cli[@]}" bucket allow --read --write --owner "$BUCKET" --key mck-test-key >/dev/null \
    || return 1
  cat >"$dir/env" <<EOF
MCK_TEST_S3_ENDPOINT=http://$bind:$(cat "$dir/node1/s3_port")
MCK_TEST_S3_REGION=$REGION
MCK_TEST_S3_BUCKET=$BUCKET
MCK_TEST_S3_ACCESS_KEY_ID=$key_id
MCK_TEST_S3_SECRET_ACCESS_KEY=$secret_key
MCK_TEST_GARAGE_DIR=$dir
EOF
}

start() {
  local dir=$1 bind=${GARAGE_BIND:-127.0.0.1}
  install
  local bin; bin=$(garage_bin)
  mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
  [ ! -e "$dir/env" ] || die "$dir already holds a cluster (stop it first)"
  # Ports are chosen before the nodes bind them, so another process can take one in between:
  # a failed try is stopped and made again on new ports.
  local try
  for try in 1 2 3; do
    if start_once "$dir" "$bind" "$bin"; then cat "$dir/env"; return 0; fi
    stop_nodes "$dir"
    echo "garage.sh: try $try at a cluster in $dir failed" >&2
  done
  die "cannot start a Garage cluster in $dir (3 tries; their errors are above)"
}

case "${1:-}" in
  install) install ;;
  start) [ $# = 2 ] || die "usage: garage.sh start DIR"; start "$2" ;;
  stop) [ $# = 2 ] || die "usage: garage.sh stop DIR"; stop_nodes "$2" ;;
  *) die "usage: garage.sh install | start DIR | stop DIR" ;;
esac
