"""Every touch of JAX's private API, in one place, per JAX release.

JAX has no public hook for its persistent cache, so the integration reads and
replaces a few private names. `RELEASES` is the whole list, per release
0.8.0 … 0.12.0.1 (read from each wheel; docs/jax-releases.md has the facts):
what `cache_key.get` takes for callbacks, how it hashes the topology, and the
`module:name` pairs the release must have. At import, every name of the
installed release is resolved before anything is patched: a missing one raises
`UnsupportedJaxVersion` naming the version and what is missing. A release newer
than the newest known one is accepted with the newest one's table when every
name resolves (with a warning; `install()` then also checks a probe key).

Common to every release:
- `jax._src.cache_key`: `get`, `_serialize_ir` (reused as they are, so their
  bytes are JAX's by construction), `custom_hook`, `get_flag_prefixes`,
  `jaxlib_version_str`, `logger`; per release `IgnoreCallbacks` and
  `_remove_callbacks` (≤ 0.10) or `_remove_custom_partitioning_callbacks` and
  `_strip_mosaic_debug_info` (≥ 0.11);
- `jax._src.compilation_cache`: `get_cache_key` and `get_file_cache`
  (replaced), `get_executable_and_time` (replaced with prefetch),
  `is_cache_used` (wrapped: one thread at a time),
  `reset_cache`, `zstandard`, `compress_executable`, `decompress_executable`,
  `combine_executable_and_time`, `extract_executable_and_time`, `is_persistent_cache_enabled`, `logger`;
  `VerificationCache` from 0.9.1;
- `jax._src.compilation_cache_interface.CacheInterface`;
- `jax._src.compiler`: `_compile_and_write_cache`, `_cache_read` and
  `log_persistent_cache_miss` (replaced), `log_persistent_cache_hit`,
  `backend_compile_and_load`, `get_compile_options` (the probe), `logger`;
- `jax._src.config`: the cache settings read through `setting()`;
  `jax._src.distributed.global_state`; `jax._src.monitoring`;
- jaxlib: `jax._src.lib.mlir.ir` and `passmanager`, `jax._src.lib.tpu`,
  `xla_client.get_topology_for_devices`, `_jax.JaxRuntimeError`;
  `HloPrintOptions` (`jaxlib._hlo` from 0.10, else `xla_client._xla`) and a
  loaded executable's `hlo_modules()`, to compare audited hits.
"""

from __future__ import annotations

import importlib
import threading
import warnings
import zlib
from dataclasses import dataclass


class UnsupportedJaxVersion(RuntimeError):
    """The installed JAX is not one whose internals this package knows."""


@dataclass(frozen=True)
class Release:
    """What one JAX release's cache key and cache path look like."""

    # How `cache_key.get` is told about callbacks: "ignore_callbacks"
    # (an `IgnoreCallbacks` enum, ≤ 0.10) or "ignore_custom_partitioning" (a bool).
    callbacks_argument: str
    # Entry 6: "serialized" (`topology.serialize()`, ≤ 0.9) or "fingerprint".
    accelerator: str
    # Entry 3 also hashes `backend.runtime_type` (0.8.0, 0.8.1).
    hashes_runtime_type: bool
    # Every private `module:name` (module under `jax._src`) the release must have.
    names: tuple[str, ...]


