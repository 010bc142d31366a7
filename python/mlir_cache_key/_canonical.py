"""The "computation" entry: a jaxlib `ir.Module` canonicalised in-process
through jaxlib's own MLIR, giving the bytes `jax._src.cache_key` hashes.

The steps are JAX's (`_canonicalize_ir` + `_serialize_ir`) as the installed
release does them: clone, run `strip-debuginfo`, strip Mosaic kernels' debug
info (from 0.11), drop the callbacks the release's callback argument names
(`ignore_callbacks` on ≤ 0.10, `ignore_custom_partitioning` after), write
bytecode. What JAX spends beyond that is waste
that cannot change the bytes, and is skipped:
- the verifier after `strip-debuginfo`: the pass only replaces locations,
  which no verifier reads, so it cannot make a valid module invalid (an
  invalid input fails in XLA's compile instead of in the key);
- the Python walk over every operation for the Mosaic and custom-partitioning
  steps: both only touch `stablehlo.custom_call` ops whose `call_target_name`
  is a fixed string, so when that string is not in the written bytecode (every
  string attribute's text is stored there verbatim) no op can match and the
  walk cannot change anything. When it is, JAX's own functions run.
"""

from __future__ import annotations

import io

from . import _jax_internals as J

_STRIP = "builtin.module(strip-debuginfo)"
_MOSAIC_TARGET = b"tpu_custom_call"
_TRITON_TARGET = "__gpu$xla.gpu.triton"
_HAS_MOSAIC = J.mosaic_available()

MODES = ("jax", "canonical")


def _write(module) -> bytes:
    out = io.BytesIO()
    module.operation.write_bytecode(file=out)
    return out.getvalue()


def _strip_debuginfo(module) -> None:
    passes = J.passmanager.PassManager.parse(_STRIP)
    passes.enable_verifier(False)
    passes.run(module.operation)


def canonical_bytes(module, callbacks=J.NO_CALLBACKS_IGNORED, mode: str = "jax") -> bytes:
    """The bytes the installed JAX hashes for `module` (mode "jax"), or in
    mode "canonical" the same with embedded Triton kernels stripped as well.
    `callbacks` is the release's callback argument of `cache_key.get`."""
    return canonical(module, callbacks, mode)[0]


def canonical(module, callbacks=J.NO_CALLBACKS_IGNORED, mode: str = "jax"):
    """`canonical_bytes`, and the canonical module they were written from (None where JAX
    hashes the module as it is): kept, a miss prints it (`text_of`) without canonicalising
    the module again."""
    if J.include_metadata_in_key():
        # JAX hashes the module as it is: nothing to save.
        with module.context:
            return J.serialize_ir(module, callbacks), None
    with module.context:
        m, data = _canonical_module(module, callbacks, mode)
        return (data if data is not None else _write(m)), m


def text_of(canonical_module) -> str:
    """A canonical module's text (the module JAX compiles, so verified already: printing
    without verifying again gives the same text, for half the cost)."""
    return canonical_module.operation.get_asm(enable_debug_info=False, assume_verified=True)


def canonical_text(module, callbacks=J.NO_CALLBACKS_IGNORED, mode: str = "jax") -> str:
    """The canonical module as text, to show which operation moved on a miss."""
    with module.context:
        if J.include_metadata_in_key():
            return module.operation.get_asm(enable_debug_info=True)
        m, _ = _canonical_module(module, callbacks, mode)
        return text_of(m)


def _canonical_module(module, callbacks, mode):
    """The canonicalised clone, and its bytecode when already written."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    m = module.operation.clone(ip=False)
    _strip_debuginfo(m)
    data = _write(m)
    if _HAS_MOSAIC and _MOSAIC_TARGET in data:
        J.strip_mosaic_debug_info(m)
        data = None
    if mode == "canonical" and _TRITON_TARGET.encode() in (data or _write(m)):
        _strip_triton_kernels(m)
        data = None
    markers = J.callback_markers(callbacks)
    if markers and any(marker in (data or _write(m)) for marker in markers):
        # JAX works on a second clone here; so do we (the rare case).
        m = J.remove_callbacks(m.operation.clone(ip=False), callbacks)
        data = None
    return m, data


def _strip_triton_kernels(m) -> None:
    """Mode "canonical": Triton kernels carry their own locations inside the
    `ir` bytecode of `mhlo.backend_config`; the dialect-free stripper drops
    them (JAX keeps them, so moving a Pallas kernel misses there)."""
    from ._native import strip_kernel

    ir = J.ir
    target = ir.StringAttr.get(_TRITON_TARGET)

    def visit(op):
        attrs = op.attributes
        if (
            op.name != "stablehlo.custom_call"
            or "call_target_name" not in attrs
            or attrs["call_target_name"] != target
            or "mhlo.backend_config" not in attrs
        ):
            return ir.WalkResult.ADVANCE
        config = ir.DictAttr(attrs["mhlo.backend_config"])
        if "ir" not in config:
            return ir.WalkResult.ADVANCE
        fields = {named.name: named.attr for named in config}
        payload = ir.StringAttr(fields["ir"]).value_bytes
        try:
            stripped = strip_kernel(payload)
        except ValueError:  # not bytecode we can read: kept as it is
            return ir.WalkResult.ADVANCE
        fields["ir"] = ir.StringAttr.get(stripped)
        attrs["mhlo.backend_config"] = ir.DictAttr.get(fields)
        return ir.WalkResult.ADVANCE

    m.operation.walk(visit)
