"""Times JAX's own cache-key path on MLIR modules (the baseline of bench/compare.sh).

For each module: parse it in JAX's MLIR context (not timed), then time, best
and median of N runs, JAX's computation entry (its own canonicalize +
serialize + hash: cache_key._hash_computation) and its whole key
(cache_key.get on the CPU backend), and the peak extra memory of the
computation entry. Prints JSON.
"""

import argparse
import ctypes
import gzip
import hashlib
import io
import json
import statistics
import time

import jax
import numpy as np
from jax._src import cache_key, compiler
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir


def read_module(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data


def rss(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def peak_extra(fn):
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = rss("VmRSS")
    fn()
    return max(0, rss("VmHWM") - base)


def timed(runs, fn):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return {"best": min(times) * 1e3, "median": statistics.median(times) * 1e3}


def breakdown(module, runs):
    """Best time of each step of JAX's canonicalization, done by hand with
    the same MLIR calls as cache_key._canonicalize_ir."""
    from jax._src.lib.mlir import passmanager as pm

    best = {"clone": [], "strip-debuginfo": [], "write": [], "hash": [], "destroy": []}
    for _ in range(runs):
        with module.context:
            t0 = time.perf_counter()
            m = module.operation.clone()
            t1 = time.perf_counter()
            pm.PassManager.parse("builtin.module(strip-debuginfo)").run(m.operation)
            t2 = time.perf_counter()
            out = io.BytesIO()
            m.operation.write_bytecode(file=out)
            t3 = time.perf_counter()
            hashlib.sha256(out.getvalue()).digest()
            t4 = time.perf_counter()
            del m
            t5 = time.perf_counter()
        for name, t in zip(best, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
            best[name].append(t * 1e3)
    return {name: min(ts) for name, ts in best.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("modules", nargs="+")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    backend = jax.devices("cpu")[0].client
    devices = np.array(jax.devices("cpu")[:1])
    options = compiler.get_compile_options(num_replicas=1, num_partitions=1)
    results = []
    for path in args.modules:
        ctx = mlir.make_ir_context()
        ctx.allow_unregistered_dialects = True
        with ctx:
            module = ir.Module.parse(read_module(path))
        computation = timed(
            args.runs, lambda: cache_key._hash_computation(hashlib.sha256(), module, False)
        )
        whole = timed(args.runs, lambda: cache_key.get(module, devices, options, backend))
        peak = peak_extra(lambda: cache_key._hash_computation(hashlib.sha256(), module, False))
        steps = breakdown(module, args.runs)
        results.append(
            {
                "module": path,
                "runs": args.runs,
                "computation_entry_ms": computation,
                "whole_key_ms": whole,
                "peak_extra_bytes": peak,
                "steps_best_ms": steps,
                "jax": jax.__version__,
            }
        )
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
