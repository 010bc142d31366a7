"""`install(prefetch=True)`: each run is a fresh process running the same
script (so the same default identity); the second loads what the first used
before JAX asks, and only ever uses it under the key computed now."""

from __future__ import annotations

import mlir_cache_key
import numpy as np

from conftest import run

# Three jits of a scale the environment sets (as the budget: the command line,
# hence the identity, stays the same); reports results, this run's
# prefetch counters, the cache's, and JAX's hit and miss events.
PROGRAM = """
import numpy as np
import jax.numpy as jnp
import mlir_cache_key
import mlir_cache_key.jax as mj
cache_dir = sys.argv[1]
scale, budget = float(os.environ["SCALE"]), int(os.environ["BUDGET"])
prefetch = os.environ["PREFETCH"] == "on"
mj.install(cache_dir, prefetch=prefetch, prefetch_budget=budget)
prefetcher = mj._state.prefetcher
STORE_READS = collections.Counter()  # lookups JAX's own path served from the store
store_get = mj._StoreCache.get
mj._StoreCache.get = lambda self, key: STORE_READS.update([key]) or store_get(self, key)
time.sleep(0.5)  # the time a real program spends importing and tracing: loads finish first
x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
f = jax.jit(lambda x: jnp.sin(x) * scale)
g = jax.jit(lambda x: x @ x.T + scale)
h = jax.jit(lambda x: jnp.cumsum(x, axis=1) - scale)
results = [np.asarray(fn(x)).tolist() for fn in (f, g, h)]
mj.uninstall()  # closes the window and records the run
report(results=results,
       totals=vars(prefetcher.totals) if prefetcher else None,
       held=[prefetcher.peak_held, prefetcher.largest_held] if prefetcher else None,
       stats=mlir_cache_key.Cache(cache_dir).stats()["prefetch"],
       store_reads=sum(STORE_READS.values()),
       hits=EVENTS["/jax/compilation_cache/cache_hits"],
       misses=EVENTS["/jax/compilation_cache/cache_misses"])
"""


def expected(scale: float) -> list:
    x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    return [np.sin(x) * scale, x @ x.T + scale, np.cumsum(x, axis=1) - scale]


