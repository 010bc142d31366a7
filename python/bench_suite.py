"""Benchmark and check on a real workload: a JAX library's own test suite (the tests optax ships
in its wheel), run twice per cache into a fresh cache directory — JAX's own persistent cache
against `mlir_cache_key.jax.install()` — in paired rounds (the order alternating).

Each run is one pytest process with a plugin that points JAX at the cache (every compile
cached: minimum compile time and entry size 0) and counts JAX's cache events. Checked, not
only timed: every run's test outcomes equal JAX's cold run's, and a warm run of ours misses no
lookup JAX's own warm run hits (the few programs a suite builds differently each run miss in
both). Prints Markdown.

Needs a venv with the wheel under test, jax, pytest, optax and chex (optax's tests import
chex; the few test modules that import scikit-learn or flax are skipped when those are
missing, the same for every run):
`VENV/bin/python python/bench_suite.py [--rounds R] [--package optax] [-k EXPR] [--no-prefetch]`
("ours" is `install()` as it comes, prefetch "auto"; `--no-prefetch`: ours with
`install(prefetch=False)` too).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = pathlib.Path(__file__).resolve().parent
# Measure the installed package (with its native module), not this source tree.
sys.path[:] = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE]

PLUGIN = '''
"""pytest plugin: jax.jit through JAX's persistent cache or ours; JAX's cache events counted."""
import collections, json, os, time
import jax
from jax._src import monitoring

EVENTS = collections.Counter()
START = time.perf_counter()

def pytest_configure(config):
    directory = os.environ["SUITE_CACHE_DIR"]
    jax.config.update("jax_compilation_cache_dir", directory)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    monitoring.register_event_listener(lambda event, **kw: EVENTS.update([event]))
    if os.environ["SUITE_CACHE"].startswith("ours"):
        import mlir_cache_key.jax
        # pytest's argv names each run's report: one prefetch identity for every run instead.
        prefetch = "auto" if os.environ["SUITE_CACHE"] == "ours" else False
        mlir_cache_key.jax.install(directory, prefetch=prefetch, prefetch_name="suite")

def pytest_unconfigure(config):
    with open(os.environ["SUITE_EVENTS"], "w") as out:
        json.dump({"events": dict(EVENTS), "seconds": time.perf_counter() - START}, out)
'''

REQUESTS = "/jax/compilation_cache/compile_requests_use_cache"
HITS = "/jax/compilation_cache/cache_hits"
WRITES = "/jax/compilation_cache/cache_misses"  # JAX counts a write as a miss


def outcomes(junit: pathlib.Path) -> dict[str, str]:
    """Each test's outcome (passed, failure, error, skipped) by id."""
    found = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        kind = next((c.tag for c in case if c.tag in ("failure", "error", "skipped")), "passed")
        found[f"{case.get('classname')}::{case.get('name')}"] = kind
    return found


def run(scratch: pathlib.Path, plugin_dir: pathlib.Path, tests: list[str], cache: str,
        directory: pathlib.Path, name: str, extra: list[str]) -> dict:
    events, junit = scratch / f"{name}.json", scratch / f"{name}.xml"
    env = {"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(plugin_dir),
           "SUITE_CACHE": cache, "SUITE_CACHE_DIR": str(directory), "SUITE_EVENTS": str(events)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "mck_suite_plugin", "-p", "no:cacheprovider",
         "--continue-on-collection-errors", f"--junitxml={junit}", *extra, *tests],
        capture_output=True, text=True, env=env, cwd=scratch)
    if not events.exists() or not junit.exists():
        sys.exit(f"the {name} run reported nothing:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    result = json.loads(events.read_text())
    result["outcomes"] = outcomes(junit)
    result["summary"] = done.stdout.strip().splitlines()[-1]
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--package", default="optax")
    parser.add_argument("-k", dest="select", help="pytest -k expression (a smaller suite)")
    parser.add_argument("--no-prefetch", action="store_true",
                        help="also ours with install(prefetch=False)")
    args = parser.parse_args()
    package = pathlib.Path(__import__(args.package).__file__).parent
    tests = sorted(str(p) for p in package.rglob("*_test.py"))
    extra = ["-k", args.select] if args.select else []
    caches = ["jax", "ours"] + (["ours-no-prefetch"] if args.no_prefetch else [])
    seconds = {(c, p): [] for c in caches for p in ("cold", "warm")}
    missed = {(c, p): [] for c in caches for p in ("cold", "warm")}
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = pathlib.Path(scratch_dir)
        (scratch / "mck_suite_plugin.py").write_text(PLUGIN)
        baseline = None
        for r in range(args.rounds):
            for cache in caches[r % len(caches):] + caches[:r % len(caches)]:
                directory = scratch / f"{cache}-{r}-cache"
                directory.mkdir()
                for phase in ("cold", "warm"):
                    name = f"{cache}-{phase}-{r}"
                    result = run(scratch, scratch, tests, cache, directory, name, extra)
                    baseline = baseline or result
                    moved = sorted(t for t in set(baseline["outcomes"]) | set(result["outcomes"])
                                   if baseline["outcomes"].get(t) != result["outcomes"].get(t))
                    if moved:
                        sys.exit(f"{name}: {len(moved)} outcomes differ from the first run's, "
                                 f"e.g. {moved[:5]}")
                    events = result["events"]
                    seconds[(cache, phase)].append(result["seconds"])
                    missed[(cache, phase)].append(events.get(REQUESTS, 0) - events.get(HITS, 0))
                    print(f"<!-- {name}: {result['summary']}; {events.get(REQUESTS, 0)} lookups, "
                          f"{events.get(HITS, 0)} hits, {events.get(WRITES, 0)} written -->",
                          flush=True)
    print(f"\n{args.package}'s own tests ({len(tests)} modules), {args.rounds} round(s); "
          "seconds per pytest process: median (best), and ours / JAX's per round, median")
    ours = caches[1:]
    print("| phase | JAX's cache | " + " | ".join(f"{c} | {c} / JAX's" for c in ours)
          + " | lookups missed: " + ", ".join(caches) + " |")
    print("|---|---|" + "---|---|" * len(ours) + "---|")
    for phase in ("cold", "warm"):
        jax_s = seconds[("jax", phase)]
        cells = [f"{statistics.median(jax_s):.1f} s ({min(jax_s):.1f})"]
        for c in ours:
            ours_s = seconds[(c, phase)]
            ratios = [o / j for o, j in zip(ours_s, jax_s)]
            cells += [f"{statistics.median(ours_s):.1f} s ({min(ours_s):.1f})",
                      f"{statistics.median(ratios):.3f}x ({min(ratios):.3f}–{max(ratios):.3f})"]
        cells.append(" / ".join(str(missed[(c, phase)]) for c in caches))
        print(f"| {phase} | " + " | ".join(cells) + " |")
    for c in ours:
        if any(o > j for o, j in zip(missed[(c, "warm")], missed[("jax", "warm")])):
            sys.exit(f"{c} missed warm lookups that JAX's own cache hit")


if __name__ == "__main__":
    main()
