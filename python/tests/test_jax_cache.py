"""`install()` in real processes: hits across processes (also after the
function moved), an explained miss, one compile for 4 concurrent processes, a
shared Redis tier, a process killed mid-compile, uninstall."""

import json
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import result_of, run, start

FUNCTION = '''
import jax.numpy as jnp

def f(x):
    for i in range(LOOPS):
        x = jnp.sin(x) * 1.01 + i
    return x.sum()
'''

# Runs jax.jit(f) from a source file; reports JAX's cache events and our stats.
RUN_F = """
import jax.numpy as jnp
import mlir_cache_key.jax as mj

spec = json.loads(sys.argv[1])
jax.config.update("jax_explain_cache_misses", spec.get("explain", False))
if spec.get("jax_dir"):
    jax.config.update("jax_compilation_cache_dir", spec["jax_dir"])
if spec.get("install", True):
    mj.install(spec.get("cache_dir"), remote=spec.get("remote"))
compiler_log = Lines("jax._src.compiler")
ours_log = logging.getLogger("mlir_cache_key.jax")
ours_log.setLevel(logging.DEBUG)
ours_log.addHandler(logging.StreamHandler(sys.stderr))
if spec.get("start_at"):
    time.sleep(max(0.0, spec["start_at"] - time.time()))
sys.path.insert(0, spec["src_dir"])
import moved_fn
import numpy as np
out = jax.jit(moved_fn.f)(np.arange(64.0, dtype=np.float32))
cache = mj.installed()
report(out=float(out), events=dict(EVENTS), lines=compiler_log.take(),
       stats=cache.stats() if cache else None, xla_build=cache.xla_build if cache else None,
       jax_dir=jax.config.jax_compilation_cache_dir)
"""


def write_function(tmp_path, name, *, shift=0, loops=20, op="sin"):
    src = tmp_path / name
    src.mkdir()
    body = FUNCTION.replace("LOOPS", str(loops)).replace("sin", op)
    (src / "moved_fn.py").write_text("# moved\n" * shift + body)
    return str(src)


def run_f(tmp_path, cache_dir, src_dir, *, env=None, **spec):
    spec = dict(cache_dir=str(cache_dir), src_dir=src_dir, **spec)
    return run(tmp_path, RUN_F, env=env, args=[json.dumps(spec)])


def compiles(result):
    return result["events"].get("/jax/compilation_cache/cache_misses", 0)


def hits(result):
    return result["events"].get("/jax/compilation_cache/cache_hits", 0)


def test_second_process_hits_after_the_function_moved(tmp_path, cache_dir):
    first = run_f(tmp_path, cache_dir, write_function(tmp_path, "a"))
    assert compiles(first) == 1 and hits(first) == 0
    assert first["stats"]["puts"] == 1
    moved = run_f(tmp_path, cache_dir, write_function(tmp_path, "b", shift=17))
    assert compiles(moved) == 0 and hits(moved) == 1
    assert moved["out"] == first["out"]
    assert moved["stats"]["hits"] >= 1
    # JAX's own settings: the cache dir was unset, so ours is JAX's now.
    assert moved["jax_dir"] == str(cache_dir)


def test_changed_flag_misses_and_the_warning_names_it(tmp_path, cache_dir):
    src = write_function(tmp_path, "a")
    run_f(tmp_path, cache_dir, src)
    flags = "--xla_force_host_platform_device_count=8 --xla_cpu_enable_fast_math=true"
    second = run_f(tmp_path, cache_dir, src, env={"XLA_FLAGS": flags}, explain=True)
    assert compiles(second) == 1
    warnings = [text for level, text in second["lines"] if level == "WARNING"]
    assert any("PERSISTENT COMPILATION CACHE MISS for 'jit_f'" in w for w in warnings)
    explained = [w for w in warnings if "nearest stored entry" in w]
    assert explained, warnings
    assert "XLA flags" in explained[0] and "--xla_cpu_enable_fast_math=true" in explained[0]
    # Without jax_explain_cache_misses the explanation is DEBUG.
    quiet = run_f(tmp_path, cache_dir, src, env={"XLA_FLAGS": flags + " --xla_cpu_use_thunk_runtime=true"})
    assert not [t for level, t in quiet["lines"] if level == "WARNING"]
    assert any("nearest stored entry" in t for level, t in quiet["lines"] if level == "DEBUG")