def run_program(tmp_path, cache_dir, scale=2.0, budget=1 << 30, prefetch="on"):
    result = run(tmp_path, PROGRAM, args=(str(cache_dir),),
                 env={"SCALE": str(scale), "BUDGET": str(budget), "PREFETCH": prefetch})
    for got, want in zip(result["results"], expected(scale)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    return result


def test_second_run_uses_what_the_first_used(tmp_path, cache_dir):
    first = run_program(tmp_path, cache_dir)
    assert first["hits"] == 0 and first["misses"] >= 3
    assert first["totals"]["prefetched"] == 0  # nothing recorded yet
    second = run_program(tmp_path, cache_dir)
    t = second["totals"]
    assert t["prefetched"] >= 3 and t["used"] == t["prefetched"] and t["wasted"] == 0, t
    assert t["used_bytes"] > 0 and second["misses"] == 0 and second["hits"] >= 3
    assert second["store_reads"] == 0  # every hit was a prefetched executable
    # The cache's counters add the runs up; `cache stats` shows the same numbers.
    assert second["stats"]["used"] == t["used"] and second["stats"]["prefetched_bytes"] > 0


def test_a_changed_constant_never_uses_a_stale_executable(tmp_path, cache_dir):
    run_program(tmp_path, cache_dir, scale=2.0)
    changed = run_program(tmp_path, cache_dir, scale=3.0)  # results checked against 3.0
    t = changed["totals"]
    # The input's own jit (arange) is unchanged and may be used; the three scaled ones not.
    assert t["prefetched"] >= 3 and t["wasted"] >= 3 and changed["misses"] >= 3, t
    assert t["used"] == t["prefetched"] - t["wasted"]


def test_no_record_behaves_as_without_prefetch(tmp_path, cache_dir):
    run_program(tmp_path, cache_dir, prefetch="off")  # fills the cache, records no keys
    first = run_program(tmp_path, cache_dir)
    plain = run_program(tmp_path, cache_dir, prefetch="off")
    assert first["totals"] == dict.fromkeys(first["totals"], 0)
    assert first["hits"] >= 3 and first["misses"] == 0
    assert [first[k] for k in ("hits", "misses", "store_reads", "results")] == \
        [plain[k] for k in ("hits", "misses", "store_reads", "results")]


def test_the_budget_bounds_what_is_held(tmp_path, cache_dir):
    run_program(tmp_path, cache_dir)
    tiny = run_program(tmp_path, cache_dir, budget=1)
    assert tiny["totals"] == dict.fromkeys(tiny["totals"], 0), tiny["totals"]
    assert tiny["held"] == [0, 0]
    assert tiny["hits"] >= 3 and tiny["misses"] == 0  # loaded as without prefetch
    full = run_program(tmp_path, cache_dir)
    peak, largest = full["held"]
    assert full["totals"]["prefetched"] >= 3 and peak > largest > 0
    # Room for the largest entry but not for all: some load, never more than the budget.
    some = run_program(tmp_path, cache_dir, budget=largest)
    assert 1 <= some["totals"]["prefetched"] < full["totals"]["prefetched"], some["totals"]
    assert some["held"][0] <= largest and some["misses"] == 0


# A run under the name "probe" (recording its keys), or, with FAIL set, one whose probe
# disagrees (a JAX we do not match): its install must fail having patched nothing, and its
# prefetch, started before the probe, must load nothing into the counters and record nothing.
PROBE_PROGRAM = """
import numpy as np
import jax.numpy as jnp
from jax._src import cache_key, compilation_cache
import mlir_cache_key
import mlir_cache_key.jax as mj
cache_dir = sys.argv[1]
original = compilation_cache.get_cache_key
if os.environ.get("FAIL"):
    real = cache_key.get
    cache_key.get = lambda *a, **k: real(*a, **k)[:-4] + "beef"
try:
    mj.install(cache_dir, prefetch=True, prefetch_name="probe")
    error = None
except Exception as ex:
    error = f"{type(ex).__name__}: {ex}"
x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
results = [np.asarray(jax.jit(fn)(x)).tolist() for fn in (jnp.sin, jnp.cos, jnp.tanh)]
report(error=error, untouched=compilation_cache.get_cache_key is original,
       results=results, installed=mj.installed() is not None)
"""


def test_a_failed_probe_abandons_the_prefetch_it_started(tmp_path, cache_dir):
    first = run(tmp_path, PROBE_PROGRAM, args=(str(cache_dir),))
    assert first["error"] is None and first["installed"]
    second = run(tmp_path, PROBE_PROGRAM, args=(str(cache_dir),))  # loads what the first used
    stats = mlir_cache_key.Cache(str(cache_dir)).stats()["prefetch"]
    assert stats["prefetched"] >= 3 and stats["used"] == stats["prefetched"], stats
    failed = run(tmp_path, PROBE_PROGRAM, args=(str(cache_dir),), env={"FAIL": "1"})
    assert failed["error"].startswith("UnsupportedJaxVersion") and "probe" in failed["error"]
    assert failed["untouched"] and not failed["installed"]
    assert failed["results"] == second["results"]  # JAX ran as without us
    # Nothing the abandoned prefetch loaded was counted at exit, and the record still predicts.
    assert mlir_cache_key.Cache(str(cache_dir)).stats()["prefetch"] == stats
    again = run(tmp_path, PROBE_PROGRAM, args=(str(cache_dir),))
    assert again["error"] is None
    assert mlir_cache_key.Cache(str(cache_dir)).stats()["prefetch"]["used"] > stats["used"]
