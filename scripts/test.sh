#!/usr/bin/env bash
# Runs every test: formatting and lints, the cargo tests (unit, integration,
# real processes, a real Redis), the lit + FileCheck suite over the mlir-opt
# plugin (and the proof that each lit test rejects wrong output), the Python
# package's JAX tests in a venv it makes, a fuzz smoke and the CMake build.
# Installs missing Debian packages first (needs root; see scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

# Every environment knob a test, the lit config or a binary under test honours
# is cleared: nothing outside this script can turn a check off. Tests that
# cannot run here skip only outside CI (CI=true, which CI sets); under CI they
# fail instead.
knobs=(
  UPDATE_SNAPSHOTS        # crates/key/tests/compile_options/text_and_diff.rs:11 rewrites snapshots instead of comparing
  STORE_OPEN_ROUNDS       # crates/store/tests/store_processes.rs:318 (0 rounds = no check)
  STORE_KILL_ITERATIONS   # crates/store/tests/store_processes.rs:527 (0 iterations = no check)
  MCK_TEST_SKIP_REDIS     # tests/remote/redis.rs:124 skips the Redis tests
  MCK_TEST_BIN            # tests/common/mod.rs: runs the CLI tests against another build
  MLIR_CACHE_KEY_PROGRESS_DELAY_MS  # crates/cli/src/manage/progress.rs: when a progress bar appears
  MCK_FUZZ_MUTATIONS MCK_FUZZ_SEED MCK_FUZZ_OUT  # tests/fuzz_key.rs: the campaign size (CI runs the default smoke)
  MCK_TEST_REDIS_URL      # tests/remote/redis.rs:98 (re-exported below for our own server only)
  MCK_TEST_S3_ENDPOINT MCK_TEST_S3_REGION MCK_TEST_S3_BUCKET MCK_TEST_S3_ACCESS_KEY_ID MCK_TEST_S3_SECRET_ACCESS_KEY MCK_TEST_GARAGE_DIR  # tests/remote/garage.rs (re-exported below for our own cluster only)
  MCK_TEST_GCS_HOST MCK_TEST_GCS_BUCKET  # tests/cli_s3.rs: the GCS emulator (re-exported below)
  MCK_TEST_POSTGRES_URL MCK_TEST_POSTGRES_PASSWORD_FILE MCK_TEST_POSTGRES_PASSFILE MCK_TEST_POSTGRES_PASSWORD MCK_TEST_POSTGRES_PSQL MCK_TEST_POSTGRES_SOCKET_DIR MCK_TEST_POSTGRES_PORT MCK_TEST_POSTGRES_ADMIN_USER MCK_TEST_POSTGRES_TLS_URL MCK_TEST_POSTGRES_CA MCK_TEST_POSTGRES_OTHER_CA  # tests/cli_registry_postgres.rs (re-exported below for our own server only)
  PGPASSFILE PGPASSWORD PGHOST PGPORT PGUSER PGDATABASE  # libpq's defaults: a registry test must connect only where and as it says
  AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_REGION AWS_DEFAULT_REGION AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE AWS_SHARED_CREDENTIALS_FILE AWS_CONFIG_FILE STORAGE_EMULATOR_HOST GOOGLE_APPLICATION_CREDENTIALS  # read by the s3:// and gcs:// tiers (crates/remote/src/backends/buckets.rs)
  MCK_BUILD_DIR LLVM_BIN  # lit-tests/lit.cfg.py: another build / other LLVM tools
  LIT_OPTS LIT_FILTER LIT_FILTER_OUT LIT_XFAIL LIT_XFAIL_NOT  # lit: filter out or XFAIL tests
  STRIP_OUT_DIR SEED_OUT_DIR  # crates/bytecode/tests: test-data writers (return early when unset)
  MLIR_CACHE_KEY_FLAGS MLIR_CACHE_KEY_RUN  # read by the CLI and the store (crates/cli/src/address_args.rs, crates/store/src/settings.rs)
  MLIR_CACHE_KEY_DIRECT_MISSED  # crates/cli/src/front.rs: the front binary's hand-over marker (skips the direct lookup)
  XLA_FLAGS LIBTPU_INIT_ARGS  # key inputs read by the CLI (src/cli/key_args.rs, crates/exec/src/key.rs)
  MLIR_SYS_220_PREFIX TABLEGEN_220_PREFIX LIBCLANG_PATH LLVM_CONFIG_PATH  # build.rs / mlir-sys: which MLIR is built against
  RUSTFLAGS CARGO_TARGET_DIR RUST_TEST_THREADS  # a different build than the one lit and the scripts use
)
unset "${knobs[@]}"

