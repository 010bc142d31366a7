"""mlir-cache-key in Python: JAX-compatible compilation-cache keys, the
persistent store with its compile-once API, and the dialect-free kernel
stripper. `mlir_cache_key.jax` plugs them into `jax.jit` (imported on demand:
this package itself does not import JAX).
"""

__all__ = ["Cache", "key_from_parts", "strip_kernel", "why"]


def __getattr__(name):
    # The native module loads on first use, so `mlir_cache_key._canonical`
    # can be imported (and tested) on its own.
    if name in __all__:
        from . import _native

        return getattr(_native, name)
    raise AttributeError(f"module 'mlir_cache_key' has no attribute {name!r}")
