"""`jax.jit`'s persistent compilation cache through mlir-cache-key.

    import mlir_cache_key.jax
    mlir_cache_key.jax.install("/shared/jax-cache")   # or jax_compilation_cache_dir
    # ... jax.jit as usual

After `install()`, JAX's cache keys come from `key()` (in mode "jax" byte for
byte `jax._src.cache_key.get`), entries live in our store (TTL, size cap,
optional shared remote tier), a key is compiled by one process at a time
(others wait on the store's lock and load the result), and a miss is explained
in JAX's log against the nearest stored entry of the same module; with
`verify_hits=RATE` a sampled hit is compiled again and compared (`_audit`).
`uninstall()` puts JAX's own cache back. Works on JAX 0.8.0 … 0.12.0.1: the
private names of each release are a table in `_jax_internals`, all resolved
at import; `key()` takes that release's callback argument
(`ignore_callbacks=` on ≤ 0.10, `ignore_custom_partitioning=` after). In mode
"jax" the first key of each process is also computed by JAX's own
`cache_key.get`; if the two differ, the process keys with JAX's function from
then on (warned; misses are then not explained).
Each run records the keys it used; the next run of the same program loads
those executables ahead of JAX on background threads (`_prefetch`: "auto" by
default, CPU executables only; `prefetch=True` any, False neither).
"""

from __future__ import annotations

import atexit
import collections
import functools
import logging
import os
import sys
import threading
import time
import warnings
from dataclasses import dataclass

from . import _audit
from . import _jax_internals as J
from . import _prefetch
from ._canonical import MODES, canonical, canonical_text, text_of

__all__ = ["install", "uninstall", "installed", "key", "UnsupportedJaxVersion", "JAX_VERSION"]

UnsupportedJaxVersion = J.UnsupportedJaxVersion
JAX_VERSION = J.JAX_VERSION

# Mode "canonical" hashes this before the user's custom hook, so its keys can
# never equal a mode "jax" key for the same inputs (a separate namespace).
CANONICAL_NAMESPACE = "mlir-cache-key:canonical:1;"
# Canonical module text kept in stored records to name the first differing
# operation of a miss; larger modules record only their size.
MAX_RECORDED_TEXT = 4 << 20
_RECENT_KEYS = 16
_log = logging.getLogger(__name__)
_ENTRY_NAMES = (
    "computation", "jax_lib version", "backend version", "XLA flags",
    "compile_options", "accelerator_config", "compression", "custom_hook",
)


def _native():
    from . import _native

    return _native


# --- the key --------------------------------------------------------------------


@dataclass
class _Computed:
    key: str
    # The native KeyRecordHandle: the record as computed (with the module's text once a miss
    # asked for it), handed to the cache as it is: never made JSON on the compile's path.
    handle: object
    parts: dict
    computation: bytes
    module: object
    callbacks: object  # the release's callback argument
    mode: str
    canonical: object = None  # the canonical module `computation` was written from, if any


_topologies: dict = {}
_topologies_lock = threading.Lock()


def _accelerator(devices):
    """Entry 6 as the release computes it: the topology (fingerprint, or
    serialized on ≤ 0.9), or on JaxRuntimeError each device's kind. Cached per
    device list: the topology of a set of devices does not change while a
    process runs."""
    flat = tuple(devices.flat)
    with _topologies_lock:
        found = _topologies.get(flat)
    if found is None:
        try:
            found = (J.topology_entry(list(flat)), None)
        except J.JaxRuntimeError as ex:
            found = (None, ex)
        with _topologies_lock:
            if len(_topologies) > 64:
                _topologies.clear()
            _topologies[flat] = found
    return found


