#!/usr/bin/env bash
# What a management command costs from start to exit: `cache stats` (and `--json`, `runs list`,
# `config show`, `why` of two stored keys, `--version`) served by the front binary, which links no MLIR, against the same command run
# by the MLIR binary (what every management command cost before the front served them), and
# the two ways the Python package runs it: the wheel's native `mlir-cache-key` (from
# target/wheels, made by scripts/build-wheels.sh, installed into a throwaway venv) and
# `python -m mlir_cache_key` (the interpreter, then the extension module), on a small cache of
# 20 entries; paired rounds, interleaved (the order rotating), release build. Median and best
# wall time, peak RSS, and the ratios to the MLIR binary. The target: `cache stats` at most
# 10 ms median through the front binary and through the wheel's command.
#
#   bash bench/manage_start.sh [ROUNDS]      (default 31)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-31}
wheel=$(ls target/wheels/mlir_cache_key-*-abi3-manylinux_2_28_x86_64.whl 2>/dev/null) ||
  { echo "manage_start.sh: no wheel in target/wheels: run scripts/build-wheels.sh" >&2; exit 1; }
cargo build --locked --release --bin mlir-cache-key --bin mlir-cache-key-mlir >/dev/null 2>&1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "$wheel"
front=$PWD/target/release/mlir-cache-key
full=$PWD/target/release/mlir-cache-key-mlir
module=tests/data/corpus/cpu/mlp.a.generic.mlir
for i in $(seq 20); do
  sed "s/sym_name = \"jit_mlp\"/sym_name = \"jit_m$i\"/" "$module" >"$work/m$i.mlir"
  "$front" exec --cache-dir "$work/cache" --input "$work/m$i.mlir" --output "$work/m$i.out" \
    -- cp "$work/m$i.mlir" "$work/m$i.out" 2>/dev/null
done
python3 - "$rounds" "$front" "$full" "$work/venv" "$work/cache" <<'PY'
import json, statistics, subprocess, sys, time
rounds, front, full, venv, cache = int(sys.argv[1]), *sys.argv[2:]
runners = {  # name: the command's words before its arguments
    "MLIR binary": [full],
    "front binary": [front],
    "wheel's `mlir-cache-key`": [f"{venv}/bin/mlir-cache-key"],
    "`python -m mlir_cache_key`": [f"{venv}/bin/python", "-m", "mlir_cache_key"],
}
with open(runners["wheel's `mlir-cache-key`"][0], "rb") as f:
    assert f.read(4) == b"\x7fELF", "the wheel's mlir-cache-key is not a native program"
entries = subprocess.run([front, "cache", "entries", "--json", "--cache-dir", cache],
                         capture_output=True, check=True).stdout
keys = sorted(e["key"] for e in json.loads(entries) if e["key"].startswith("jit_m"))[:2]
commands = [["cache", "stats"], ["cache", "stats", "--json"], ["runs", "list"], ["config", "show"],
            ["why", *keys], ["--version"]]

def once(runner, args):
    start = time.perf_counter()
    where = [] if args == ["--version"] else ["--cache-dir", cache]
    out = subprocess.run([*runner, *args, *where], capture_output=True)
    took = (time.perf_counter() - start) * 1e3
    if out.returncode != 0:
        sys.exit(f"{runner} {args}: {out.stderr.decode()}")
    return took, out.stdout

names = list(runners)
print(f"{rounds} rounds, the four interleaved (order rotating); a cache of 20 entries; "
      "median / best, and median / the MLIR binary's median")
print("| command | " + " | ".join(names) + " |")
print("|---|" + "---|" * len(names))
medians = {}
for args in commands:
    times = {name: [] for name in names}
    for r in range(rounds):
        outputs = {}
        for name in names[r % len(names):] + names[:r % len(names)]:
            took, outputs[name] = once(runners[name], args)
            if args == ["--version"]:  # each names the MLIR it was built with (none: the wheel)
                outputs[name] = outputs[name].split(b" (")[0]
            times[name].append(took)
        if len(set(outputs.values())) != 1:
            sys.exit(f"{args}: the four printed different output: {outputs}")
    m = {name: statistics.median(t) for name, t in times.items()}
    medians[" ".join(args)] = m
    base = m["MLIR binary"]
    cells = [f"{m[n]:.1f} / {min(times[n]):.1f} ms" + ("" if n == "MLIR binary" else f" ({m[n]/base:.2f}x)")
             for n in names]
    label = "why KEY KEY" if args[0] == "why" else " ".join(args)
    print(f"| `{label}` | " + " | ".join(cells) + " |")

def peak_mb(runner):
    out = subprocess.run(["/usr/bin/time", "-f", "%M", *runner, "cache", "stats", "--cache-dir", cache],
                         capture_output=True, text=True)
    return int(out.stderr.strip().splitlines()[-1]) / 1024
print("\npeak RSS of `cache stats`: " + ", ".join(f"{n} {peak_mb(r):.1f} MB" for n, r in runners.items()))
stats = medians["cache stats"]
for name in ["front binary", "wheel's `mlir-cache-key`"]:
    verdict = "met" if stats[name] <= 10 else "MISSED"
    print(f"target (`cache stats` at most 10 ms median) through the {name}: {stats[name]:.1f} ms, {verdict}")
PY
