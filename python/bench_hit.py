"""Benchmark: what an in-JAX hit costs to read its entry, against JAX's own cache.

One process compiles the MLP program (`programs.mlp`) through `install()`, which
stores it under JAX's key; the same bytes go into a JAX `LRUCache` directory.
Then N fresh processes each read that entry as a hit does: our `Cache.get` (the
call `_StoreCache.get` makes, in a process whose cache is open as `install()`
leaves it) and JAX's `LRUCache.get`, in alternating order, first read of the
process and a second one. Wall time; best and median of N.

Run with a test venv: `target/py-matrix/0.12.0.1/bin/python python/bench_hit.py [--repeat N]`.
Prints Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
# Measure the installed package (with its native module), not this source tree.
sys.path[:] = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE]

FILL = """
import json, sys
sys.path.insert(0, sys.argv[3])
import jax
from jax._src.lru_cache import LRUCache
import mlir_cache_key.jax as mj
import programs

jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
keys = []  # the keys this process computes (the program's, its inputs')
remember = mj._Installed.remember
mj._Installed.remember = lambda self, computed: (keys.append(computed.key), remember(self, computed))
mj.install(sys.argv[1])
jax.jit(programs.mlp)(*programs.mlp_args()).block_until_ready()
values = {key: mj.installed().get(key) for key in keys}
key = max(keys, key=lambda k: len(values[k] or b""))  # the MLP's, not an input's iota
LRUCache(sys.argv[2], max_size=-1).put(key, values[key])
print(json.dumps({"key": key, "bytes": len(values[key])}))
"""

READ = """
import json, sys, time
from jax._src.lru_cache import LRUCache
import mlir_cache_key

cache_dir, jax_dir, key, ours_first = sys.argv[1:5]
ours = mlir_cache_key.Cache(cache_dir)  # install() opens it once, before any read
theirs = LRUCache(jax_dir, max_size=-1)
def timed(read):
    start = time.perf_counter()
    value = read(key)
    return time.perf_counter() - start, value
order = [("ours", ours.get), ("jax", theirs.get)]
if ours_first != "1":
    order.reverse()
times = {}
for who, read in order + order:
    seconds, value = timed(read)
    assert value, who + " missed"
    times.setdefault(who, []).append(seconds)
print(json.dumps(times))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "JAX_"))}
    env["JAX_PLATFORMS"] = "cpu"
    env.pop("MLIR_CACHE_KEY_FLAGS", None)
    with tempfile.TemporaryDirectory() as tmp:
        cache_dir, jax_dir = f"{tmp}/ours", f"{tmp}/jax"
        fill = subprocess.run([sys.executable, "-c", FILL, cache_dir, jax_dir, str(HERE / "tests")],
                              env=env, capture_output=True, text=True)
        if fill.returncode != 0:
            sys.exit(f"bench_hit: filling the caches failed:\n{fill.stderr}")
        entry = json.loads(fill.stdout.strip().splitlines()[-1])
        runs = {"ours": ([], []), "jax": ([], [])}
        for i in range(args.repeat):
            out = subprocess.run([sys.executable, "-c", READ, cache_dir, jax_dir, entry["key"],
                                  str(i % 2)], env=env, check=True, capture_output=True, text=True)
            for who, (first, second) in json.loads(out.stdout).items():
                runs[who][0].append(first)
                runs[who][1].append(second)
    print(f"In-JAX hit read of the MLP program's entry ({entry['bytes']} B), {args.repeat} fresh "
          "processes, alternating order; wall ms, best / median:\n")
    print("| reader | first read of the process | second read |")
    print("|---|---|---|")
    for who, label in (("ours", "mlir_cache_key `Cache.get` (what `_StoreCache.get` calls)"),
                       ("jax", "JAX `LRUCache.get`, same bytes")):
        cells = [f"{min(t) * 1e3:.2f} / {statistics.median(t) * 1e3:.2f}" for t in runs[who]]
        print(f"| {label} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
