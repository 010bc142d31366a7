"""Remembers, in the cache directory, that `install()`'s probe agreed with JAX, so that the next
install in the same setting skips it: the probe lowers a module, most of an install's time.

A setting is everything the probe's outcome could depend on: the mode, the Python, JAX's and
jaxlib's versions, the XLA build's digest, the code of every function of JAX's key module and
of ours as they are bound now (a patched or edited function is another setting), our native
extension's file identity, and JAX's configuration values. A file named by the digest of that
is written after a probe agrees; its content is never read. Without JAX's configuration values
(an unknown JAX), nothing is remembered and every install probes.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import types

# The most settings remembered per cache: the oldest go first.
_KEEP = 64


def _functions_digest(h, module) -> None:
    """Every function of `module` as bound now (name, then code), in name order."""
    for name in sorted(vars(module)):
        value = vars(module)[name]
        code = getattr(value, "__code__", None)
        if isinstance(value, types.FunctionType) and code is not None:
            h.update(name.encode() + b"\0" + marshal.dumps(code))


def path(cache_path: str, mode: str, xla_build: str | None) -> str | None:
    """The memo file of this process's setting, or None when it cannot be named."""
    try:
        import jax
        import jaxlib
        from jax._src import cache_key

        from . import _canonical, _jax_internals, _native, jax as ours

        values = getattr(getattr(jax, "config", None), "values", None)
        if not isinstance(values, dict):
            return None
        h = hashlib.sha256()
        for part in (mode, sys.version, jax.__version__, jaxlib.__version__, xla_build or "-"):
            h.update(part.encode() + b"\0")
        for module in (cache_key, _jax_internals, _canonical, ours):
            _functions_digest(h, module)
        native = os.stat(_native.__file__)
        h.update(f"{native.st_ino}:{native.st_size}:{native.st_mtime_ns}\0".encode())
        for name in sorted(values):
            h.update(f"{name}={values[name]!r}\0".encode())
    except (ImportError, OSError, AttributeError, TypeError, ValueError):
        return None
    return os.path.join(cache_path, "v1", "jax-probe", h.hexdigest())


def passed(memo: str | None) -> bool:
    return memo is not None and os.path.isfile(memo)


def remember(memo: str | None) -> None:
    """Records that the probe agreed (best effort: a failure only means probing next time)."""
    if memo is None:
        return
    folder = os.path.dirname(memo)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        with open(memo, "xb"):
            pass
        names = os.listdir(folder)
        if len(names) > _KEEP:
            dated = sorted(names, key=lambda n: os.stat(os.path.join(folder, n)).st_mtime_ns)
            for name in dated[: len(names) - _KEEP]:
                os.unlink(os.path.join(folder, name))
    except OSError:
        pass
