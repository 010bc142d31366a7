"""`mlir_cache_key.Cache` and the key library without JAX: compile once,
time-to-live and size cap, a writer killed mid-write, settings from
MLIR_CACHE_KEY_FLAGS, and the CLI reading what Python wrote."""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

import mlir_cache_key as mck
from conftest import REPO

KEY = "jit_f-" + "ab" * 32
OTHER = "jit_f-" + "cd" * 32


def record(custom_hook="", flags=None):
    return mck.key_from_parts(b"module bytes", "jit_f", compiler_version="0.12.0.1",
                              platform="cpu", platform_version="cpu", xla_flags=flags,
                              custom_hook=custom_hook, computation_text="module {}\n")


def test_put_get_stats(tmp_path):
    cache = mck.Cache(tmp_path)
    assert cache.path == str(tmp_path) and cache.enabled
    assert cache.get(KEY) is None
    cache.put(KEY, b"artefact", record()["record"])
    assert cache.get(KEY) == b"artefact"
    stats = cache.stats()
    assert stats["entries"] == 1 and stats["puts"] == 1 and stats["hits"] == 1
    with pytest.raises(ValueError):
        cache.get("not a key")


def test_compile_once_semantics(tmp_path):
    cache = mck.Cache(tmp_path)
    calls = []

    def compile_fn():
        calls.append(1)
        return b"compiled"

    assert cache.compile_once(KEY, compile_fn) == b"compiled"
    assert cache.compile_once(KEY, compile_fn) == b"compiled"
    assert len(calls) == 1
    # None: nothing stored, the next caller compiles.
    assert cache.compile_once(OTHER, lambda: None) is None
    assert cache.get(OTHER) is None

    # An exception propagates as it is and leaves nothing behind.
    class Boom(Exception):
        pass

    def fails():
        raise Boom("xla said no")

    with pytest.raises(Boom, match="xla said no"):
        cache.compile_once(OTHER, fails)
    assert cache.compile_once(OTHER, lambda: b"second try") == b"second try"


