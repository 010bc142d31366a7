#!/usr/bin/env bash
# The cache side: put (with eviction) and get on caches of 1k, 10k and 100k
# entries, ours (crates/store/benches/store_bench.rs) against JAX 0.12.0.1's LRUCache, in
# one run. JAX's put lists and stats the whole directory when it evicts.
#
#   bash bench/cache_compare.sh [SIZES]     (default 1000,10000,100000)
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-1000,10000,100000}
out=target/bench; mkdir -p "$out"
python=${PYTHON312:-$(command -v python3.12 || echo /root/.pyenv/versions/3.12.1/bin/python3)}
if [ ! -x bench/.venv/bin/python ]; then
  "$python" -m venv bench/.venv
fi
# An existing venv (e.g. compare.sh's) may lack some of these: install what is missing.
if ! bench/.venv/bin/python -c 'import jax, jaxlib, filelock' 2>/dev/null; then
  bench/.venv/bin/pip install -q "jax==0.12.0.1" "jaxlib==0.12.0.1" filelock
fi
STORE_BENCH_SIZES=$sizes STORE_BENCH_JSON=$out/store.json cargo bench --locked -p mck-store --bench store_bench >/dev/null
bench/.venv/bin/python bench/jax_lru.py --sizes "$sizes" > "$out/jax_lru.json"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
ours = {r["entries"]: r["ops"] for r in json.load(open(f"{out}/store.json"))}
jax = {r["entries"]: r for r in json.load(open(f"{out}/jax_lru.json"))}
print("| entries | put+evict: JAX | ours (fsync on) | JAX / ours | ours (fsync off) | get: JAX | ours | JAX / ours | list 100 by last use: ours |")
print("|---|---|---|---|---|---|---|---|---|")
for n in sorted(ours):
    o, j = ours[n], jax[n]
    put_on = o["put+evict, fsync on"]["wall_us"] / 1e3
    put_off = o["put+evict"]["wall_us"] / 1e3
    get = o["get (hit)"]["wall_us"] / 1e3
    print(f"| {n} | {j['put_evict_ms']:.2f} ms | {put_on:.3f} ms | {j['put_evict_ms']/put_on:.0f}x | {put_off:.3f} ms "
          f"| {j['get_ms']:.3f} ms | {get:.3f} ms | {j['get_ms']/get:.1f}x | {o['list 100 by last use']['wall_us']/1e3:.3f} ms |")
PY
