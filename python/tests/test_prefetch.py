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


# A run under the name "probe" (recording its keys), or, with FAIL set, one whose JAX we do not
# match: its first key differs from JAX's own, so it keys with JAX's function from then on; the
# prefetch, started at install() under our keys, must then be abandoned: nothing loaded counted,
# nothing recorded.
PROBE_PROGRAM = """
import warnings
import numpy as np
import jax.numpy as jnp
from jax._src import cache_key
import mlir_cache_key
import mlir_cache_key.jax as mj
cache_dir = sys.argv[1]
if os.environ.get("FAIL"):
    real = cache_key.get
    cache_key.get = lambda *a, **k: real(*a, **k)[:-4] + "beef"
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    mj.install(cache_dir, prefetch=True, prefetch_name="probe")
    x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    results = [np.asarray(jax.jit(fn)(x)).tolist() for fn in (jnp.sin, jnp.cos, jnp.tanh)]
report(warnings=[str(w.message) for w in caught], results=results,
       prefetcher=mj._state.prefetcher is not None)
"""


def test_a_first_key_unlike_jaxs_abandons_the_prefetch(tmp_path, cache_dir):
    first = run(tmp_path, PROBE_PROGRAM, args=(str(cache_dir),))
    assert first["warnings"] == [] and first["prefetcher"]
    second = run(tmp_path, PROBE_PROGRAM, args=(str(cache_dir),))  # loads what the first used
    stats = mlir_cache_key.Cache(str(cache_dir)).stats()["prefetch"]
    assert stats["prefetched"] >= 3 and stats["used"] == stats["prefetched"], stats
    failed = run(tmp_path, PROBE_PROGRAM, args=(str(cache_dir),), env={"FAIL": "1"})
    assert any("differs from JAX's own" in w for w in failed["warnings"]), failed
    assert not failed["prefetcher"]
    assert failed["results"] == second["results"]  # JAX ran as with its own keys
    # Nothing the abandoned prefetch loaded was counted at exit, and the record still predicts.
    assert mlir_cache_key.Cache(str(cache_dir)).stats()["prefetch"] == stats
    again = run(tmp_path, PROBE_PROGRAM, args=(str(cache_dir),))
    assert again["warnings"] == []
    assert mlir_cache_key.Cache(str(cache_dir)).stats()["prefetch"]["used"] > stats["used"]


# A program that chooses its device count after install(), as test suites do at import, a
# moment after: a prefetch must not have started JAX's backends by then.
LATE_FLAGS = """
import time
import jax.numpy as jnp
import numpy as np
import mlir_cache_key
import mlir_cache_key.jax as mj

mj.install(sys.argv[1], prefetch=True, prefetch_name="late-flags")
time.sleep(0.5)  # the prefetch's loaders run meanwhile
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
jax.jit(lambda v: jnp.tanh(v * 3.5))(np.arange(16, dtype=np.float32)).block_until_ready()
mj.uninstall()  # records this run's keys and counters
report(devices=len(jax.devices()), events=dict(EVENTS),
       prefetch=mlir_cache_key.Cache(sys.argv[1]).stats()["prefetch"])
"""


def test_a_prefetch_leaves_the_devices_to_the_program(tmp_path, cache_dir):
    env = {"XLA_FLAGS": None}
    first = run(tmp_path, LATE_FLAGS, args=[str(cache_dir)], env=env)
    second = run(tmp_path, LATE_FLAGS, args=[str(cache_dir)], env=env)  # prefetches the first's
    assert first["devices"] == second["devices"] == 4
    assert second["events"].get("/jax/compilation_cache/cache_hits") == 1, second["events"]
    assert second["prefetch"]["used"] == 1, second["prefetch"]


# A process forked while its prefetch loaders wait for JAX's backends (each holding a slot it
# has started): the child has no loaders, so it must look up without the prefetch, at once.
FORKED = """
import time
import jax.numpy as jnp
import numpy as np
import mlir_cache_key.jax as mj

mj.install(sys.argv[1], prefetch=True, prefetch_name="forked")
fns = [jax.jit(lambda v, c=c: jnp.tanh(v * c)) for c in (1.5, 2.5, 3.5)]
x = np.arange(16, dtype=np.float32)
child = None
if os.environ.get("FORK"):
    time.sleep(0.5)  # the loaders have read their entries and wait for the backends
    loading = sum(s.state == "loading" for s in mj._state.prefetcher.slots.values())
    pid = os.fork()
    if pid == 0:
        start = time.monotonic()
        out = [np.asarray(f(x)).sum().item() for f in fns]
        with open(sys.argv[2], "w") as f:
            json.dump({"secs": time.monotonic() - start, "out": out,
                       "prefetcher": mj._state.prefetcher is not None}, f)
        os._exit(0)
    os.waitpid(pid, 0)
    with open(sys.argv[2]) as f:
        child = dict(json.load(f), loading=loading)
out = [np.asarray(f(x)).sum().item() for f in fns]
report(out=out, child=child)
"""


def test_a_forked_child_looks_up_without_its_parents_prefetch(tmp_path, cache_dir):
    first = run(tmp_path, FORKED, args=[str(cache_dir), str(tmp_path / "child.json")])
    forked = run(tmp_path, FORKED, args=[str(cache_dir), str(tmp_path / "child.json")],
                 env={"FORK": "1"})
    child = forked["child"]
    assert child["loading"] >= 1, child  # else this tests nothing
    assert not child["prefetcher"] and child["out"] == first["out"] == forked["out"]
    assert child["secs"] < 30, child  # a loader's slot would have held it for 60 s
