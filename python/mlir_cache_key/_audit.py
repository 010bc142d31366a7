"""Audited hits: a sampled cache hit is compiled again and compared with what
was stored, so a false hit (an artefact built from something else, served under
this key) is caught instead of silently running.

The verdict, as for `mlir-cache-key exec --verify-hits`:
- the fresh artefact equals the stored one: the hit is confirmed (for JAX:
  the same serialized executable, or the same optimized program: XLA's CPU
  executables are not byte for byte reproducible, and they carry source
  locations the key leaves out; docs/jax-releases.md);
- it differs: compile once more; two fresh artefacts that differ from each
  other (or a second compile that raises) make the compiler nondeterministic
  for this input (the fresh one is used, the entry is not blamed);
- two fresh artefacts that agree and differ from the stored one: a false hit.
  The fresh artefact is used, the entry is marked suspect in the store (never
  served again) and a WARNING names the key and the entry.
Each verdict is counted in the store (`cache stats`).

`Cache.compile_once(..., verify_rate=)` audits through `audit_stored`, and
`mlir_cache_key.jax.install(verify_hits=)` through `audit_jax_hit`.

The rate's check, the sampling, the verdict and the outcomes' names are the
CLI's own (`mck_exec::audit` in Rust), called through the extension: one seed
(`MLIR_CACHE_KEY_AUDIT_SEED`) picks the same hits here and in
`mlir-cache-key exec --verify-hits`, and an outcome is spelled the same in the
run records, the logs and here. What stays here is what only Python has: the
compile (JAX's or a compile function), the comparison of two artefacts, and
the log of a verdict.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from typing import Callable

from . import _native

CONFIRMED, FALSE_HIT, NONDETERMINISTIC = _native.AUDIT_OUTCOMES
SEED_VARIABLE = _native.AUDIT_SEED_VARIABLE

_log = logging.getLogger(__name__)


def check_rate(rate, name: str = "verify_hits") -> float:
    """`rate` as a float in [0, 1], or ValueError naming the argument."""
    return _native.check_rate(rate, name)


# Which hits are audited: `Sampler(seed)` with `sampled(rate, key)`, seeded by
# `MLIR_CACHE_KEY_AUDIT_SEED` when no seed is given (as for the CLI).
Sampler = _native.AuditSampler

SAMPLER = Sampler()


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


@dataclass
class Built:
    """One artefact of an audit: its bytes, what runs (`value`), and, when
    equal programs may serialize differently, a function giving the program
    to compare instead (computed at most once)."""

    data: bytes
    value: object = None
    program_of: Callable[[], str] | None = None
    _program: str | None = field(default=None, repr=False)

    def program(self) -> str | None:
        if self._program is None and self.program_of is not None:
            self._program = self.program_of()
        return self._program

    def same(self, other: "Built") -> bool:
        if self.data == other.data:
            return True
        mine = self.program()
        return mine is not None and mine == other.program()


def verdict(stored: Built, compile_fresh: Callable[[], Built]) -> tuple[str, Built]:
    """The audit of one hit: the outcome and the fresh artefact to serve
    (the first compile's), by the CLI's verdict (`mck_exec::audit::verdict`)."""
    return _native.audit_verdict(stored, compile_fresh, Built.same)


def settle(cache, key: str, outcome: str, stored: bytes, fresh: bytes,
           logger: logging.Logger, what: str) -> None:
    """Counts `outcome` in the store; a false hit also marks the entry suspect
    and logs a WARNING on `logger` naming the key and the entry."""
    cache.record_audit(outcome)
    if outcome == NONDETERMINISTIC:
        logger.warning("mlir-cache-key: audited hit of %s with key %r: the compiler is "
                       "nondeterministic for it (two fresh compiles differ); using a fresh "
                       "one, the stored entry is not blamed", what, key)
    elif outcome == FALSE_HIT:
        reason = (f"false hit: two agreeing fresh compiles ({len(fresh)} bytes, sha256 "
                  f"{_digest(fresh)}) differ from the stored artefact ({len(stored)} bytes, "
                  f"sha256 {_digest(stored)})")
        cache.mark_suspect(key, reason)
        logger.warning("mlir-cache-key: FALSE HIT of %s with key %r: the entry stored under it in "
                       "%s (%d bytes, sha256 %s) is not what two agreeing fresh compiles give "
                       "(%d bytes, sha256 %s); using the fresh one, and the entry is marked "
                       "suspect, never served again (`mlir-cache-key cache show %s`)",
                       what, key, cache.path, len(stored), _digest(stored), len(fresh),
                       _digest(fresh), key)


def _audited(cache, rate: float, key: str, stored: Built, compile_fresh,
             logger: logging.Logger, what: str) -> Built | None:
    """The fresh artefact to serve instead of the stored one, or None (not
    sampled, confirmed, or the audit could not run: an audit never fails a hit)."""
    if not SAMPLER.sampled(rate, key):
        return None
    try:
        outcome, fresh = verdict(stored, compile_fresh)
    except Exception as ex:
        logger.warning("mlir-cache-key: could not audit the hit of %s with key %r: %s",
                       what, key, ex)
        return None
    try:
        settle(cache, key, outcome, stored.data, fresh.data, logger, what)
    except OSError as ex:  # the verdict stands even if the store cannot record it
        logger.warning("mlir-cache-key: cannot record the audit of %r (%s)", key, ex)
    return None if outcome == CONFIRMED else fresh


def audit_stored(cache, key: str, stored: bytes, compile_fn, rate: float) -> bytes:
    """What `Cache.compile_once` returns for a hit of `key` at `rate`: the
    stored bytes, or the fresh ones when the audit finds a false hit or a
    nondeterministic compile. A compile function that returns None or raises
    in the audit's first compile leaves the hit unaudited (in its second, the
    compile counts as nondeterministic)."""

    def compile_fresh() -> Built:
        value = compile_fn()
        if value is None:
            raise ValueError("the compile function returned None")
        return Built(bytes(value))

    fresh = _audited(cache, rate, key, Built(stored), compile_fresh, _log,
                     "the compile function")
    return stored if fresh is None else fresh.data


def audit_jax_hit(cache, rate: float, module_name: str, key: str, stored_executable,
                  stored: bytes, compile_executable, program_of, logger: logging.Logger):
    """The executable JAX runs for a hit of `key` at `rate`: the stored one, or
    a fresh one when the audit finds a false hit or a nondeterministic compile.
    `stored` is the entry's serialized executable; `compile_executable()` is
    JAX's own backend compile of the same module and options; `program_of`
    gives an executable's optimized program without debug metadata."""

    def built(data: bytes, executable) -> Built:
        return Built(data, executable, lambda: program_of(executable))

    def compile_fresh() -> Built:
        executable = compile_executable()
        return built(executable.serialize(), executable)

    fresh = _audited(cache, rate, key, built(stored, stored_executable), compile_fresh,
                     logger, f"'{module_name}'")
    return stored_executable if fresh is None else fresh.value
