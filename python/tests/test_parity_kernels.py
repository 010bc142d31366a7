"""The installed release's `pallas_gpu` parity vector (tests/data/parity/<release>/pallas_gpu):
the Triton kernel JAX hashed still has its locations (no release strips Triton kernels in
`cache_key`), and the dialect-free stripper behind mode "canonical" reads this release's kernel
bytecode and strips them."""

import jax
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir

from conftest import REPO
from mlir_cache_key._native import strip_kernel

VECTOR = REPO / "tests" / "data" / "parity" / jax.__version__ / "pallas_gpu"
TRITON_TARGET = "__gpu$xla.gpu.triton"
# The kernel's location names the generator's file.
LOCATION = b"gen-jax-parity.py"


def triton_kernels(computation: bytes) -> list[bytes]:
    """The `ir` payload of every Triton custom call in JAX's hashed computation."""
    kernels = []
    with mlir.make_ir_context():
        module = ir.Module.parse(computation)

        def visit(op):
            attrs = op.attributes
            if op.name == "stablehlo.custom_call" and \
                    ir.StringAttr(attrs["call_target_name"]).value == TRITON_TARGET:
                config = ir.DictAttr(attrs["mhlo.backend_config"])
                kernels.append(ir.StringAttr(config["ir"]).value_bytes)
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
    return kernels


def test_jax_hashes_the_triton_kernel_with_its_locations():
    kernels = triton_kernels((VECTOR / "computation.mlirbc").read_bytes())
    assert len(kernels) == 1, f"jax {jax.__version__}: {len(kernels)} Triton kernels"
    assert LOCATION in kernels[0]


def test_this_releases_kernel_strips_losslessly_once():
    (kernel,) = triton_kernels((VECTOR / "computation.mlirbc").read_bytes())
    stripped = strip_kernel(kernel)
    assert LOCATION not in stripped and len(stripped) < len(kernel)
    assert strip_kernel(stripped) == stripped
