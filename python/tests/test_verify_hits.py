"""Audited hits (issue 27): what an audit compares is reproducible (XLA's CPU
executables of the same module are the same optimized program in two processes,
though not always the same bytes), `install(verify_hits=)` in real
processes (rate 1 confirms, a poisoned entry is caught and never served again,
rate 0 never recompiles, a fractional rate lands near its share of hits) and `Cache.compile_once(verify_rate=)` without JAX
(confirmed, false hit, nondeterministic, a fractional rate with a fixed seed)."""

import json
import pathlib

import pytest

import mlir_cache_key as mck
from mlir_cache_key import _audit, _native
from conftest import run

KEY = "jit_f-" + "ab" * 32

# Runs jax.jit of the named programs through our cache; reports every backend
# compile (digest of its serialized executable), the keys JAX logged, results.
RUN_PROGRAMS = """
import hashlib, re
import numpy as np
import jax.numpy as jnp
from jax._src import compiler
import mlir_cache_key.jax as mj
from mlir_cache_key import _jax_internals as J

spec = json.loads(sys.argv[1])
COMPILED, PROGRAMS = [], []
_backend_compile = compiler.backend_compile_and_load

def recording_compile(*args, **kwargs):
    executable = _backend_compile(*args, **kwargs)
    COMPILED.append(hashlib.sha256(executable.serialize()).hexdigest())
    PROGRAMS.append(hashlib.sha256(J.optimized_program(executable).encode()).hexdigest())
    return executable

compiler.backend_compile_and_load = recording_compile
mj.install(spec["cache_dir"], verify_hits=spec.get("rate", 0.0))
log = Lines("jax._src.compiler")

def f(x):
    return (jnp.sin(x) * 2.0 + 1.0).sum()

def g(x):
    return (jnp.cos(x) * 3.0 - 1.0).sum()

x = np.arange(64.0, dtype=np.float32)
expected = dict(f=float(np.sum(np.sin(x) * 2.0 + 1.0)), g=float(np.sum(np.cos(x) * 3.0 - 1.0)))
out = {}
for name in spec["programs"]:
    for i in range(spec.get("repeat", 1)):
        if i:
            jax.clear_caches()  # the next call reads the persistent cache again
        out[name] = float(jax.jit(dict(f=f, g=g)[name])(x))
lines = log.take()
keys = {}
for level, text in lines:
    found = re.search(r"for '(jit_[fg])' with key '([^']+)'", text)
    if found:
        keys[found.group(1)] = found.group(2)
cache = mj.installed()
if spec.get("poison"):
    # Another program's real executable, stored under f's key through the store.
    cache.put(keys["jit_f"], cache.get(keys["jit_g"]))
report(out=out, expected=expected, compiled=COMPILED, programs=PROGRAMS, keys=keys, lines=lines,
       events=dict(EVENTS), stats=cache.stats(),
       f_served=None if "jit_f" not in keys else cache.get(keys["jit_f"]) is not None)
"""


def run_programs(tmp_path, cache_dir, programs, env=None, **spec):
    spec = dict(cache_dir=str(cache_dir), programs=programs, **spec)
    return run(tmp_path, RUN_PROGRAMS, env=env, args=[json.dumps(spec)])


def hits(result):
    return result["events"].get("/jax/compilation_cache/cache_hits", 0)


def close(result, name):
    return result["out"][name] == pytest.approx(result["expected"][name], rel=1e-5)


def test_the_same_module_compiles_to_the_same_program_in_two_processes(tmp_path):
    """The premise of comparing executables: the same module and options give
    the same optimized program in another process (each compiles it, in its
    own cache), and two programs give two. The serialized bytes may differ
    (docs/jax-releases.md), so they are not asserted."""
    first = run_programs(tmp_path, tmp_path / "one", ["f", "g"])
    second = run_programs(tmp_path, tmp_path / "two", ["f", "g"])
    assert len(first["programs"]) == 2 and hits(first) == 0
    assert first["programs"] == second["programs"]
    assert first["programs"][0] != first["programs"][1]


def test_rate_one_compiles_the_hit_again_and_confirms_it(tmp_path, cache_dir):
    stored = run_programs(tmp_path, cache_dir, ["f"])
    audited = run_programs(tmp_path, cache_dir, ["f"], rate=1)
    assert hits(audited) == 1 and close(audited, "f")
    # One compile: the audit's, of the stored program.
    assert audited["programs"] == stored["programs"][-1:]
    assert audited["stats"]["audits"]["confirmed"] == 1
    assert audited["stats"]["audits"]["false_hits"] == 0
    assert audited["f_served"]


