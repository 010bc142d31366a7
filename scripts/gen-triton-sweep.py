"""Generates the Triton sweep under tests/data/kernels/triton-sweep/.

Run in a JAX 0.12.0.1 venv (CPU-only is enough):

    python3.12 -m venv /work/venv-triton
    /work/venv-triton/bin/pip install jax==0.12.0.1 jaxlib==0.12.0.1
    /work/venv-triton/bin/python scripts/gen-triton-sweep.py [DATA_DIR]

It lowers Pallas Triton kernels for `cuda` (no GPU needed: the GPU query is
answered with an H100) and writes each kernel's Triton IR, the raw bytecode
JAX puts in the `ir` entry of the `__gpu$xla.gpu.triton` custom call's
`mhlo.backend_config`, as `kernels/triton-sweep/<variant>.<site>.mlirbc` under
DATA_DIR (default: tests/data).

Every variant is defined once, in KERNELS below, and imported from three
generated files at different paths and line offsets ("sites"), so the three
kernels of a variant differ only in their debug locations. Variants differ in
constants, shapes, dtypes and ops. `manifest.tsv` lists every file with its
variant, its site and its program: a fingerprint of the kernel without debug
info (the SHA-256 of its generic form without locations, as jaxlib prints it),
the ground truth of which kernels are the same program; and `ops.tsv` lists, for the kernels of site a, the
operations that have inherent attributes, with their names and counts, as
jaxlib's own MLIR (with the Triton dialect registered) reads them:
the oracle the Rust tests check the property table against.

It also writes `tests/data/symbols/clip.{a,b,c}.mlir`: JAX issue 38828, the same program
traced after different warm-ups so that its private function is named
`@clip_0` in one module and `@clip_1` in the other (a, b), and a program that
really calls a different private function (c). Generic form, no locations.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile

import jax
import jax.numpy as jnp
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
from jax._src.lib.mlir.dialects import func as func_dialect
from jax._src.pallas.triton import gpu_info
from jax._src.pallas.triton import pallas_call_registration as registration
from jax.experimental import pallas as pl

registration.gpu_info_lib.get_gpu_info = lambda: gpu_info._get_gpu_info_impl(
    gpu_info.GpuVersion.H100
)

# The kernels. Each `variant_*` function returns (callable, example args).
KERNELS = '''
import functools
import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu


def _call(kernel, out_shape, *args, grid=(), in_specs=None, out_specs=None):
    kw = {}
    if grid:
        kw = dict(grid=grid, in_specs=in_specs, out_specs=out_specs)
    return pl.pallas_call(kernel, out_shape=out_shape, **kw)(*args)


def _affine(c):
    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] * c + y_ref[...]
    return kernel


def affine(c, n=8, dtype=jnp.float32):
    x = jnp.ones((n,), dtype)
    f = lambda x, y: _call(_affine(c), jax.ShapeDtypeStruct(x.shape, x.dtype), x, y)
    return f, (x, x)


def _unary(op):
    def kernel(x_ref, o_ref):
        o_ref[...] = op(x_ref[...])
    return kernel


def unary(name, n=16, dtype=jnp.float32):
    op = {
        "exp": jnp.exp, "log": jnp.log, "sin": jnp.sin, "tanh": jnp.tanh,
        "sqrt": jnp.sqrt, "abs": jnp.abs, "neg": lambda v: -v,
        "floor": jnp.floor, "rsqrt": lax.rsqrt, "not": lambda v: ~v,
        "relu": lambda v: jnp.maximum(v, 0), "clz": lax.clz,
        "sitofp": lambda v: v.astype(jnp.float32),
        "trunc16": lambda v: v.astype(jnp.float16),
        "ext": lambda v: v.astype(jnp.float32),
    }[name]
    x = jnp.ones((n,), dtype)
    out = jax.eval_shape(op, x)
    f = lambda x: _call(_unary(op), jax.ShapeDtypeStruct(out.shape, out.dtype), x)
    return f, (x,)


def _binary(op):
    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = op(x_ref[...], y_ref[...])
    return kernel


def binary(name, n=16, dtype=jnp.float32):
    op = {
        "add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply,
        "div": jnp.divide, "max": jnp.maximum, "min": jnp.minimum,
        "pow": jnp.power, "rem": jnp.remainder, "and": jnp.bitwise_and,
        "shl": jnp.left_shift, "where": lambda a, b: jnp.where(a > b, a, b),
        "ne": lambda a, b: jnp.where(a != b, a, b),
    }[name]
    x = jnp.ones((n,), dtype)
    out = jax.eval_shape(op, x, x)
    f = lambda x, y: _call(_binary(op), jax.ShapeDtypeStruct(out.shape, out.dtype), x, y)
    return f, (x, x)


def _reduce(op, axis):
    def kernel(x_ref, o_ref):
        o_ref[...] = op(x_ref[...], axis=axis)
    return kernel


def reduce(name, shape=(8, 16), axis=1):
    op = {"sum": jnp.sum, "max": jnp.max, "min": jnp.min, "argmax": jnp.argmax,
          "cumsum": jnp.cumsum}[name]
    x = jnp.ones(shape, jnp.float32)
    out = jax.eval_shape(functools.partial(op, axis=axis), x)
    f = lambda x: _call(_reduce(op, axis), jax.ShapeDtypeStruct(out.shape, out.dtype), x)
    return f, (x,)


def _dot(precision):
    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = jnp.dot(x_ref[...], y_ref[...], precision=precision,
                             preferred_element_type=jnp.float32)
    return kernel


def dot(m=16, k=16, n=16, precision=None, dtype=jnp.float32):
    x = jnp.ones((m, k), dtype)
    y = jnp.ones((k, n), dtype)
    f = lambda x, y: _call(_dot(precision), jax.ShapeDtypeStruct((m, n), jnp.float32), x, y)
    return f, (x, y)


def _grid_kernel(c):
    def kernel(x_ref, o_ref):
        i = pl.program_id(0)
        o_ref[...] = x_ref[...] + i.astype(jnp.float32) * c
    return kernel


def grid(c=1.0, n=64, block=16):
    x = jnp.ones((n,), jnp.float32)
    spec = pl.BlockSpec((block,), lambda i: (i,))
    f = lambda x: _call(_grid_kernel(c), jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                        grid=(n // block,), in_specs=[spec], out_specs=spec)
    return f, (x,)


def _loop(steps, c):
    def kernel(x_ref, o_ref):
        def body(i, acc):
            return acc * c + x_ref[...]
        o_ref[...] = lax.fori_loop(0, steps, body, jnp.zeros_like(x_ref[...]))
    return kernel


def loop(steps=4, c=0.5, n=16):
    x = jnp.ones((n,), jnp.float32)
    f = lambda x: _call(_loop(steps, c), jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return f, (x,)


def _while(limit):
    def kernel(x_ref, o_ref):
        def cond(carry):
            i, _ = carry
            return i < limit
        def body(carry):
            i, acc = carry
            return i + 1, acc + x_ref[...]
        o_ref[...] = lax.while_loop(cond, body, (0, jnp.zeros_like(x_ref[...])))[1]
    return kernel


def while_(limit=3, n=16):
    x = jnp.ones((n,), jnp.float32)
    f = lambda x: _call(_while(limit), jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return f, (x,)


def _cond(c):
    def kernel(x_ref, o_ref):
        i = pl.program_id(0)
        o_ref[...] = lax.cond(i == 0, lambda: x_ref[...] * c, lambda: x_ref[...] + c)
    return kernel


def cond(c=2.0, n=32, block=16):
    x = jnp.ones((n,), jnp.float32)
    spec = pl.BlockSpec((block,), lambda i: (i,))
    f = lambda x: _call(_cond(c), jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                        grid=(n // block,), in_specs=[spec], out_specs=spec)
    return f, (x,)


def _masked(limit, cache, evict, volatile):
    def kernel(x_ref, o_ref):
        idx = jnp.arange(16)
        v = plgpu.load(x_ref, mask=idx < limit, other=0.0, cache_modifier=cache,
                       eviction_policy=evict, volatile=volatile)
        plgpu.store(o_ref, v * 2.0, mask=idx < limit, eviction_policy=evict)
    return kernel


def masked(limit=10, cache=None, evict=None, volatile=False):
    x = jnp.ones((16,), jnp.float32)
    f = lambda x: _call(_masked(limit, cache, evict, volatile),
                        jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return f, (x,)


def _atomic(op, c):
    def kernel(x_ref, o_ref):
        getattr(plgpu, op)(o_ref, (pl.ds(0, 16),), x_ref[...] * c)
    return kernel


def atomic(op="atomic_add", c=1.0):
    x = jnp.ones((16,), jnp.float32)
    f = lambda x: _call(_atomic(op, c), jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return f, (x,)


def _barrier(c):
    def kernel(x_ref, o_ref):
        plgpu.debug_barrier()
        o_ref[...] = x_ref[...] + c
    return kernel


def barrier(c=1.0):
    x = jnp.ones((16,), jnp.float32)
    f = lambda x: _call(_barrier(c), jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return f, (x,)


def _asm(asm):
    def kernel(x_ref, o_ref):
        o_ref[...] = plgpu.elementwise_inline_asm(
            asm, args=[x_ref[...]], constraints="=r,r", pack=1,
            result_shape_dtypes=[jax.ShapeDtypeStruct((16,), jnp.float32)])[0]
    return kernel


def asm(text="mov.b32 $0, $1;"):
    x = jnp.ones((16,), jnp.float32)
    f = lambda x: _call(_asm(text), jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return f, (x,)


def _approx_tanh():
    def kernel(x_ref, o_ref):
        o_ref[...] = plgpu.approx_tanh(x_ref[...])
    return kernel


def approx_tanh():
    x = jnp.ones((16,), jnp.float32)
    f = lambda x: _call(_approx_tanh(), jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return f, (x,)


def _broadcast(c):
    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...][:, None] * y_ref[...][None, :] + c
    return kernel


def broadcast(m=8, n=16, c=1.0):
    x = jnp.ones((m,), jnp.float32)
    y = jnp.ones((n,), jnp.float32)
    f = lambda x, y: _call(_broadcast(c), jax.ShapeDtypeStruct((m, n), jnp.float32), x, y)
    return f, (x, y)


def _transpose(c):
    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...].T * c
    return kernel


def transpose(m=16, n=32, c=1.0):
    x = jnp.ones((m, n), jnp.float32)
    f = lambda x: _call(_transpose(c), jax.ShapeDtypeStruct((n, m), jnp.float32), x)
    return f, (x,)


def _iota(c):
    def kernel(o_ref):
        o_ref[...] = jnp.arange(16, dtype=jnp.int32) * c
    return kernel


def iota(c=3):
    f = lambda: _call(_iota(c), jax.ShapeDtypeStruct((16,), jnp.int32))
    return f, ()


def _softmax():
    def kernel(x_ref, o_ref):
        x = x_ref[...]
        e = jnp.exp(x - jnp.max(x, axis=1, keepdims=True))
        o_ref[...] = e / jnp.sum(e, axis=1, keepdims=True)
    return kernel


def softmax(shape=(8, 32)):
    x = jnp.ones(shape, jnp.float32)
    f = lambda x: _call(_softmax(), jax.ShapeDtypeStruct(shape, jnp.float32), x)
    return f, (x,)
'''

# (variant name, factory expression evaluated in the kernels module).
VARIANTS = [
    ("affine-c2", "affine(2.0)"),
    ("affine-c3", "affine(3.0)"),
    ("affine-c0.5", "affine(0.5)"),
    ("affine-n16", "affine(2.0, n=16)"),
    ("affine-f16", "affine(2.0, dtype=jnp.float16)"),
    ("affine-i32", "affine(2, dtype=jnp.int32)"),
    ("unary-exp", "unary('exp')"),
    ("unary-log", "unary('log')"),
    ("unary-sin", "unary('sin')"),
    ("unary-tanh", "unary('tanh')"),
    ("unary-sqrt", "unary('sqrt')"),
    ("unary-abs", "unary('abs')"),
    ("unary-neg", "unary('neg')"),
    ("unary-floor", "unary('floor')"),
    ("unary-rsqrt", "unary('rsqrt')"),
    ("unary-relu", "unary('relu')"),
    ("unary-not", "unary('not', dtype=jnp.int32)"),
    ("unary-clz", "unary('clz', dtype=jnp.int32)"),
    ("unary-sitofp", "unary('sitofp', dtype=jnp.int32)"),
    ("unary-trunc16", "unary('trunc16')"),
    ("unary-ext", "unary('ext', dtype=jnp.bfloat16)"),
    ("binary-add", "binary('add')"),
    ("binary-sub", "binary('sub')"),
    ("binary-mul", "binary('mul')"),
    ("binary-div", "binary('div')"),
    ("binary-max", "binary('max')"),
    ("binary-min", "binary('min')"),
    ("binary-pow", "binary('pow')"),
    ("binary-rem", "binary('rem')"),
    ("binary-and", "binary('and', dtype=jnp.int32)"),
    ("binary-shl", "binary('shl', dtype=jnp.int32)"),
    ("binary-where", "binary('where')"),
    ("binary-ne-i32", "binary('ne', dtype=jnp.int32)"),
    ("binary-add-n32", "binary('add', n=32)"),
    ("reduce-sum", "reduce('sum')"),
    ("reduce-sum-axis0", "reduce('sum', axis=0)"),
    ("reduce-max", "reduce('max')"),
    ("reduce-min", "reduce('min')"),
    ("reduce-argmax", "reduce('argmax')"),
    ("reduce-cumsum", "reduce('cumsum')"),
    ("dot-16", "dot()"),
    ("dot-32x16x64", "dot(32, 16, 64)"),
    ("dot-highest", "dot(precision=jax.lax.Precision.HIGHEST)"),
    ("dot-f16", "dot(dtype=jnp.float16)"),
    ("grid-4", "grid()"),
    ("grid-b32", "grid(block=32)"),
    ("grid-c2", "grid(c=2.0)"),
    ("loop-4", "loop()"),
    ("loop-7", "loop(steps=7)"),
    ("loop-c0.25", "loop(c=0.25)"),
    ("while-3", "while_()"),
    ("while-5", "while_(limit=5)"),
    ("cond-2", "cond()"),
    ("cond-3", "cond(c=3.0)"),
    ("masked-10", "masked()"),
    ("masked-12", "masked(limit=12)"),
    ("masked-cg", "masked(cache='.cg')"),
    ("masked-evict-first", "masked(evict='evict_first')"),
    ("masked-volatile", "masked(volatile=True)"),
    ("atomic-add", "atomic()"),
    ("atomic-add-c2", "atomic(c=2.0)"),
    ("atomic-max", "atomic('atomic_max')"),
    ("atomic-xchg", "atomic('atomic_xchg')"),
    ("barrier", "barrier()"),
    ("asm-mov", "asm()"),
    ("asm-mov-2", "asm('mov.b32 $0, $1; // 2')"),
    ("approx-tanh", "approx_tanh()"),
    ("broadcast-8x16", "broadcast()"),
    ("broadcast-16x8", "broadcast(16, 8)"),
    ("transpose-16x32", "transpose()"),
    ("transpose-c2", "transpose(c=2.0)"),
    ("iota-3", "iota()"),
    ("iota-5", "iota(c=5)"),
    ("softmax-8x32", "softmax()"),
    ("softmax-16x16", "softmax((16, 16))"),
]

# Three sites: the same source at different paths and line offsets.
SITES = [("a", "site_a", 0), ("b", "nested/site_b", 9), ("c", "elsewhere/x/site_c", 40)]


def load_site(root: str, subdir: str, pad: int, tag: str):
    path = os.path.join(root, subdir, "sweep_kernels.py")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n" * pad + KERNELS)
    spec = importlib.util.spec_from_file_location(f"sweep_kernels_{tag}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def walk(op):
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                yield child
                yield from walk(child)


def triton_payloads(module) -> list[bytes]:
    out = []
    for op in walk(module.operation):
        if op.name != "stablehlo.custom_call":
            continue
        if ir.StringAttr(op.attributes["call_target_name"]).value != "__gpu$xla.gpu.triton":
            continue
        config = ir.DictAttr(op.attributes["mhlo.backend_config"])
        out.append(ir.StringAttr(config["ir"]).value_bytes)
    return out


def program(payload: bytes) -> str:
    """Fingerprint of the kernel without its debug info: its generic form
    without locations, as jaxlib's MLIR with the Triton dialect prints it."""
    from jax._src.lib import triton as tt_lib

    with mlir.make_ir_context() as ctx:
        tt_lib.dialect.register_dialect(ctx)
        module = ir.Module.parse(payload)
        text = module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def oracle(payload: bytes) -> list[str]:
    """The kernel's ops that have inherent attributes, as `op(names)` with a
    `*count` when repeated, as jaxlib's MLIR with the Triton dialect reads
    them."""
    from jax._src.lib import triton as tt_lib

    with mlir.make_ir_context() as ctx:
        tt_lib.dialect.register_dialect(ctx)
        module = ir.Module.parse(payload)
        counts = collections.Counter()
        for op in [module.operation, *walk(module.operation)]:
            attrs = (op.attributes[i].name for i in range(len(op.attributes)))
            names = sorted(a for a in attrs if "." not in a)  # not discardable ones
            if names:
                counts[f"{op.name}({','.join(names)})"] += 1
        return [k if n == 1 else f"{k}*{n}" for k, n in sorted(counts.items())]


