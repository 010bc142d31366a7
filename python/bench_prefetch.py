"""Benchmark: warm-start time to the first results of a program with four
distinct jits (a transformer's init, training step, eval step and a greedy
decode step), in fresh processes, interleaved:

- "jax": JAX's own persistent cache (LRUCache) in its own directory;
- "ours": `mlir_cache_key.jax.install(prefetch=False)`;
- "ours+prefetch": `install(prefetch=True)` (the previous run of the same
  command line recorded the keys).

Each variant first runs once cold (compiles, fills its cache, records its
keys); then `--rounds` rounds run each variant once, in turn. Per run: time
from process start to the last result, and its phases (import; trace and
lower, from JAX's own duration events; key; load on the critical path:
read + decompress + deserialize, or the wait for a prefetch; the rest is
first execution and Python). Also measures whether `deserialize_executable`
releases the GIL (a Python loop's progress on the main thread while another
thread deserializes).

Run with a matrix venv: `target/py-matrix/0.12.0.1/bin/python python/bench_prefetch.py`.
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
sys.path[:] = [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE]

# The measured model; `blocks` is set before it runs.
MODEL = r'''
# A transformer LM: `blocks` blocks, d=256, 4 heads, seq 128, batch 8, vocab 2048.
V, D, H, L, T, B = 2048, 256, 4, blocks, 128, 8
def init(key):
    keys = jax.random.split(key, 2 + 4 * L)
    n = lambda k, *s: jax.random.normal(k, s, jnp.float32) * 0.02
    params = dict(emb=n(keys[0], V, D), pos=n(keys[1], T, D), blocks=[])
    for i in range(L):
        k = keys[2 + 4 * i: 6 + 4 * i]
        params["blocks"].append(dict(qkv=n(k[0], D, 3 * D), out=n(k[1], D, D),
                                     up=n(k[2], D, 4 * D), down=n(k[3], 4 * D, D),
                                     g1=jnp.ones(D), g2=jnp.ones(D)))
    return params
def norm(x, g):
    return x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-6) * g
def forward(params, tokens):
    x = params["emb"][tokens] + params["pos"][: tokens.shape[1]]
    mask = jnp.tril(jnp.ones((tokens.shape[1],) * 2, bool))
    for b in params["blocks"]:
        q, k, v = jnp.split(norm(x, b["g1"]) @ b["qkv"], 3, -1)
        split = lambda t: t.reshape(*t.shape[:2], H, D // H).transpose(0, 2, 1, 3)
        q, k, v = split(q), split(k), split(v)
        att = jnp.where(mask, q @ k.transpose(0, 1, 3, 2) / (D // H) ** 0.5, -1e9)
        y = (jax.nn.softmax(att) @ v).transpose(0, 2, 1, 3).reshape(x.shape)
        x = x + y @ b["out"]
        x = x + jax.nn.gelu(norm(x, b["g2"]) @ b["up"]) @ b["down"]
    return x @ params["emb"].T
def loss(params, tokens):
    logits = forward(params, tokens[:, :-1])
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), tokens[:, 1:, None], -1))
@jax.jit
def train_step(params, tokens):
    l, grads = jax.value_and_grad(loss)(params, tokens)
    return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads), l
@jax.jit
def eval_step(params, tokens):
    logits = forward(params, tokens[:, :-1])
    return loss(params, tokens), jnp.mean(jnp.argmax(logits, -1) == tokens[:, 1:])
@jax.jit
def decode_step(params, tokens):
    return jnp.argmax(forward(params, tokens)[:, -1], -1)

'''

# The measured program: argv = variant, cache dir, transformer blocks. Prints one JSON line.
PROGRAM = r'''
import time
START = time.perf_counter()
import json, os, sys
variant, cache_dir, blocks = sys.argv[1], sys.argv[2], int(sys.argv[3])
import jax, jax.numpy as jnp
from jax._src import compilation_cache, monitoring
IMPORTED = time.perf_counter()
phases = dict(trace=0.0, lower=0.0, key=0.0, load=0.0)
def on_duration(event, secs, **_):
    if event == "/jax/core/compile/jaxpr_trace_duration":
        phases["trace"] += secs
    elif event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
        phases["lower"] += secs
monitoring.register_event_duration_secs_listener(on_duration)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
if variant == "jax":
    jax.config.update("jax_compilation_cache_dir", cache_dir)
else:
    import mlir_cache_key.jax as mj
    mj.install(cache_dir, prefetch=variant == "ours+prefetch")
INSTALLED = time.perf_counter()

def timed(module, name, phase):
    inner = getattr(module, name)
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            phases[phase] += time.perf_counter() - t
    setattr(module, name, wrapper)
timed(compilation_cache, "get_cache_key", "key")
timed(compilation_cache, "get_executable_and_time", "load")

# <MODEL>
params = jax.jit(init)(jax.random.key(0))
tokens = jax.random.randint(jax.random.key(1), (B, T + 1), 0, V)
params, l = train_step(params, tokens)
e = eval_step(params, tokens)
d = decode_step(params, tokens[:, :T])
jax.block_until_ready((params, l, e, d))
DONE = time.perf_counter()
CPU = time.process_time()  # every thread's: what two cores had to do
prefetch = None
if variant == "ours+prefetch":
    p = mj._state.prefetcher
    mj.uninstall()
    prefetch = vars(p.totals)
print("RESULT " + json.dumps(dict(total=DONE - START, cpu=CPU, imported=IMPORTED - START,
                                  install=INSTALLED - IMPORTED, prefetch=prefetch,
                                  loss=float(l), **phases)), flush=True)
'''
PROGRAM = PROGRAM.replace("# <MODEL>\n", MODEL)

# GIL check: progress of a pure-Python loop on the main thread while another
# thread deserializes a stored executable, against the same loop alone.
GIL_PROBE = r'''
import json, sys, threading, time
import jax, jax.numpy as jnp, numpy as np
from jax._src import compilation_cache as cc
from jax._src.lib import xla_client as xc
f = jax.jit(lambda x: jnp.tanh(x @ x.T).sum(0) + jnp.cumsum(x, 0)[-1])
x = np.ones((256, 256), np.float32)
compiled = f.lower(x).compile()
exe = compiled._executable.xla_executable
backend = jax.devices()[0].client
serialized = exe.serialize()
devices = xc.DeviceList(tuple(jax.devices()[:1]))
from jax._src import compiler
options = compiler.get_compile_options(num_replicas=1, num_partitions=1)
def spin(seconds):
    n, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        n += 1
    return n
def deserialize_many(count, out):
    # Kept, as a prefetch keeps them: dropping one destroys it with the GIL held.
    kept = []
    t = time.perf_counter()
    for _ in range(count):
        kept.append(backend.deserialize_executable(serialized, devices, options))
    out.append(time.perf_counter() - t)
took = []
deserialize_many(3, took)
count = max(3, int(0.5 / (took[0] / 3)))
alone = spin(0.5)
took = []
worker = threading.Thread(target=deserialize_many, args=(count, took))
worker.start()
t = time.perf_counter()
n, spun = 0, 0.0
while worker.is_alive():
    n += spin(0.01)
spun = time.perf_counter() - t
worker.join()
print("RESULT " + json.dumps(dict(alone_per_s=alone / 0.5, during_per_s=n / spun,
                                  deserialize_ms=took[0] / count * 1000, size=len(serialized))))
'''


# The second core: the main thread's CPU time to trace and lower the training step, alone,
# while another thread of the process deserializes in a loop (what a prefetch does: the
# largest executable of JAX's warm cache, argv[2]), and while another process does. CPU time
# counts neither waits for the GIL nor for a core, so a rise is the two cores slowing each
# other (caches, memory, the host).
CONTENTION_PROBE = r'''
import glob, json, os, statistics, subprocess, sys, threading, time
import jax, jax.numpy as jnp
from jax._src import compilation_cache as cc, compiler
from jax._src.lib import xla_client as xc
blocks, jax_cache = int(sys.argv[1]), sys.argv[2]
# <MODEL>
largest = max(glob.glob(os.path.join(jax_cache, "*-cache")), key=os.path.getsize)
with open(largest, "rb") as f:
    serialized, _ = cc.extract_executable_and_time(cc.decompress_executable(f.read()))
LOOP = """
import sys, jax
from jax._src import compiler
from jax._src.lib import xla_client as xc
serialized = sys.stdin.buffer.read()
backend = jax.devices()[0].client
devices = xc.DeviceList(tuple(jax.devices()[:1]))
options = compiler.get_compile_options(num_replicas=1, num_partitions=1)
print("ready", flush=True)
kept = []
while True:
    kept.append(backend.deserialize_executable(serialized, devices, options))
    del kept[:-4]
