"""Many small `jax.jit` programs through JAX's own persistent cache and through ours, in one
process, in alternating batches: the pairing `bench_small.py` does across processes, at a finer
grain. Between processes the XLA compile of the same programs spreads by up to 20 %, which
swamps a cache's ~1-4 % share of a miss; batches a few seconds apart in one process share
their machine, memory layout and XLA thread pool, so the ratio of a pair is the caches' own.

Run with a test venv: `target/py-venv/bin/python python/bench_paired.py [--pairs 12]
[--batch 25] [--shape tanh|mlp] [--save FILE]`. Each pair is one batch under each cache, in
ABBA order: `--batch` new programs compiled (cold: every lookup misses and stores), then after
`jax.clear_caches()` the same programs again (warm: every lookup hits). Ours is
`install(prefetch=False)` (a prefetch needs a run before this process), timed until its
worker has finished what the batch left it; `install()` itself is not timed here
(`bench_small.py` times it). Prints per-pair ratios ours / JAX's: median with its 95 %
confidence interval (distribution-free, from order statistics: ours is under JAX's with
confidence when the interval's top is under 1), quartiles, range, and how many pairs were under 1
with the sign test's two-sided p (a coin toss for each pair). `--save FILE`: each batch's seconds
as JSON; `--pool FILE...` runs nothing and prints the table of saved runs of one build and
workload as one run, so that pairs of several runs add up.
The first line names the compression JAX's cache writes with: zlib at level 6, or zstd where
`zstandard` is installed (or Python ≥ 3.14 has `compression.zstd`). Ours then compresses as JAX
does, so the 0.25–0.4 ms a miss ours saves with zlib's level 0 is not there to save.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import statistics
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
# Measure the installed package (with its native module), not this source tree.
sys.path[:] = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE]
sys.path.append(str(HERE))  # after the installed package: only for bench_programs
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

import mlir_cache_key.jax as mj  # noqa: E402
from bench_programs import programs  # noqa: E402


_events: dict[str, int] = {}
jax.monitoring.register_event_listener(
    lambda event, **_: _events.__setitem__(event, _events.get(event, 0) + 1))
HITS, MISSES = "/jax/compilation_cache/cache_hits", "/jax/compilation_cache/cache_misses"


def jax_compression() -> str:
    """What JAX's own cache compresses its entries with in this process."""
    return "zstd" if mj.J.jax_writes_zstd() else "zlib level 6"


def timed_batch(cache: str, directory: str, indices: range, program) -> tuple[float, float]:
    """Seconds for the batch's programs cold, then warm, under `cache`; exits when a cold
    program did not miss or a warm lookup did not hit (nothing else would be measured)."""
    if cache == "ours":
        mj.install(directory, prefetch=False)
    else:
        jax.config.update("jax_compilation_cache_dir", directory)
    results = []
    try:
        for phase, event in (("cold", MISSES), ("warm", HITS)):
            # (Each phase may also compile JAX's own helpers: the indexing of a result.)
            jax.clear_caches()  # warm: JAX's in-memory caches forgotten, the persistent one hit
            _events.clear()
            start = time.perf_counter()
            for i in indices:
                program(i)
            if cache == "ours":  # what ours left to its worker is part of the batch's cost
                mj.installed().settle()
            results.append(time.perf_counter() - start)
            if _events.get(event, 0) < len(indices) or (phase == "warm" and MISSES in _events):
                sys.exit(f"{cache}, {phase}: {_events} for {len(indices)} programs")
    finally:
        if cache == "ours":
            mj.uninstall()
    return results[0], results[1]