def test_changed_program_names_the_first_differing_operation(tmp_path, cache_dir):
    run_f(tmp_path, cache_dir, write_function(tmp_path, "a", loops=3))
    second = run_f(tmp_path, cache_dir, write_function(tmp_path, "b", loops=3, op="cos"), explain=True)
    explained = [t for level, t in second["lines"] if level == "WARNING" and "nearest stored entry" in t]
    assert explained and "computation" in explained[0]
    assert "sine" in explained[0] and "cosine" in explained[0], explained[0]


# Compiles `f` as each op of `spec["ops"]` in turn, one process, misses explained at WARNING.
# Every entry file is zero-filled before each compile but the first, and before the first too
# when `spec["zero_fill_first"]`.
RECALL = """
import pathlib
import jax.numpy as jnp
import numpy as np
import mlir_cache_key.jax as mj

spec = json.loads(sys.argv[1])
jax.config.update("jax_explain_cache_misses", True)
mj.install(spec["cache_dir"])
compiler_log = Lines("jax._src.compiler")

def zero_fill():
    for path in (pathlib.Path(spec["cache_dir"]) / "v1" / "entries").rglob("*"):
        if path.is_file():
            path.write_bytes(bytes(path.stat().st_size))

for i, op in enumerate(spec["ops"]):
    if i > 0 or spec["zero_fill_first"]:
        mj.installed().settle()
        zero_fill()
    def f(x):
        return getattr(jnp, op)(x).sum()
    jax.jit(f)(np.arange(8.0, dtype=np.float32))
report(lines=compiler_log.take())
"""


def explained(result):
    """The miss explanations against a stored entry's record (not "no stored entry")."""
    return [t for level, t in result["lines"]
            if level == "WARNING" and "nearest stored entry:\nnearest entry jit_f" in t]


def test_a_miss_is_explained_against_the_record_this_process_stored_not_its_file(
        tmp_path, cache_dir):
    # The entry of sin is zero-filled before cos compiles: only what this process kept of it
    # can name what moved.
    kept = run(tmp_path, RECALL, args=[json.dumps(
        dict(cache_dir=str(cache_dir), ops=["sin", "cos"], zero_fill_first=False))])
    lines = explained(kept)
    assert len(lines) == 1 and "sine" in lines[0] and "cosine" in lines[0], kept["lines"]
    # The control: a new process, every entry zero-filled, nothing kept: nothing explained.
    control = run(tmp_path, RECALL, args=[json.dumps(
        dict(cache_dir=str(cache_dir), ops=["tan"], zero_fill_first=True))])
    assert explained(control) == [], control["lines"]
    assert any("PERSISTENT COMPILATION CACHE MISS for 'jit_f'" in t
               for _, t in control["lines"]), control["lines"]


def test_four_processes_compile_once(tmp_path, cache_dir):
    src = write_function(tmp_path, "a", loops=400)
    start_at = time.time() + 8
    procs = [start(tmp_path, RUN_F, name=f"child{i}.py",
                   args=[json.dumps(dict(cache_dir=str(cache_dir), src_dir=src, start_at=start_at))])
             for i in range(4)]
    results = [result_of(p) for p in procs]
    assert sum(compiles(r) for r in results) == 1
    assert sum(hits(r) for r in results) == 3
    assert len({r["out"] for r in results}) == 1
    assert max(r["stats"]["puts"] for r in results) == 1
    # At least one of them waited on the store's lock rather than finding the entry.
    assert any("compiled by another process while this one waited" in r["_stderr"] for r in results)