def _compute(module, devices, compile_options, backend, compression,
             callbacks, mode, computation_text=None) -> _Computed:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    computation, canonical_module = canonical(module, callbacks, mode)
    topology, topology_error = _accelerator(devices)
    hook = J.custom_hook()
    if mode == "canonical":
        hook = CANONICAL_NAMESPACE + hook
    parts = dict(
        compiler_version=J.compiler_version(),
        platform=backend.platform,
        platform_version=backend.platform_version,
        runtime_type=J.runtime_type(backend),
        xla_flags=os.getenv("XLA_FLAGS"),
        libtpu_init_args=os.getenv("LIBTPU_INIT_ARGS"),
        argv=list(sys.argv),
        flag_prefixes=J.flag_prefixes(),
        # Raw proto: the key library normalizes it as JAX does.
        compile_options=None if compile_options is None else compile_options.SerializeAsString(),
        **(topology or {}),
        device_kinds=[] if topology is not None else [d.device_kind for d in devices.flat],
        compression=compression,
        custom_hook=hook,
        jax_version=J.JAX_VERSION if not J.UNTESTED else J.NEWEST,
    )
    name = J.module_name(module)
    result = _native().key_from_parts(computation, name, lazy_record=True, **parts)
    handle = result["record"]
    _log_trace(handle, topology_error)
    return _Computed(result["key"], handle, parts, computation, module, callbacks, mode,
                     canonical_module)


def _log_trace(handle, topology_error) -> None:
    """JAX's log records of one `cache_key.get`, in its order. With DEBUG on,
    JAX hashes each entry twice (once more to log its digest), so the flag and
    topology-fallback lines come twice."""
    log = J.key_logger
    debug = log.isEnabledFor(logging.DEBUG)
    if not debug and not (topology_error and log.isEnabledFor(logging.INFO)):
        return
    runs = 2 if debug else 1
    flags = None
    if debug:
        included, left_out = handle.flags()
        excluded = set(left_out)
        flags = sorted(included + left_out)
    trace = handle.trace() if debug else []
    for i, name in enumerate(_ENTRY_NAMES):
        for _ in range(runs):
            if name == "XLA flags" and flags:
                for flag in flags:
                    if flag in excluded:
                        log.debug("Not including XLA flag in cache key: %s", flag)
                    else:
                        log.debug("Including XLA flag in cache key: %s", flag)
            if name == "accelerator_config" and topology_error is not None:
                log.info("get (_hash_accelerator_config): unable to hash "
                         "accelerator config, falling back to hashing "
                         "devices %s (type %s)", topology_error, type(topology_error))
        if debug:
            for line, what in ((trace[2 * i], "of serialized"), (trace[2 * i + 1], "after serializing")):
                digest = line.rsplit(": ", 1)[1]
                log.debug(f"get_cache_key hash {what} %s: %s", name, digest)


def _key(module, devices, compile_options, backend, compression, callbacks, mode) -> str:
    if mode is None:
        mode = _state.mode if _state is not None else "jax"
    return _compute(module, devices, compile_options, backend, compression, callbacks, mode).key


# The installed release's `jax._src.cache_key.get` signature (plus `mode`).
if J.CALLBACKS_ARGUMENT == "ignore_callbacks":
    def key(module, devices, compile_options, backend, compression_algorithm="zstandard",
            ignore_callbacks=J.NO_CALLBACKS_IGNORED, *, mode=None) -> str:
        """`jax._src.cache_key.get` of this release and, in mode "jax", its key
        and DEBUG trace. `mode` defaults to the installed one, else "jax"."""
        return _key(module, devices, compile_options, backend, compression_algorithm,
                    ignore_callbacks, mode)
else:
    def key(module, devices, compile_options, backend, compression_algorithm="zstandard",
            ignore_custom_partitioning=False, *, mode=None) -> str:
        """`jax._src.cache_key.get` of this release and, in mode "jax", its key
        and DEBUG trace. `mode` defaults to the installed one, else "jax"."""
        return _key(module, devices, compile_options, backend, compression_algorithm,
                    ignore_custom_partitioning, mode)


# --- the cache --------------------------------------------------------------------


