"""What makes a small program's miss and hit cheap (issue #39), held by tests: the value is a
zlib stream JAX's own reader takes, stored without deflating; the record a JAX entry keeps
leaves out the compile options' text view (most of its size) while `why` still names a
changed option from their hashed bytes; and a hit lets the module go at once."""

import json
import subprocess
import sys

from jax._src import compilation_cache

import mlir_cache_key.jax as mj
from conftest import PYTHON_DIR, child_env, run


def jax_wrote_zstd() -> bool:
    """Which compression JAX's cache writes, from its own writer: a zstd frame's magic number."""
    return compilation_cache.compress_executable(bytes(64)).startswith(b"\x28\xb5\x2f\xfd")


def test_the_package_knows_which_compression_jax_writes():
    # Our values are compressed as JAX's are, and the benchmark's figures are labelled by it.
    assert mj.J.jax_writes_zstd() == jax_wrote_zstd()


# Two programs under two sets of compile options, then what the cache holds for them.
SMALL = """
import zlib
import jax.numpy as jnp
import numpy as np
import mlir_cache_key.jax as mj

spec = json.loads(sys.argv[1])
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
mj.install(spec["cache_dir"])
seen = []
remember = mj._Installed.remember
mj._Installed.remember = lambda state, computed: (seen.append(computed.key),
                                                   remember(state, computed))
x = np.arange(16, dtype=np.float32)
options = {"xla_cpu_enable_fast_math": True}
for compiler_options in (None, options, None):  # two misses, then a hit of the first
    jax.jit(lambda v: jnp.tanh(v * 1.5), compiler_options=compiler_options)(x).block_until_ready()
cache = mj.installed()
keys = list(dict.fromkeys(seen))
values = [cache.get(k) for k in keys]
records = [json.loads(cache.nearest_record(k) or "null") for k in keys]
zlib_values = not mj.J.jax_writes_zstd()
report(keys=len(seen), keys_left=list(mj._state.recent), events=dict(EVENTS),
       sizes=[[len(v), len(zlib.decompress(v)) if zlib_values else None] for v in values],
       options=[r["entries"][4]["readable"] if r else None for r in records],
       why=mj._native().why(cache.nearest_record(keys[0]), cache.nearest_record(keys[1])))
"""


def test_small_values_stored_records_lean_and_why_still_names_the_option(tmp_path, cache_dir):
    result = run(tmp_path, SMALL, args=[json.dumps({"cache_dir": str(cache_dir)})])
    for stored, executable in result["sizes"]:
        # A zlib stream of stored blocks: a few bytes of framing more than what it holds.
        assert executable is None or executable < stored < executable + 64, (stored, executable)
    assert len(result["sizes"]) == 2 and result["keys"] == 3
    assert result["events"].get("/jax/compilation_cache/cache_hits") == 1, result["events"]
    for options in result["options"]:
        assert options is not None and options["format"] == "proto"
        assert options["hashed"] and options["text"] == []
    assert "xla_cpu_enable_fast_math" in result["why"], result["why"]
    assert result["keys_left"] == [], "a hit (or a finished miss) keeps no module alive"


# Programs compiled one after another, watching where each entry's executable is serialized.
SERIALIZED = """
import threading
import jax.numpy as jnp
import numpy as np
import mlir_cache_key
import mlir_cache_key.jax as mj

spec = json.loads(sys.argv[1])
jax.config.update("jax_persistent_cache_min_entry_size_bytes", spec["min_size"])
mj.install(spec["cache_dir"], prefetch=False)
warnings = Lines("mlir_cache_key", logging.WARNING)
made, compiling = [], []
entry_value, compile_and_load = mj.J.entry_value, mj.J.backend_compile_and_load

def traced_entry_value(executable, secs):
    made.append({"main": threading.current_thread() is threading.main_thread(),
                 "during_a_compile": bool(compiling)})
    if spec["fail"]:
        raise RuntimeError("no serializing today")
    return entry_value(executable, secs)

def traced_compile(*args):
    compiling.append(1)
    try:
        return compile_and_load(*args)
    finally:
        compiling.pop()

mj.J.entry_value, mj.J.backend_compile_and_load = traced_entry_value, traced_compile
x = np.arange(16, dtype=np.float32)
def program(c):
    return np.asarray(jax.jit(lambda v: jnp.tanh(v * c))(x)).tolist()
results = [program(c) for c in spec["scales"]]
# Nothing compiles or settles now: the last entry is made once its patience is over.
time.sleep(1)
stored = mlir_cache_key.Cache(spec["cache_dir"]).stats()["entries"]
jax.clear_caches()
again = program(spec["scales"][0])  # its key's claim was let go, whatever became of its entry
report(results=results, again=again, made=made, stored=stored, events=dict(EVENTS),
       warnings=warnings.take())
"""


def serialized(tmp_path, cache_dir, scales, *, min_size=0, fail=False) -> dict:
    spec = {"cache_dir": str(cache_dir), "scales": scales, "min_size": min_size, "fail": fail}
    return run(tmp_path, SERIALIZED, args=[json.dumps(spec)], timeout=120)


def test_an_entry_is_serialized_on_the_worker_while_the_next_program_compiles(tmp_path,
                                                                             cache_dir):
    scales = [1.5, 2.5, 3.5, 4.5, 5.5]
    first = serialized(tmp_path, cache_dir, scales)
    assert first["stored"] == len(scales), first  # the last one too, before the process ended
    assert [m["main"] for m in first["made"]] == [False] * len(scales), first["made"]
    # Each but the last while the compiling thread was in XLA (a loaded machine may miss some).
    assert any(m["during_a_compile"] for m in first["made"][:-1]), first["made"]
    assert first["events"]["/jax/compilation_cache/cache_misses"] == len(scales)
    second = serialized(tmp_path, cache_dir, scales)
    assert second["results"] == first["results"] and second["made"] == []
    assert second["events"]["/jax/compilation_cache/cache_hits"] == len(scales) + 1


