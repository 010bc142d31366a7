"""Varied JAX programs, lowered for real, shared by the tests and the benchmark.

`lowered()` yields `(name, ir.Module)` for each program this process can lower:
shard_map needs 8 devices (`XLA_FLAGS=--xla_force_host_platform_device_count=8`
before jax is imported); Pallas is lowered for TPU and for CUDA with
`lowering_platforms`, needing no accelerator.
"""

from __future__ import annotations

import functools
import gzip
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "data" / "corpus"


def mlp(params, x):
    for w, b in params:
        x = jax.nn.relu(x @ w + b)
    return x.sum()


def mlp_args(width=32, depth=3, batch=4):
    rng = np.random.default_rng(0)
    params = [
        (rng.standard_normal((width, width), np.float32), np.zeros(width, np.float32))
        for _ in range(depth)
    ]
    return params, rng.standard_normal((batch, width), np.float32)


def scan_fn(x):
    def body(carry, y):
        carry = carry * 0.9 + jnp.sin(y)
        return carry, carry.sum()

    carry, ys = jax.lax.scan(body, x[0], x)
    return carry.sum() + ys.sum()


def while_fn(x):
    def cond(state):
        i, _ = state
        return i < 10

    def body(state):
        i, v = state
        return i + 1, jnp.tanh(v) * 1.5

    return jax.lax.while_loop(cond, body, (0, x))[1]


@jax.custom_vjp
def clipped_sin(x):
    return jnp.sin(x)


def _clipped_fwd(x):
    return jnp.sin(x), jnp.cos(x)


def _clipped_bwd(cos_x, g):
    return (jnp.clip(g * cos_x, -1.0, 1.0),)


clipped_sin.defvjp(_clipped_fwd, _clipped_bwd)


def custom_vjp_fn(x):
    return jax.grad(lambda y: clipped_sin(y).sum())(x)


def shard_map_program():
    from jax.sharding import Mesh, PartitionSpec as P

    devices = np.array(jax.devices()[:8])
    mesh = Mesh(devices, ("i",))

    try:
        shard_map = jax.shard_map
    except AttributeError:  # before JAX 0.8.1 it was experimental only
        from jax.experimental.shard_map import shard_map

    @functools.partial(shard_map, mesh=mesh, in_specs=P("i"), out_specs=P())
    def f(x):
        return jax.lax.psum(jnp.sum(x * x), "i")

    return f


def pallas_add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def pallas_add(x, y):
    from jax.experimental import pallas as pl

    return pl.pallas_call(
        pallas_add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype)
    )(x, y)


def fake_gpu_info():
    """Lowering Pallas for CUDA asks the GPU's compute capability: pretend H100
    (JAX ≤ 0.10 has no `gpu_info` and falls back to a fixed one by itself)."""
    try:
        from jax._src.pallas.triton import gpu_info, pallas_call_registration
    except ImportError:
        return

    pallas_call_registration.gpu_info_lib.get_gpu_info = lambda: gpu_info._get_gpu_info_impl(
        gpu_info.GpuVersion.H100
    )


def cpu_programs():
    """(name, jitted function, args) run on the CPU backend."""
    params, x = mlp_args()
    v = np.linspace(0, 1, 64, dtype=np.float32).reshape(8, 8)
    out = [
        ("jit_mlp", jax.jit(mlp), (params, x)),
        ("grad_mlp", jax.jit(jax.grad(mlp)), (params, x)),
        ("scan", jax.jit(scan_fn), (v,)),
        ("while", jax.jit(while_fn), (v,)),
        ("custom_vjp", jax.jit(custom_vjp_fn), (v,)),
        ("wide_mlp", jax.jit(mlp), mlp_args(width=128, depth=6, batch=16)),
    ]
    if jax.device_count() >= 8:
        out.append(("shard_map", jax.jit(shard_map_program()), (np.ones(64, np.float32),)))
    return out


@functools.cache
def triton_lowerable() -> bool:
    """Whether this CPU-only jaxlib lowers Pallas for CUDA (from 0.11 with
    `gpu_info` faked; 0.8 falls back to a fixed compute capability; 0.9 and
    0.10 ask for jaxlib GPU)."""
    fake_gpu_info()
    x = np.ones((8, 128), np.float32)
    try:
        jax.jit(pallas_add).trace(x, x).lower(lowering_platforms=("cuda",))
    except ValueError as ex:
        if "Cannot lower pallas_call on platform: gpu" not in str(ex):
            raise
        return False
    return True


def pallas_names():
    """The cross-platform Pallas programs `lowered()` yields on this JAX
    (`jax_mosaic_unzip_debug_locations` exists from 0.12)."""
    from jax._src import config
    if hasattr(config, "jax_mosaic_unzip_debug_locations"):
        names = ["pallas_tpu_unzip1", "pallas_tpu_unzip0"]
    else:
        names = ["pallas_tpu"]
    return names + (["pallas_triton"] if triton_lowerable() else [])


def lowered():
    """(name, ir.Module) for every program, including cross-platform Pallas."""
    import contextlib

    from jax._src import config
    for name, f, args in cpu_programs():
        yield name, f.trace(*args).lower().compiler_ir("stablehlo")
    x = np.ones((8, 128), np.float32)
    for name in pallas_names():
        if not name.startswith("pallas_tpu"):
            continue
        unzip = (config.jax_mosaic_unzip_debug_locations(name.endswith("1"))
                 if name != "pallas_tpu" else contextlib.nullcontext())
        with unzip:
            yield name, (
                jax.jit(pallas_add).trace(x, x).lower(lowering_platforms=("tpu",))
            ).compiler_ir("stablehlo")
    if not triton_lowerable():
        return
    fake_gpu_info()
    yield "pallas_triton", (
        jax.jit(pallas_add).trace(x, x).lower(lowering_platforms=("cuda",))
    ).compiler_ir("stablehlo")


def corpus_modules(context, large=True):
    """(name, ir.Module) parsed in `context` from the repository's corpus."""
    from jax._src.lib.mlir import ir

    paths = sorted(CORPUS.glob("*/*.generic.mlir"))
    if not large:
        paths = [p for p in paths if p.parent.name != "large"]
    for path in paths:
        with context:
            yield f"{path.parent.name}/{path.name}", ir.Module.parse(path.read_text())
    if large:
        for path in sorted(CORPUS.glob("large/*.generic.mlir.gz")):
            with context:
                text = gzip.decompress(path.read_bytes()).decode()
                yield f"large/{path.name}", ir.Module.parse(text)