_COMMON = (
    "cache_key:get", "cache_key:_serialize_ir", "cache_key:custom_hook",
    "cache_key:get_flag_prefixes", "cache_key:jaxlib_version_str", "cache_key:logger",
    "compilation_cache:get_cache_key", "compilation_cache:get_file_cache",
    "compilation_cache:reset_cache", "compilation_cache:zstandard",
    "compilation_cache:compress_executable", "compilation_cache:decompress_executable",
    "compilation_cache:combine_executable_and_time",
    "compilation_cache:extract_executable_and_time", "compilation_cache:get_executable_and_time",
    "compilation_cache:is_persistent_cache_enabled", "compilation_cache:is_cache_used",
    "compilation_cache:logger",
    "compilation_cache_interface:CacheInterface",
    "compiler:_compile_and_write_cache", "compiler:log_persistent_cache_miss",
    "compiler:_cache_read",
    "compiler:log_persistent_cache_hit", "compiler:backend_compile_and_load",
    "compiler:get_compile_options", "compiler:logger",
    "config:compilation_cache_include_metadata_in_key",
    "config:remove_custom_partitioning_ptr_from_cache_key",
    "distributed:global_state", "monitoring:record_event",
    "monitoring:record_event_duration_secs",
    "lib._jax:JaxRuntimeError", "lib.xla_client:get_topology_for_devices",
    "xla_bridge:backends_are_initialized",
)
_ENUM_CALLBACKS = ("cache_key:IgnoreCallbacks", "cache_key:_remove_callbacks")
_BOOL_CALLBACKS = ("cache_key:_remove_custom_partitioning_callbacks",
                   "cache_key:_strip_mosaic_debug_info")
_VERIFICATION = ("compilation_cache:VerificationCache", "config:compilation_cache_check_contents")

_0_8_0 = Release("ignore_callbacks", "serialized", True, _COMMON + _ENUM_CALLBACKS)
_0_8_2 = Release("ignore_callbacks", "serialized", False, _COMMON + _ENUM_CALLBACKS)
_0_9_1 = Release("ignore_callbacks", "serialized", False,
                 _COMMON + _ENUM_CALLBACKS + _VERIFICATION)
_0_10 = Release("ignore_callbacks", "fingerprint", False,
                _COMMON + _ENUM_CALLBACKS + _VERIFICATION)
_0_11 = Release("ignore_custom_partitioning", "fingerprint", False,
                _COMMON + _BOOL_CALLBACKS + _VERIFICATION)

RELEASES = {
    "0.8.0": _0_8_0, "0.8.1": _0_8_0,
    "0.8.2": _0_8_2, "0.8.3": _0_8_2, "0.9.0": _0_8_2, "0.9.0.1": _0_8_2,
    "0.9.1": _0_9_1, "0.9.2": _0_9_1,
    "0.10.0": _0_10, "0.10.1": _0_10, "0.10.2": _0_10,
    "0.11.0": _0_11, "0.11.1": _0_11, "0.11.2": _0_11,
    "0.12.0": _0_11, "0.12.0.1": _0_11,
}
NEWEST = "0.12.0.1"


def _version_tuple(version: str) -> tuple:
    parts = []
    for part in version.split("."):
        digits = "".join(c for c in part if c.isdigit())
        parts.append(int(digits) if digits else 0)
        if digits != part:  # 0.13.0.dev2026…, 0.13.0rc1: stop at the tag
            break
    return tuple(parts)


_MISSING = object()


def _resolve(names) -> tuple[dict, list[str]]:
    """Every `module:name` looked up (importing only, never patching), and
    those that are missing."""
    found, missing = {}, []
    for entry in names:
        module_path, attr = entry.split(":")
        head, *rest = module_path.split(".")
        try:
            owner = importlib.import_module(f"jax._src.{head}")
        except ImportError:
            missing.append(entry)
            continue
        for part in [*rest, attr]:
            owner = getattr(owner, part, _MISSING)
            if owner is _MISSING:
                missing.append(entry)
                break
        else:
            found[entry] = owner
    return found, missing


def select_release(version: str, package: str = "jax") -> tuple[Release, bool]:
    """The table of release `version` (of jax or jaxlib), and whether it is an
    untested newer release; raises `UnsupportedJaxVersion` for an older or
    unknown one."""
    if version in RELEASES:
        return RELEASES[version], False
    if _version_tuple(version) > _version_tuple(NEWEST):
        return RELEASES[NEWEST], True
    raise UnsupportedJaxVersion(
        f"mlir_cache_key.jax supports jax and jaxlib {', '.join(RELEASES)} (and newer ones "
        f"whose private names resolve); found {package} {version}. It replaces private parts "
        "of JAX's compilation cache, so it refuses other versions.")


