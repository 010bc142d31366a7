"""Benchmark, one run, side by side on the same programs:

1. the key: `jax._src.cache_key.get` against `mlir_cache_key.jax.key`
   (mode "jax", equal keys checked) on lowered programs and the corpus's large
   modules parsed in JAX's context; interleaved, median of N;
2. a warm second process, time to first result: JAX's own LRUCache against
   ours (`install()`), same program and settings;
3. four processes starting the same jit on a cold cache: compiles and wall time.

Run with the test venv: `target/py-venv/bin/python python/bench_key.py [--repeat N]`.
Prints Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
# Measure the installed package (with its native module), not this source tree.
sys.path[:] = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE]


def key_times(repeat: int) -> list[tuple[str, int, float, float]]:
    import numpy as np
    from jax._src import cache_key, compiler, xla_bridge
    from jax._src.interpreters import mlir

    import mlir_cache_key.jax as mj

    sys.path.insert(0, str(HERE / "tests"))
    import programs

    backend = xla_bridge.get_backend()
    devices = np.array([[backend.devices()[0]]])
    options = compiler.get_compile_options(num_replicas=1, num_partitions=1, device_assignment=devices)
    modules = [(n, m) for n, m in programs.lowered() if n in ("wide_mlp", "scan", "pallas_tpu_unzip1")]
    modules += [(n, m) for n, m in programs.corpus_modules(mlir.make_ir_context()) if n.startswith("large/")]
    rows = []
    for name, module in modules:
        assert cache_key.get(module, devices, options, backend) == mj.key(module, devices, options, backend)
        times = {"jax": ([], []), "ours": ([], []), "floor": ([], [])}  # wall, CPU of this process
        for _ in range(repeat):
            for who, fn in (("jax", cache_key.get), ("ours", mj.key), ("floor", jaxlib_floor)):
                wall, cpu = time.perf_counter(), time.process_time()
                fn(module, devices, options, backend)
                times[who][0].append(time.perf_counter() - wall)
                times[who][1].append(time.process_time() - cpu)
        medians = {who: [statistics.median(t) for t in ts] for who, ts in times.items()}
        rows.append((name, len(mlir_bytes(module)), medians["jax"], medians["ours"], medians["floor"]))
    return rows


def jaxlib_floor(module, *_):
    """The least any caller of jaxlib's Python API does for JAX's canonical bytes: clone,
    strip-debuginfo with the verifier off, write bytecode, destroy the clone (no kernel walk,
    no hash, no other key entry). JAX's time over this is the best ratio a key computed
    through jaxlib can reach."""
    import io

    from jax._src.lib.mlir import passmanager

    with module.context:
        clone = module.operation.clone()
        strip = passmanager.PassManager.parse("builtin.module(strip-debuginfo)")
        strip.enable_verifier(False)
        strip.run(clone.operation)
        clone.operation.write_bytecode(file=io.BytesIO())
        del clone


def mlir_bytes(module) -> bytes:
    from mlir_cache_key._canonical import canonical_bytes

    return canonical_bytes(module)


CHILD = """
import time
start = time.perf_counter()
import json, sys
import numpy as np
import jax, jax.numpy as jnp
cache, path = sys.argv[1], sys.argv[2]
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
if cache == "ours":
    import mlir_cache_key.jax as mj
    mj.install(path)
else:
    jax.config.update("jax_compilation_cache_dir", path)
from jax._src import monitoring
events = []
monitoring.register_event_listener(lambda e, **k: events.append(e))
ready = time.perf_counter()
if len(sys.argv) > 3:
    time.sleep(max(0.0, float(sys.argv[3]) - time.time()))
    ready = time.perf_counter()

def f(x):
    for i in range(LOOPS):
        x = jnp.sin(x) * 1.01 + i
    return x.sum()

out = jax.jit(f)(np.arange(256, dtype=np.float32)).block_until_ready()
done = time.perf_counter()
print(json.dumps(dict(first_result=done - ready, total=done - start,
                      compiles=events.count("/jax/compilation_cache/cache_misses"),
                      hits=events.count("/jax/compilation_cache/cache_hits"))))
