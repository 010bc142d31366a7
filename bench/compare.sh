#!/usr/bin/env bash
# Side-by-side benchmark: JAX 0.12.0.1's own key path against mlir-cache-key,
# in one run, on the same modules, with ratios (JAX time / our time).
#
#   bash bench/compare.sh [--runs N] [MODULE...]
#
# Creates bench/.venv (Python 3.12 + jax==0.12.0.1) once. Defaults to the two
# large corpus modules. Needs the Debian packages of scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5
if [ "${1:-}" = "--runs" ]; then runs=$2; shift 2; fi
modules=("$@")
if [ ${#modules[@]} -eq 0 ]; then
  modules=(tests/data/corpus/large/large_deep_ops.generic.mlir
           tests/data/corpus/large/large_deep_ops_2000.generic.mlir.gz)
fi

python=${PYTHON312:-$(command -v python3.12 || echo /root/.pyenv/versions/3.12.1/bin/python3)}
if [ ! -x bench/.venv/bin/python ]; then
  "$python" -m venv bench/.venv
  bench/.venv/bin/pip install -q "jax==0.12.0.1" "jaxlib==0.12.0.1" filelock
fi

cargo build --release --locked --benches --bins >/dev/null 2>&1 || cargo build --release --locked --benches --bins
ours=$(ls -t target/release/deps/key-* | grep -v '\.d$' | head -1)
out=target/bench; mkdir -p "$out"

bench/.venv/bin/python bench/jax_key.py --runs "$runs" "${modules[@]}" > "$out/jax.json"
"$ours" --runs "$runs" --json "${modules[@]}" > "$out/ours.json"

# Whole CLI invocations (parse included), from text and from bytecode input.
cli_rows=()
for m in "${modules[@]}"; do
  bc="$out/$(basename "$m" .gz).mlirbc"
  target/release/mlir-cache-key canon --keep-locations "$m" -o "$bc"
  for input in "$m" "$bc"; do
    best=""; all=()
    for _ in $(seq "$runs"); do
      s=$(date +%s%N); target/release/mlir-cache-key key "$input" >/dev/null; e=$(date +%s%N)
      all+=($(( (e - s) / 1000 )))
    done
    cli_rows+=("$input ${all[*]}")
  done
done
printf '%s\n' "${cli_rows[@]}" > "$out/cli.txt"

# Our steps (best of runs), for the per-step table.
: > "$out/steps.txt"
for m in "${modules[@]}"; do
  for _ in $(seq "$runs"); do
    target/release/mlir-cache-key canon --timings --digest "$m" 2>&1 >/dev/null | sed "s|^|$m |" >> "$out/steps.txt"
  done
done

python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
jax = json.load(open(f"{out}/jax.json"))
ours = json.load(open(f"{out}/ours.json"))
print("| module | JAX computation entry | ours: library path | ratio | ours: owned path | ratio | JAX whole key | digest only | key + trace | trace overhead (best / median) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for j, o in zip(jax, ours):
    name = j["module"].split("/")[-1]
    jc = j["computation_entry_ms"]["best"]
    cp = o["library_path_ms"]["best"]
    op = o["owned_path_ms"]["best"]
    db, dm = o["digest_only_ms"]["best"], o["digest_only_ms"]["median"]
    tb, tm = o["key_with_trace_ms"]["best"], o["key_with_trace_ms"]["median"]
    print(f"| {name} | {jc:.1f} ms | {cp:.1f} ms | {jc/cp:.2f}x | {op:.1f} ms | {jc/op:.2f}x "
          f"| {j['whole_key_ms']['best']:.1f} ms | {db:.1f} ms | {tb:.1f} ms | {100*(tb/db-1):+.1f}% / {100*(tm/dm-1):+.1f}% |")
print()
print("| module | peak extra memory: JAX computation entry | ours: bytecode written to nowhere | ours: streamed into the key | ours: materialised, then hashed |")
print("|---|---|---|---|---|")
for j, o in zip(jax, ours):
    p = o["peak_extra_bytes"]
    print(f"| {j['module'].split('/')[-1]} | {j['peak_extra_bytes']/1e6:.1f} MB | {p['write_discarded']/1e6:.2f} MB "
          f"| {p['streamed_key']/1e6:.2f} MB | {p['materialised_bytes']/1e6:.2f} MB |")
print()
steps = {}
for line in open(f"{out}/steps.txt"):
    path, rest = line.split(" ", 1)
    if "ms" not in rest:
        continue
    name, value = rest.rsplit(":", 1)
    key = (path, name.strip())
    steps[key] = min(steps.get(key, float("inf")), float(value.split()[0]))
print("| module | step | JAX (best) | ours (best) | JAX / ours |")
print("|---|---|---|---|---|")
# JAX copies the module, strips the copy and destroys it; the library's one walk saves what it
# changes while it strips, and puts it back.
pairs = (("clone + strip-debuginfo / walk", ("clone", "strip-debuginfo"), "walk+strip-debuginfo"),
         ("write", ("write",), "write"), ("hash", ("hash",), "hash"),
         ("destroy / restore", ("destroy",), "restore"))
for j in jax:
    for label, jax_steps, our_step in pairs:
        ours_ms = steps.get((j["module"], our_step))
        jax_ms = sum(j["steps_best_ms"][step] for step in jax_steps)
        if ours_ms is not None:
            print(f"| {j['module'].split('/')[-1]} | {label} | {jax_ms:.1f} ms | {ours_ms:.1f} ms | {jax_ms/ours_ms:.2f}x |")
print()
print("| CLI `key` (whole process, parse included) | best | median |")
print("|---|---|---|")
for line in open(f"{out}/cli.txt"):
    path, *us = line.split()
    us = sorted(int(u) for u in us)
    print(f"| {path.split('/')[-1]} | {us[0]/1e3:.1f} ms | {statistics.median(us)/1e3:.1f} ms |")
PY