def clip_fn(x):
    return jnp.minimum(jnp.maximum(x, 0.0), 1.0)


def clip_wider(x):
    return jnp.minimum(jnp.maximum(x, 0.0), 2.0)


clip_wider.__name__ = "clip_fn"  # same name, different body


def clip_program(second):
    def program(x, y):
        return jax.jit(clip_fn)(x) * 2.0, jax.jit(second)(y * 1.5)

    return program


@contextlib.contextmanager
def helper_emitted_then_dropped():
    """JAX issue 38828: a private helper inserted into the module's symbol
    table during lowering and dropped before the module is final still moves
    MLIR's per-module uniquing counter, so later private functions get the
    next suffix (`@clip_fn_1` instead of `@clip_fn_0`). Here the helper
    collides once and is erased right away."""
    original = mlir.ModuleContext.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        with self.context, ir.Location.unknown(self.context):
            helpers = []
            for _ in range(2):
                f = func_dialect.FuncOp(
                    "helper", ir.FunctionType.get([], []), ip=ir.InsertionPoint(self.module.body)
                )
                f.attributes["sym_visibility"] = ir.StringAttr.get("private")
                self.symbol_table.insert(f)
                helpers.append(f)
            for f in helpers:
                self.symbol_table.erase(f)

    mlir.ModuleContext.__init__ = init
    try:
        yield
    finally:
        mlir.ModuleContext.__init__ = original


