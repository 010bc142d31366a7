"""Every touch of JAX's private API, in one place.

JAX has no public hook for its persistent cache, so the integration reads and
replaces a few private names. This module is the whole list; each one was read
from the pinned versions below, and `check_versions()` refuses any other
before anything is imported or patched:

- `jax._src.cache_key`: `get`, `_strip_mosaic_debug_info`,
  `_remove_custom_partitioning_callbacks`, `_serialize_ir` (reused as they are,
  so their bytes are JAX's by construction), `custom_hook`,
  `get_flag_prefixes`, `jaxlib_version_str`, `logger`;
- `jax._src.compilation_cache`: `get_cache_key` and `get_file_cache`
  (replaced), `reset_cache`, `zstandard` (which compression JAX names),
  `compress_executable`, `decompress_executable`,
  `combine_executable_and_time`, `extract_executable_and_time`,
  `VerificationCache`, `is_persistent_cache_enabled`, `logger`;
- `jax._src.compilation_cache_interface.CacheInterface`;
- `jax._src.compiler`: `_compile_and_write_cache` and
  `log_persistent_cache_miss` (replaced), `log_persistent_cache_hit`,
  `backend_compile_and_load`, `logger`;
- `jax._src.config`: the cache settings read through `setting()`;
  `jax._src.distributed.global_state.process_id`; `jax._src.monitoring`;
- jaxlib: `jax._src.lib.mlir.ir` and `passmanager`, `jax._src.lib.tpu`,
  `xla_client.get_topology_for_devices`, `_jax.JaxRuntimeError`.
"""

from __future__ import annotations

# JAX and jaxlib versions whose internals were read for this module.
SUPPORTED_VERSIONS = {"jax": ("0.12.0.1",), "jaxlib": ("0.12.0.1",)}


class UnsupportedJaxVersion(RuntimeError):
    """The installed JAX is not one whose internals this package was built against."""


def check_versions() -> None:
    """Raises `UnsupportedJaxVersion` unless jax and jaxlib are pinned versions."""
    import jax
    import jaxlib

    found = {"jax": jax.__version__, "jaxlib": jaxlib.__version__}
    bad = {k: v for k, v in found.items() if v not in SUPPORTED_VERSIONS[k]}
    if bad:
        wanted = ", ".join(f"{k} {' or '.join(v)}" for k, v in SUPPORTED_VERSIONS.items())
        have = ", ".join(f"{k} {v}" for k, v in found.items())
        raise UnsupportedJaxVersion(
            f"mlir_cache_key.jax supports {wanted}; found {have}. It replaces private "
            "parts of JAX's compilation cache, so it refuses other versions."
        )


check_versions()

# Imported only after the version check: names below are private API.
from jax._src import cache_key  # noqa: E402
from jax._src import compilation_cache  # noqa: E402
from jax._src import compilation_cache_interface  # noqa: E402
from jax._src import compiler  # noqa: E402
from jax._src import config  # noqa: E402
from jax._src import distributed  # noqa: E402
from jax._src import monitoring  # noqa: E402
from jax._src.lib import _jax  # noqa: E402
from jax._src.lib import xla_client  # noqa: E402
from jax._src.lib.mlir import ir  # noqa: E402
from jax._src.lib.mlir import passmanager  # noqa: E402

CacheInterface = compilation_cache_interface.CacheInterface
JaxRuntimeError = _jax.JaxRuntimeError
key_logger = cache_key.logger
cache_logger = compilation_cache.logger
compiler_logger = compiler.logger

# JAX's own steps, reused so their bytes are JAX's.
strip_mosaic_debug_info = cache_key._strip_mosaic_debug_info
remove_custom_partitioning_callbacks = cache_key._remove_custom_partitioning_callbacks
serialize_ir = cache_key._serialize_ir


def mosaic_available() -> bool:
    """JAX strips Mosaic kernels only when jaxlib has the `tpu` dialect."""
    try:
        from jax._src.lib import tpu  # noqa: F401
    except ImportError:
        return False
    return True


# --- the seven other key entries, read as `cache_key.get` reads them ---------


def compiler_version() -> str:
    return cache_key.jaxlib_version_str


