"""Generates tests/data/kernels/relocations/: the same Pallas kernels from
programs placed elsewhere.

Run with the JAX 0.12.0.1 venv (CPU-only is enough):

    target/py-matrix/0.12.0.1/bin/python scripts/gen-kernel-relocations.py [DATA_DIR]

(`scripts/python-matrix.sh 0.12.0.1` makes that venv.)

The Triton sweep (`gen-triton-sweep.py`) moves kernels between three files
that differ in path and line offset only. Here every kernel is lowered from
"checkouts" that differ the way two users' machines do: the kernels module at
other path depths and file names, at other lines, and called through 0, 1 or
3 wrapper functions that live in other files (JAX records the whole user
traceback of an op as a chain of call-site locations, so every wrapper adds
locations to every op). Two backends: Pallas Triton for `cuda` (the GPU query
answered with an H100, as in the sweep) and Pallas Mosaic for `tpu` (lowered
without a TPU; the kernel is the base64 `custom_call_config.body`, written
with `jax_mosaic_unzip_debug_locations` off so that its locations stay inside
it, like the corpus's `tpu_pallas_add.nounzip`; by default JAX moves them to
`debug_locations` and the body has none).

`num_warps` is not part of a Triton kernel's IR (it travels in the custom
call's backend config), so its variants are twins of `affine-c2` here: the
manifest's program column, not the variant name, says what must be equal.

Writes `<backend>.<variant>.<site>.mlirbc` and `manifest.tsv` (file, backend,
variant, site, program, mlir_stripped). `program` is the ground truth of
"same program": the SHA-256 (16 hex digits) of the kernel's generic form
without locations as jaxlib's MLIR prints it (Triton dialect registered;
Mosaic read as unregistered ops). `mlir_stripped` is the SHA-256 of what
jaxlib's own MLIR writes for the kernel after `strip-debuginfo` (same
bytecode version): the numbering MLIR gives a module without locations.

Then random location rewrites of the real kernels in the repository (the
corpus pair `tests/data/kernels/triton_add.*`, the first site of every
third Triton sweep variant, the Mosaic corpus bodies with locations inside):
`rewrites/<kernel>.r<k>.mlirbc`, each the kernel printed with its locations,
every file location replaced by a random one (paths of other depths and
lengths, other lines and columns, call-site chains up to 3 deep), unknown
locations by random ones too, and read back and written by jaxlib's MLIR at
the kernel's version. `rewrites/manifest.tsv` (file, original, program)
checks that each is the original's program.
"""

from __future__ import annotations