class _Installed:
    def __init__(self, cache, path, mode, explain, set_dir, verify_hits=0.0):
        self.cache = cache
        self.verify_hits = verify_hits
        # Values just read for hits that may be audited, by key (`_cache_read` takes them).
        self.read_values: dict[str, bytes] = {}
        self.path = path
        self.mode = mode
        self.explain = explain
        self.set_dir = set_dir  # JAX's cache dir was unset and we set it
        self.patches = J.Patches()
        self.recent: collections.OrderedDict[str, _Computed] = collections.OrderedDict()
        self.lock = threading.Lock()
        self.prefetcher: _prefetch.Prefetcher | None = None
        # In mode "jax", until a first key has been checked against JAX's own (`_checked_key`);
        # `jax_own_keys` once they differed: JAX's key function is used instead.
        self.unchecked = mode == "jax"
        self.check_lock = threading.Lock()
        self.jax_own_keys = False

    def remember(self, computed: _Computed) -> None:
        with self.lock:
            self.recent[computed.key] = computed
            self.recent.move_to_end(computed.key)
            while len(self.recent) > _RECENT_KEYS:
                self.recent.popitem(last=False)

    def recalled(self, cache_key: str) -> _Computed | None:
        with self.lock:
            return self.recent.get(cache_key)

    def forget(self, cache_key: str) -> None:
        with self.lock:
            self.recent.pop(cache_key, None)

    def keep_read(self, cache_key: str, value: bytes) -> None:
        with self.lock:
            if len(self.read_values) >= _RECENT_KEYS:
                self.read_values.clear()
            self.read_values[cache_key] = value

    def take_read(self, cache_key: str) -> bytes | None:
        with self.lock:
            return self.read_values.pop(cache_key, None)


_state: _Installed | None = None
_install_lock = threading.Lock()


class _StoreCache(J.CacheInterface):
    """JAX's cache interface over our store: what `_cache_read` and any
    remaining `put` of JAX go through."""

    def __init__(self, state: _Installed):
        self._state = state
        self._path = state.path

    def get(self, key):
        try:
            value = self._state.cache.get(key)
        except OSError as ex:  # a cache that breaks mid-run reads as a miss
            _log.warning("mlir-cache-key: cannot read the cache (%s); compiling", ex)
            return None
        if value is not None and self._state.verify_hits > 0:
            self._state.keep_read(key, value)
        return value

    def put(self, key, value):
        computed = self._state.recalled(key)
        try:
            self._state.cache.put(key, value, computed.handle if computed else None)
        except OSError as ex:  # the compile succeeded; only the storing failed
            _log.warning("mlir-cache-key: cannot store %s (%s)", key, ex)


def _get_cache_key(module, devices, compile_options, backend, callbacks=J.NO_CALLBACKS_IGNORED):
    # `callbacks`: the release's `ignore_callbacks` or `ignore_custom_partitioning`.
    state = _state
    if state is None or state.jax_own_keys:  # uninstalled meanwhile, or a JAX we do not match
        return J.jax_key(module, devices, compile_options, backend, J.jax_compression(),
                         callbacks)
    try:
        computed = _compute(module, devices, compile_options, backend, J.jax_compression(),
                            callbacks, state.mode)
    except Exception as ex:  # as JAX: a key that cannot be made skips the cache
        if J.setting("raise_persistent_cache_errors"):
            raise
        J.compiler_logger.error("compile_or_get_cached: unable to generate cache key, "
                                "skipping the cache: %s", ex)
        return None
    # (A key computed while another thread's first key was being checked asks for the verdict.)
    if state.unchecked or state.jax_own_keys:
        key = _checked_key(state, computed, devices, compile_options, backend)
        if key != computed.key:
            return key
    state.remember(computed)
    return computed.key


class _QuietHere(logging.Filter):
    """Drops JAX's key log records made on a thread while it checks a key: JAX's trace of a key
    is logged once, by us, as JAX would; the check's own `cache_key.get` must not log it again."""

    def __init__(self):
        super().__init__()
        self.local = threading.local()

    def filter(self, record) -> bool:
        return not getattr(self.local, "quiet", False)


_quiet_here = _QuietHere()
J.key_logger.addFilter(_quiet_here)