# Every line this run prints (stdout and stderr, every test's) is also kept, so that at the end
# it can be searched for the secrets the tests use: no password, key or shared secret may reach
# a log line, an error message or `config show`. The fixed ones are listed here (they are in
# tests/cli_remote_trust.rs, cli_remote.rs, cli_s3.rs, cli_import.rs and cli_remote_tls.rs);
# Garage's secret key and the PostgreSQL role's password are added once the servers are up.
test_secrets=(
  "hunter2" "correct horse battery staple" "another secret, 16+ bytes" "a long enough team secret"
  "the team's own shared secret" "another team's shared secret" "tls-test-password-4c1e7"
)
run_log=$(mktemp)
exec 3>&1 4>&2
exec > >(tee -a "$run_log") 2>&1
tee_pid=$!

# Where the run's time goes: `stage NAME` ends the running stage (its seconds are printed) and
# starts the next; the last lines of the run list every stage's seconds, slowest first.
stage_name= stage_start=$SECONDS stage_times=()
stage() {
  if [ -n "$stage_name" ]; then
    stage_times+=("$((SECONDS - stage_start)) $stage_name")
    echo "test: stage '$stage_name' took $((SECONDS - stage_start)) s (run: $SECONDS s)" >&2
  fi
  stage_name=$1 stage_start=$SECONDS
}

stage "Debian packages (scripts/setup.sh)"
bash scripts/setup.sh

# The JAX venvs of the Python tests (downloads and pip installs: mostly the network) are made
# while the Rust builds run; in a session of their own, so that an early exit stops them.
venvs_log=$(mktemp)
setsid -w bash scripts/python-matrix.sh --venvs >"$venvs_log" 2>&1 &
venvs_pid=$!

# The servers this run starts, its own and the tests' (Redis, Redis Cluster nodes, stunnel,
# Garage, the GCS emulator, PostgreSQL and its worker processes, all named postgres): none may
# outlive it. Those running before it are not its own. A zombie (killed, not yet reaped by its
# parent) runs no more and is not counted. The emulator's name is joined inside awk, so that
# awk's own command line does not hold it.
running_servers() {
  ps -eo pid=,stat=,comm=,args= | awk '
    $2 !~ /^Z/ && ($3 == "redis-server" || $3 == "stunnel4" || $3 == "garage" || $3 == "postgres" ||
                   index($0, "gcp-storage" "-emulator")) { print $1 }' | sort -u
}
servers_before=$(running_servers)

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
# Garage (a real S3 store: 3 nodes on loopback, replication factor 3, a bucket and a key made
# with its own CLI; scripts/garage.sh builds it once with `cargo install --locked`, ~15 min on
# 2 cores, and reuses the binary afterwards) and PyPI's gcp-storage-emulator (an emulator, in a
# venv of its own) for tests/cli_s3.rs and tests/cli_netns.rs, and a PostgreSQL (Debian's, run
# by scripts/postgres.sh as the unprivileged user mck-postgres, in its own directory on a free
# loopback port) for tests/cli_registry_postgres.rs. A failure to start any of them fails the
# run: the tests would fail without them under CI anyway.
garage_dir=$(mktemp -d)
gcs_dir=$(mktemp -d)
pg_dir=$(mktemp -d)
stop_servers() {
  if [ -n "$venvs_pid" ]; then kill -- "-$venvs_pid" 2>/dev/null || true; fi
  bash scripts/garage.sh stop "$garage_dir/cluster" || true
  bash scripts/gcs-emulator.sh stop "$gcs_dir" || true
  bash scripts/postgres.sh stop "$pg_dir" || true
  rm -rf "$garage_dir" "$gcs_dir" "$pg_dir"
  stop_redis
}
trap stop_servers EXIT
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
stage "servers: Garage (built once), GCS emulator, PostgreSQL"
bash scripts/garage.sh start "$garage_dir/cluster" >/dev/null
bash scripts/gcs-emulator.sh start "$gcs_dir" >/dev/null
bash scripts/postgres.sh start "$pg_dir"
set -a
. "$garage_dir/cluster/env"
. "$gcs_dir/env"
. "$pg_dir/env"
set +a
echo "test: garage on $MCK_TEST_S3_ENDPOINT, gcp-storage-emulator on $MCK_TEST_GCS_HOST, postgresql on $MCK_TEST_POSTGRES_URL" >&2

stage "fmt, clippy and the debug build"
cargo fmt --all --check
cargo clippy --locked --workspace --all-targets -- -D warnings
cargo build --locked

# The S3/GCS remotes are in the default build (tested below against Garage and the
# emulator); the slim build without them still compiles.
cargo clippy --locked -p mck-remote --no-default-features --all-targets -- -D warnings

