"""`install(prefetch=True)`, and "auto" (the default): each run is a fresh
process running the same script (so the same default identity); the second
loads what the first used before JAX asks, and only ever uses it under the key
computed now."""

from __future__ import annotations

import json
import os

import mlir_cache_key
import numpy as np
import pytest

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
if os.environ["PREFETCH"] == "default":
    mj.install(cache_dir, prefetch_budget=budget)
else:
    mj.install(cache_dir, prefetch=os.environ["PREFETCH"] == "on", prefetch_budget=budget)
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


@pytest.mark.parametrize("prefetch", ["on", "default"])
def test_second_run_uses_what_the_first_used(tmp_path, cache_dir, prefetch):
    first = run_program(tmp_path, cache_dir, prefetch=prefetch)
    assert first["hits"] == 0 and first["misses"] >= 3
    assert first["totals"]["prefetched"] == 0  # nothing recorded yet
    second = run_program(tmp_path, cache_dir, prefetch=prefetch)
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


def test_auto_stops_while_the_steps_change_and_starts_again_once_they_settle(
        tmp_path, cache_dir):
    def totals(scale):
        return run_program(tmp_path, cache_dir, scale=scale, prefetch="default")["totals"]

    nothing = dict.fromkeys(totals(2.0), 0)  # nothing recorded yet
    changed = totals(3.0)  # no outcome known yet: loads the 2.0 run's keys
    assert changed["prefetched"] >= 3 and changed["wasted"] >= 3, changed
    # That run asked for under half of its prediction (the three scaled jits changed): the
    # next does not load; nor the one after, whose last run measured the 3.0 run's keys
    # against the 4.0 run's.
    assert totals(4.0) == nothing
    assert totals(4.0) == nothing
    settled = totals(4.0)  # the last run asked for every key predicted: loads again
    assert settled["prefetched"] >= 3 and settled["used"] == settled["prefetched"], settled


def _recorded(cache, identity: str, platform: str, outcome: dict | None = None):
    """A run of `identity` recorded with one key on `platform` (its entry is absent)."""
    from mlir_cache_key import _native

    key = "jit_f-" + "ab" * 32
    context = dict(contexts=[dict(platform=platform, devices=[0], options="")],
                   of_key={key: 0}, outcome=outcome or {})
    _native.record_run_keys(cache, identity, "an-earlier-run", [key], json.dumps(context))


@pytest.mark.parametrize("used, loads", [(512, True), (513, False), (5500, False)])
def test_auto_leaves_a_test_suite_alone(cache_dir, used, loads):
    # A run that used more keys than a record keeps is a suite's: its loader would only take a
    # core from its first tests.
    from mlir_cache_key import _prefetch

    cache = mlir_cache_key.Cache(str(cache_dir))
    _recorded(cache, "a-suite", "cpu", dict(predicted=0, asked=0, keys=used))
    prefetcher = _prefetch.Prefetcher(cache, "a-suite", 1 << 20,
                                      policy=_prefetch.auto_policy(0.0))
    try:
        assert bool(prefetcher.workers) == (loads and _prefetch.usable_cores() >= 2)
        assert loads or "test suite" in prefetcher.policy.why
    finally:
        prefetcher.abandon()


@pytest.mark.parametrize("platform, verify_hits, loads", [
    ("cpu", 0.0, True), ("cuda", 0.0, False), ("tpu", 0.0, False), ("cpu", 0.5, False)])
def test_auto_loads_only_cpu_executables_and_never_under_audits(cache_dir, platform,
                                                                 verify_hits, loads):
    from mlir_cache_key import _prefetch

    cache = mlir_cache_key.Cache(str(cache_dir))
    _recorded(cache, "a-program", platform)
    prefetcher = _prefetch.Prefetcher(cache, "a-program", 1 << 20,
                                      policy=_prefetch.auto_policy(verify_hits))
    loads = loads and _prefetch.usable_cores() >= 2  # a loader needs a core of its own
    try:
        assert len(prefetcher.slots) == 1  # the prediction is kept, to measure it
        assert bool(prefetcher.workers) == loads, prefetcher.policy
    finally:
        prefetcher.abandon()
    forced = _prefetch.Prefetcher(cache, "a-program", 1 << 20)  # prefetch=True: any platform
    try:
        assert len(forced.workers) == 1
    finally:
        forced.abandon()


def test_auto_holds_at_most_a_sixteenth_of_memory():
    from mlir_cache_key import _prefetch

    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert _prefetch.auto_budget(1 << 50) == memory // 16
    assert _prefetch.auto_budget(1 << 20) == 1 << 20


def test_install_refuses_an_unknown_prefetch(cache_dir):
    import mlir_cache_key.jax as mj

    with pytest.raises(ValueError, match="prefetch must be"):
        mj.install(str(cache_dir), prefetch="always")
    assert mj.installed() is None


def test_a_damaged_entry_a_prefetch_meets_is_counted_corrupt_by_its_lookup(tmp_path, cache_dir):
    run_program(tmp_path, cache_dir)
    entries = sorted(p for p in (cache_dir / "v1" / "entries").rglob("*") if p.is_file())
    assert len(entries) >= 3
    for entry in entries:  # the payload's last byte: header and metadata still read
        damaged = bytearray(entry.read_bytes())
        damaged[-1] ^= 0x01
        entry.write_bytes(bytes(damaged))
    second = run_program(tmp_path, cache_dir)  # results checked: nothing damaged served
    t = second["totals"]
    assert t["used"] == 0 and second["hits"] == 0 and second["misses"] >= 3, t
    stats = mlir_cache_key.Cache(cache_dir).stats()
    # Each lookup of a damaged entry counted it, as without the prefetch (which counts none).
    assert stats["corrupt"] == second["misses"], (stats["corrupt"], second["misses"])


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