"""
backend = jax.devices()[0].client
devices = xc.DeviceList(tuple(jax.devices()[:1]))
options = compiler.get_compile_options(num_replicas=1, num_partitions=1)
shapes = jax.eval_shape(init, jax.random.key(0))
tokens = jax.ShapeDtypeStruct((B, T + 1), jnp.int32)
def lowering_cpu():
    jax.clear_caches()
    t = time.thread_time()
    train_step.lower(shapes, tokens)
    return time.thread_time() - t
def median_cpu():
    return statistics.median(lowering_cpu() for _ in range(7))
lowering_cpu()
alone = median_cpu()
stop = threading.Event()
def deserialize_loop():
    kept = []
    while not stop.is_set():
        kept.append(backend.deserialize_executable(serialized, devices, options))
        del kept[:-4]  # the oldest only: destroying one holds the GIL
worker = threading.Thread(target=deserialize_loop)
worker.start()
time.sleep(0.2)
with_thread = median_cpu()
stop.set()
worker.join()
other = subprocess.Popen([sys.executable, "-c", LOOP], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
other.stdin.write(serialized)
other.stdin.close()
other.stdout.readline()
time.sleep(0.2)
with_process = median_cpu()
other.kill()
other.wait()
alone = (alone + median_cpu()) / 2
print("RESULT " + json.dumps(dict(alone=alone, thread=with_thread, process=with_process,
                                  size=len(serialized), entry=os.path.basename(largest))))
'''
CONTENTION_PROBE = CONTENTION_PROBE.replace("# <MODEL>\n", MODEL)


def run_child(code: str, args: list[str], env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                         text=True, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"child failed:\n{out.stderr[-4000:]}")
    line = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    # 12: the transformer of the issue's own measurements (deserialize ~30% of a warm start).
    parser.add_argument("--blocks", type=int, default=12)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "JAX_"))}
    env["JAX_PLATFORMS"] = "cpu"
    env.pop("MLIR_CACHE_KEY_FLAGS", None)
    variants = ["jax", "ours", "ours+prefetch"]
    runs: dict[str, list[dict]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        dirs = {v: os.path.join(tmp, v.replace("+", "_")) for v in variants}
        argv = {v: [v, dirs[v], str(args.blocks)] for v in variants}
        cold = {v: run_child(PROGRAM, argv[v], env)["total"] for v in variants}
        for _ in range(args.rounds):
            for v in variants:
                runs[v].append(run_child(PROGRAM, argv[v], env))
        gil = run_child(GIL_PROBE, [], env)
        contention = run_child(CONTENTION_PROBE, [str(args.blocks), dirs["jax"]], env)
    import jax

    print(f"jax {jax.__version__}, {args.blocks} blocks, {os.cpu_count()} cores, "
          f"{args.rounds} interleaved rounds, "
          f"medians; cold runs: " + ", ".join(f"{v} {cold[v]:.2f} s" for v in variants) + "\n")
    jax_total = statistics.median(r["total"] for r in runs["jax"])
    print("| variant | time to all 4 results | vs JAX | vs JAX, same round | import | install "
          "| trace | lower | key | load on the critical path | rest (first execution, Python) "
          "| CPU, all threads |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for v in variants:
        med = {k: statistics.median(r[k] for r in runs[v])
               for k in ("total", "cpu", "imported", "install", "trace", "lower", "key", "load")}
        rest = med["total"] - sum(med[k] for k in ("imported", "install", "trace", "lower",
                                                   "key", "load"))
        # The machine's speed drifts between rounds: the ratio to JAX's run of the same round.
        paired = statistics.median(r["total"] / j["total"] for r, j in zip(runs[v], runs["jax"]))
        print(f"| {v} | {med['total']:.2f} s | {med['total'] / jax_total:.2f}x | {paired:.2f}x | "
              f"{med['imported']:.2f} | {med['install']:.2f} | {med['trace']:.2f} | "
              f"{med['lower']:.2f} | {med['key']:.3f} | {med['load']:.2f} | {rest:.2f} | "
              f"{med['cpu']:.2f} s |")
    prefetched = [r["prefetch"] for r in runs["ours+prefetch"]]
    print("\nprefetch per run (median): " + ", ".join(
        f"{k} {statistics.median(p[k] for p in prefetched):g}" for k in prefetched[0]))
    print(f"\nGIL: a Python loop ran {gil['during_per_s'] / gil['alone_per_s']:.0%} of its "
          f"alone speed while another thread ran deserialize_executable "
          f"({gil['deserialize_ms']:.1f} ms per call, {gil['size']} bytes)")

    print(f"\nThe second core: the main thread's CPU time to trace and lower train_step is "
          f"{contention['thread'] / contention['alone']:.2f}x its time alone while another "
          f"thread deserializes (the largest entry, {contention['entry'].split('-')[0]}, "
          f"{contention['size']} bytes, in a loop), "
          f"{contention['process'] / contention['alone']:.2f}x while another process does "
          f"({contention['alone'] * 1000:.0f} ms alone)")


if __name__ == "__main__":
    main()
