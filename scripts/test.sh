#!/usr/bin/env bash
# Runs every test: formatting and lints, the cargo tests (unit, integration,
# real processes, a real Redis), and the lit + FileCheck suite over the
# mlir-opt plugin. Installs missing Debian packages first (needs root; see
# scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

# A Redis server for the remote-tier tests: loopback only, a free port, no
# persistence, in a temporary directory; stopped on exit however we exit.
# Tests that kill a server start their own; the others share this one, each
# under its own key prefix.
redis_dir=$(mktemp -d)
redis_pid=
stop_redis() {
  if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; fi
  rm -rf "$redis_dir"
}
trap stop_redis EXIT
redis_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
  --dir "$redis_dir" --logfile "$redis_dir/redis.log" &
redis_pid=$!
for _ in $(seq 100); do
  if redis-cli -h 127.0.0.1 -p "$redis_port" ping 2>/dev/null | grep -q PONG; then break; fi
  sleep 0.1
done
redis-cli -h 127.0.0.1 -p "$redis_port" ping | grep -q PONG || {
  echo "test: redis-server did not start on port $redis_port:" >&2
  cat "$redis_dir/redis.log" >&2
  exit 1
}
export MCK_TEST_REDIS_URL="redis://127.0.0.1:$redis_port/0"
echo "test: redis-server $(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p') on $MCK_TEST_REDIS_URL" >&2

cargo fmt --all --check
cargo clippy --locked --workspace --all-targets -- -D warnings
cargo build --locked

# The MLIR-free crates (library first): none depends on MLIR, and each builds
# and passes its tests with the MLIR variables pointing nowhere (they would
# break any build that reached for LLVM/MLIR).
mlir_free=(mck-bytecode mck-key mck-store mck-exec mck-hlo)
for crate in "${mlir_free[@]}"; do
  if cargo tree --locked -p "$crate" -e normal --prefix none | grep -E '^(mlir-sys|melior|bindgen|tblgen) '; then
    echo "test: $crate depends on MLIR (above); it must not" >&2
    exit 1
  fi
done
env MLIR_SYS_220_PREFIX=/nonexistent TABLEGEN_220_PREFIX=/nonexistent \
  LIBCLANG_PATH=/nonexistent LLVM_CONFIG_PATH=/nonexistent \
  cargo test --locked $(printf -- '-p %s ' "${mlir_free[@]}")

# The MLIR canonicalizer, the plugin and the CLI.
cargo test --locked -p mlir-cache-key

# lit + FileCheck over the plugin and the CLI (uses target/debug).
/usr/lib/llvm-22/bin/lit -sv lit-tests

# The C++ shim built by CMake against the installed MLIR, and its smoke test.
cmake -S cmake -B target/cmake -G Ninja -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir >/dev/null
cmake --build target/cmake
ctest --test-dir target/cmake --output-on-failure
