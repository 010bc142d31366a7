#!/usr/bin/env bash
# What a management command costs from start to exit: `cache stats` (and `--json`, `runs list`,
# `config show`) served by the front binary, which links no MLIR, against the same command run
# by the MLIR binary (what every management command cost before the front served them), on a
# small cache of 20 entries; paired rounds, interleaved, release build. Median and best wall
# time, peak RSS, and the ratio.
#
#   bash bench/manage_start.sh [ROUNDS]      (default 31)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-31}
cargo build --locked --release --bin mlir-cache-key --bin mlir-cache-key-mlir >/dev/null 2>&1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
front=$PWD/target/release/mlir-cache-key
full=$PWD/target/release/mlir-cache-key-mlir
module=tests/data/corpus/cpu/mlp.a.generic.mlir
for i in $(seq 20); do
  sed "s/sym_name = \"jit_mlp\"/sym_name = \"jit_m$i\"/" "$module" >"$work/m$i.mlir"
  "$front" exec --cache-dir "$work/cache" --input "$work/m$i.mlir" --output "$work/m$i.out" \
    -- cp "$work/m$i.mlir" "$work/m$i.out" 2>/dev/null
done
python3 - "$rounds" "$front" "$full" "$work/cache" <<'PY'
import statistics, subprocess, sys, time, resource
rounds, front, full, cache = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
commands = [["cache", "stats"], ["cache", "stats", "--json"], ["runs", "list"], ["config", "show"]]

def once(binary, args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    out = subprocess.run([binary, *args, "--cache-dir", cache], capture_output=True)
    took = (time.perf_counter() - start) * 1e3
    if out.returncode != 0:
        sys.exit(f"{binary} {args}: {out.stderr.decode()}")
    return took, out.stdout

print(f"{rounds} paired rounds, interleaved; a cache of 20 entries")
print("| command | MLIR binary median / best | front binary median / best | front / MLIR (median) |")
print("|---|---|---|---|")
for args in commands:
    a, b = [], []
    for _ in range(rounds):
        t_full, out_full = once(full, args)
        t_front, out_front = once(front, args)
        if out_full != out_front:
            sys.exit(f"{args}: the two binaries printed different output")
        a.append(t_full); b.append(t_front)
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"| `{' '.join(args)}` | {ma:.1f} / {min(a):.1f} ms | {mb:.1f} / {min(b):.1f} ms | {mb/ma:.2f}x |")

def peak_kb(binary):
    out = subprocess.run(["/usr/bin/time", "-f", "%M", binary, "cache", "stats", "--cache-dir", cache],
                         capture_output=True, text=True)
    return int(out.stderr.strip().splitlines()[-1])
print(f"\npeak RSS of `cache stats`: MLIR binary {peak_kb(full)/1024:.1f} MB, front binary {peak_kb(front)/1024:.1f} MB")
PY