"""


def child(cache: str, path: str, loops: int, *extra: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "JAX_"))}
    env["JAX_PLATFORMS"] = "cpu"
    code = CHILD.replace("LOOPS", str(loops))
    return subprocess.Popen([sys.executable, "-c", code, cache, path, *extra], env=env,
                            stdout=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> dict:
    out, _ = proc.communicate()
    assert proc.returncode == 0, out
    return json.loads(out.strip().splitlines()[-1])


def warm_start(repeat: int, loops: int) -> dict:
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for cache in ("jax", "ours"):
            cold = finish(child(cache, f"{tmp}/{cache}", loops))
            assert cold["compiles"] == 1, cold
            rows[cache] = {"cold": cold, "warm": []}
        for _ in range(repeat):
            for cache in ("jax", "ours"):
                warm = finish(child(cache, f"{tmp}/{cache}", loops))
                assert warm["compiles"] == 0 and warm["hits"] == 1, warm
                rows[cache]["warm"].append(warm)
    return rows


def concurrent(loops: int) -> dict:
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for cache in ("jax", "ours"):
            start_at = time.time() + 6
            start = time.perf_counter()
            procs = [child(cache, f"{tmp}/{cache}", loops, str(start_at)) for _ in range(4)]
            results = [finish(p) for p in procs]
            rows[cache] = dict(compiles=sum(r["compiles"] for r in results),
                               wall=time.perf_counter() - start - max(0.0, start_at - time.time()),
                               slowest=max(r["first_result"] for r in results))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--loops", type=int, default=1500, help="size of the warm-start program")
    parser.add_argument("--key-only", action="store_true", help="only the key table")
    args = parser.parse_args()

    print("### The key: `jax._src.cache_key.get` against `mlir_cache_key.jax.key` (mode jax)\n")
    print(f"Median of {args.repeat} interleaved calls each; keys checked equal.\n")
    print("The floor is jaxlib's clone, strip-debuginfo (no verifier), bytecode write and the")
    print("clone's teardown alone: JAX / floor bounds what any key through jaxlib can reach.\n")
    print("| module | canonical bytes | JAX | ours | floor | JAX / ours | JAX / ours, CPU time | JAX / floor |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, size, theirs, ours, floor in key_times(args.repeat):
        print(f"| {name} | {size:,} | {theirs[0] * 1e3:.2f} ms | {ours[0] * 1e3:.2f} ms "
              f"| {floor[0] * 1e3:.2f} ms | {theirs[0] / ours[0]:.2f}× | {theirs[1] / ours[1]:.2f}× "
              f"| {theirs[0] / floor[0]:.2f}× |")

    if args.key_only:
        return
    print(f"\n### Warm second process: time to first result ({args.loops}-op jit, median of {args.repeat})\n")
    rows = warm_start(args.repeat, args.loops)
    print("| cache | cold first result | warm first result | warm whole process |")
    print("|---|---:|---:|---:|")
    for cache, label in (("jax", "JAX's LRUCache"), ("ours", "mlir_cache_key.jax.install()")):
        warm = rows[cache]["warm"]
        print(f"| {label} | {rows[cache]['cold']['first_result'] * 1e3:.0f} ms "
              f"| {statistics.median(w['first_result'] for w in warm) * 1e3:.0f} ms "
              f"| {statistics.median(w['total'] for w in warm) * 1e3:.0f} ms |")

    print("\n### Four processes start the same jit on a cold cache\n")
    rows = concurrent(args.loops)
    print("| cache | XLA compiles | slowest first result |")
    print("|---|---:|---:|")
    for cache, label in (("jax", "JAX's LRUCache"), ("ours", "mlir_cache_key.jax.install()")):
        r = rows[cache]
        print(f"| {label} | {r['compiles']} | {r['slowest'] * 1e3:.0f} ms |")


if __name__ == "__main__":
    main()