def test_a_poisoned_entry_is_caught_and_never_served_again(tmp_path, cache_dir):
    poisoned = run_programs(tmp_path, cache_dir, ["f", "g"], poison=True)
    key = poisoned["keys"]["jit_f"]
    audited = run_programs(tmp_path, cache_dir, ["f"], rate=1)
    assert hits(audited) == 1
    assert close(audited, "f"), "the fresh executable must run, not g's"
    warnings = [text for level, text in audited["lines"] if level == "WARNING"]
    assert any("FALSE HIT" in w and key in w for w in warnings), warnings
    assert audited["stats"]["audits"]["false_hits"] == 1
    assert not audited["f_served"]
    # The next process, without audits, compiles f again instead of running g.
    after = run_programs(tmp_path, cache_dir, ["f"])
    assert hits(after) == 0 and close(after, "f")


def test_rate_zero_never_compiles_a_hit(tmp_path, cache_dir):
    poisoned = run_programs(tmp_path, cache_dir, ["f", "g"], poison=True)
    unaudited = run_programs(tmp_path, cache_dir, ["f"], rate=0)
    assert hits(unaudited) == 1 and unaudited["compiled"] == []
    # What it ran is what was stored: g's executable (why audits exist).
    assert unaudited["out"]["f"] == pytest.approx(poisoned["expected"]["g"], rel=1e-5)


def test_a_fractional_rate_audits_near_its_share_of_hits(tmp_path, cache_dir):
    run_programs(tmp_path, cache_dir, ["f"])
    sampled = run_programs(tmp_path, cache_dir, ["f"], rate=0.5, repeat=40,
                           env={_audit.SEED_VARIABLE: "27"})
    assert hits(sampled) == 40 and close(sampled, "f")
    audited = len(sampled["compiled"])
    assert 10 <= audited <= 30, audited
    assert sampled["stats"]["audits"]["run"] == sampled["stats"]["audits"]["confirmed"] == audited


def test_install_refuses_a_rate_outside_zero_to_one(tmp_path):
    code = """
import mlir_cache_key.jax as mj
errors = []
for rate in (-0.1, 1.5, "often"):
    try:
        mj.install(sys.argv[1], verify_hits=rate)
    except ValueError as ex:
        errors.append(str(ex))
report(errors=errors, installed=mj.installed() is not None)
"""
    result = run(tmp_path, code, args=[str(tmp_path / "cache")])
    assert len(result["errors"]) == 3 and not result["installed"]
    assert all("verify_hits" in e for e in result["errors"])


# --- Cache.compile_once(verify_rate=) without JAX ------------------------------------


@pytest.fixture
def seeded(monkeypatch):
    monkeypatch.setattr(_audit, "SAMPLER", _audit.Sampler("27"))


def audits(cache):
    return cache.stats()["audits"]


class Compiler:
    """A compile function returning `value`, counting its calls."""

    def __init__(self, value: bytes):
        self.value = value
        self.calls = 0

    def __call__(self) -> bytes:
        self.calls += 1
        return self.value


def test_compile_once_confirms_a_hit_at_rate_one(tmp_path, seeded):
    cache = mck.Cache(tmp_path)
    compile_fn = Compiler(b"artefact")
    assert cache.compile_once(KEY, compile_fn) == b"artefact"
    assert cache.compile_once(KEY, compile_fn, verify_rate=1) == b"artefact"
    assert compile_fn.calls == 2
    assert audits(cache)["confirmed"] == 1 and audits(cache)["false_hits"] == 0


def test_compile_once_catches_a_false_hit(tmp_path, seeded):
    cache = mck.Cache(tmp_path)
    cache.put(KEY, b"built from something else")
    assert cache.compile_once(KEY, lambda: b"artefact", verify_rate=1) == b"artefact"
    assert audits(cache)["false_hits"] == 1
    assert cache.get(KEY) is None  # suspect: never served again


def test_compile_once_reports_a_nondeterministic_compiler(tmp_path, seeded):
    cache = mck.Cache(tmp_path)
    cache.put(KEY, b"run 0")
    runs = iter(range(1, 10))
    served = cache.compile_once(KEY, lambda: f"run {next(runs)}".encode(), verify_rate=1)
    assert served == b"run 1"
    counted = audits(cache)
    assert counted["nondeterministic"] == 1 and counted["false_hits"] == 0
    assert cache.get(KEY) == b"run 0"  # not blamed