def _checked_key(state: _Installed, computed: _Computed, devices, compile_options,
                 backend) -> str | None:
    """The key to use: ours, unless JAX's own `cache_key.get` gives another for the process's
    first key (mode "jax" promises JAX's keys): then JAX's, for this and every later key, warned
    once. Checked once, at JAX's first key rather than in `install()`, so that install starts
    nothing: by its first key JAX has started its backends, with the devices it chose without
    us. It costs one JAX key per process. None, as JAX does, when JAX's key cannot be made (the
    next key is checked instead)."""
    jax_key = functools.partial(J.jax_key, computed.module, devices, compile_options, backend,
                                J.jax_compression(), computed.callbacks)
    with state.check_lock:  # other threads' first keys wait for the verdict
        if state.unchecked:
            _quiet_here.local.quiet = True
            try:
                theirs = jax_key()
            except Exception as ex:
                if J.setting("raise_persistent_cache_errors"):
                    raise
                J.compiler_logger.error("compile_or_get_cached: unable to generate cache key, "
                                        "skipping the cache: %s", ex)
                return None
            finally:
                _quiet_here.local.quiet = False
            if theirs != computed.key:
                _use_jax_own_keys(state, computed.key, theirs)
            state.unchecked = False
            if state.jax_own_keys:
                return theirs
    return jax_key() if state.jax_own_keys else computed.key


def _use_jax_own_keys(state: _Installed, ours: str, theirs: str) -> None:
    state.jax_own_keys = True
    if state.prefetcher is not None:  # it loaded under our keys: nothing of it is used
        state.prefetcher.abandon()
        state.prefetcher = None
    message = (f"mlir-cache-key: jax {J.JAX_VERSION}: our key of the first module ({ours}) "
               f"differs from JAX's own cache_key.get ({theirs}); this process keys with JAX's "
               "function instead (entries stay JAX's; misses are not explained). Use "
               "install(mode=\"canonical\") or a supported JAX release.")
    _log.error(message)
    warnings.warn(message, RuntimeWarning, stacklevel=2)


def _miss_level() -> int:
    loud = J.setting("explain_cache_misses") and J.is_persistent_cache_enabled()
    return logging.WARNING if loud else logging.DEBUG


def _log_persistent_cache_miss(module_name, cache_key):
    _originals["log_persistent_cache_miss"](module_name, cache_key)
    state = _state
    computed = state.recalled(cache_key) if state is not None else None
    if computed is None or not state.explain:
        return
    level = _miss_level()
    try:
        # The entry about to be compiled keeps its module text, so that later
        # misses can name the first operation that moved.
        computed.handle = _record_with_text(computed)
        # Always explained: the cause goes to the cache's stats and history (`report`). When
        # nobody reads the log line, on a thread, so that the compile does not wait for it.
        if not J.compiler_logger.isEnabledFor(level):
            state.cache.explain_miss(cache_key, computed.handle, wait=False)
            return
        explanation = state.cache.explain_miss(cache_key, computed.handle)
        if explanation is None:
            return
        J.compiler_logger.log(level, "What moved for '%s' against the nearest stored entry:\n%s",
                              module_name, explanation)
    except Exception as ex:  # an explanation must never fail a compile
        J.compiler_logger.log(level, "Could not explain the miss of %r: %s", cache_key, ex)


def _record_with_text(computed: _Computed):
    """The record's handle again, now with the canonical module text (only on a miss:
    printing a module costs far less than the compile that follows)."""
    if len(computed.computation) * 8 > MAX_RECORDED_TEXT:  # text is several times larger
        return computed.handle
    if computed.canonical is not None:
        text = text_of(computed.canonical)
    else:
        text = canonical_text(computed.module, computed.callbacks, computed.mode)
    if len(text) > MAX_RECORDED_TEXT:
        return computed.handle
    return computed.handle.texted(text)


def _entry_value(executable, compile_secs, module_name, cache_key):
    """What JAX's `_cache_write` would store, or None where it would not. Under JAX's default
    minimum entry size (none), a function that makes the bytes, which the cache's worker calls
    while this thread compiles the next program: serializing holds the GIL for ~0.8 ms a miss."""
    level = _miss_level()
    min_secs = J.setting("persistent_cache_min_compile_time_secs")
    if compile_secs < min_secs:
        J.compiler_logger.log(level, "Not writing persistent cache entry for '%s' because it took "
                              "< %.2f seconds to compile (%.2fs)", module_name, min_secs, compile_secs)
        return None
    min_size = J.setting("persistent_cache_min_entry_size_bytes")
    value = None
    if min_size > 0:  # its size decides whether it is stored: made now
        value = _value_later(executable, compile_secs, cache_key)
        if value is None:
            return None
        if len(value) < min_size:
            J.cache_logger.log(level, "Not writing persistent cache entry with key %r since its "
                               "size (%d bytes) is less than threshold (%d bytes)", cache_key,
                               len(value), min_size)
            return None
    J.cache_logger.log(level, "Writing %s to persistent compilation cache with key %r",
                       module_name, cache_key)
    J.record_event("/jax/compilation_cache/cache_misses")
    if value is not None:
        return value
    return functools.partial(_value_later, executable, compile_secs, cache_key)