import base64
import hashlib
import io
import importlib.util
import json
import os
import random
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def load_module(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The sweep answers the GPU query, and has the kernels and the payload readers.
sweep = load_module("gen_triton_sweep", os.path.join(HERE, "gen-triton-sweep.py"))

import jax  # noqa: E402  (after the sweep patched the GPU query)
from jax._src.interpreters import mlir  # noqa: E402
from jax._src.lib.mlir import ir  # noqa: E402

# The kernels. Each computes through `body`, called as `CALL(body)(...)`:
# `CALL` is set per site, to the identity (the body's ops are then located in
# this file, called from the kernel) or to a chain of wrappers in other files
# (each adds a frame, so a call-site location, to every op of the body).
KERNELS = """
import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

CALL = lambda f: f


def _call(kernel, out, *args, **kw):
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(out.shape, out.dtype), **kw)(*args)


def _affine(c):
    def body(x, y):
        return x * c + y

    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = CALL(body)(x_ref[...], y_ref[...])

    return kernel


def affine(c, shape=(8,), dtype=jnp.float32, **kw):
    x = jnp.ones(shape, dtype)
    return (lambda x, y: _call(_affine(c), x, x, y, **kw)), (x, x)


def _grid(c):
    def body(x, i):
        return x * c + i.astype(jnp.float32)

    def kernel(x_ref, o_ref):
        o_ref[...] = CALL(body)(x_ref[...], pl.program_id(0))

    return kernel


def grid(block, shape=(64,), c=2.0):
    x = jnp.ones(shape, jnp.float32)
    spec = pl.BlockSpec((block, *shape[1:]), lambda i: (i,) + (0,) * (len(shape) - 1))
    return (
        lambda x: _call(_grid(c), x, x, grid=(shape[0] // block,), in_specs=[spec], out_specs=spec)
    ), (x,)


def _softmax(x):
    e = jnp.exp(x - jnp.max(x, axis=1, keepdims=True))
    return e / jnp.sum(e, axis=1, keepdims=True)


def _softmax_kernel(x_ref, o_ref):
    o_ref[...] = CALL(_softmax)(x_ref[...])


def softmax(shape):
    x = jnp.ones(shape, jnp.float32)
    return (lambda x: _call(_softmax_kernel, x, x)), (x,)


def _loop(steps):
    def body(x):
        return lax.fori_loop(0, steps, lambda i, acc: acc * 0.5 + x, jnp.zeros_like(x))

    def kernel(x_ref, o_ref):
        o_ref[...] = CALL(body)(x_ref[...])

    return kernel


def loop(steps, n=16):
    x = jnp.ones((n,), jnp.float32)
    return (lambda x: _call(_loop(steps), x, x)), (x,)


def _dot(x, y):
    return jnp.dot(x, y, preferred_element_type=jnp.float32)


def _dot_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = CALL(_dot)(x_ref[...], y_ref[...])


def dot(n):
    x = jnp.ones((n, n), jnp.float32)
    return (lambda x, y: _call(_dot_kernel, x, x, y)), (x, x)


def _chain(steps):
    def body(x):
        for i in range(steps):
            x = x * (1.0 + i / 1000.0) + float(i)
        return x

    def kernel(x_ref, o_ref):
        o_ref[...] = CALL(body)(x_ref[...])

    return kernel


# Many distinct constants: more than 128 attributes, so indices of two bytes
# and the writer's per-width dialect grouping.
def chain(steps, n=16):
    x = jnp.ones((n,), jnp.float32)
    return (lambda x: _call(_chain(steps), x, x)), (x,)


def warps(num_warps):
    return affine(2.0, compiler_params=plgpu.CompilerParams(num_warps=num_warps))
"""

# (variant, factory evaluated in the kernels module). Variants differ in
# constants, shapes, block sizes and num_warps.
TRITON = [
    ("affine-c2", "affine(2.0)"),
    ("affine-c3", "affine(3.0)"),
    ("affine-n16", "affine(2.0, (16,))"),
    ("affine-f16", "affine(2.0, dtype=jnp.float16)"),
    ("grid-b16", "grid(16)"),
    ("grid-b32", "grid(32)"),
    ("grid-c3", "grid(16, c=3.0)"),
    ("softmax-8x32", "softmax((8, 32))"),
    ("softmax-16x16", "softmax((16, 16))"),
    ("loop-4", "loop(4)"),
    ("loop-7", "loop(7)"),
    ("dot-16", "dot(16)"),
    ("dot-32", "dot(32)"),
    ("chain-150", "chain(150)"),
    ("warps-4", "warps(4)"),
    ("warps-8", "warps(8)"),
]

MOSAIC = [
    ("affine-c2", "affine(2.0, (8, 128))"),
    ("affine-c3", "affine(3.0, (8, 128))"),
    ("affine-16x128", "affine(2.0, (16, 128))"),
    ("grid-b8", "grid(8, (64, 128))"),
    ("grid-b16", "grid(16, (64, 128))"),
    ("softmax-8x128", "softmax((8, 128))"),
    ("softmax-16x128", "softmax((16, 128))"),
]

# Sites: (tag, kernels module path, blank lines before it, wrapper depth).
SITES = [
    ("a", "k.py", 0, 0),
    ("b", "proj/src/kernels/pallas_kernels_module.py", 17, 0),
    ("c", "home/someone/work/a/b/c/d/e/deep.py", 3, 1),
    ("d", "x/kernels.py", 101, 3),
    ("e", "very/long/directory/name/for/a/checkout/of/the/same/program/kern.py", 250, 3),
    ("f", "f.py", 9, 1),
]


def wrapper_source(level: int, pad: int) -> str:
    """A wrapper file: `call(fn)` returns a function calling the next level."""
    inner = f"from w{level - 1} import call as inner\n" if level > 1 else ""
    nxt = "inner(fn)(*xs)" if level > 1 else "fn(*xs)"
    return "\n" * pad + inner + f"\n\ndef call(fn):\n    def wrapped_{level}(*xs):\n        return {nxt}\n    return wrapped_{level}\n"


def load_site(root: str, tag: str, path: str, pad: int, depth: int):
    site = os.path.join(root, tag)
    kernels = load_module(f"reloc_kernels_{tag}", write(site, path, "\n" * pad + KERNELS))
    if depth:
        wdir = os.path.join(site, "wrappers", tag * 3)
        sys.path.insert(0, wdir)
        for level in range(1, depth + 1):
            write(wdir, f"w{level}.py", wrapper_source(level, 5 * level + len(tag)))
        for level in range(1, depth + 1):
            sys.modules.pop(f"w{level}", None)
        kernels.CALL = importlib.import_module(f"w{depth}").call
        sys.path.remove(wdir)
    return kernels


def write(root: str, rel: str, text: str) -> str:
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def mosaic_payloads(module) -> list[bytes]:
    out = []
    for op in sweep.walk(module.operation):
        if op.name != "stablehlo.custom_call":
            continue
        if ir.StringAttr(op.attributes["call_target_name"]).value != "tpu_custom_call":
            continue
        config = json.loads(ir.StringAttr(op.attributes["backend_config"]).value)
        out.append(base64.b64decode(config["custom_call_config"]["body"]))
    return out


def mlir_context(_payload: bytes):
    """A context that reads `payload`: with the Triton dialect registered,
    other dialects (Mosaic) as unregistered ops."""
    from jax._src.lib import triton as tt_lib

    ctx = mlir.make_ir_context()
    ctx.allow_unregistered_dialects = True
    tt_lib.dialect.register_dialect(ctx)
    return ctx


def mlir_stripped(payload: bytes) -> str:
    """SHA-256 of the kernel after jaxlib's `strip-debuginfo`, written back
    at its own bytecode version."""
    from jax._src.lib.mlir import passmanager

    with mlir_context(payload):
        module = ir.Module.parse(payload)
        passmanager.PassManager.parse("builtin.module(strip-debuginfo)").run(module.operation)
        return hashlib.sha256(write_bytecode(module, payload)).hexdigest()


def write_bytecode(module, like: bytes) -> bytes:
    out = io.BytesIO()
    module.operation.write_bytecode(out, desired_version=like[4] >> 1)
    return out.getvalue()


def generic_program(payload: bytes) -> str:
    with mlir_context(payload):
        module = ir.Module.parse(payload)
        text = module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def random_leaf(rng: random.Random) -> str:
    depth = rng.randint(0, 9)
    parts = ["".join(rng.choice("abcdefghij_") for _ in range(rng.randint(1, 14))) for _ in range(depth)]
    path = "/".join(["", *parts, f"{rng.choice(['k', 'kernels', 'model_impl'])}.py"])
    line, col = rng.randint(1, 70000), rng.randint(0, 300)
    end = f" to :{col + rng.randint(1, 90)}" if rng.random() < 0.5 else ""
    return f'"{path}":{line}:{col}{end}'


def random_location(rng: random.Random) -> str:
    loc = random_leaf(rng)
    for _ in range(rng.choice([0, 0, 1, 2, 3])):
        loc = f"callsite({loc} at {random_leaf(rng)})"
    return loc


FILE_LOC = re.compile(r'^(#loc\d*) = loc\("[^"]*":\d+:\d+.*\)$')


def rewrite_locations(payload: bytes, seed: int) -> bytes:
    """The kernel with every file and unknown location replaced at random."""
    rng = random.Random(seed)
    with mlir_context(payload):
        module = ir.Module.parse(payload)
        text = module.operation.get_asm(enable_debug_info=True, print_generic_op_form=True)
        lines = []
        for line in text.splitlines():
            m = FILE_LOC.match(line)
            if m:
                line = f"{m.group(1)} = loc({random_location(rng)})"
            lines.append(re.sub(r"loc\(unknown\)", lambda _: f"loc({random_location(rng)})", line))
        return write_bytecode(ir.Module.parse("\n".join(lines)), payload)


def write_rewrites(data: str, out_dir: str) -> None:
    kernels = os.path.join(data, "kernels")
    sweep_manifest = os.path.join(kernels, "triton-sweep", "manifest.tsv")
    originals = [os.path.join(kernels, f"triton_add.{s}.mlirbc") for s in "ab"]
    with open(sweep_manifest) as f:
        site_a = [row.split("\t")[0] for row in f.read().splitlines()[1:] if row.split("\t")[2] == "a"]
        originals += [os.path.join(kernels, "triton-sweep", name) for name in site_a[::3]]
    originals += [
        os.path.join(data, "corpus", "tpu", f"tpu_pallas_add.nounzip.{s}.kernel0.body.mlirbc")
        for s in "ab"
    ]
    os.makedirs(out_dir)
    manifest = ["file\toriginal\tprogram"]
    for i, path in enumerate(originals):
        with open(path, "rb") as f:
            payload = f.read()
        program = generic_program(payload)
        original = os.path.relpath(path, data)
        for k in range(2):
            rewritten = rewrite_locations(payload, seed=1000 * i + k)
            assert generic_program(rewritten) == program, (original, k)
            assert rewritten != payload
            name = f"{os.path.basename(path)[: -len('.mlirbc')]}.r{k}.mlirbc"
            with open(os.path.join(out_dir, name), "wb") as f:
                f.write(rewritten)
            manifest.append(f"{name}\t{original}\t{program}")
    with open(os.path.join(out_dir, "manifest.tsv"), "w") as f:
        f.write("\n".join(manifest) + "\n")
    print(f"{len(manifest) - 1} rewrites in {out_dir}")


def main() -> None:
    data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "data")
    out_dir = os.path.join(data, "kernels", "relocations")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    # A fixed place, so that the kernels (locations included) are reproducible.
    root = os.path.join(tempfile.gettempdir(), "mck-kernel-relocations")
    jax.config.update("jax_mosaic_unzip_debug_locations", False)
    shutil.rmtree(root, ignore_errors=True)
    manifest = ["file\tbackend\tvariant\tsite\tprogram\tmlir_stripped"]
    backends = [
        ("triton", TRITON, "cuda", sweep.triton_payloads),
        ("mosaic", MOSAIC, "tpu", mosaic_payloads),
    ]
    for tag, path, pad, depth in SITES:
        kernels = load_site(root, tag, path, pad, depth)
        for backend, variants, platform, payloads_of in backends:
            for variant, factory in variants:
                # As in a fresh process (see gen-triton-sweep.py).
                jax.clear_caches()
                fn, args = eval(factory, vars(kernels))
                lowered = jax.jit(fn).trace(*args).lower(lowering_platforms=(platform,))
                payloads = payloads_of(lowered.compiler_ir())
                assert len(payloads) == 1, (backend, variant, len(payloads))
                name = f"{backend}.{variant}.{tag}.mlirbc"
                with open(os.path.join(out_dir, name), "wb") as f:
                    f.write(payloads[0])
                fingerprint = generic_program(payloads[0])
                stripped = mlir_stripped(payloads[0])
                manifest.append(f"{name}\t{backend}\t{variant}\t{tag}\t{fingerprint}\t{stripped}")
    with open(os.path.join(out_dir, "manifest.tsv"), "w") as f:
        f.write("\n".join(manifest) + "\n")
    print(f"{len(manifest) - 1} kernels in {out_dir}")
    write_rewrites(data, os.path.join(out_dir, "rewrites"))


if __name__ == "__main__":
    main()