# The MLIR-free crates (library first): none depends on MLIR, and each builds
# and passes its tests with the MLIR variables pointing nowhere (they would
# break any build that reached for LLVM/MLIR).
mlir_free=(mck-bytecode mck-protowire mck-key mck-store mck-remote mck-settings mck-runs mck-report mck-exec mck-hlo mck-cli)
for crate in "${mlir_free[@]}"; do
  if cargo tree --locked -p "$crate" -e normal --prefix none | grep -E '^(mlir-sys|melior|bindgen|tblgen) '; then
    echo "test: $crate depends on MLIR (above); it must not" >&2
    exit 1
  fi
done
stage "cargo tests: the MLIR-free crates"
env MLIR_SYS_220_PREFIX=/nonexistent TABLEGEN_220_PREFIX=/nonexistent \
  LIBCLANG_PATH=/nonexistent LLVM_CONFIG_PATH=/nonexistent \
  cargo test --locked $(printf -- '-p %s ' "${mlir_free[@]}")

# The MLIR canonicalizer, the plugin and the CLI (includes tests/canonical_golden.rs,
# the pinned canonical digests, and tests/kernel_counts.rs).
stage "cargo tests: the canonicalizer and the CLI"
cargo test --locked -p mlir-cache-key

# README's first command, the main job on a corpus module, in the release build users install:
# a release build differs (clap checks argument names only in debug builds; a release binary once
# panicked on `cache stats` while every debug test passed).
stage "README's example (release build)"
bash scripts/example.sh

# lit + FileCheck over the plugin and the CLI (uses target/debug). -v without -s
# names every test (PASS: …); anything but PASS (UNSUPPORTED, XFAIL, XPASS,
# UNRESOLVED) fails the run.
stage "lit and its mutants"
lit_log=$(mktemp)
/usr/lib/llvm-22/bin/lit -v --show-unsupported --show-xfail lit-tests | tee "$lit_log"
if grep -E '^(UNSUPPORTED|XFAIL|XPASS|UNRESOLVED|SKIPPED):' "$lit_log"; then
  echo "test: lit ran tests that did not PASS (above)" >&2
  exit 1
fi
rm -f "$lit_log"

# Proof that every lit test rejects wrong output: each `// MUTANT:` line of a
# test is fed to it through a mutant mlir-opt / mlir-cache-key and must make it
# FAIL; the tests must pass through identity wrappers. (~30 s)
scripts/lit-mutants.sh target/debug

# The Python package (PyO3 over the MLIR-free crates; no MLIR in it) and its
# JAX tests — real jax.jit compilations in child processes, the real Redis
# above — on every tested JAX release: one venv per release (jax 0.8.3, 0.9.2,
# 0.10.2 on Python 3.11; 0.11.2, 0.12.0.1 on 3.12), made by
# scripts/python-matrix.sh from one shared wheel directory, each with the wheel pip
# users get (manylinux_2_28 by zig, checked by auditwheel: scripts/build-wheels.sh);
# then `pip install ./python` into a fresh Python 3.11 venv with jax 0.10.2 and
# the wheel where there is no Rust, on Python 3.11 and 3.12: jax.jit must go
# through our cache.
stage "the Python extension: fmt, clippy, unit tests"
cargo fmt --manifest-path python/Cargo.toml --check
# python/Cargo.toml copies the root's debug profile so that the steps below reuse the root
# build's dependencies; if the copies drift, they are compiled again (minutes, not seconds).
dev_profile() { awk '/^\[/ { keep = ($0 ~ /^\[profile\.dev[].]/) } keep && NF && !/^#/' "$1"; }
if ! diff <(dev_profile Cargo.toml) <(dev_profile python/Cargo.toml) >&2; then
  echo "test: python/Cargo.toml's [profile.dev] tables differ from Cargo.toml's (above); keep them equal" >&2
  exit 1
fi
# In the root workspace's target directory: the dependencies its build compiled (the same
# versions, features and debug settings) are reused, not compiled again.
cargo clippy --locked --manifest-path python/Cargo.toml --target-dir target --all-targets -- -D warnings
# The extension's own unit tests (those that need no interpreter: the explainer's queue).
cargo test --locked --manifest-path python/Cargo.toml --target-dir target --lib
if cargo tree --locked --manifest-path python/Cargo.toml -e normal --prefix none | grep -E '^(mlir-sys|melior|bindgen|tblgen) '; then
  echo "test: the Python extension depends on MLIR (above); it must not (jaxlib brings its own)" >&2
  exit 1