def _value_later(executable, compile_secs, cache_key) -> bytes | None:
    """The entry's bytes, made on the cache's worker unless a minimum size is set (None: not
    stored, and the compile stands, as under JAX's own cache)."""
    try:
        return J.entry_value(executable, compile_secs)
    except Exception as ex:
        _log.warning("mlir-cache-key: cannot serialize the executable of %s (%s); not stored",
                     cache_key, ex)
        return None


def _compile_and_write_cache(backend, computation, executable_devices, compile_options,
                             host_callbacks, module_name, cache_key):
    """Compile once per key across processes: under the store's lock, or wait
    for the process holding it and load what it stored."""
    state = _state
    computed = state.recalled(cache_key) if state is not None else None
    if (computed is None or J.process_id() != 0
            or J.check_contents()):
        # Not our key, not the writing process, or JAX must verify a fresh compile.
        return _originals["compile_and_write_cache"](
            backend, computation, executable_devices, compile_options, host_callbacks,
            module_name, cache_key)
    compiled = []

    def compile_fn():
        _log.debug("compiling %s while holding the store's lock", cache_key)
        start = time.monotonic()
        executable = J.backend_compile_and_load(
            backend, computation, executable_devices, compile_options, host_callbacks)
        compiled.append(executable)
        return _entry_value(executable, time.monotonic() - start, module_name, cache_key)

    start = time.monotonic()
    try:
        # JAX's read of this key just missed through our adapter: not looked up twice.
        value = state.cache.compile_once(cache_key, compile_fn, computed.handle, looked_up=True,
                                         store_later=True)
    except OSError as ex:  # a cache that breaks mid-run never fails a compile
        if compiled:
            _log.warning("mlir-cache-key: cannot store %s (%s)", cache_key, ex)
            return compiled[0]
        _log.warning("mlir-cache-key: the cache is unusable (%s); compiling without it", ex)
        return J.backend_compile_and_load(
            backend, computation, executable_devices, compile_options, host_callbacks)
    finally:
        state.forget(cache_key)
    if compiled:
        return compiled[0]
    if value is None:  # nothing stored and we did not compile: compile here
        return J.backend_compile_and_load(
            backend, computation, executable_devices, compile_options, host_callbacks)
    _log.debug("%s was compiled by another process while this one waited", cache_key)
    executable, compile_time = J.load_entry(value, backend, executable_devices, compile_options,
                                            host_callbacks)
    J.log_persistent_cache_hit(module_name, cache_key)
    J.record_event("/jax/compilation_cache/cache_hits")
    J.record_event_duration_secs("/jax/compilation_cache/compile_time_saved_sec",
                                 compile_time - (time.monotonic() - start))
    return executable


def _cache_read(module_name, cache_key, compile_options, backend, executable_devices,
                *host_callbacks):
    """JAX's read of a hit, audited at the installed `verify_hits` rate
    (`host_callbacks`: passed from 0.11 only)."""
    executable, compile_time = _originals["cache_read"](
        module_name, cache_key, compile_options, backend, executable_devices, *host_callbacks)
    state = _state
    value = state.take_read(cache_key) if state is not None else None
    computed = state.recalled(cache_key) if value is not None else None
    if executable is not None and state is not None:
        # A hit needs nothing more of the key: let its module go now, as JAX does, rather than
        # keep the last few modules (each with its MLIR context) alive.
        state.forget(cache_key)
    if executable is None or computed is None or not J.can_audit(computed.computation,
                                                                  bool(host_callbacks)):
        return executable, compile_time
    callbacks = host_callbacks[0] if host_callbacks else []
    executable = _audit.audit_jax_hit(
        state.cache, state.verify_hits, module_name, cache_key, executable,
        J.serialized_executable(value),
        lambda: J.backend_compile_and_load(backend, computed.module, executable_devices,
                                           compile_options, callbacks),
        J.optimized_program, J.compiler_logger)
    return executable, compile_time


