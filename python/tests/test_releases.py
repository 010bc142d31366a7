"""The installed JAX release: it has parity vectors (tests/data/parity/<release>/,
made by scripts/gen-jax-parity.py from its `cache_key.get`; test_key.py checks
them), our key equals its own on the generator's programs, `key()` has its
`cache_key.get` signature, the first key of a process is checked against JAX's
(a disagreement keys with JAX's own function), and a version outside the known
set is refused before anything is patched or accepted with a warning once its
names resolve."""

import inspect

import jax

from conftest import REPO, run

RELEASE_DIR = REPO / "tests" / "data" / "parity" / jax.__version__
VECTORS = sorted(p.parent.name for p in RELEASE_DIR.glob("*/expected.json"))


def test_this_release_has_vectors():
    assert len(VECTORS) >= 8, f"no parity vectors of jax {jax.__version__} in {RELEASE_DIR}"


# Recomputes each vector's program with JAX itself and with our key(), in this
# release (the vectors were made by the same release: this checks the
# canonicalization as well, which the vectors alone cannot).
LIVE = """
import importlib.util, numpy as np
spec = importlib.util.spec_from_file_location("gen", sys.argv[1])
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
import mlir_cache_key.jax as mj
from jax._src import cache_key
out = {}
for case, lowered, callbacks in gen.programs():
    module = lowered.compiler_ir("stablehlo")
    devices, options = gen.devices_and_options(case)
    backend = jax.devices()[0].client
    if callbacks is None:
        callbacks = cache_key.IgnoreCallbacks.NO if gen.ENUM_CALLBACKS else False
    out[case] = [cache_key.get(module, devices, options, backend, "zstandard", callbacks),
                 mj.key(module, devices, options, backend, "zstandard", callbacks)]
report(keys=out)
"""


def test_our_key_equals_jax_on_every_generator_program(tmp_path):
    result = run(tmp_path, LIVE, args=[str(REPO / "scripts" / "gen-jax-parity.py")])
    assert len(result["keys"]) >= 7
    for case, (theirs, ours) in result["keys"].items():
        assert ours == theirs, case


def test_key_has_this_releases_signature():
    import mlir_cache_key.jax as mj
    from jax._src import cache_key

    ours = list(inspect.signature(mj.key).parameters)
    theirs = list(inspect.signature(cache_key.get).parameters)
    assert ours == [*theirs, "mode"]
    expected = "ignore_callbacks" if hasattr(cache_key, "IgnoreCallbacks") else \
        "ignore_custom_partitioning"
    assert theirs[-1] == expected


def test_probe_agrees_with_jax():
    import mlir_cache_key.jax as mj

    ours, theirs = mj.probe()
    assert ours == theirs


# A child that pretends to be another JAX version before importing us.
PRETEND = """
import warnings
import jax, jaxlib
from jax._src import compilation_cache, compiler
version = sys.argv[1]
jax.__version__ = version
jaxlib.__version__ = version
if sys.argv[2] == "drop_name":
    del compiler._compile_and_write_cache
originals = (compilation_cache.get_cache_key, compilation_cache.get_file_cache)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        import mlir_cache_key.jax as mj
        mj.install(sys.argv[3])
        error = None
    except Exception as ex:
        error = f"{type(ex).__name__}: {ex}"
patched = (compilation_cache.get_cache_key, compilation_cache.get_file_cache) != originals
report(error=error, patched=patched, warnings=[str(w.message) for w in caught])
"""


def test_older_version_is_refused_before_anything_is_patched(tmp_path, cache_dir):
    result = run(tmp_path, PRETEND, args=["0.7.2", "-", str(cache_dir)])
    assert result["error"].startswith("UnsupportedJaxVersion"), result
    assert "0.7.2" in result["error"]
    assert not result["patched"]


def test_newer_version_installs_with_a_warning_only_if_every_name_resolves(tmp_path, cache_dir):
    from mlir_cache_key import _jax_internals as J

    result = run(tmp_path, PRETEND, args=["99.0.0", "-", str(cache_dir)])
    if J.RELEASE == J.RELEASES[J.NEWEST]:
        # The newest release's names: they resolve, and install() patches.
        assert result["error"] is None, result
        assert result["patched"]
        assert any("99.0.0" in w and "newer than the newest tested" in w
                   for w in result["warnings"])
    else:
        # An older release's internals under the newest table: refused, naming what is missing.
        assert result["error"].startswith("UnsupportedJaxVersion"), result
        assert "99.0.0" in result["error"] and "missing" in result["error"]
        assert not result["patched"]


def test_newer_version_missing_a_name_is_refused_naming_it(tmp_path, cache_dir):
    result = run(tmp_path, PRETEND, args=["99.0.0", "drop_name", str(cache_dir)])
    assert result["error"].startswith("UnsupportedJaxVersion"), result
    assert "99.0.0" in result["error"] and "compiler:_compile_and_write_cache" in result["error"]
    assert not result["patched"]