def check_versions() -> tuple[str, Release, bool]:
    """The installed release, its table and whether it is untested, once every
    private name resolved; raises `UnsupportedJaxVersion` naming what is missing."""
    import jax
    import jaxlib

    version = jax.__version__
    select_release(jaxlib.__version__, "jaxlib")
    release, untested = select_release(version)
    _, missing = _resolve(release.names)
    if missing:
        raise UnsupportedJaxVersion(
            f"jax {version}: private names mlir_cache_key.jax needs are missing: "
            f"{', '.join(missing)}" + (f" (tested up to {NEWEST})" if untested else ""))
    if untested:
        warnings.warn(f"mlir_cache_key.jax: jax {version} is newer than the newest tested "
                      f"release ({NEWEST}); its private names resolve, and each process's "
                      "first key is checked against JAX's own", stacklevel=3)
    return version, release, untested


JAX_VERSION, RELEASE, UNTESTED = check_versions()
CALLBACKS_ARGUMENT = RELEASE.callbacks_argument

# Imported only after every name resolved: names below are private API.
from jax._src import cache_key  # noqa: E402
from jax._src import compilation_cache  # noqa: E402
from jax._src import compilation_cache_interface  # noqa: E402
from jax._src import compiler  # noqa: E402
from jax._src import config  # noqa: E402
from jax._src import distributed  # noqa: E402
from jax._src import monitoring  # noqa: E402
from jax._src import xla_bridge  # noqa: E402
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
serialize_ir = cache_key._serialize_ir
_PARTITIONING_TARGET = b"CustomSPMDPartitioning"

if CALLBACKS_ARGUMENT == "ignore_callbacks":
    IgnoreCallbacks = cache_key.IgnoreCallbacks
    NO_CALLBACKS_IGNORED = IgnoreCallbacks.NO

    def remove_callbacks(m, ignore):
        return cache_key._remove_callbacks(m, ignore)

    def callback_markers(ignore) -> tuple[bytes, ...]:
        """Strings one of which the module's bytecode holds if removal can change it."""
        if ignore == IgnoreCallbacks.NO:
            return ()
        if ignore == IgnoreCallbacks.ALL:
            return (b"callback", _PARTITIONING_TARGET)
        return (_PARTITIONING_TARGET,)

    def compile_path_callbacks():
        """What JAX's compile path passes to `get_cache_key`."""
        if remove_custom_partitioning_ptr():
            return IgnoreCallbacks.CUSTOM_PARTITIONING
        return IgnoreCallbacks.NO
else:
    NO_CALLBACKS_IGNORED = False

    def remove_callbacks(m, ignore):
        return cache_key._remove_custom_partitioning_callbacks(m)

    def callback_markers(ignore) -> tuple[bytes, ...]:
        return (_PARTITIONING_TARGET,) if ignore else ()

    def compile_path_callbacks():
        return remove_custom_partitioning_ptr()


def strip_mosaic_debug_info(m) -> None:
    # Only from 0.11 does JAX strip Mosaic kernels at all.
    if CALLBACKS_ARGUMENT == "ignore_custom_partitioning":
        cache_key._strip_mosaic_debug_info(m)


def mosaic_available() -> bool:
    """JAX strips Mosaic kernels only from 0.11, and only when jaxlib has the
    `tpu` dialect."""
    if CALLBACKS_ARGUMENT != "ignore_custom_partitioning":
        return False
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


def topology_entry(devices: list) -> dict:
    """Entry 6's input as this release hashes it (raises JaxRuntimeError
    where JAX falls back to device kinds)."""
    topology = topology_for_devices(devices)
    if RELEASE.accelerator == "serialized":
        return dict(topology_serialized=topology.serialize())
    return dict(topology_fingerprint=topology.fingerprint())


def runtime_type(backend) -> str:
    """Entry 3's third part, on releases that hash it."""
    return backend.runtime_type if RELEASE.hashes_runtime_type else ""


def include_metadata_in_key() -> bool:
    return config.compilation_cache_include_metadata_in_key.value


def remove_custom_partitioning_ptr() -> bool:
    return config.remove_custom_partitioning_ptr_from_cache_key.value