def _get_file_cache(path):
    cache = _StoreCache(_state)
    if J.check_contents():
        return J.verification_cache(cache), cache._path
    return cache, cache._path


_originals: dict = {}


def probe() -> tuple[str, str]:
    """Our mode "jax" key of a small real module, and JAX's own `cache_key.get`."""
    module, devices, options, backend = J.probe_inputs()
    callbacks = J.compile_path_callbacks()
    compression = J.jax_compression()
    ours = _compute(module, devices, options, backend, compression, callbacks, "jax").key
    theirs = J.jax_key(module, devices, options, backend, compression, callbacks)
    return ours, theirs


def _current_prefetcher():
    state = _state
    return state.prefetcher if state is not None else None


def _settle_at_exit():
    """Finishes, when Python exits, the entries still being stored and misses explained, and
    the local copies of remote hits still being written."""
    state = _state
    if state is not None:
        state.cache.settle()


atexit.register(_settle_at_exit)


def _settle_before_fork() -> None:
    """A fork waits for the entries being stored: a child must not inherit a compile's claim
    (its lock) that the parent's worker is about to release, nor a lock file made ahead."""
    state = _state
    if state is not None:
        state.cache.before_fork()


def _after_fork_in_child() -> None:
    """A forked child has none of its parent's prefetch loaders: a load they had started would
    never finish there (a lookup would wait for it), and what they counted is the parent's to
    record. The child looks up without a prefetch."""
    state = _state
    if state is not None and state.prefetcher is not None:
        atexit.unregister(state.prefetcher.finish)
        state.prefetcher = None
    util = sys.modules.get("multiprocessing.util")
    if util is not None:  # run once multiprocessing has cleared the finalizers the child inherits
        util.register_after_fork(_FORK_TOKEN, lambda _: _settle_at_multiprocessing_exit())


class _ForkToken:  # multiprocessing's after-fork hooks are keyed by a live object
    pass


_FORK_TOKEN = _ForkToken()


_settled_by_multiprocessing_in = None  # the process whose finalizer is registered


def _settle_at_multiprocessing_exit() -> None:
    """multiprocessing ends its children with os._exit, past atexit: the entries a child's
    compiles leave to be stored are settled by multiprocessing's own finalizers instead (one
    per process, however often `install()` runs)."""
    global _settled_by_multiprocessing_in
    mp = sys.modules.get("multiprocessing")
    if (mp is not None and mp.parent_process() is not None
            and _settled_by_multiprocessing_in != os.getpid()):
        _settled_by_multiprocessing_in = os.getpid()
        mp.util.Finalize(None, _settle_at_exit, exitpriority=0)


os.register_at_fork(before=_settle_before_fork, after_in_child=_after_fork_in_child)