def test_two_dirs_share_one_redis(tmp_path, redis_url):
    remote = f"{redis_url.rstrip('/')}/mck-py-{time.time_ns()}"
    src = write_function(tmp_path, "a")
    first = run_f(tmp_path, tmp_path / "dir1", src, remote=remote)
    assert compiles(first) == 1
    # Up to 0.10, JAX leaves xla_gpu_per_fusion_autotune_cache_dir (a path under the cache
    # directory) in its key, so two hosts share entries only with the same cache path: the
    # second host then gets an empty local cache at that path.
    second_dir = tmp_path / "dir2"
    if _jax_release() < (0, 11):
        shutil.rmtree(tmp_path / "dir1")
        second_dir = tmp_path / "dir1"
    second = run_f(tmp_path, second_dir, src, remote=remote)
    assert compiles(second) == 0 and hits(second) == 1
    assert second["stats"]["remote_hits"] >= 1


def test_two_dirs_share_one_bucket_through_a_chain(tmp_path, s3_bucket):
    """`install(remote=[...])` with a dead Redis in front of a real S3 bucket (Garage): the
    second directory hits what the first compiled, from the bucket; the dead tier is counted."""
    bucket, aws = s3_bucket
    remote = ["redis://127.0.0.1:1/0", f"{bucket}/mck-py-{time.time_ns()}"]
    src = write_function(tmp_path, "a")
    first = run_f(tmp_path, tmp_path / "dir1", src, remote=remote, env=aws)
    assert compiles(first) == 1
    second_dir = tmp_path / "dir2"
    if _jax_release() < (0, 11):  # as in test_two_dirs_share_one_redis
        shutil.rmtree(tmp_path / "dir1")
        second_dir = tmp_path / "dir1"
    second = run_f(tmp_path, second_dir, src, remote=remote, env=aws)
    assert compiles(second) == 0 and hits(second) == 1
    dead, s3 = second["stats"]["tiers"]
    assert s3["url"].startswith("s3://") and s3["hits"] >= 1, second["stats"]
    assert dead["errors"] + dead["skipped"] >= 1, second["stats"]
    assert second["stats"]["entries"] >= 1, "the hit is back-filled locally"


def test_killed_mid_compile_leaves_no_damaged_entry(tmp_path, cache_dir):
    src = write_function(tmp_path, "a", loops=3000)
    spec = json.dumps(dict(cache_dir=str(cache_dir), src_dir=src))
    victim = start(tmp_path, RUN_F, name="victim.py", args=[spec])
    deadline = time.time() + 300
    for line in victim.stderr:
        if "compiling" in line and "store's lock" in line:
            break
        assert time.time() < deadline
    time.sleep(0.2)  # inside XLA's compile now
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    after = run_f(tmp_path, cache_dir, src)
    assert compiles(after) == 1 and hits(after) == 0  # no entry, nor a damaged one
    assert after["stats"]["corrupt"] == 0
    again = run_f(tmp_path, cache_dir, src)
    assert hits(again) == 1 and again["out"] == after["out"]


def test_uninstall_restores_jax(tmp_path, cache_dir):
    result = run(tmp_path, """
        import jax.numpy as jnp
        import mlir_cache_key.jax as mj
        from jax._src import compilation_cache, compiler
        before = (compilation_cache.get_cache_key, compiler._compile_and_write_cache,
                  compiler.log_persistent_cache_miss, compilation_cache.get_file_cache)
        try:
            mj.install(sys.argv[1], remote="ftp://nowhere")
            refused = False
        except ValueError:
            refused = compilation_cache.get_cache_key is before[0] and mj.installed() is None
        mj.install(sys.argv[1])
        jax.jit(lambda x: x + 1)(jnp.ones(3))
        patched = compilation_cache.get_cache_key is not before[0]
        mj.uninstall()
        after = (compilation_cache.get_cache_key, compiler._compile_and_write_cache,
                 compiler.log_persistent_cache_miss, compilation_cache.get_file_cache)
        report(patched=patched, restored=before == after, dir=jax.config.jax_compilation_cache_dir,
               refused=refused,
               installed=mj.installed() is not None)
    """, args=[str(cache_dir)])
    assert result["refused"]  # a bad setting fails before anything is touched
    assert result["patched"] and result["restored"]
    assert result["dir"] is None and not result["installed"]


