"""Benchmark: many small programs, the shape of a test suite or a notebook — JAX's own
persistent cache against `mlir_cache_key.jax.install()`.

Each round, for each cache in turn (the order rotating between rounds), one fresh process
compiles N distinct small `jax.jit` programs (a 16-element `tanh` each, its constant making it
distinct) into an empty cache directory (cold: N misses), then a second fresh process runs the
same N programs again (warm: N hits). Each process times its own loop (from the first jit to the
last result; for ours, until its worker has done what the loop left it), and `install()` (ours)
alone. Ratios are ours / JAX's per round, then their median.

Run with a test venv: `target/py-matrix/0.12.0.1/bin/python python/bench_small.py [--programs N]
[--rounds R] [--profile] [--no-prefetch] [--shape mlp] [--per-call] [--variants]`. Prints
Markdown.
"ours" is `install()` as it comes (prefetch "auto"); `--no-prefetch`: ours with
`install(prefetch=False)` too. `--shape mlp`: larger programs (a 6-layer
tanh MLP with a gradient, 64×64 weights), nearer a test suite's. `--per-call`: also each
process's median key (`get_cache_key`) and lookup (`_cache_read`; a hit's includes reading,
decompressing and deserializing) inside JAX, and the whole cached compile
(`compile_or_get_cached`) beside the XLA compile in it: their difference is the cache's share.
`--prefill N`: the cold process first stores N entries named as the programs' module
(`jit__lambda`), through JAX's own file cache or ours, before its loop: misses in a cache a test
suite has filled.
`--variants` adds "jax-imported" (JAX's cache with `mlir_cache_key.jax` imported, nothing
installed), "ours-no-explain" (`install(prefetch=False, explain=False)`) and "ours-store-inline"
(`install(prefetch=False)`, each entry stored before JAX gets its executable): whether a cold
run's time moves with our package, our explanations or our worker. `--profile` also runs one
cold and one warm process of ours under cProfile and prints where the time went.
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

CHILD = """
import json, os, sys, time
spec = json.loads(sys.argv[1])
import jax
jax.config.update("jax_compilation_cache_dir", spec["dir"])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
install_ms = None
if spec.get("import_only"):  # JAX's cache, with our package loaded (and nothing installed)
    import mlir_cache_key.jax
if spec["cache"] == "ours":
    import mlir_cache_key.jax as mj
    start = time.perf_counter()
    mj.install(spec["dir"], prefetch=spec["prefetch"], explain=spec["explain"])
    install_ms = (time.perf_counter() - start) * 1e3
    if spec["store_inline"]:  # each entry stored before JAX gets its executable
        cache = mj._state.cache
        class Inline:
            def __getattr__(self, name):
                return getattr(cache, name)
            def compile_once(self, *args, **kwargs):
                return cache.compile_once(*args, **dict(kwargs, store_later=False))
        mj._state.cache = Inline()
calls = {"get_cache_key": [], "_cache_read": [], "compile_or_get_cached": [],
         "backend_compile_and_load": []}
if spec.get("per_call"):  # the key, and the lookup (a hit: read, decompress, deserialize)
    from jax._src import compilation_cache, compiler
    def timed(module, name):
        inner = getattr(module, name)
        def wrapper(*a, **k):
            start = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                calls[name].append(time.perf_counter() - start)
        setattr(module, name, wrapper)
    timed(compilation_cache, "get_cache_key")
    timed(compiler, "_cache_read")
    timed(compiler, "compile_or_get_cached")
    timed(compiler, "backend_compile_and_load")

if spec.get("prefill"):  # a cache that already holds N entries of the programs' module name
    import hashlib
    if spec["cache"] == "ours":
        put = mj._state.cache.put
    else:
        from jax._src.lru_cache import LRUCache
        put = LRUCache(spec["dir"], max_size=-1).put
    for i in range(spec["prefill"]):
        put("jit__lambda-" + hashlib.sha256(b"prefill %d" % i).hexdigest(), b"x" * 200)
    if spec["cache"] == "ours":
        mj._state.cache.settle()

sys.path.append(spec["here"])  # after the installed package: only for bench_programs
from bench_programs import programs
program = programs(spec["shape"])

def loop():
    return sum(program(i) for i in range(spec["programs"]))

if spec.get("profile"):
    import cProfile, pstats, io
    profile = cProfile.Profile()
    profile.enable()
start = time.perf_counter()
total = loop()
if spec["cache"] == "ours":  # what ours left to its worker is part of the loop's cost
    mj._state.cache.settle()
loop_s = time.perf_counter() - start
if spec.get("profile"):
    profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(25)
    print(out.getvalue(), file=sys.stderr)