def test_a_minimum_entry_size_serializes_on_the_compiling_thread(tmp_path, cache_dir):
    # The size is known only once serialized, and JAX counts the miss only when it stores.
    stored = serialized(tmp_path, cache_dir, [1.5], min_size=1)
    assert stored["made"] == [{"main": True, "during_a_compile": False}], stored["made"]
    assert stored["stored"] == 1
    too_small = serialized(tmp_path, tmp_path / "other", [1.5], min_size=1 << 30)
    assert too_small["stored"] == 0 and too_small["made"][0]["main"]
    assert "/jax/compilation_cache/cache_misses" not in too_small["events"]


def test_an_entry_that_cannot_be_serialized_is_not_stored_and_the_compile_stands(tmp_path,
                                                                                cache_dir):
    failed = serialized(tmp_path, cache_dir, [1.5, 2.5], fail=True)
    ok = serialized(tmp_path, tmp_path / "other", [1.5, 2.5])
    assert failed["results"] == ok["results"] and failed["again"] == ok["again"]
    assert failed["stored"] == 0, failed
    # (The compile `again` makes its entry after the report, if at all.)
    assert len(failed["made"]) >= 2 and not any(m["main"] for m in failed["made"]), failed["made"]
    assert any("cannot serialize" in message and "no serializing today" in message
               for _, message in failed["warnings"]), failed["warnings"]
    # The same where it is serialized on the compiling thread (a minimum entry size set).
    inline = serialized(tmp_path, tmp_path / "inline", [1.5], min_size=1, fail=True)
    assert inline["results"] == ok["results"][:1] and inline["stored"] == 0, inline
    assert inline["made"][0]["main"] and "/jax/compilation_cache/cache_misses" not in inline["events"]
    assert any("cannot serialize" in message for _, message in inline["warnings"])


# A program that asks for more CPU devices after install(), as test suites do at import.
LATE_FLAGS = """
import jax.numpy as jnp
import numpy as np
import mlir_cache_key.jax as mj

mj.install(sys.argv[1])
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
jax.jit(lambda v: jnp.tanh(v * 2.5))(np.arange(16, dtype=np.float32)).block_until_ready()
report(devices=len(jax.devices()), events=dict(EVENTS))
"""


def test_a_cache_directorys_first_run_and_later_runs_see_the_same_devices(tmp_path, cache_dir):
    # Every run must start the backends at the same point (install() starts none; JAX does at
    # its first compile), or a device count set after install() keys a cache directory's first
    # run and its later ones apart: every lookup a miss. An install() that probed our key on its
    # first run only (and remembered it) did that.
    env = {"XLA_FLAGS": None}
    first = run(tmp_path, LATE_FLAGS, args=[str(cache_dir)], env=env)
    second = run(tmp_path, LATE_FLAGS, args=[str(cache_dir)], env=env)
    assert first["devices"] == second["devices"]
    assert second["events"].get("/jax/compilation_cache/cache_hits") == 1, second["events"]


def paired_benchmark(tmp_path, flags=None, args=("--pairs", "2", "--batch", "2")):
    return subprocess.run([sys.executable, str(PYTHON_DIR / "bench_paired.py"), *args],
                          capture_output=True, text=True, timeout=600,
                          env=child_env({"MLIR_CACHE_KEY_FLAGS": flags}, devices=1), cwd=tmp_path)


def test_the_paired_benchmark_runs_and_checks_its_misses_and_hits(tmp_path):
    # A run small enough for CI keeps the benchmark BENCHMARKS.md quotes working.
    done = paired_benchmark(tmp_path, args=("--pairs", "2", "--batch", "2", "--save", "a.json"))
    assert done.returncode == 0, done.stderr[-4000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith(("| cold", "| warm"))]
    assert len(rows) == 2 and all("of 2 under 1, sign test p " in r for r in rows), done.stdout
    # Saved runs pool into one table; a run of another workload, or not a run at all, is refused.
    pool = paired_benchmark(tmp_path, args=("--pool", "a.json", "a.json"))
    assert pool.returncode == 0, pool.stderr[-4000:]
    assert "2 runs pooled: 4 pairs of 2 tanh programs" in pool.stdout, pool.stdout
    assert pool.stdout.count("of 4 under 1") == 2, pool.stdout
    saved = json.loads((tmp_path / "a.json").read_text())
    (tmp_path / "other.json").write_text(json.dumps(dict(saved, batch=25)))
    (tmp_path / "torn.json").write_text((tmp_path / "a.json").read_text()[:100])
    for other, says in (("other.json", "not pooled"), ("torn.json", "not a run")):
        refused = paired_benchmark(tmp_path, args=("--pool", "a.json", other))
        assert refused.returncode != 0 and f"{other}: " in refused.stderr, refused.stderr[-4000:]
        assert says in refused.stderr, refused.stderr[-4000:]
    # Its figures mean something else when JAX's cache compresses with zstd: the run says which.
    expected = "zstd" if jax_wrote_zstd() else "zlib level 6"
    assert f"(its cache compresses with {expected})" in done.stdout.splitlines()[0], done.stdout


def test_the_paired_benchmark_refuses_to_time_lookups_that_do_not_hit(tmp_path):
    # With our cache off every warm lookup of ours misses: nothing it would print is a hit's time.
    done = paired_benchmark(tmp_path, flags="--no_cache")
    assert done.returncode != 0, done.stdout
    assert "ours, warm" in done.stderr, done.stderr[-4000:]
