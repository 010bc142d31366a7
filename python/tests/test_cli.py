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


def run(command, args, cache=None, cwd=None, flags=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLIR_CACHE_KEY")}
    if flags:
        env["MLIR_CACHE_KEY_FLAGS"] = flags
    where = [] if cache is None else ["--cache-dir", str(cache)]
    return subprocess.run([*command, *args, *where], env=env, cwd=cwd,
                          capture_output=True, text=True)


def named(text):
    """Run directly, the MLIR binary names itself in usage lines."""
    return text.replace("mlir-cache-key-mlir", "mlir-cache-key")


def assert_alike(ours, full):
    assert (ours.returncode, ours.stdout) == (full.returncode, named(full.stdout)), ours.stderr
    assert ours.stderr == named(full.stderr)


@pytest.fixture
def cache(tmp_path):
    record = mck.key_from_parts(b"module bytes", "jit_f", compiler_version="0.12.0.1",
                                platform="cpu", platform_version="cpu",
                                computation_text="module {}\n")
    mck.Cache(tmp_path / "cache").put(record["key"], b"artefact", record["record"])
    return tmp_path / "cache"


def stored_pair(cache):
    """Two entries of one module name whose keys differ in the platform version."""
    keys = []
    for version in ["cpu-1", "cpu-2"]:
        record = mck.key_from_parts(b"module bytes", "jit_g", compiler_version="0.12.0.1",
                                    platform="cpu", platform_version=version,
                                    computation_text="module {}\n")
        mck.Cache(cache).put(record["key"], b"artefact", record["record"])
        keys.append(record["key"])
    return keys


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
    assert_alike(run(wheel_command(), args, cache), run([full_binary()], args, cache))


@pytest.mark.parametrize("args", [
    ["why", "{a}", "{b}"],
    ["why", "{a}", "{b}", "--json"],
    ["why", "{a}", "jit_g-no-such-key"],
])
def test_why_of_stored_keys_answers_as_the_full_binary_does(tmp_path, args):
    a, b = stored_pair(tmp_path / "cache")
    args = [arg.format(a=a, b=b) for arg in args]
    ours = run(wheel_command(), args, tmp_path / "cache")
    assert_alike(ours, run([full_binary()], args, tmp_path / "cache"))
    assert ours.returncode != 0 or "platform" in ours.stdout, ours.stdout


@pytest.mark.parametrize("args", [
    ["--help"],
    ["why", "--help"],
    ["exec", "--help"],
    ["completions", "bash"],
    ["completions", "zsh"],
    ["completions", "fish"],
    ["man"],
    ["completions", "no-such-shell"],
])
def test_help_completions_and_man_are_the_full_binarys(args):
    ours = run(wheel_command(), args)
    assert_alike(ours, run([full_binary()], args))
    assert ours.stdout or ours.returncode == 64


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
    ["kernels", "m.mlir"],
    ["why", "m.mlir", "m.mlir"],
])
def test_a_command_that_reads_mlir_names_the_full_build(tmp_path, args):
    (tmp_path / "m.mlir").write_text("module {}\n")
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


@pytest.fixture
def build(tmp_path):
    """A module, and a compiler that copies it and counts its runs."""
    module = tmp_path / "m.mlir"
    module.write_bytes((REPO / "tests/data/corpus/cpu/mlp.a.generic.mlir").read_bytes())
    compiler = tmp_path / "compile.sh"
    compiler.write_text('echo run >> "$(dirname "$0")/runs"; cp "$1" "$2"\n')
    return tmp_path


def exec_args(build):
    return ["exec", "--cache-dir", str(build / "cache"), "--input", "m.mlir", "--output",
            "m.out", "--", "sh", str(build / "compile.sh"), "m.mlir", "m.out"]


def runs(build):
    return len((build / "runs").read_text().splitlines()) if (build / "runs").exists() else 0


def test_a_direct_hit_is_served_as_the_full_binary_serves_it(build):
    cache = build / "cache"
    stored = run([full_binary()], exec_args(build), cwd=build)
    assert stored.returncode == 0, stored.stderr
    assert runs(build) == 1
    (build / "m.out").unlink()
    ours = run(wheel_command(), exec_args(build), cwd=build)
    assert ours.returncode == 0, ours.stderr
    assert runs(build) == 1, "the wheel's command compiled a hit"
    assert (build / "m.out").read_bytes() == (build / "m.mlir").read_bytes()
    full = run([full_binary()], exec_args(build), cwd=build)
    assert_alike(ours, full)
    stats = json.loads(run(wheel_command(), ["cache", "stats", "--json"], cache).stdout)
    assert stats["direct_hits"] == 2, stats


def test_a_miss_runs_the_compiler_without_the_cache_and_says_why(build):
    cache = build / "cache"
    ours = run(wheel_command(), exec_args(build), cwd=build)
    assert ours.returncode == 0, ours.stderr
    assert runs(build) == 1
    assert (build / "m.out").read_bytes() == (build / "m.mlir").read_bytes()
    warning = [line for line in ours.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and "full build" in warning[0], ours.stderr
    stats = json.loads(run(wheel_command(), ["cache", "stats", "--json"], cache).stdout)
    assert stats["entries"] == 0, "the wheel's command stored a compile it did not key"
    # The compiler's own failure is the build's.
    failing = ["exec", "--cache-dir", str(cache), "--input", "m.mlir", "--output", "m.out",
               "--", "sh", "-c", "exit 3"]
    assert run(wheel_command(), failing, cwd=build).returncode == 3


def test_a_miss_is_refused_when_cache_errors_fail(build):
    ours = run(wheel_command(), exec_args(build), cwd=build, flags="--cache_errors=fail")
    assert ours.returncode == 64
    assert runs(build) == 0
    lines = ours.stderr.splitlines()
    assert len(lines) == 1 and "needs the full build" in lines[0] and "`exec`" in lines[0], lines