def median_interval(ratios: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """A distribution-free `level` confidence interval for the median of `ratios`: the order
    statistics k and n+1-k (1-based), k the largest with P(Binomial(n, 1/2) < k) ≤ (1-level)/2.
    None when n is too small for one."""
    xs, n = sorted(ratios), len(ratios)
    tail, below, k = (1 - level) / 2, 0.0, 0
    while k < n // 2:
        below += math.comb(n, k) / 2 ** n  # P(fewer than k+1 of n pairs under the median)
        if below > tail:
            break
        k += 1
    return (xs[k - 1], xs[n - k]) if k > 0 else None


def sign_test(under: int, n: int) -> float:
    """Two-sided p of `under` of `n` pairs under 1 if each pair were a coin toss."""
    tail = sum(math.comb(n, k) for k in range(max(under, n - under), n + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def spread(ratios: list[float]) -> str:
    q = statistics.quantiles(ratios, n=4)
    interval = median_interval(ratios)
    shown = (f"95 % interval {interval[0]:.3f}–{interval[1]:.3f}" if interval
             else "too few pairs for a 95 % interval")
    under = sum(r < 1 for r in ratios)
    return (f"{statistics.median(ratios):.3f}x ({shown}; quartiles {q[0]:.3f}–{q[2]:.3f}, "
            f"range {min(ratios):.3f}–{max(ratios):.3f}; {under} of {len(ratios)} under 1, "
            f"sign test p {sign_test(under, len(ratios)):.3f})")


RUN_FIELDS = ("jax", "compression", "shape", "batch")


def pooled(paths: list[str]) -> tuple[dict, dict]:
    """The runs `--save` wrote to `paths`, as one: they must share JAX, compression, shape and
    batch (pairs of different workloads do not add up)."""
    meta, times = None, {c: {"cold": [], "warm": []} for c in ("jax", "ours")}
    for path in paths:
        try:
            with open(path) as f:
                run = json.load(f)
            seconds = run["seconds"]
            this = {field: run[field] for field in RUN_FIELDS}
            for cache, phases in times.items():
                for phase, values in phases.items():
                    got = seconds[cache][phase]
                    if not all(isinstance(v, (int, float)) and v > 0 for v in got):
                        raise ValueError(f"{cache} {phase}: not all positive seconds")
                    values.extend(got)
        except (OSError, ValueError, KeyError, TypeError) as ex:
            sys.exit(f"{path}: not a run `bench_paired.py --save` wrote ({type(ex).__name__}: {ex})")
        if meta is not None and this != meta:
            sys.exit(f"{path}: a run of {this}, not of {meta} like {paths[0]}: not pooled")
        meta = this
    if len(times["jax"]["cold"]) != len(times["ours"]["cold"]):
        sys.exit("the runs' batches do not pair up (unequal counts under the two caches)")
    return meta, times


def print_table(title: str, times: dict) -> None:
    print(title)
    print("| phase | JAX's cache | ours | ours / JAX's, per pair | sum of ours / sum of JAX's |")
    print("|---|---|---|---|---|")
    for phase in ("cold", "warm"):
        theirs, ours = times["jax"][phase], times["ours"][phase]
        ratios = [o / t for o, t in zip(ours, theirs)]
        print(f"| {phase} | {statistics.median(theirs):.3f} s ({min(theirs):.3f}) | "
              f"{statistics.median(ours):.3f} s ({min(ours):.3f}) | {spread(ratios)} | "
              f"{sum(ours) / sum(theirs):.3f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--batch", type=int, default=25, help="programs a batch")
    parser.add_argument("--shape", choices=("tanh", "mlp"), default="tanh")
    parser.add_argument("--save", metavar="FILE",
                        help="also write each batch's seconds (JSON), for a later look at the pairs")
    parser.add_argument("--pool", metavar="FILE", nargs="+",
                        help="run nothing: the table of runs --save wrote, their pairs as one run")
    args = parser.parse_args()
    if args.pool:
        meta, times = pooled(args.pool)
        pairs = len(times["jax"]["cold"])
        print_table(f"jax {meta['jax']} (its cache compresses with {meta['compression']}), "
                    f"{len(args.pool)} runs pooled: {pairs} pairs of {meta['batch']} "
                    f"{meta['shape']} programs; seconds a batch: median (best)", times)
        return
    if args.pairs < 2 or args.batch < 1:
        sys.exit("need --pairs ≥ 2 and --batch ≥ 1")
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    program = programs(args.shape)
    program(-1)  # JAX's backends, jit machinery and XLA warmed before anything is timed
    times = {"jax": {"cold": [], "warm": []}, "ours": {"cold": [], "warm": []}}
    with tempfile.TemporaryDirectory() as root:
        dirs = {cache: os.path.join(root, cache) for cache in times}
        next_program = 0
        for pair in range(args.pairs):
            order = ("jax", "ours") if pair % 2 == 0 else ("ours", "jax")
            for cache in order:
                indices = range(next_program, next_program + args.batch)
                next_program += args.batch
                cold, warm = timed_batch(cache, dirs[cache], indices, program)
                times[cache]["cold"].append(cold)
                times[cache]["warm"].append(warm)
    if args.save:
        with open(args.save, "w") as out:
            json.dump({"jax": jax.__version__, "compression": jax_compression(),
                       "shape": args.shape, "batch": args.batch, "seconds": times}, out, indent=1)
    print_table(f"jax {jax.__version__} (its cache compresses with {jax_compression()}), "
                f"{args.pairs} pairs of {args.batch} {args.shape} programs in one process, ABBA "
                "order; seconds a batch: median (best)", times)


if __name__ == "__main__":
    main()