# A JAX whose key function we do not match (DISAGREE set: its `cache_key.get` ends every key in
# "beef"), or one we do: install() starts no backend, the first key of the process is checked
# against JAX's own (counted: `J.jax_key` is what computes JAX's), from four threads at once,
# and the keys used are what `get_cache_key` returned.
FIRST_KEY = """
import threading
import warnings
import numpy as np
import jax.numpy as jnp
from jax._src import cache_key, compilation_cache, xla_bridge
import mlir_cache_key.jax as mj
if os.environ.get("DISAGREE"):
    real = cache_key.get
    cache_key.get = lambda *a, **k: real(*a, **k)[:-4] + "beef"
if os.environ.get("RAISE_ONCE"):  # JAX's key cannot be made of the first module it is asked
    real, raised = cache_key.get, []
    def get(*a, **k):
        if not raised:
            raised.append(1)
            raise ValueError("no key of this one")
        return real(*a, **k)
    cache_key.get = get
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
checks = []
jax_key = mj.J.jax_key
mj.J.jax_key = lambda *a: (checks.append(1), jax_key(*a))[1]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    mj.install(sys.argv[1], mode=os.environ.get("MODE", "jax"))
    started_by_install = xla_bridge.backends_are_initialized()
    keys = []
    ours = compilation_cache.get_cache_key
    compilation_cache.get_cache_key = lambda *a, **k: (lambda key: (keys.append(key), key)[1])(
        ours(*a, **k))
    x = np.arange(16, dtype=np.float32)
    results = [None] * 4
    def one(i):
        results[i] = np.asarray(jax.jit(lambda v: jnp.tanh(v * (i + 1.5)))(x)).sum().item()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
report(started_by_install=started_by_install, checks=len(checks), keys=keys, results=results,
       warnings=[str(w.message) for w in caught], events=dict(EVENTS))
"""


# Two threads meet in JAX's check of whether the cache is used, both before it is made: each
# leaves JAX's first locked block and waits (up to 2 s) for the other there. JAX's own function
# then answers False to one of them (its compile would skip the cache); under install() the
# second waits outside until the first is done, and both are told True.
CHECK_RACE = """
import threading
from jax._src import compilation_cache as cc, xla_bridge
import mlir_cache_key.jax as mj
jax.config.update("jax_compilation_cache_dir", sys.argv[1])
backend = xla_bridge.get_backend()
mutex, seen = cc._cache_initialized_mutex, threading.local()
class Gate:  # JAX's mutex, whose first release in each thread waits for the other thread
    def __init__(self):
        self.barrier = threading.Barrier(2, timeout=2.0)
    def __enter__(self):
        mutex.acquire()
    def __exit__(self, *exc):
        mutex.release()
        if not getattr(seen, "gated", False):
            seen.gated = True
            try:
                self.barrier.wait()
            except threading.BrokenBarrierError:
                pass
def race():
    cc.reset_cache()
    cc._cache_initialized_mutex = Gate()
    answers = []
    def ask():
        seen.gated = False
        answers.append(cc.is_cache_used(backend))
    threads = [threading.Thread(target=ask) for _ in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    cc._cache_initialized_mutex = mutex
    return sorted(answers)
jaxs = race()
mj.install(sys.argv[1])
ours = race()
report(jaxs=jaxs, ours=ours)
"""


def test_threads_racing_to_jaxs_first_cache_check_are_all_told_to_use_it(tmp_path, cache_dir):
    result = run(tmp_path, CHECK_RACE, args=[str(cache_dir)])
    assert result["jaxs"] == [False, True], result  # the race the test sets up is JAX's
    assert result["ours"] == [True, True], result


def test_install_starts_nothing_and_the_first_key_is_checked_once(tmp_path, cache_dir):
    result = run(tmp_path, FIRST_KEY, args=[str(cache_dir)])
    assert not result["started_by_install"]
    assert result["checks"] == 1, result  # one JAX key per process, whatever the threads
    assert len(set(result["keys"])) == 4 and not any(k.endswith("beef") for k in result["keys"])
    assert result["warnings"] == [], result["warnings"]
    canonical = run(tmp_path, FIRST_KEY, args=[str(cache_dir)], env={"MODE": "canonical"})
    assert canonical["checks"] == 0  # promises no JAX keys: nothing to check


def test_a_first_key_jax_cannot_make_skips_the_cache_and_the_next_is_checked(tmp_path, cache_dir):
    result = run(tmp_path, FIRST_KEY, args=[str(cache_dir)], env={"RAISE_ONCE": "1"})
    assert result["checks"] == 2 and result["warnings"] == [], result
    assert sorted(k is None for k in result["keys"]) == [False, False, False, True], result
    assert result["results"] == run(tmp_path, FIRST_KEY, args=[str(tmp_path / "o")])["results"]


def test_a_first_key_unlike_jaxs_turns_the_process_to_jaxs_own_keys(tmp_path, cache_dir):
    first = run(tmp_path, FIRST_KEY, args=[str(cache_dir)], env={"DISAGREE": "1"})
    warned = [w for w in first["warnings"] if "differs from JAX's own" in w]
    assert len(warned) == 1, first["warnings"]
    assert "beef" in warned[0] and "mode=\"canonical\"" in warned[0]
    # Every key the process used is JAX's own, the first one's included.
    assert len(first["keys"]) == 4 and all(k.endswith("beef") for k in first["keys"]), first
    assert first["results"] == run(tmp_path, FIRST_KEY, args=[str(tmp_path / "other")])["results"]
    # Its entries are kept under JAX's keys: the same JAX hits them on its next run.
    again = run(tmp_path, FIRST_KEY, args=[str(cache_dir)], env={"DISAGREE": "1"})
    assert sorted(again["keys"]) == sorted(first["keys"])
    assert again["events"].get("/jax/compilation_cache/cache_hits") == 4, again["events"]
    assert again["results"] == first["results"]
    canonical = run(tmp_path, FIRST_KEY, args=[str(cache_dir)],
                    env={"DISAGREE": "1", "MODE": "canonical"})
    assert canonical["warnings"] == [] and not any(k.endswith("beef") for k in canonical["keys"])