fi
stage "the JAX venvs (made since the start)"
venvs_made=0
wait "$venvs_pid" || venvs_made=$?
venvs_pid=
cat "$venvs_log" >&2
if [ "$venvs_made" != 0 ]; then echo "test: making the JAX venvs failed ($venvs_made; above)" >&2; exit 1; fi
rm -f "$venvs_log"
stage "the manylinux wheel, installed in each venv"
matrix=$(bash scripts/python-matrix.sh)
newest=$(tail -n1 <<<"$matrix" | cut -d' ' -f1)
# Test files that never import JAX (the store and the remote chain through the
# extension) run once, on the newest release: the same wheel serves every venv.
without_jax=(python/tests/test_store.py python/tests/test_remote_chain.py python/tests/test_cli.py)
while read -r release venv; do
  stage "python tests on jax $release"
  "$venv/bin/python" -c 'import mlir_cache_key._native'   # the extension, not a stale copy
  skip=()
  if [ "$release" != "$newest" ]; then
    for f in "${without_jax[@]}"; do
      if grep -q 'jax' "$f"; then echo "test: $f mentions jax; it must run on every release" >&2; exit 1; fi
      skip+=(--ignore "$f")
    done
  fi
  # One worker per core (pytest-xdist): most of a test's time is a child process compiling
  # with JAX, one core's worth. --durations: the slowest tests, where a slower run went.
  "$venv/bin/pytest" -v -p no:cacheprovider -n auto --maxprocesses 8 --durations 10 \
    "${skip[@]}" python/tests
done <<<"$matrix"
stage "pip install ./python (from source) and the wheel where there is no Rust"
bash scripts/python-matrix.sh --pip-check
bash scripts/python-matrix.sh --wheel-check

# The fuzz target (its own workspace, fuzz/): type-checked on stable, then a
# short smoke run of the libFuzzer binary with coverage instrumentation (stable
# rustc accepts the sancov passes; AddressSanitizer would need nightly, and
# cargo-fuzz is not installed). A crash, panic, or the idempotence assertion
# fails the run; libFuzzer exits non-zero then.
stage "fuzz smoke"
cargo check --locked --manifest-path fuzz/Cargo.toml
RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks" \
  cargo build --locked --release --manifest-path fuzz/Cargo.toml --bin strip \
  --target x86_64-unknown-linux-gnu --target-dir target/fuzz-smoke
fuzz_corpus=$(mktemp -d)
cp fuzz/seeds/* "$fuzz_corpus"/
target/fuzz-smoke/x86_64-unknown-linux-gnu/release/strip "$fuzz_corpus" \
  -max_total_time=30 -max_len=4096 -rss_limit_mb=1024 -timeout=10 -print_final_stats=1
rm -rf "$fuzz_corpus"

# The C++ shim built by CMake against the installed MLIR, and its smoke test.
# --no-tests=error: a CMake file that registers no test fails instead of passing.
stage "CMake shim"
cmake -S cmake -B target/cmake -G Ninja -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir >/dev/null
cmake --build target/cmake
ctest --test-dir target/cmake --output-on-failure --no-tests=error

stage ""
echo "test: the stages by their seconds (run: $SECONDS s):" >&2
printf '%s\n' "${stage_times[@]}" | sort -rn | sed 's/^/test:   /' >&2

# The secrets in the run's output (see test_secrets above). The servers started above write to
# the same pipe as everything else: stopped first, tee sees the pipe close and finishes writing
# the log (waited for at most 30 s, so a straggler cannot hang the run).
s3_secret=$MCK_TEST_S3_SECRET_ACCESS_KEY
pg_password=$MCK_TEST_POSTGRES_PASSWORD
stop_servers
trap - EXIT
exec 1>&3 2>&4
for _ in $(seq 300); do kill -0 "$tee_pid" 2>/dev/null || break; sleep 0.1; done
test_secrets+=("$s3_secret" "$pg_password")
for secret in "${test_secrets[@]}"; do
  if grep -qF -- "$secret" "$run_log"; then
    echo "test: a secret the tests use appears in their output (line $(grep -nF -- "$secret" "$run_log" | head -1 | cut -d: -f1) of the run's output); no output may show one" >&2
    exit 1
  fi
done
rm -f "$run_log"
echo "test: none of the ${#test_secrets[@]} secrets the tests use appears in the run's output" >&2

leftover=
for _ in $(seq 50); do
  leftover=$(comm -13 <(echo "$servers_before") <(running_servers) | tr '\n' ' ')
  [ -n "${leftover// }" ] || break
  sleep 0.1
done
if [ -n "${leftover// }" ]; then
  echo "test: servers the run started are still running:" >&2
  # shellcheck disable=SC2086
  ps -o pid=,args= -p "$(echo $leftover | tr ' ' ',')" >&2 || true
  # shellcheck disable=SC2086
  kill -9 $leftover 2>/dev/null || true
  exit 1
fi
echo "test: none of the servers the run started is still running" >&2
