#!/usr/bin/env bash
# A real Redis Cluster on loopback, for the cluster tests and benchmark (and to try
# `--remote redis-cluster://…` by hand).
#
#   scripts/redis-cluster.sh start DIR MASTERS REPLICAS
#                                  starts MASTERS×(1+REPLICAS) redis-servers in DIR (free ports,
#                                  no persistence, a 1 s node timeout so a failover takes
#                                  seconds), joins them with `redis-cli --cluster create`, waits
#                                  until every slot is served and every replica has synced;
#                                  writes DIR/env and prints it
#   scripts/redis-cluster.sh stop DIR
#                                  stops that cluster's servers (DIR/node*/pid)
#
# DIR/env holds MCK_TEST_CLUSTER_NODES (HOST:PORT,… every node) and MCK_TEST_CLUSTER_DIR.
set -euo pipefail
. "$(dirname "$0")/nodes.sh"

die() { echo "redis-cluster.sh: $*" >&2; exit 1; }

# A port a node can take: it and its cluster bus port (10000 higher, so at most 55535) free.
free_port() {
  python3 -c '
import random, socket
for _ in range(1000):
    port = random.randint(20000, 55535)
    try:
        for p in (port, port + 10000):
            with socket.socket() as s:
                s.bind(("127.0.0.1", p))
    except OSError:
        continue
    print(port)
    break
else:
    raise SystemExit("redis-cluster.sh: no free pair of ports")
'
}

cli() { local port=$1; shift; redis-cli -h 127.0.0.1 -p "$port" "$@"; }

start() {
  local dir=$1 masters=$2 replicas=$3
  [[ $masters =~ ^[0-9]+$ && $masters -ge 3 ]] || die "a cluster needs at least 3 masters, got $masters"
  [[ $replicas =~ ^[0-9]+$ ]] || die "REPLICAS is a number, got $replicas"
  mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
  [ ! -e "$dir/env" ] || die "$dir already holds a cluster (stop it first)"
  local n port nodes=() total=$((masters * (1 + replicas)))
  for n in $(seq "$total"); do
    port=$(free_port)
    mkdir -p "$dir/node$n"
    # Logs to a file and no terminal: a caller that reads this script's output is not held
    # open by the servers.
    redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
      --cluster-enabled yes --cluster-config-file "$dir/node$n/nodes.conf" \
      --cluster-node-timeout 1000 --dir "$dir/node$n" --logfile "$dir/node$n/log" \
      </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/node$n/pid"
    echo "$port" >"$dir/node$n/port"
    nodes+=("127.0.0.1:$port")
  done
  for n in $(seq "$total"); do
    port=$(cat "$dir/node$n/port")
    for _ in $(seq 100); do cli "$port" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
    cli "$port" ping 2>/dev/null | grep -q PONG || { cat "$dir/node$n/log" >&2; die "node $n did not start"; }
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas "$replicas" --cluster-yes \
    >"$dir/create.log" 2>&1 || { cat "$dir/create.log" >&2; die "redis-cli --cluster create failed"; }
  local ok=
  for _ in $(seq 200); do
    ok=1
    for n in $(seq "$total"); do
      port=$(cat "$dir/node$n/port")
      cli "$port" cluster info | grep -q '^cluster_state:ok' || ok=
      if cli "$port" role | head -1 | grep -q slave; then
        cli "$port" info replication | grep -q '^master_link_status:up' || ok=
      fi
    done
    [ -z "$ok" ] || break
    sleep 0.1
  done
  [ -n "$ok" ] || die "the cluster in $dir did not become ready (see $dir/node*/log)"
  local joined; joined=$(IFS=,; echo "${nodes[*]}")
  cat >"$dir/env" <<EOF
MCK_TEST_CLUSTER_NODES=$joined
MCK_TEST_CLUSTER_DIR=$dir
EOF
  cat "$dir/env"
}

case "${1:-}" in
  start) [ $# = 4 ] || die "usage: redis-cluster.sh start DIR MASTERS REPLICAS"; start "$2" "$3" "$4" ;;
  stop) [ $# = 2 ] || die "usage: redis-cluster.sh stop DIR"; stop_nodes "$2" ;;
  *) die "usage: redis-cluster.sh start DIR MASTERS REPLICAS | stop DIR" ;;
esac
