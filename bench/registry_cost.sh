#!/usr/bin/env bash
# What a shared registry (`registry = postgres://…`) adds to an addressed `exec` hit, against the
# local one (registry.sqlite in the cache directory): the same corpus module at the same address
# in the same run, direct mode, paired rounds in alternating order; release build. The shared
# registry is a real PostgreSQL on loopback (scripts/postgres.sh: a throwaway server, stopped at
# the end). Also an unaddressed hit, the floor both pay. Median and best wall time, ratios.
#
#   bash bench/registry_cost.sh [ROUNDS]      (default 41; needs root for the server's user)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-41}
cargo build --locked --release --bin mlir-cache-key --bin mlir-cache-key-mlir >/dev/null 2>&1
work=$(mktemp -d)
pg=$(mktemp -d)
trap 'bash scripts/postgres.sh stop "$pg" || true; rm -rf "$work" "$pg"' EXIT
bash scripts/postgres.sh start "$pg" 2>/dev/null
set -a; . "$pg/env"; set +a
bin=$PWD/target/release/mlir-cache-key
cp tests/data/corpus/cpu/mlp.a.generic.mlir "$work/m.mlir"
python3 - "$rounds" "$bin" "$work" <<'PY'
import os, statistics, subprocess, sys, time
rounds, binary, work = int(sys.argv[1]), sys.argv[2], sys.argv[3]
shared = (f"--registry={os.environ['MCK_TEST_POSTGRES_URL']}?schema=bench "
          f"--registry_password_file={os.environ['MCK_TEST_POSTGRES_PASSWORD_FILE']}")

def exec_hit(registry):
    cache = f"{work}/cache-{registry}"
    args = [binary, "exec", "--cache-dir", cache, "--input", f"{work}/m.mlir",
            "--output", f"{work}/out"]
    if registry != "none":
        args += ["--namespace", "bench", "--run", "r1"]
    args += ["--", "cp", f"{work}/m.mlir", f"{work}/out"]
    env = dict(os.environ, MLIR_CACHE_KEY_FLAGS=shared if registry == "shared" else "")
    start = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True, env=env)
    return (time.perf_counter() - start) * 1e3

kinds = ("none", "local", "shared")
for kind in kinds:
    exec_hit(kind)  # stored, and recorded at the address: every run below is a hit
times = {k: [] for k in kinds}
for r in range(rounds):
    for kind in (kinds if r % 2 == 0 else kinds[::-1]):
        times[kind].append(exec_hit(kind))
med = {k: statistics.median(v) for k, v in times.items()}
print(f"{rounds} paired rounds, exec hits of one module (direct mode)")
print("| exec hit | median | best | / local registry | / unaddressed |")
print("|---|---|---|---|---|")
names = {"none": "unaddressed", "local": "addressed, local registry",
         "shared": "addressed, shared registry (PostgreSQL, loopback)"}
for kind in kinds:
    print(f"| {names[kind]} | {med[kind]:.2f} ms | {min(times[kind]):.2f} ms "
          f"| {med[kind] / med['local']:.3f}x | {med[kind] / med['none']:.3f}x |")
print(f"shared − local: {med['shared'] - med['local']:+.2f} ms per addressed hit")
PY
