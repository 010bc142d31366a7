"""The installed JAX release: it has parity vectors (tests/data/parity/<release>/,
made by scripts/gen-jax-parity.py from its `cache_key.get`; test_key.py checks
them), our key equals its own on the generator's programs, `key()` has its
`cache_key.get` signature, `install()`'s probe agrees, and a version outside
the known set is refused before anything is patched or accepted with a warning
once its names resolve and the probe agrees."""

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
        # The newest release's names: they resolve, the probe agrees.
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


def test_probe_disagreement_refuses_mode_jax(tmp_path, cache_dir):
    result = run(tmp_path, """
        from jax._src import cache_key, compilation_cache
        import mlir_cache_key.jax as mj
        originals = compilation_cache.get_cache_key
        real = cache_key.get
        cache_key.get = lambda *a, **k: real(*a, **k)[:-4] + "beef"  # a JAX we do not match
        try:
            mj.install(sys.argv[1])
            error = None
        except Exception as ex:
            error = f"{type(ex).__name__}: {ex}"
        untouched = compilation_cache.get_cache_key is originals
        mj.install(sys.argv[1], mode="canonical")  # promises no JAX keys: no probe
        report(error=error, untouched=untouched, canonical=mj.installed() is not None)
    """, args=[str(cache_dir)])
    assert result["error"].startswith("UnsupportedJaxVersion"), result
    assert "probe" in result["error"] and "beef" in result["error"]
    assert result["untouched"] and result["canonical"]


# An install that counts the probes it runs (a profile hook: patching a function would change
# the setting the memo is named by), then compiles a program.
COUNT_PROBES = """
import numpy as np
import mlir_cache_key.jax as mj
probes = []
def watch(frame, event, arg):
    if event == "call" and frame.f_code is mj.probe.__code__:
        probes.append(1)
sys.setprofile(watch)
try:
    mj.install(sys.argv[1])
    error = None
except Exception as ex:
    error = f"{type(ex).__name__}: {ex}"
sys.setprofile(None)
if os.environ.get("DISAGREE"):
    from jax._src import cache_key
    real = cache_key.get
    cache_key.get = lambda *a, **k: real(*a, **k)[:-4] + "beef"
    try:
        mj.install(sys.argv[1])
    except Exception as ex:
        error = f"{type(ex).__name__}: {ex}"
y = np.asarray(jax.jit(lambda x: x * 3)(np.float32(2))).tolist()
report(probes=len(probes), error=error, y=y)
"""


def test_install_remembers_an_agreeing_probe_for_its_setting_only(tmp_path, cache_dir):
    first = run(tmp_path, COUNT_PROBES, args=[str(cache_dir)])
    assert (first["probes"], first["error"], first["y"]) == (1, None, 6.0)
    memos = list((cache_dir / "v1" / "jax-probe").iterdir())
    assert len(memos) == 1, memos
    again = run(tmp_path, COUNT_PROBES, args=[str(cache_dir)])
    assert (again["probes"], again["error"], again["y"]) == (0, None, 6.0)
    # Another JAX configuration is another setting: probed (and remembered) again.
    x64 = run(tmp_path, COUNT_PROBES, args=[str(cache_dir)], env={"JAX_ENABLE_X64": "1"})
    assert x64["probes"] == 1 and x64["error"] is None
    assert len(list((cache_dir / "v1" / "jax-probe").iterdir())) == 2
    # A JAX whose key function changed is probed, and refused, whatever was remembered.
    changed = run(tmp_path, COUNT_PROBES, args=[str(cache_dir)], env={"DISAGREE": "1"})
    assert changed["error"].startswith("UnsupportedJaxVersion"), changed
    assert "beef" in changed["error"] and changed["y"] == 6.0