def test_threads_wait_for_one_compile(tmp_path):
    cache = mck.Cache(tmp_path)
    calls, results = [], []

    def compile_fn():
        calls.append(1)
        time.sleep(0.5)
        return b"once"

    threads = [threading.Thread(target=lambda: results.append(cache.compile_once(KEY, compile_fn)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [b"once"] * 4 and len(calls) == 1


def test_size_cap_and_ttl(tmp_path):
    value = os.urandom(20_000)
    protected = mck.Cache(tmp_path, size=1, ttl_days=30)
    for i in range(3):
        protected.put(f"jit_f-{i:064x}", value)
    # Over the cap, but every entry was used within the TTL: all kept.
    assert protected.stats()["entries"] == 3
    short = mck.Cache(tmp_path, size="30k", ttl_days=0.5 / 86400)
    assert short.stats()["max_size"] == 30_000
    time.sleep(1.0)
    short.put(f"jit_f-{3:064x}", value)
    stats = short.stats()
    assert stats["entries"] == 1 and stats["evictions"] == 3
    assert short.get(f"jit_f-{3:064x}") == value
    assert short.get(f"jit_f-{0:064x}") is None


def test_settings_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MLIR_CACHE_KEY_FLAGS", f"--cache_dir={tmp_path / 'env'} --cache_size=5M")
    cache = mck.Cache()
    assert cache.path == str(tmp_path / "env") and cache.stats()["max_size"] == 5_000_000
    assert mck.Cache(tmp_path / "arg").path == str(tmp_path / "arg")  # arguments win
    monkeypatch.setenv("MLIR_CACHE_KEY_FLAGS", "--no_cache")
    off = mck.Cache(tmp_path / "off")
    assert not off.enabled
    assert off.compile_once(KEY, lambda: b"x") == b"x" and off.get(KEY) is None
    monkeypatch.setenv("MLIR_CACHE_KEY_FLAGS", "--cache_sise=1")
    with pytest.raises(ValueError, match="cache_sise"):
        mck.Cache(tmp_path)


def test_nearest_record_and_why(tmp_path):
    cache = mck.Cache(tmp_path)
    old = record(flags="--xla_a=1")
    new = record(flags="--xla_a=2")
    assert cache.nearest_record(new["key"]) is None
    cache.put(old["key"], b"x", old["record"])
    nearest = cache.nearest_record(new["key"])
    assert json.loads(nearest)["key"] == old["key"]
    text = mck.why(nearest, new["record"])
    assert "XLA flags" in text and "--xla_a=1" in text and "--xla_a=2" in text
    assert len(new["trace"]) == 16


def test_strip_kernel_on_corpus_kernels():
    tpu = REPO / "tests" / "data" / "corpus" / "tpu"
    a = (tpu / "tpu_pallas_add.nounzip.a.kernel0.body.mlirbc").read_bytes()
    b = (tpu / "tpu_pallas_add.nounzip.b.kernel0.body.mlirbc").read_bytes()
    assert a != b  # the same kernel at other lines
    assert mck.strip_kernel(a) == mck.strip_kernel(b)
    with pytest.raises(ValueError):
        mck.strip_kernel(b"not bytecode")


# A writer that stores a large value over and over until it is killed.
WRITER = """
import sys, mlir_cache_key as mck
cache = mck.Cache(sys.argv[1])
value = bytes(range(256)) * (64 << 12)
print("ready", flush=True)
i = 0
while True:
    cache.put(f"jit_w-{i % 8:064x}", value)
    i += 1
"""


def test_killed_writer_leaves_no_damaged_entry(tmp_path):
    value = bytes(range(256)) * (64 << 12)
    for attempt in range(5):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.3 + 0.17 * attempt)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        cache = mck.Cache(tmp_path)
        for i in range(8):
            found = cache.get(f"jit_w-{i:064x}")
            assert found is None or found == value
        assert cache.stats()["corrupt"] == 0


def cli():
    for profile in ("debug", "release"):
        path = REPO / "target" / profile / "mlir-cache-key"
        if path.exists():
            return str(path)
    if shutil.which("mlir-cache-key"):
        return "mlir-cache-key"
    if os.environ.get("CI"):
        pytest.fail("the mlir-cache-key binary is not built")
    pytest.skip("the mlir-cache-key binary is not built")


def test_cli_reads_what_python_wrote(tmp_path):
    binary = cli()
    cache = mck.Cache(tmp_path / "cache")
    old, new = record(custom_hook="a"), record(custom_hook="b")
    cache.put(old["key"], b"artefact", old["record"])
    stats = json.loads(subprocess.run(
        [binary, "cache", "--cache-dir", str(tmp_path / "cache"), "stats", "--json"],
        check=True, capture_output=True, text=True).stdout)
    assert stats["entries"] == 1
    entries = subprocess.run([binary, "cache", "--cache-dir", str(tmp_path / "cache"), "entries"],
                             check=True, capture_output=True, text=True).stdout
    assert old["key"] in entries
    subprocess.run([binary, "cache", "--cache-dir", str(tmp_path / "cache"), "verify"],
                   check=True, capture_output=True)
    (tmp_path / "a.json").write_text(old["record"])
    (tmp_path / "b.json").write_text(new["record"])
    why = subprocess.run([binary, "why", str(tmp_path / "a.json"), str(tmp_path / "b.json")],
                         capture_output=True, text=True)
    assert "custom_hook" in why.stdout, why.stderr
    assert mck.why(old["record"], new["record"]).strip() in why.stdout


def test_a_value_made_later_is_stored_as_bytes_would_be_and_a_failed_one_frees_its_key(tmp_path):
    """With `store_later=True` the compile function may return a function that makes the value
    (JAX's path: the executable serialized on the worker). Its bytes are stored and read at
    once; None or an exception stores nothing and lets the key go, and the compile stands."""
    cache = mck.Cache(tmp_path, lock_timeout=30)
    made = []

    def later(value):
        def make():
            made.append(threading.get_ident())
            if isinstance(value, Exception):
                raise value
            return value
        return lambda: make

    assert cache.compile_once("jit_f-" + "aa" * 32, later(b"made later"), store_later=True) is None
    assert cache.get("jit_f-" + "aa" * 32) == b"made later"
    assert made and made[0] != threading.get_ident(), "made on the worker"
    for i, value in enumerate([None, RuntimeError("cannot serialize")]):
        key = f"jit_f-{i:064x}"
        assert cache.compile_once(key, later(value), looked_up=True, store_later=True) is None
        assert cache.get(key) is None
        # The key was let go: compiling it again takes its lock at once (not after 30 s).
        started = time.monotonic()
        assert cache.compile_once(key, lambda: b"again") == b"again"
        assert time.monotonic() - started < 10
    with pytest.raises(TypeError):  # stored at once: bytes, not a function
        cache.compile_once("jit_f-" + "bb" * 32, later(b"x"))
    cache.settle()
    assert mck.Cache(tmp_path).stats()["entries"] == 3


def test_a_later_store_is_seen_by_this_process_at_once_and_by_others_once_settled(tmp_path):
    """`compile_once(store_later=True)` (JAX's path) returns before its entry is stored: this
    process's lookups of the key wait for that store, a record handle is stored as its JSON
    would be, and after `settle()` another cache over the directory sees every entry."""
    cache = mck.Cache(tmp_path)
    keys = [f"jit_f-{i:064x}" for i in range(200)]
    handle = mck.key_from_parts(b"module bytes", "jit_f", compiler_version="0.12.0.1",
                                platform="cpu", platform_version="cpu", lazy_record=True)
    for i, key in enumerate(keys):
        value = f"compiled {i}".encode()
        assert cache.compile_once(key, lambda: value, handle["record"], store_later=True) == value
        assert cache.get(key) == value, f"the lookup right after {key} did not wait for its store"
    cache.settle()
    other = mck.Cache(tmp_path)
    assert [other.get(k) for k in keys] == [f"compiled {i}".encode() for i in range(200)]
    assert other.stats()["entries"] == 200
    stored = json.loads(other.nearest_record("jit_f-" + "ee" * 32))
    assert stored.pop("compile_ms", None) is not None
    assert stored == json.loads(handle["record"].json()), "the handle is stored as its JSON"
