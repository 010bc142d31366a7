"""The wheel's command line (`mlir-cache-key` in the venv's bin, `python -m mlir_cache_key`):
the cache's commands answer as the full binary's do, byte for byte, exit codes included; a
command that reads MLIR names the full build in one line and exits 64. No JAX needed."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

import mlir_cache_key as mck
from conftest import REPO

KEY = "jit_f-" + "ab" * 32


def full_binary():
    """The MLIR binary of the repository's build, to answer alike."""
    path = REPO / "target" / "debug" / "mlir-cache-key-mlir"
    if path.exists():
        return str(path)
    if os.environ.get("CI"):
        pytest.fail("the mlir-cache-key-mlir binary is not built")
    pytest.skip("the mlir-cache-key-mlir binary is not built")


def wheel_command():
    script = pathlib.Path(sys.executable).parent / "mlir-cache-key"
    assert script.exists(), f"the package installed no {script}"
    return [str(script)]


def run(command, args, cache):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLIR_CACHE_KEY")}
    return subprocess.run([*command, *args, "--cache-dir", str(cache)], env=env,
                          capture_output=True, text=True)


@pytest.fixture
def cache(tmp_path):
    record = mck.key_from_parts(b"module bytes", "jit_f", compiler_version="0.12.0.1",
                                platform="cpu", platform_version="cpu",
                                computation_text="module {}\n")
    mck.Cache(tmp_path / "cache").put(record["key"], b"artefact", record["record"])
    return tmp_path / "cache"


@pytest.mark.parametrize("args", [
    ["cache", "stats", "--json"],
    ["cache", "stats"],
    ["cache", "list"],
    ["cache", "verify"],
    ["cache", "show", "jit_f"],
    ["cache", "show", "no-such-entry"],
    ["runs", "list"],
    ["config", "show"],
    ["cache", "stats", "--ttl", "banana"],
    ["cache", "stats", "--help"],
])
def test_the_cache_commands_answer_as_the_full_binary_does(cache, args):
    ours = run(wheel_command(), args, cache)
    full = run([full_binary()], args, cache)
    # Run directly, the MLIR binary names itself in usage lines.
    named = lambda text: text.replace("mlir-cache-key-mlir", "mlir-cache-key")  # noqa: E731
    assert (ours.returncode, ours.stdout) == (full.returncode, named(full.stdout)), ours.stderr
    assert ours.stderr == named(full.stderr)


def test_python_dash_m_is_the_same_command(cache):
    ours = run([sys.executable, "-m", "mlir_cache_key"], ["cache", "stats", "--json"], cache)
    assert ours.returncode == 0, ours.stderr
    stats = json.loads(ours.stdout)
    assert stats["entries"] == 1
    script = run(wheel_command(), ["cache", "stats", "--json"], cache)
    assert script.stdout == ours.stdout


@pytest.mark.parametrize("args", [
    ["key", "m.mlir"],
    ["canon", "m.mlir"],
    ["exec", "--input", "m.mlir", "--output", "m.out", "--", "cp", "m.mlir", "m.out"],
    ["why", "a.json", "b.json"],
])
def test_a_command_that_reads_mlir_names_the_full_build(tmp_path, args):
    ours = subprocess.run([*wheel_command(), *args], cwd=tmp_path, capture_output=True, text=True)
    assert ours.returncode == 64
    assert ours.stdout == ""
    lines = ours.stderr.splitlines()
    assert len(lines) == 1 and "needs the full build" in lines[0], ours.stderr
    assert f"`{args[0]}`" in lines[0]


def test_an_unknown_command_is_a_usage_error():
    ours = subprocess.run([*wheel_command(), "no-such-command"], capture_output=True, text=True)
    assert ours.returncode == 64
    assert "unrecognized subcommand 'no-such-command'" in ours.stderr, ours.stderr


def test_version_says_what_it_is():
    ours = subprocess.run([*wheel_command(), "--version"], capture_output=True, text=True)
    assert ours.returncode == 0
    assert ours.stdout.startswith("mlir-cache-key ") and "MLIR none" in ours.stdout, ours.stdout