def test_unsupported_jax_version_fails_before_touching_anything(tmp_path, cache_dir):
    result = run(tmp_path, """
        import jax, jaxlib
        jaxlib.__version__ = "0.0.1"
        from jax._src import compilation_cache
        original = compilation_cache.get_cache_key
        try:
            import mlir_cache_key.jax
            error = None
        except Exception as ex:
            error = f"{type(ex).__name__}: {ex}"
        report(error=error, untouched=compilation_cache.get_cache_key is original)
    """)
    assert result["error"].startswith("UnsupportedJaxVersion") and "0.0.1" in result["error"]
    assert result["untouched"]


def test_jax_settings_keep_their_meaning(tmp_path, cache_dir):
    result = run(tmp_path, """
        import numpy as np
        import mlir_cache_key.jax as mj
        jax.config.update("jax_compilation_cache_dir", sys.argv[1])
        mj.install()  # JAX's directory is the default
        path = mj.installed().path
        x = np.arange(8, dtype=np.float32)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 1 << 40)
        jax.jit(lambda v: v * 2)(x)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 3600)
        jax.jit(lambda v: v * 3)(x)
        puts_before = mj.installed().stats()["puts"]
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.jit(lambda v: v * 4)(x)
        report(path=path, puts_before=puts_before, puts=mj.installed().stats()["puts"],
               dir=jax.config.jax_compilation_cache_dir)
    """, args=[str(cache_dir)])
    assert result["path"] == str(cache_dir) and result["dir"] == str(cache_dir)
    assert result["puts_before"] == 0 and result["puts"] == 1


def test_canonical_mode_never_shares_a_key_with_jax_mode(tmp_path, cache_dir):
    result = run(tmp_path, """
        import numpy as np
        import mlir_cache_key.jax as mj
        from jax._src import cache_key, compiler as jc, xla_bridge
        import programs
        backend = xla_bridge.get_backend()
        devices = np.array([[backend.devices()[0]]])
        options = jc.get_compile_options(num_replicas=1, num_partitions=1, device_assignment=devices)
        name, f, args = programs.cpu_programs()[0]
        module = f.trace(*args).lower().compiler_ir("stablehlo")
        jax_key = mj.key(module, devices, options, backend)
        canonical = mj.key(module, devices, options, backend, mode="canonical")
        report(jax_key=jax_key, canonical=canonical,
               theirs=cache_key.get(module, devices, options, backend))
    """)
    assert result["jax_key"] == result["theirs"]
    assert result["canonical"] != result["jax_key"]
    assert result["canonical"].split("-")[0] == result["jax_key"].split("-")[0]


def _jax_release() -> tuple[int, ...]:
    import jax

    return tuple(int(part) for part in jax.__version__.split(".")[:2])


def test_report_groups_jax_misses_by_cause_with_the_stats_totals(tmp_path, cache_dir):
    from mlir_cache_key import Cache

    src = write_function(tmp_path, "a", loops=3)
    run_f(tmp_path, cache_dir, src)                                  # new program
    run_f(tmp_path, cache_dir, src)                                  # hit
    flags = "--xla_force_host_platform_device_count=8 --xla_cpu_enable_fast_math=true"
    run_f(tmp_path, cache_dir, src, env={"XLA_FLAGS": flags})        # an XLA flag added
    run_f(tmp_path, cache_dir, write_function(tmp_path, "b", loops=3, op="cos"))  # program moved
    cache = Cache(str(cache_dir))
    page = tmp_path / "report.html"
    report = cache.report(since="all", html=str(page))
    assert report["schema"] == "mlir-cache-key.report.v1"
    causes = {group["cause"]: group["count"] for group in report["causes"]}
    assert causes == {"new_program": 1, "xla_flag": 1, "program_changed": 1}, report["causes"]
    flag = next(g for g in report["causes"] if g["cause"] == "xla_flag")
    assert flag["details"][0]["detail"] == "XLA flag added: --xla_cpu_enable_fast_math=true"
    stats = cache.stats()
    for counter in ("hits", "misses", "puts", "evictions"):
        assert report["totals"][counter] == stats[counter], (counter, report["totals"], stats)
    assert report["totals"]["hits"] == 1 and report["totals"]["compile_ms_saved"] > 0
    assert "<svg" in page.read_text()
    assert cache.report(since="1h")["totals"] == report["totals"]
    with pytest.raises(ValueError, match="since"):
        cache.report(since="a week")


