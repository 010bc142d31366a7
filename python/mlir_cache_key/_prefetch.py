"""Warm starts ahead of JAX: `install(..., prefetch="auto")` (the default) or `True`.

A run records the keys it looks up, in order of first use, under its program
identity (the script path and argv, or `prefetch_name`), with what loading
each needs (platform, device ids, compile options), in the store's
`v1/prefetch/`. The next run with that identity reads that list at
`install()` and, on a few background threads, reads and decompresses those
entries in that order, and deserializes them once JAX has started its
backends (it chooses the devices, from `XLA_FLAGS` a program may set after
`install()`), while the main thread traces and lowers
(`deserialize_executable` releases the GIL), holding at
most `budget` bytes of decompressed executables (loading stops at the first
that does not fit).

A prefetched entry is counted as a hit (`cache stats`, its use time, the
lookup history) only when a lookup uses it. The list is only a prediction: a
lookup uses a prefetched executable only when the key JAX computed now is the
one it was prefetched under, with the same backend, devices and compile
options; anything else loads as without prefetch. Prefetches still unused when the program's first steps are done
(every predicted key asked for, or `window` seconds after install) are
dropped and counted as wasted. The counters (prefetched, used, wasted: count,
bytes, load time) go to the cache's counters (`cache stats`) and, at DEBUG,
to JAX's compiler log.

"auto" loads only what is safe to load unasked and likely to be used
(`auto_policy`): CPU executables (they live in host memory; a GPU's or TPU's
would hold device memory the program may need), with a loader core to spare,
no audited hits asked for (`verify_hits`), and a last run that used no more
keys than a record keeps (512: a program's first steps, not a test suite's
thousands) and asked for at least half of the keys its own prediction named
(each run records that share with its keys, measured whether it loaded or
not, so a program whose steps change from run to run stops prefetching and
starts again once they settle).
Its budget is also at most a sixteenth of the machine's memory. `True` loads
every predicted key, on any platform.
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field

from . import _jax_internals as J

DEFAULT_BUDGET = 2 << 30  # bytes of decompressed executables held at once
# "auto" loads when the last run asked for at least this share of the keys predicted for it.
AUTO_MIN_ASKED_SHARE = 0.5
# "auto" loads only executables that live in host memory.
AUTO_PLATFORMS = ("cpu",)
# "auto" does not load for a run whose last run used more keys than a record keeps (the store
# keeps a run's first 512: `MAX_RUN_KEYS`): a test suite, whose loader would only take a core
# from its first tests (measured on optax's: slower warm, BENCHMARKS.md).
AUTO_MAX_KEYS = 512
# One core stays the main thread's (it traces and lowers meanwhile): two loaders on two cores
# slowed tracing, lowering and the first execution by about what they saved.
DEFAULT_THREADS = max(1, min(4, (os.cpu_count() or 2) - 1))
DEFAULT_WINDOW = 120.0  # seconds after install() by which the first steps are done
# How long a lookup waits for a prefetch already loading before loading itself.
_WAIT_FOR_LOADING = 60.0
# How often a loader looks whether JAX has started its backends.
_BACKENDS_POLL = 0.01


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def auto_budget(budget: int) -> int:
    """`budget`, at most a sixteenth of physical memory (when the system says)."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return budget
    return min(budget, max(memory // 16, 0)) if memory > 0 else budget


@dataclass(frozen=True)
class Policy:
    """What a prefetcher loads: `load` False records keys only (`why` says why)."""

    load: bool
    platforms: tuple[str, ...] | None = None  # None: every platform
    why: str = ""
    judged: bool = False  # "auto": the last run's outcome may still turn loading off


def auto_policy(verify_hits: float) -> Policy:
    """`prefetch="auto"` before the last run's outcome is known (see the module's text)."""
    if verify_hits > 0:
        return Policy(False, why="audited hits are asked for (verify_hits)")
    if usable_cores() < 2:
        return Policy(False, why="no core to spare for a loader")
    return Policy(True, AUTO_PLATFORMS, judged=True)


def default_identity() -> str:
    """The script's absolute path and its arguments: two runs of the same
    command line predict each other."""
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else "<interactive>"
    return "\0".join([script, *sys.argv[1:]])


@dataclass
class _Context:
    """What loading an entry needs besides its bytes, as the last run had it."""

    platform: str
    device_ids: tuple[int, ...]
    options: bytes  # CompileOptions.SerializeAsString()

    def to_json(self) -> dict:
        return dict(platform=self.platform, devices=list(self.device_ids),
                    options=base64.b64encode(self.options).decode())

    @staticmethod
    def from_json(value: dict) -> _Context:
        return _Context(str(value["platform"]), tuple(int(d) for d in value["devices"]),
                        base64.b64decode(value["options"]))


def _context_of(backend, executable_devices, compile_options) -> _Context:
    return _Context(backend.platform, tuple(d.id for d in executable_devices),
                    compile_options.SerializeAsString())


@dataclass
class _Slot:
    key: str
    context: _Context
    state: str = "queued"  # queued, loading, ready, taken, absent, failed, dropped
    done: threading.Event = field(default_factory=threading.Event)
    backend: object = None
    executable: object = None
    compile_time: int | None = None
    stored_bytes: int = 0
    held_bytes: int = 0
    load_secs: float = 0.0


@dataclass
class _Outcome:
    """How a run went, recorded with its keys: its prediction's size, how many of those keys it
    asked for, and how many keys it asked for in all."""

    predicted: int = 0
    asked: int = 0
    keys: int | None = None  # None: not recorded (an older list)

    @staticmethod
    def from_json(value: dict) -> _Outcome:
        keys = value.get("keys")
        return _Outcome(int(value.get("predicted", 0)), int(value.get("asked", 0)),
                        None if keys is None else int(keys))


def _judged(policy: Policy, last: _Outcome, recorded_keys: int) -> Policy:
    """`policy` ("auto"), unless the last run says a prefetch would not pay."""
    used = last.keys if last.keys is not None else recorded_keys
    if used > AUTO_MAX_KEYS:
        return Policy(False, why=f"the last run used {used} keys, more than a record keeps "
                                 f"({AUTO_MAX_KEYS}): a test suite, not a program's first steps")
    if last.predicted > 0 and last.asked < AUTO_MIN_ASKED_SHARE * last.predicted:
        return Policy(False, why=f"the last run asked for {last.asked} of the "
                                 f"{last.predicted} keys predicted for it")
    return policy


@dataclass
class Counters:
    prefetched: int = 0
    prefetched_bytes: int = 0
    prefetched_ms: int = 0
    used: int = 0
    used_bytes: int = 0
    used_ms: int = 0
    wasted: int = 0
    wasted_bytes: int = 0
    wasted_ms: int = 0


class Prefetcher:
    """One run's prefetching and key recording."""

    def __init__(self, cache, identity: str, budget: int, threads: int = DEFAULT_THREADS,
                 window: float = DEFAULT_WINDOW, policy: Policy = Policy(True)):
        from . import _native

        self._native = _native
        self.cache = cache
        self.identity = identity
        self.budget = budget
        self.run = f"{os.getpid()}-{time.time_ns()}"
        self.lock = threading.Lock()
        self.flush_lock = threading.Lock()  # one recording at a time, each with the newest list
        self.asked: dict[str, _Context | None] = {}  # this run's keys, in order of first use
        self.counters = Counters()  # not yet added to the cache's
        self.totals = Counters()  # this run's, all along
        self.held = 0
        self.peak_held = 0  # what the budget bounds, at its highest
        self.largest_held = 0  # the largest single entry held
        self.closed = False
        self.backends_up = threading.Event()  # set by a lookup, or seen by a loader
        self.slots: dict[str, _Slot] = {}  # the prediction, loaded or not
        last = _native.last_run_keys(cache, identity, except_run=self.run)
        if last is not None:
            self.slots, outcome = self._slots_of(*last)
            if policy.load and policy.judged:
                policy = _judged(policy, outcome, len(last[0]))
        self.policy = policy
        if not policy.load and self.slots:
            J.compiler_logger.debug("mlir-cache-key: not prefetching: %s", policy.why)
        self.queue = [s for s in self.slots.values() if policy.load and (
            policy.platforms is None or s.context.platform in policy.platforms)]
        self.workers = [threading.Thread(target=self._work, name=f"mck-prefetch-{i}", daemon=True)
                        for i in range(min(threads, len(self.queue)))]
        for worker in self.workers:
            worker.start()
        self.timer = threading.Timer(window, self.close_window)
        self.timer.daemon = True
        if self.slots:
            self.timer.start()
        atexit.register(self.finish)

    @staticmethod
    def _slots_of(keys: list[str], context_json: str) -> tuple[dict[str, _Slot], _Outcome]:
        """The prediction a run recorded, and how that run went."""
        try:
            contexts = json.loads(context_json) or {}
            table = [_Context.from_json(c) for c in contexts.get("contexts", [])]
            of_key = contexts.get("of_key", {})
            outcome = _Outcome.from_json(contexts.get("outcome") or {})
        except (ValueError, KeyError, TypeError, AttributeError):
            return {}, _Outcome()  # a list another version wrote: no prediction
        slots = {}
        for key in keys:
            index = of_key.get(key)
            if isinstance(index, int) and 0 <= index < len(table):
                slots[key] = _Slot(key, table[index])
        return slots, outcome

    # --- background loading -------------------------------------------------------

    def _next(self) -> _Slot | None:
        with self.lock:
            while self.queue and not self.closed:
                slot = self.queue.pop(0)
                if slot.state == "queued":
                    slot.state = "loading"
                    return slot
            return None

    def _work(self) -> None:
        while (slot := self._next()) is not None:
            try:
                outcome = self._load(slot)
            except Exception as ex:  # a prefetch never fails the run: the lookup loads it
                J.compiler_logger.debug("mlir-cache-key prefetch of %s failed: %s", slot.key, ex)
                outcome = "loaded"
                with self.lock:
                    self._release_locked(slot)
                    slot.state = "failed"
            if outcome != "retry":
                slot.done.set()
            if outcome == "full":
                self._stop_queue()
            if outcome != "loaded":
                return

    def _load(self, slot: _Slot) -> str:
        """Loads one entry: "loaded" (or absent), "full" when it cannot fit the budget (loading
        stops), "retry" when it fits only once another thread's load is done (this thread
        stops, the slot goes back to the front of the queue), "closed" when the window closed
        before JAX started its backends."""
        start = time.monotonic()
        value = self.cache.peek(slot.key)  # counted as a hit only once used (`_take`)
        if value is None:
            with self.lock:
                slot.state = "absent"
            return "loaded"
        slot.stored_bytes = len(value)
        if (outcome := self._reserve(slot, len(value))) != "loaded":
            return outcome
        serialized, compile_time = J.extract_entry(value)
        del value
        if (outcome := self._reserve(slot, len(serialized))) != "loaded":
            return outcome
        if not self._wait_for_backends():
            with self.lock:
                self._release_locked(slot)
                slot.state = "dropped"
            return "closed"
        backend, devices, options = J.load_context(
            slot.context.platform, slot.context.device_ids, slot.context.options)
        executable = backend.deserialize_executable(serialized, devices, options)
        with self.lock:
            slot.load_secs = time.monotonic() - start
            slot.backend, slot.executable, slot.compile_time = backend, executable, compile_time
            c = self.counters
            c.prefetched += 1
            c.prefetched_bytes += slot.stored_bytes
            c.prefetched_ms += round(slot.load_secs * 1000)
            if self.closed:  # the window closed while this one loaded
                self._drop_locked(slot)
            else:
                slot.state = "ready"
        return "loaded"

    def _wait_for_backends(self) -> bool:
        """Waits for JAX to start its backends (False: the window closed first). A loader never
        starts them: that would fix the devices before the program had chosen them."""
        while not self.backends_up.wait(_BACKENDS_POLL):
            if self.closed:
                return False
            if J.backends_started():
                self.backends_up.set()
        return True

    def _reserve(self, slot: _Slot, size: int) -> str:
        """Holds `size` bytes for `slot` (replacing what it held) if the budget allows:
        "loaded" when it does, else "retry" or "full" (see `_load`)."""
        with self.lock:
            if self.held - slot.held_bytes + size <= self.budget:
                self.held += size - slot.held_bytes
                slot.held_bytes = size
                self.peak_held = max(self.peak_held, self.held)
                self.largest_held = max(self.largest_held, size)
                return "loaded"
            self._release_locked(slot)
            others_loading = any(s.state == "loading" and s is not slot
                                 for s in self.slots.values())
            if others_loading and size <= self.budget:
                slot.state = "queued"
                self.queue.insert(0, slot)
                return "retry"
            slot.state = "dropped"
            return "full"

    def _release_locked(self, slot: _Slot) -> None:
        self.held -= slot.held_bytes
        slot.held_bytes = 0

    def _stop_queue(self) -> None:
        with self.lock:
            for slot in self.queue:
                slot.state = "dropped"
                slot.done.set()
            self.queue.clear()

    def _drop_locked(self, slot: _Slot) -> None:
        if slot.executable is not None:
            c = self.counters
            c.wasted += 1
            c.wasted_bytes += slot.stored_bytes
            c.wasted_ms += round(slot.load_secs * 1000)
        self._release_locked(slot)
        slot.executable = None
        slot.state = "dropped"

    # --- the lookup ---------------------------------------------------------------

    def lookup(self, cache_key, compile_options, backend, executable_devices, host_callbacks):
        """The prefetched (executable, compile time) for this exact lookup, or None.
        Records the key either way."""
        self.backends_up.set()  # a lookup has a backend: JAX started them
        context = None if host_callbacks else _context_of(backend, executable_devices,
                                                          compile_options)
        with self.lock:
            if cache_key not in self.asked:
                self.asked[cache_key] = context
            slot = self.slots.get(cache_key)
            if slot is None or slot.state in ("taken", "dropped", "absent", "failed"):
                slot = None
            elif slot.state == "queued":  # not started: this lookup loads it itself
                slot.state = "dropped"
                slot.done.set()
                slot = None
        all_asked = (self.slots and not self.closed
                     and all(k in self.asked for k in self.slots))
        found = self._take(slot, context, backend) if slot is not None else None
        if all_asked:  # the first steps are done; recording them is off the critical path
            threading.Thread(target=self.close_window, name="mck-prefetch-close",
                             daemon=True).start()
        return found

    def _take(self, slot: _Slot, context, backend):
        deadline = time.monotonic() + _WAIT_FOR_LOADING
        while not slot.done.wait(0.02):
            with self.lock:
                if slot.state == "queued":  # sent back to the queue: this lookup loads it
                    slot.state = "dropped"
                    slot.done.set()
                    return None
            if time.monotonic() > deadline:
                return None
        with self.lock:
            if slot.state != "ready":
                return None
            if context is None or context != slot.context or backend is not slot.backend:
                # Same key, other devices or options: never trust the prediction.
                self._drop_locked(slot)
                return None
            executable, compile_time = slot.executable, slot.compile_time
            slot.state, slot.executable = "taken", None
            self._release_locked(slot)
            c = self.counters
            c.used += 1
            c.used_bytes += slot.stored_bytes
            c.used_ms += round(slot.load_secs * 1000)
        self.cache.count_hit(slot.key)
        J.compiler_logger.debug("mlir-cache-key: %s was prefetched (%.0f ms of loading off the "
                                "critical path)", slot.key, slot.load_secs * 1000)
        return executable, compile_time

    # --- the end of the first steps, and of the run ---------------------------------

    def close_window(self) -> None:
        """Drops what is still unused, records this run's keys so far, and adds the
        counters to the cache's."""
        if self._close():
            self._flush()

    def abandon(self) -> None:
        """Stops loading and records nothing: the install that started it failed."""
        atexit.unregister(self.finish)
        self._close()

    def _close(self) -> bool:
        """Ends the window (unused prefetches dropped, no more loads): False if it was over."""
        with self.lock:
            if self.closed:
                return False
            self.closed = True
            for slot in self.slots.values():
                if slot.state == "ready":
                    self._drop_locked(slot)
            self.queue.clear()
        self.timer.cancel()
        return True

    def finish(self) -> None:
        """At exit or uninstall: closes the window and records every key this run used."""
        atexit.unregister(self.finish)
        self.close_window()
        for worker in self.workers:  # none starts another load once the window is closed
            worker.join(_WAIT_FOR_LOADING)
        self._flush()

    def _flush(self) -> None:
        with self.flush_lock:
            with self.lock:
                counters, self.counters = self.counters, Counters()
                for name, value in vars(counters).items():
                    setattr(self.totals, name, getattr(self.totals, name) + value)
                asked = list(self.asked.items())
                outcome = _Outcome(predicted=len(self.slots),
                                   asked=sum(1 for key in self.slots if key in self.asked),
                                   keys=len(self.asked))
            try:
                if any(vars(counters).values()):
                    self._native.record_prefetch(self.cache, **vars(counters))
                    J.compiler_logger.debug(
                        "mlir-cache-key prefetch: %d prefetched (%d bytes, %d ms), %d used "
                        "(%d bytes, %d ms), %d wasted (%d bytes, %d ms)", *vars(counters).values())
                if asked:
                    self._native.record_run_keys(self.cache, self.identity, self.run,
                                                 [k for k, _ in asked],
                                                 _contexts_json(asked, outcome))
            except (OSError, ValueError) as ex:  # statistics and predictions never fail a run
                J.compiler_logger.debug("mlir-cache-key: cannot record the prefetch list: %s", ex)


def _contexts_json(asked, outcome: _Outcome) -> str:
    table: list[dict] = []
    index_of: dict[str, int] = {}
    of_key = {}
    for key, context in asked:
        if context is None:  # host callbacks: loaded by JAX only
            continue
        text = json.dumps(context.to_json(), sort_keys=True)
        if text not in index_of:
            index_of[text] = len(table)
            table.append(context.to_json())
        of_key[key] = index_of[text]
    return json.dumps(dict(contexts=table, of_key=of_key, outcome=vars(outcome)))


def lookup_through(prefetcher_of, original):
    """`compilation_cache.get_executable_and_time` that first asks the current
    prefetcher (`prefetcher_of()`, None when there is none), else `original`
    (which takes `host_callbacks` only from JAX 0.11, so it is passed only when
    JAX passed some)."""

    def get_executable_and_time(cache_key, compile_options, backend, executable_devices,
                                host_callbacks=()):
        prefetcher = prefetcher_of()
        if prefetcher is not None:
            found = prefetcher.lookup(cache_key, compile_options, backend, executable_devices,
                                      host_callbacks)
            if found is not None:
                return found
        extra = (host_callbacks,) if host_callbacks else ()
        return original(cache_key, compile_options, backend, executable_devices, *extra)

    return get_executable_and_time