per_call = {k: sorted(v)[len(v) // 2] * 1e6 for k, v in calls.items() if v}
per_call.update({k + " (sum ms)": sum(v) * 1e3 for k, v in calls.items() if v})
print("RESULT " + json.dumps({"loop_s": loop_s, "install_ms": install_ms, "total": total,
                              "per_call_us": per_call}))
"""


# The variants `--variants` adds, beside "jax" and "ours": where a cold run's time goes.
VARIANTS = ("jax-imported", "ours-no-explain", "ours-store-inline")


def child(cache: str, directory: str, args, profile: bool = False, prefill: int = 0) -> dict:
    spec = {"cache": "ours" if cache.startswith("ours") else "jax", "dir": directory,
            "programs": args.programs, "profile": profile, "prefetch": "auto" if cache == "ours" else False,
            "shape": args.shape, "per_call": args.per_call, "import_only": cache == "jax-imported",
            "explain": cache != "ours-no-explain", "store_inline": cache == "ours-store-inline",
            "prefill": prefill, "here": str(HERE)}
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], capture_output=True,
                          text=True, env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin",
                                                 "HOME": os.environ.get("HOME", "/")})
    if done.returncode != 0:
        sys.exit(f"the {cache} child failed:\n{done.stderr[-4000:]}")
    if profile:
        print(f"### {cache}, {'warm' if pathlib.Path(directory, '.warm').exists() else 'cold'}\n"
              f"```\n{done.stderr[-6000:]}\n```")
    line = next(l for l in done.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--programs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--no-prefetch", action="store_true",
                        help="also ours with install(prefetch=False)")
    parser.add_argument("--shape", choices=("tanh", "mlp"), default="tanh",
                        help="tanh: a 16-element tanh each; mlp: a 6-layer MLP with a gradient")
    parser.add_argument("--per-call", action="store_true",
                        help="also time each key and lookup inside JAX (µs, medians)")
    parser.add_argument("--prefill", type=int, default=0, metavar="N",
                        help="the cold process first stores N entries named as the programs' "
                             "module (jit__lambda), as a test suite's cache holds: through JAX's "
                             "own file cache or ours, before its loop is timed")
    parser.add_argument("--variants", action="store_true",
                        help="also JAX's cache with our package imported, and ours without "
                             "prefetch and explanations, or storing before JAX gets its executable")
    args = parser.parse_args()
    caches = (["jax", "ours"] + (["ours-no-prefetch"] if args.no_prefetch else [])
              + (list(VARIANTS) if args.variants else []))
    runs = {(c, phase): [] for c in caches for phase in ("cold", "warm")}
    installs = {"cold": [], "warm": []}
    per_call = {key: [] for key in runs}
    totals = set()
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(args.rounds):
            for cache in caches[r % len(caches):] + caches[:r % len(caches)]:
                directory = f"{scratch}/{cache}-{r}"
                pathlib.Path(directory).mkdir()
                for phase in ("cold", "warm"):
                    result = child(cache, directory, args,
                                   prefill=args.prefill if phase == "cold" else 0)
                    runs[(cache, phase)].append(result["loop_s"])
                    per_call[(cache, phase)].append(result["per_call_us"])
                    totals.add(round(result["total"], 3))
                    if result["install_ms"] is not None and cache == "ours":
                        installs[phase].append(result["install_ms"])
        if args.profile:
            directory = f"{scratch}/profile"
            pathlib.Path(directory).mkdir()
            child("ours", directory, args, profile=True)
            pathlib.Path(directory, ".warm").touch()
            child("ours", directory, args, profile=True)
    assert len(totals) == 1, f"the programs' results differ between runs: {totals}"
    prefilled = f", cold caches prefilled with {args.prefill} entries" if args.prefill else ""
    print(f"{args.programs} {args.shape} programs, {args.rounds} rounds (order alternating){prefilled}; "
          "seconds per process loop: median (best), and ours / JAX's per round, median")
    ours = caches[1:]
    print("| phase | JAX's cache | " + " | ".join(f"{c} | {c} / JAX's" for c in ours) + " |")
    print("|---|---|" + "---|---|" * len(ours))
    for phase in ("cold", "warm"):
        jax_s = runs[("jax", phase)]
        cells = [f"{statistics.median(jax_s):.3f} s ({min(jax_s):.3f})"]
        for c in ours:
            ours_s = runs[(c, phase)]
            ratios = [o / j for o, j in zip(ours_s, jax_s)]
            cells += [f"{statistics.median(ours_s):.3f} s ({min(ours_s):.3f})",
                      f"{statistics.median(ratios):.3f}x ({min(ratios):.3f}–{max(ratios):.3f})"]
        print(f"| {phase} | " + " | ".join(cells) + " |")
    for phase, why in (("cold", "a fresh cache directory: the libraries' digests remembered "
                                "for the user, or hashed the first time"),
                       ("warm", "their digests remembered in the cache directory")):
        took = installs[phase]
        print(f"\n`install()`, {phase} ({why}): median {statistics.median(took):.1f} ms "
              f"(best {min(took):.1f}) over {len(took)} processes")
    if args.per_call:
        print_per_call(per_call, caches)


def print_per_call(per_call: dict, caches: list[str]) -> None:
    print("\nµs per call inside JAX (median over processes of each one's median)")
    print("| phase | per call | " + " | ".join(caches) + " |")
    print("|---|---|" + "---|" * len(caches))
    for phase in ("cold", "warm"):
        for name, what in (("get_cache_key", "key"), ("_cache_read", "lookup"),
                           ("compile_or_get_cached", "whole cached compile"),
                           ("backend_compile_and_load", "XLA compile"),
                           ("compile_or_get_cached (sum ms)", "whole cached compile, ms a loop"),
                           ("backend_compile_and_load (sum ms)", "XLA compile, ms a loop")):
            cells = [f"{statistics.median(p.get(name, 0) for p in per_call[(c, phase)]):.0f}"
                     for c in caches]
            print(f"| {phase} | {what} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
