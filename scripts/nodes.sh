# Sourced by the scripts that start a cluster of local servers (garage.sh, redis-cluster.sh):
# each node in DIR/nodeN with its pid in DIR/nodeN/pid, the settings tests read in DIR/env.

# Stops every node of the cluster in $1 (TERM, then KILL after 5 s) and removes its env file.
stop_nodes() {
  local dir=$1 pidfile pid
  for pidfile in "$dir"/node*/pid; do
    [ -e "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  done
  rm -f "$dir/env"
}