def custom_hook() -> str:
    # Looked up on each call: users replace `cache_key.custom_hook`.
    return cache_key.custom_hook()


def flag_prefixes() -> list[str]:
    return list(cache_key.get_flag_prefixes())


def topology_for_devices(devices: list):
    return xla_client.get_topology_for_devices(devices)


def include_metadata_in_key() -> bool:
    return config.compilation_cache_include_metadata_in_key.value


def remove_custom_partitioning_ptr() -> bool:
    return config.remove_custom_partitioning_ptr_from_cache_key.value


def jax_compression() -> str:
    """The compression entry `compilation_cache.get_cache_key` passes."""
    return "zstandard" if compilation_cache.zstandard is not None else "zlib"


# --- settings -----------------------------------------------------------------


def setting(name: str):
    return getattr(config, name).value


def update_setting(name: str, value) -> None:
    config.config.update(name, value)


def process_id() -> int:
    return distributed.global_state.process_id


def record_event(name: str) -> None:
    monitoring.record_event(name)


def record_event_duration_secs(name: str, secs: float) -> None:
    monitoring.record_event_duration_secs(name, secs)


def module_name(module) -> str:
    return ir.StringAttr(module.operation.attributes["sym_name"]).value


def jax_key(module, devices, compile_options, backend, compression, ignore_custom_partitioning):
    return cache_key.get(module, devices, compile_options, backend, compression,
                         ignore_custom_partitioning)


# --- the compile path -----------------------------------------------------------


def is_persistent_cache_enabled() -> bool:
    return compilation_cache.is_persistent_cache_enabled()


def backend_compile_and_load(backend, module, executable_devices, options, host_callbacks):
    return compiler.backend_compile_and_load(backend, module, executable_devices, options,
                                             host_callbacks)


def log_persistent_cache_hit(module_name: str, key: str) -> None:
    compiler.log_persistent_cache_hit(module_name, key)


def entry_value(executable, compile_secs: float) -> bytes:
    """A cache value as JAX writes it: compile time + executable, compressed."""
    cc = compilation_cache
    return cc.compress_executable(
        cc.combine_executable_and_time(executable.serialize(), int(compile_secs)))


def load_entry(value: bytes, backend, executable_devices, compile_options, host_callbacks):
    """The executable of a cache value and its compile time, as JAX reads it."""
    cc = compilation_cache
    serialized, compile_time = cc.extract_executable_and_time(cc.decompress_executable(value))
    if host_callbacks:
        executable = backend.deserialize_executable(
            serialized, executable_devices, compile_options, host_callbacks)
    else:
        executable = backend.deserialize_executable(serialized, executable_devices, compile_options)
    return executable, compile_time


def verification_cache(cache):
    return compilation_cache.VerificationCache(cache)


def reset_cache() -> None:
    compilation_cache.reset_cache()


# --- patching ------------------------------------------------------------------


class Patches:
    """Replaces module attributes and puts every original back, all or nothing."""

    def __init__(self) -> None:
        self._saved: list[tuple[object, str, object]] = []

    def set(self, owner, name: str, value) -> None:
        if not hasattr(owner, name):
            self.undo()
            raise AttributeError(f"{owner.__name__}.{name} is missing: JAX changed its internals")
        self._saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def undo(self) -> None:
        while self._saved:
            owner, name, value = self._saved.pop()
            setattr(owner, name, value)


def patch_cache(patches: Patches, *, get_cache_key, get_file_cache, compile_and_write_cache,
                log_persistent_cache_miss) -> dict:
    """Routes JAX's persistent cache through the given functions; returns the
    originals the replacements fall back to."""
    originals = dict(
        compile_and_write_cache=compiler._compile_and_write_cache,
        log_persistent_cache_miss=compiler.log_persistent_cache_miss,
    )
    patches.set(compilation_cache, "get_cache_key", get_cache_key)
    patches.set(compilation_cache, "get_file_cache", get_file_cache)
    patches.set(compiler, "_compile_and_write_cache", compile_and_write_cache)
    patches.set(compiler, "log_persistent_cache_miss", log_persistent_cache_miss)
    return originals