def another_build_of_jaxlib(tmp_path):
    """A site directory whose jaxlib is this one's with one byte appended to its largest
    shared library (still loadable: the loader ignores trailing bytes): the same version, another
    binary. First on PYTHONPATH, it is the jaxlib a child imports."""
    import jaxlib

    site = tmp_path / "other-build"
    site.mkdir()
    copy = site / "jaxlib"
    shutil.copytree(pathlib.Path(jaxlib.__file__).parent, copy)
    largest = max(copy.rglob("*.so"), key=lambda p: p.stat().st_size)
    with open(largest, "ab") as f:
        f.write(b"\0")
    return str(site)


def test_another_xla_build_of_the_same_jaxlib_never_loads_these_entries(tmp_path, cache_dir):
    from mlir_cache_key import Cache

    src = write_function(tmp_path, "a", loops=3)
    other = {"PYTHONPATH": another_build_of_jaxlib(tmp_path)}
    first = run_f(tmp_path, cache_dir, src)
    second = run_f(tmp_path, cache_dir, src, env=other, explain=True)
    assert first["xla_build"].startswith("sha256:") and second["xla_build"].startswith("sha256:")
    assert first["xla_build"] != second["xla_build"]
    # The other build compiles for itself, and says why.
    assert compiles(second) == 1 and hits(second) == 0
    moved = [t for level, t in second["lines"] if "XLA build changed" in t]
    assert moved and first["xla_build"] in moved[0] and second["xla_build"] in moved[0], moved
    # Each build then hits its own entry.
    again, other_again = run_f(tmp_path, cache_dir, src), run_f(tmp_path, cache_dir, src, env=other)
    assert hits(again) == 1 and compiles(again) == 0
    assert hits(other_again) == 1 and compiles(other_again) == 0
    assert again["out"] == other_again["out"] == first["out"]
    cache = Cache(str(cache_dir))
    assert cache.stats()["miss_reasons"] == {"new": 1, "xla_build": 1}
    report = cache.report(since="all")
    moved = next(g for g in report["causes"] if g["cause"] == "xla_build")
    assert moved["count"] == 1
    assert moved["details"][0]["detail"] == (
        f"XLA build changed: {first['xla_build']} → {second['xla_build']}")
    # The command line finds both builds' entries, by their own keys and by JAX's.
    def cli(*args):
        done = subprocess.run([sys.executable, "-m", "mlir_cache_key", *args,
                               "--cache-dir", str(cache_dir)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    entries = [e for e in json.loads(cli("cache", "entries", "--json"))
               if e["key"].startswith("jit_f-")]
    shown = [json.loads(cli("cache", "show", e["key"], "--json")) for e in entries]
    assert {s["ingredients"]["xla_build"] for s in shown} == {first["xla_build"],
                                                               second["xla_build"]}
    jax_keys = {s["ingredients"]["key"] for s in shown}
    assert len(jax_keys) == 1, "one JAX key, two builds"
    by_jax_key = json.loads(cli("cache", "show", jax_keys.pop(), "--json"))
    assert by_jax_key["ingredients"]["xla_build"] in {first["xla_build"], second["xla_build"]}
    assert cli("why", entries[0]["key"], entries[1]["key"]).startswith("XLA build changed: ")


BUILD_NAMED = """
import mlir_cache_key.jax as mj
mj.install(sys.argv[1])
cache = mj.installed()
report(build=cache.xla_build, read=cache.xla_build_files_read)
"""


def test_a_fresh_cache_directory_reads_no_library_the_user_already_digested(tmp_path):
    # The XLA build's libraries are digested once per user (the inode cache of the user's
    # default cache directory), not once per cache directory: `install()` stays a few stats.
    user = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    first = run(tmp_path, BUILD_NAMED, args=[str(tmp_path / "a")], env=user)
    fresh = run(tmp_path, BUILD_NAMED, args=[str(tmp_path / "b")], env=user)
    assert first["read"] > 0 and fresh["read"] == 0, (first, fresh)
    assert fresh["build"] == first["build"]
    assert (tmp_path / "xdg" / "mlir-cache-key" / "v1" / "inode-cache").is_file()
    # A user cache home that cannot be used: every library is read again, to the same build.
    (tmp_path / "not-a-dir").write_text("")
    unusable = run(tmp_path, BUILD_NAMED, args=[str(tmp_path / "c")],
                   env={"XDG_CACHE_HOME": str(tmp_path / "not-a-dir")})
    assert unusable["read"] == first["read"] and unusable["build"] == first["build"]


# multiprocessing children end with os._exit, past atexit: what their compiles left to be
# stored must still be stored (install() in the parent and a forked child; in a spawned child).
MULTIPROCESSING_CHILDREN = """
import multiprocessing
import mlir_cache_key.jax as mj

KEYS = [f"jit_f-{i:064x}" for i in range(300)]

def compile_some(cache_dir, part, install_here):
    if install_here:
        mj.install(cache_dir)
    cache = mj.installed()
    for key in KEYS[part::2]:
        cache.compile_once(key, lambda: key.encode(), looked_up=True, store_later=True)

if __name__ == "__main__":
    cache_dir = sys.argv[1]
    mj.install(cache_dir)
    forked = multiprocessing.get_context("fork").Process(target=compile_some,
                                                         args=(cache_dir, 0, False))
    forked.start(); forked.join()
    spawned = multiprocessing.get_context("spawn").Process(target=compile_some,
                                                           args=(cache_dir, 1, True))
    spawned.start(); spawned.join()
    cache = mj.installed()
    stored = [key for key in KEYS if cache.get(key) == key.encode()]
    report(codes=[forked.exitcode, spawned.exitcode], stored=len(stored),
           missing=[KEYS.index(k) for k in KEYS if k not in stored][:10])
"""


def test_multiprocessing_children_store_what_they_compiled(tmp_path, cache_dir):
    result = run(tmp_path, MULTIPROCESSING_CHILDREN, args=[str(cache_dir)])
    assert result["codes"] == [0, 0]
    assert result["stored"] == 300, f"entries lost at a child's exit: {result['missing']}"


# A miss's lock file is made ahead by the worker, unnamed and already locked
# (crates/store/src/lock_spares.rs). A forked child must hold no copy of one: its copy would
# keep the lock of a key the parent links it in for after the parent released it.
SPARE_LOCKS_AND_FORK = """
import os
import mlir_cache_key.jax as mj

def lock_files_open():
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            names.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    return [n for n in names if "/v1/locks/" in n]

mj.install(sys.argv[1])
cache = mj.installed()
first, second = "jit_f-" + "1" * 64, "jit_f-" + "2" * 64
cache.compile_once(first, lambda: b"first", looked_up=True, store_later=True)
cache.settle()
made = lock_files_open()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(w, json.dumps(lock_files_open()).encode())
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)
in_child = json.loads(os.read(r, 1 << 16))
cache.compile_once(second, lambda: b"second", looked_up=True, store_later=True)
cache.settle()
report(made=made, in_child=in_child, after=len(lock_files_open()),
       stored=[cache.get(first) == b"first", cache.get(second) == b"second"],
       lock_dirs=sorted(os.listdir(os.path.join(sys.argv[1], "v1", "locks"))))
"""


def test_lock_files_made_ahead_are_unnamed_and_never_inherited_by_a_forked_child(
        tmp_path, cache_dir):
    result = run(tmp_path, SPARE_LOCKS_AND_FORK, args=[str(cache_dir)])
    assert len(result["made"]) == 2 and all("(deleted)" in n for n in result["made"]), result
    assert result["in_child"] == [], "a forked child holds its parent's lock files"
    assert result["after"] == 2, "made again after the fork, by the next miss's store"
    assert result["stored"] == [True, True]
    # Released lock files are removed; the unnamed spares never had a name.
    for shard in result["lock_dirs"]:
        assert not list((cache_dir / "v1" / "locks" / shard).iterdir()), shard
