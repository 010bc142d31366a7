"""What an in-JAX hit costs: a second process that only hits makes no fsync,
fdatasync, sync_file_range or syncfs call (strace, following every thread),
while the first one, which stores the entry, makes some. The read's wall time
against JAX's own cache is python/bench_hit.py's (BENCHMARKS.md)."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import child_env, run, write_child

SYNC_CALLS = ("fsync", "fdatasync", "sync_file_range", "syncfs")

JIT_MLP = """
import mlir_cache_key.jax as mj
import programs
mj.install(sys.argv[1])
jax.jit(programs.mlp)(*programs.mlp_args()).block_until_ready()
report(events=dict(EVENTS))
"""


def strace():
    path = shutil.which("strace")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("strace is missing under CI (scripts/setup.sh installs it)")
        pytest.skip("strace is not installed")
    return path


def traced_run(tmp_path, cache_dir, name):
    """Runs JIT_MLP under strace; returns its RESULT and the sync calls it made."""
    script = write_child(tmp_path, JIT_MLP, f"{name}.py")
    trace = tmp_path / f"{name}.trace"
    proc = subprocess.run(
        [strace(), "-f", "--seccomp-bpf", "--trace=" + ",".join(SYNC_CALLS), "-o", str(trace),
         sys.executable, str(script), str(cache_dir)],
        env=child_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-6000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stderr[-6000:]
    syncs = [line for line in trace.read_text().splitlines()
             if any(f" {call}(" in line for call in SYNC_CALLS)]
    return json.loads(lines[-1][len("RESULT "):]), syncs


def test_a_jax_hit_performs_no_fsync(tmp_path, cache_dir):
    first, first_syncs = traced_run(tmp_path, cache_dir, "first")
    assert first["events"].get("/jax/compilation_cache/cache_misses", 0) >= 1, first
    assert first_syncs, "the stored entries are durable: the trace sees their fsyncs"
    second, syncs = traced_run(tmp_path, cache_dir, "second")
    events = second["events"]
    assert events.get("/jax/compilation_cache/cache_hits", 0) >= 1, events
    assert events.get("/jax/compilation_cache/cache_misses", 0) == 0, events
    assert syncs == [], "a hit synced"
    # The hits were counted all the same (the use log is folded in by stats).
    stats = run(tmp_path, "import mlir_cache_key\nreport(**mlir_cache_key.Cache(sys.argv[1]).stats())",
                args=[str(cache_dir)])
    assert stats["hits"] == events["/jax/compilation_cache/cache_hits"], stats
