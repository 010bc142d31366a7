"""The cache never breaks a build (issue 26), in real processes: `install()`
given a directory it cannot use warns and leaves JAX compiling normally, and a
cache directory deleted while the program runs never makes `jax.jit` raise."""

import json
import os
import pathlib
import subprocess

import pytest

from conftest import run

OTHER_USER = "mck-other"

# install() on the directory of argv[1]; then two jitted functions, the cache
# directory deleted between them when asked.
CHILD = """
import shutil, warnings
import numpy as np
import jax.numpy as jnp
import mlir_cache_key.jax as mj

spec = json.loads(sys.argv[1])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    mj.install(spec["cache_dir"])
installed = mj.installed() is not None
x = np.arange(16.0, dtype=np.float32)
first = float(jax.jit(lambda v: (jnp.sin(v) * 2).sum())(x))
if spec.get("delete"):
    shutil.rmtree(spec["cache_dir"])
second = float(jax.jit(lambda v: (jnp.cos(v) + 3).sum())(x))
report(installed=installed, first=first, second=second,
       warnings=[str(w.message) for w in caught])
"""

X = [float(i) for i in range(16)]


def expected():
    import math
    return (sum(math.sin(v) * 2 for v in X), sum(math.cos(v) + 3 for v in X))


def run_child(tmp_path, cache_dir, **spec):
    return run(tmp_path, CHILD, args=[json.dumps(dict(cache_dir=str(cache_dir), **spec))])


def assert_computed(result):
    first, second = expected()
    assert result["first"] == pytest.approx(first, rel=1e-5)
    assert result["second"] == pytest.approx(second, rel=1e-5)


def other_users_dir(tmp_path):
    """A cache directory owned by a second real user (created if absent)."""
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("the two-user test needs root in CI")
        pytest.skip("creating a second user needs root")
    if subprocess.run(["id", "-u", OTHER_USER], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "-M", "-N", OTHER_USER], check=False)
    uid = int(subprocess.run(["id", "-u", OTHER_USER], capture_output=True,
                             text=True, check=True).stdout)
    path = tmp_path / "theirs"
    path.mkdir(mode=0o700)
    os.chown(path, uid, -1)
    return path


def test_install_warns_on_another_users_directory_and_jax_compiles(tmp_path):
    result = run_child(tmp_path, other_users_dir(tmp_path))
    assert not result["installed"]
    assert any("not installed, the cache is unusable" in w and "owned by uid" in w
               for w in result["warnings"]), result["warnings"]
    assert_computed(result)


def test_install_warns_on_an_uncreatable_directory(tmp_path):
    # Nobody, root included, can create a directory in /proc.
    result = run_child(tmp_path, pathlib.Path("/proc/mlir-cache-key-test"))
    assert not result["installed"]
    assert any("cannot create directory" in w for w in result["warnings"]), result["warnings"]
    assert_computed(result)


def test_a_cache_deleted_mid_run_never_makes_jit_raise(tmp_path, cache_dir):
    result = run_child(tmp_path, cache_dir, delete=True)
    assert result["installed"]
    assert_computed(result)
