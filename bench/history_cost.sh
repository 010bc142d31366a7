#!/usr/bin/env bash
# What the lookup history (`history.log`, what `report` reads) costs a hit, end to end: `exec`
# hits of a corpus module, direct mode (the cheapest hit there is: no parse, no MLIR) and
# canonical (`--no-direct`: the module parsed and keyed by the MLIR binary), each with the
# history on (the default) and off (`--history_size=0`), paired rounds in alternating order;
# release build. Median and best wall time, and the ratio with / without.
#
#   bash bench/history_cost.sh [ROUNDS]      (default 41)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-41}
cargo build --locked --release --bin mlir-cache-key --bin mlir-cache-key-mlir >/dev/null 2>&1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=$PWD/target/release/mlir-cache-key
cp tests/data/corpus/cpu/mlp.a.generic.mlir "$work/m.mlir"
python3 - "$rounds" "$bin" "$work" <<'PY'
import statistics, subprocess, sys, time
rounds, binary, work = int(sys.argv[1]), sys.argv[2], sys.argv[3]

def exec_hit(mode, history):
    args = [binary, "exec", "--cache-dir", f"{work}/cache", "--input", f"{work}/m.mlir",
            "--output", f"{work}/out"]
    args += [] if mode == "direct" else ["--no-direct"]
    args += [] if history else ["--history_size=0"]
    args += ["--", "cp", f"{work}/m.mlir", f"{work}/out"]
    start = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True)
    return (time.perf_counter() - start) * 1e3

for mode in ("direct", "canonical"):
    exec_hit(mode, True)  # the entry (and the manifest) stored: every run below is a hit
times = {(m, h): [] for m in ("direct", "canonical") for h in (True, False)}
for r in range(rounds):
    for mode in ("direct", "canonical"):
        order = (True, False) if r % 2 == 0 else (False, True)
        for history in order:
            times[(mode, history)].append(exec_hit(mode, history))
stats = subprocess.run([binary, "cache", "stats", "--json", "--cache-dir", f"{work}/cache"],
                       check=True, capture_output=True, text=True).stdout
lines = sum(1 for _ in open(f"{work}/cache/v1/history.log"))
print(f"{rounds} paired rounds; {lines} history lines written by the runs with it on")
print("| exec hit | with the history | without | with / without (median) |")
print("|---|---|---|---|")
for mode in ("direct", "canonical"):
    on, off = times[(mode, True)], times[(mode, False)]
    m_on, m_off = statistics.median(on), statistics.median(off)
    print(f"| {mode} | {m_on:.2f} ms (best {min(on):.2f}) | {m_off:.2f} ms (best {min(off):.2f}) "
          f"| {m_on / m_off:.3f}x |")
PY