def install(cache_dir=None, *, mode="jax", remote=None, remote_read_only=False,
            size=None, ttl_days=None, explain=True, verify_hits=0.0, prefetch="auto",
            prefetch_name=None, prefetch_budget=_prefetch.DEFAULT_BUDGET) -> None:
    """Routes JAX's persistent compilation cache through mlir-cache-key.

    `cache_dir` defaults to `jax_compilation_cache_dir`, then to the store's
    own default (`MLIR_CACHE_KEY_FLAGS`); when JAX's is unset it is set to
    ours, so JAX's settings keep their meaning. `mode` "jax" gives JAX's keys
    exactly; "canonical" goes further and never shares a key with "jax".
    `explain` logs what moved on a miss (WARNING with
    `jax_explain_cache_misses`, else DEBUG). `verify_hits` (0 to 1) is the
    share of hits compiled again and compared with the stored executable: a
    false hit is logged (WARNING), the fresh executable used and the entry
    never served again. `prefetch` True loads the executables the last run of
    this program (`prefetch_name`, default script path and argv) used on
    background threads while this one traces, holding at most
    `prefetch_budget` bytes (see `_prefetch`; a prefetched hit is not
    audited); "auto" (the default) does so for CPU executables when a core is
    spare, no hits are audited and the last run's prediction held; False
    neither loads nor records. Calling it again reinstalls.
    """
    global _state
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    verify_hits = _audit.check_rate(verify_hits)
    if prefetch not in (True, False, "auto"):
        raise ValueError(f"prefetch must be True, False or 'auto', not {prefetch!r}")
    native = _native()  # fails loudly before anything is touched
    with _install_lock:
        # Nothing here starts JAX's backends (the check of our keys waits for JAX's first key),
        # so a program that sets its devices after install() keys as it would without us.
        # JAX's cache dir is its own unless an earlier install set it.
        ours_set = _state is not None and _state.set_dir
        jax_dir = None if ours_set else J.setting("compilation_cache_dir")
        if size is None and J.setting("compilation_cache_max_size") > 0:
            size = J.setting("compilation_cache_max_size")
        try:
            cache = native.Cache(cache_dir or jax_dir, size=size, ttl_days=ttl_days,
                                 remote=remote, remote_read_only=remote_read_only)
        except OSError as ex:  # an unusable directory: JAX compiles as if we were not there
            if _state is not None:
                _uninstall_locked()
            warnings.warn(f"mlir-cache-key: not installed, the cache is unusable: {ex}",
                          RuntimeWarning, stacklevel=2)
            return
        _name_xla_build(cache)
        state = _Installed(cache, cache.path, mode, explain, set_dir=not jax_dir,
                           verify_hits=verify_hits)
        if prefetch:
            auto = prefetch == "auto"
            state.prefetcher = _prefetch.Prefetcher(
                cache, prefetch_name or _prefetch.default_identity(),
                _prefetch.auto_budget(prefetch_budget) if auto else prefetch_budget,
                policy=_prefetch.auto_policy(verify_hits) if auto else _prefetch.Policy(True))
        if _state is not None:
            _uninstall_locked()
        try:
            if state.set_dir:
                J.update_setting("jax_compilation_cache_dir", state.path)
            _originals.update(J.patch_cache(
                state.patches,
                get_cache_key=_get_cache_key,
                get_file_cache=_get_file_cache,
                compile_and_write_cache=_compile_and_write_cache,
                log_persistent_cache_miss=_log_persistent_cache_miss,
                cache_read=_cache_read,
                executable_lookup=(lambda original: _prefetch.lookup_through(
                    _current_prefetcher, original)) if prefetch else None,
            ))
            _state = state
            J.reset_cache()  # JAX opens its cache again, through ours
            _settle_at_multiprocessing_exit()
        except BaseException:
            _state = None
            state.patches.undo()
            if state.set_dir:
                J.update_setting("jax_compilation_cache_dir", None)
            J.reset_cache()
            raise


def _name_xla_build(cache) -> None:
    """Tells the cache which XLA build compiles here, so that another build's entries (same
    jaxlib version, other binary) are never loaded (`xla_build.rs` in the extension)."""
    try:
        build = cache.set_xla_build(J.xla_libraries())
    except (OSError, ImportError) as ex:  # entries are then not told apart by build
        _log.warning("mlir-cache-key: cannot identify the XLA build (%s)", ex)
        return
    _log.debug("the XLA build here is %s", build)


def _uninstall_locked() -> None:
    global _state
    state, _state = _state, None
    if state is None:
        return
    state.patches.undo()
    # What it compiled is stored before the cache is let go (the exit's settle is then not ours).
    state.cache.settle()
    if state.prefetcher is not None:
        state.prefetcher.finish()
    if state.set_dir:
        J.update_setting("jax_compilation_cache_dir", None)
    J.reset_cache()


def uninstall() -> None:
    """Puts JAX's own persistent cache back."""
    with _install_lock:
        _uninstall_locked()


def installed():
    """The installed cache (`mlir_cache_key.Cache`), or None."""
    state = _state
    return state.cache if state is not None else None