def jax_compression() -> str:
    """The compression entry `compilation_cache.get_cache_key` passes."""
    return "zstandard" if compilation_cache.zstandard is not None else "zlib"


def jax_writes_zstd() -> bool:
    """Whether JAX's cache compresses its values with zstd: `zstandard` installed, or Python
    ≥ 3.14's `compression.zstd` (which the key's compression entry above does not name)."""
    cc = compilation_cache
    return getattr(cc, "zstd", None) is not None or cc.zstandard is not None


# --- settings -----------------------------------------------------------------


# Packages beside jaxlib whose shared libraries are part of the XLA build a process runs.
_XLA_PLUGIN_PREFIXES = ("jax_plugins", "jax_cuda", "jax_rocm", "libtpu")


def xla_libraries() -> list[tuple[str, str]]:
    """The shared libraries of the installed jaxlib and its plugins, as (name relative to the
    site directory, path), in name order: the files the XLA build is made of. Every installed
    file, not only those mapped now, so that what a program imports first cannot move it."""
    import os

    import jaxlib

    package = os.path.dirname(os.path.realpath(jaxlib.__file__))
    site = os.path.dirname(package)
    roots = [package] + [os.path.join(site, name) for name in sorted(os.listdir(site))
                         if name.startswith(_XLA_PLUGIN_PREFIXES)
                         and os.path.isdir(os.path.join(site, name))]
    found = []
    for root in roots:
        for directory, subdirectories, files in os.walk(root):
            subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".so") or ".so." in name:
                    path = os.path.join(directory, name)
                    found.append((os.path.relpath(path, site), path))
    return found


def setting(name: str):
    return getattr(config, name).value


def check_contents() -> bool:
    """`jax_compilation_cache_check_contents` (absent, so off, before 0.9.1)."""
    return hasattr(config, "compilation_cache_check_contents") and setting(
        "compilation_cache_check_contents")


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


def jax_key(module, devices, compile_options, backend, compression, callbacks):
    """JAX's own key; `callbacks` is this release's callback argument."""
    return cache_key.get(module, devices, compile_options, backend, compression, callbacks)


def backends_started() -> bool:
    """Whether JAX has started its backends: until then, which devices a program gets is its
    own to choose (`XLA_FLAGS`), so we start none."""
    return xla_bridge.backends_are_initialized()


def probe_inputs():
    """A small real module with the devices, options and backend JAX's
    compile path would key it with: what `probe()` compares the keys of."""
    import jax
    import numpy as np

    lowered = jax.jit(lambda x: x * 2 + 1).lower(np.float32(1))
    module = lowered.compiler_ir("stablehlo")
    backend = jax.devices()[0].client
    devices = np.array(jax.devices()[:1])
    options = compiler.get_compile_options(num_replicas=1, num_partitions=1)
    return module, devices, options, backend


# --- the compile path -----------------------------------------------------------


def is_persistent_cache_enabled() -> bool:
    return compilation_cache.is_persistent_cache_enabled()


def backend_compile_and_load(backend, module, executable_devices, options, host_callbacks):
    return compiler.backend_compile_and_load(backend, module, executable_devices, options,
                                             host_callbacks)


def log_persistent_cache_hit(module_name: str, key: str) -> None:
    compiler.log_persistent_cache_hit(module_name, key)


# Without zstd, JAX deflates every value at zlib's default level 6, which costs a small
# program's miss more than the rest of our store. A value below this size is stored (level 0:
# no deflate, read back at memory speed); a larger one is deflated at level 1 (faster, a few
# per cent larger). Both are zlib streams JAX's own `decompress_executable` reads.
_STORED_BELOW = 64 << 10


def entry_value(executable, compile_secs: float) -> bytes:
    """A cache value in JAX's format: compile time + executable, compressed."""
    cc = compilation_cache
    value = cc.combine_executable_and_time(executable.serialize(), int(compile_secs))
    if jax_writes_zstd():
        return cc.compress_executable(value)
    return zlib.compress(value, 0 if len(value) < _STORED_BELOW else 1)


def extract_entry(value: bytes) -> tuple[bytes, int]:
    """A cache value's serialized executable and compile time, as JAX reads them."""
    cc = compilation_cache
    return cc.extract_executable_and_time(cc.decompress_executable(value))