def write_symbols(out_dir: str) -> None:
    x, y = jnp.ones((4,), jnp.float32), jnp.ones((3,), jnp.float32)

    def generic(program) -> str:
        jax.clear_caches()
        module = jax.jit(program).lower(x, y).compiler_ir()
        return module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)

    texts = {"a": generic(clip_program(clip_fn))}
    with helper_emitted_then_dropped():
        texts["b"] = generic(clip_program(clip_fn))
    texts["c"] = generic(clip_program(clip_wider))
    assert "@clip_fn_0" in texts["a"] and "@clip_fn_1" in texts["b"], "suffixes did not move"
    assert texts["a"].replace("clip_fn_0", "clip_fn_1") == texts["b"]
    os.makedirs(out_dir, exist_ok=True)
    for tag, text in texts.items():
        with open(os.path.join(out_dir, f"clip.{tag}.mlir"), "w") as f:
            f.write(text)


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "tests", "data")
    out_dir = os.path.join(data, "kernels", "triton-sweep")
    write_symbols(os.path.join(data, "symbols"))
    os.makedirs(out_dir, exist_ok=True)
    manifest = ["file\tvariant\tsite\tprogram"]
    ops = []
    # A fixed place, so that the kernels (locations included) are reproducible.
    root = os.path.join(tempfile.gettempdir(), "mck-triton-sweep")
    shutil.rmtree(root, ignore_errors=True)
    for tag, subdir, pad in SITES:
        module = load_site(root, subdir, pad, tag)
        for variant, factory in VARIANTS:
            # As in a fresh process: JAX caches traced jaxprs (the combiner of a
            # reduction keeps the location of its first trace), which would
            # leak one site's locations into the next site's kernel.
            jax.clear_caches()
            fn, args = eval(factory, vars(module))
            lowered = jax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",))
            payloads = triton_payloads(lowered.compiler_ir())
            assert len(payloads) == 1, (variant, len(payloads))
            name = f"{variant}.{tag}.mlirbc"
            with open(os.path.join(out_dir, name), "wb") as f:
                f.write(payloads[0])
            manifest.append(f"{name}\t{variant}\t{tag}\t{program(payloads[0])}")
            if tag == "a":
                ops.append(f"{name}\t" + " ".join(oracle(payloads[0])))
    with open(os.path.join(out_dir, "manifest.tsv"), "w") as f:
        f.write("\n".join(manifest) + "\n")
    with open(os.path.join(out_dir, "ops.tsv"), "w") as f:
        f.write("\n".join(ops) + "\n")
    print(f"{len(manifest) - 1} kernels in {out_dir}")


if __name__ == "__main__":
    main()
