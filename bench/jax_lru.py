"""Times JAX 0.12.0.1's persistent-cache LRU policy (jax._src.lru_cache.LRUCache)
on caches of 1k, 10k and 100k entries: put (each one evicting the least recently
used entry, as ours does in benches/store_bench.rs) and get (a hit).

JAX's put lists and stats the whole directory to evict, so the cache is
populated by writing its files directly (a value file and an atime file per
entry, as LRUCache writes them), not through put. Prints JSON.
"""

import argparse
import json
import os
import tempfile
import time

from jax._src import lru_cache


def populate(path, n, size):
    value = b"\0" * size
    for i in range(n):
        key = f"jit_bench_{i}"
        with open(os.path.join(path, key + lru_cache._CACHE_SUFFIX), "wb") as f:
            f.write(value)
        with open(os.path.join(path, key + lru_cache._ATIME_SUFFIX), "wb") as f:
            f.write((1_000_000 + i).to_bytes(8, "little"))


def per_op_ms(count, fn):
    best = float("inf")
    for batch in range(3):
        start = time.perf_counter()
        for i in range(count):
            fn(batch * count + i)
        best = min(best, (time.perf_counter() - start) / count)
    return best * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    args = parser.parse_args()
    size = 1024
    results = []
    for n in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(dir="/var/tmp") as path:
            populate(path, n, size)
            cache = lru_cache.LRUCache(path, max_size=n * size)
            ops = max(3, 20_000 // n)
            put = per_op_ms(ops, lambda i: cache.put(f"new_{n}_{i}", b"\1" * size))
            get = per_op_ms(ops, lambda i: cache.get(f"jit_bench_{n - 1 - (i % 100)}"))
            results.append({"entries": n, "put_evict_ms": put, "get_ms": get, "ops_per_batch": ops})
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