def test_compile_once_at_rate_zero_never_compiles_a_hit(tmp_path, seeded):
    cache = mck.Cache(tmp_path)
    cache.put(KEY, b"stored")
    for _ in range(50):
        assert cache.compile_once(KEY, lambda: pytest.fail("compiled"), verify_rate=0) == b"stored"
    assert audits(cache)["confirmed"] == 0


def test_compile_once_samples_a_fractional_rate(tmp_path, seeded):
    cache = mck.Cache(tmp_path)
    cache.put(KEY, b"stored")
    compile_fn = Compiler(b"stored")
    for _ in range(400):
        cache.compile_once(KEY, compile_fn, verify_rate=0.25)
    assert 70 <= compile_fn.calls <= 130, compile_fn.calls
    assert audits(cache)["confirmed"] == compile_fn.calls


def test_compile_once_refuses_a_rate_outside_zero_to_one(tmp_path):
    cache = mck.Cache(tmp_path)
    for rate in (-1, 2, float("nan")):
        with pytest.raises(ValueError, match="verify_rate"):
            cache.compile_once(KEY, lambda: b"x", verify_rate=rate)


# --- one home: the CLI's sampling, verdict and spellings, through the extension ----------


def sampling_table():
    path = pathlib.Path(__file__).resolve().parents[2] / "crates/exec/tests/data/audit_sampling.json"
    return json.loads(path.read_text())["rows"]


def test_the_sampling_is_the_clis_table_of_decisions():
    rows = sampling_table()
    assert len(rows) >= 50
    for row in rows:
        decided = _native.audit_sampled(row["seed"], row["rate"], row["key"], row["earlier"])
        assert decided == row["sampled"], row
    # A sampler asks the same function, the first hit of a key first.
    for row in (r for r in rows if r["earlier"] == 0):
        assert _audit.Sampler(row["seed"]).sampled(row["rate"], row["key"]) == row["sampled"], row


def test_a_sampler_counts_the_hits_of_each_key():
    sampler = _audit.Sampler("27")
    drawn = [sampler.sampled(0.5, KEY) for _ in range(40)]
    assert drawn == [_native.audit_sampled("27", 0.5, KEY, n) for n in range(40)]
    assert 0 < sum(drawn) < 40


def test_each_outcome_has_the_clis_one_spelling(tmp_path):
    assert (_audit.CONFIRMED, _audit.FALSE_HIT, _audit.NONDETERMINISTIC) == (
        "confirmed", "false hit", "nondeterministic")
    assert _native.AUDIT_OUTCOMES == ("confirmed", "false hit", "nondeterministic")
    assert _audit.SEED_VARIABLE == "MLIR_CACHE_KEY_AUDIT_SEED"
    cache = mck.Cache(tmp_path)
    for outcome in _native.AUDIT_OUTCOMES:
        cache.record_audit(outcome)
    counted = audits(cache)
    assert (counted["run"], counted["confirmed"], counted["false_hits"],
            counted["nondeterministic"]) == (3, 1, 1, 1)
    with pytest.raises(ValueError, match="false hit"):
        cache.record_audit("false_hit")


def test_the_verdict_is_the_clis():
    def compiler(*runs):
        runs = iter(runs)

        def compile_fresh():
            run = next(runs)
            if isinstance(run, BaseException):
                raise run
            return run
        return compile_fresh

    same = lambda a, b: a == b  # noqa: E731
    assert _native.audit_verdict(b"s", compiler(b"s"), same) == ("confirmed", b"s")
    assert _native.audit_verdict(b"s", compiler(b"f", b"f"), same) == ("false hit", b"f")
    assert _native.audit_verdict(b"s", compiler(b"f", b"g"), same) == ("nondeterministic", b"f")
    assert _native.audit_verdict(b"s", compiler(b"f", OSError("gone")), same) == (
        "nondeterministic", b"f")
    with pytest.raises(OSError, match="gone"):
        _native.audit_verdict(b"s", compiler(OSError("gone")), same)
    with pytest.raises(KeyboardInterrupt):
        _native.audit_verdict(b"s", compiler(b"f", KeyboardInterrupt()), same)


def test_the_rate_check_is_the_clis():
    assert _audit.check_rate("0.25") == 0.25 and _audit.check_rate(1) == 1.0
    for bad in (-0.1, 1.5, float("nan"), "often", None):
        with pytest.raises(ValueError, match="verify_hits: expected a rate between 0 and 1"):
            _audit.check_rate(bad)