def load_context(platform: str, device_ids, options: bytes):
    """The backend, `DeviceList` and `CompileOptions` a lookup on `platform`'s
    devices `device_ids` with serialized `options` passes to `deserialize_executable`."""
    import jax

    by_id = {d.id: d for d in jax.devices(platform)}
    devices = tuple(by_id[i] for i in device_ids)
    return (devices[0].client, xla_client.DeviceList(devices),
            xla_client.CompileOptions.ParseFromString(options))


def load_entry(value: bytes, backend, executable_devices, compile_options, host_callbacks):
    """The executable of a cache value and its compile time, as JAX reads it."""
    serialized, compile_time = extract_entry(value)
    if host_callbacks:
        executable = backend.deserialize_executable(
            serialized, executable_devices, compile_options, host_callbacks)
    else:
        executable = backend.deserialize_executable(serialized, executable_devices, compile_options)
    return executable, compile_time


def serialized_executable(value: bytes) -> bytes:
    """The serialized executable of a cache value (without its compile time)."""
    cc = compilation_cache
    return cc.extract_executable_and_time(cc.decompress_executable(value))[0]


def _hlo_print_options():
    """HLO printing options of the release: `jaxlib._hlo` from 0.10, before
    that `xla_client._xla`."""
    try:
        from jaxlib._hlo import HloPrintOptions
    except ImportError:
        HloPrintOptions = xla_client._xla.HloPrintOptions
    options = HloPrintOptions.short_parsable()
    options.print_metadata = False
    return options


def optimized_program(executable) -> str:
    """An executable's optimized HLO modules without metadata (source
    locations): the same for the same module and options in every process,
    where the serialized bytes are not (docs/jax-releases.md)."""
    options = _hlo_print_options()
    return "\n".join(m.to_string(options) for m in executable.hlo_modules())


def can_audit(computation: bytes, callbacks_given: bool) -> bool:
    """Whether a hit can be compiled again as JAX compiled it: up to 0.10
    `_cache_read` is not given the host callbacks, so a module with callbacks
    (which a fresh compile would lack) is not audited there."""
    return callbacks_given or b"callback" not in computation


def verification_cache(cache):
    return compilation_cache.VerificationCache(cache)  # only reached when check_contents()


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


def one_caller_at_a_time(is_cache_used):
    """JAX's `is_cache_used`, entered by one thread at a time. JAX makes its check once, but two
    threads that both find it not yet made race, and JAX answers False to the one that loses
    (its compile then neither reads nor writes the cache). install() resets the check (through
    `reset_cache`), so a program whose first compiles run on several threads would meet it."""
    lock = threading.Lock()

    def serialized(backend):
        with lock:
            return is_cache_used(backend)

    return serialized


def patch_cache(patches: Patches, *, get_cache_key, get_file_cache, compile_and_write_cache,
                log_persistent_cache_miss, cache_read, executable_lookup=None) -> dict:
    """Routes JAX's persistent cache through the given functions; returns the
    originals the replacements fall back to. `executable_lookup(original)`, when
    given, makes the `get_executable_and_time` that replaces JAX's."""
    originals = dict(
        compile_and_write_cache=compiler._compile_and_write_cache,
        log_persistent_cache_miss=compiler.log_persistent_cache_miss,
        cache_read=compiler._cache_read,
    )
    if executable_lookup is not None:
        patches.set(compilation_cache, "get_executable_and_time",
                    executable_lookup(compilation_cache.get_executable_and_time))
    patches.set(compilation_cache, "is_cache_used",
                one_caller_at_a_time(compilation_cache.is_cache_used))
    patches.set(compilation_cache, "get_cache_key", get_cache_key)
    patches.set(compilation_cache, "get_file_cache", get_file_cache)
    patches.set(compiler, "_compile_and_write_cache", compile_and_write_cache)
    patches.set(compiler, "log_persistent_cache_miss", log_persistent_cache_miss)
    patches.set(compiler, "_cache_read", cache_read)
    return originals
