"""Helpers: every JAX program runs in a fresh child process (JAX reads
XLA_FLAGS once, and the cache is about what a *second* process sees)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

TESTS = pathlib.Path(__file__).resolve().parent
PYTHON_DIR = TESTS.parent
REPO = PYTHON_DIR.parent

# Test the installed package (with its native module), never the source tree
# that `python -m pytest` run from python/ would put first on the path.
sys.path[:] = [p for p in sys.path if pathlib.Path(p or ".").resolve() != PYTHON_DIR]

# Imports and JAX monitoring counters every child starts with.
PRELUDE = """
import collections, json, logging, os, sys, time
sys.path.insert(0, {tests!r})
import jax
from jax._src import monitoring
EVENTS = collections.Counter()
monitoring.register_event_listener(lambda event, **kw: EVENTS.update([event]))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)

class Lines(logging.Handler):
    def __init__(self, logger_name, level=logging.DEBUG):
        super().__init__(level)
        self.lines = []
        logger = logging.getLogger(logger_name)
        logger.setLevel(level)
        logger.addHandler(self)
    def emit(self, record):
        self.lines.append([record.levelname, record.getMessage()])
    def take(self):
        lines, self.lines = self.lines, []
        return lines

def report(**values):
    print("RESULT " + json.dumps(values), flush=True)
"""


def child_env(extra: dict | None = None, *, devices: int = 8) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "JAX_", "LIBTPU_"))}
    env["JAX_PLATFORMS"] = "cpu"
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    env.pop("MLIR_CACHE_KEY_FLAGS", None)
    env.update(extra or {})
    return {k: v for k, v in env.items() if v is not None}


def write_child(tmp_path: pathlib.Path, code: str, name: str = "child.py") -> pathlib.Path:
    path = tmp_path / name
    path.write_text(PRELUDE.format(tests=str(TESTS)) + textwrap.dedent(code))
    return path


def start(tmp_path, code, *, env=None, args=(), name="child.py", **popen):
    script = write_child(tmp_path, code, name)
    return subprocess.Popen([sys.executable, str(script), *args], env=child_env(env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def result_of(proc: subprocess.Popen, timeout: float = 600) -> dict:
    out, err = proc.communicate(timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"child failed ({proc.returncode}):\n{err[-6000:]}")
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    if not lines:
        raise AssertionError(f"child reported nothing:\nstdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}")
    result = json.loads(lines[-1][len("RESULT "):])
    result["_stderr"] = err
    return result


def run(tmp_path, code, **kwargs) -> dict:
    timeout = kwargs.pop("timeout", 600)
    return result_of(start(tmp_path, code, **kwargs), timeout)


@pytest.fixture
def cache_dir(tmp_path):
    path = tmp_path / "cache"
    path.mkdir()
    return path


@pytest.fixture
def redis_url():
    """A real redis-server's URL (scripts/test.sh starts one)."""
    url = os.environ.get("MCK_TEST_REDIS_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("MCK_TEST_REDIS_URL is not set: the test script starts redis-server")
        pytest.skip("MCK_TEST_REDIS_URL is not set (start redis-server on 127.0.0.1)")
    return url


_S3_VARIABLES = ("MCK_TEST_S3_ENDPOINT", "MCK_TEST_S3_REGION", "MCK_TEST_S3_BUCKET",
                 "MCK_TEST_S3_ACCESS_KEY_ID", "MCK_TEST_S3_SECRET_ACCESS_KEY")


@pytest.fixture
def s3_bucket():
    """A real S3 store (the Garage cluster scripts/test.sh starts): the bucket's `s3://` URL
    and the AWS variables a process needs for it, as a user sets them."""
    missing = [name for name in _S3_VARIABLES if not os.environ.get(name)]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{', '.join(missing)} not set: the test script starts Garage")
        pytest.skip(f"{', '.join(missing)} not set (bash scripts/garage.sh start DIR)")
    get = os.environ.get
    env = dict(AWS_ENDPOINT_URL=get("MCK_TEST_S3_ENDPOINT"), AWS_REGION=get("MCK_TEST_S3_REGION"),
               AWS_ACCESS_KEY_ID=get("MCK_TEST_S3_ACCESS_KEY_ID"),
               AWS_SECRET_ACCESS_KEY=get("MCK_TEST_S3_SECRET_ACCESS_KEY"))
    return f"s3://{get('MCK_TEST_S3_BUCKET')}", env
