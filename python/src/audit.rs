//! Audited hits of `Cache.compile_once(..., verify_rate=)`: the rate's check, the outcome
//! names `mlir_cache_key._audit` reports, and the call into that module, which samples the
//! hit, compiles again, compares and settles it (the same verdict as `install(verify_hits=)`).

use mck_store::AuditOutcome;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// `rate` when it is from 0 to 1 (NaN is not).
pub fn check_rate(rate: f64) -> PyResult<f64> {
    if (0.0..=1.0).contains(&rate) {
        Ok(rate)
    } else {
        Err(PyValueError::new_err(format!(
            "verify_rate must be from 0 to 1, not {rate}"
        )))
    }
}

/// An outcome as `_audit` names it.
pub fn parse_outcome(outcome: &str) -> PyResult<AuditOutcome> {
    match outcome {
        "confirmed" => Ok(AuditOutcome::Confirmed),
        "false_hit" => Ok(AuditOutcome::FalseHit),
        "nondeterministic" => Ok(AuditOutcome::Nondeterministic),
        other => Err(PyValueError::new_err(format!(
            "audit outcome must be \"confirmed\", \"false_hit\" or \"nondeterministic\", \
             not {other:?}"
        ))),
    }
}

/// What a hit of `key` serves at `rate`: `stored`, or the fresh bytes of `compile_fn` when
/// the audit finds a false hit or a nondeterministic compile.
pub fn audit_hit<'py>(
    cache: &Bound<'py, PyAny>,
    key: &str,
    stored: &[u8],
    compile_fn: &Py<PyAny>,
    rate: f64,
) -> PyResult<Bound<'py, PyBytes>> {
    let py = cache.py();
    py.import("mlir_cache_key._audit")?
        .call_method1(
            "audit_stored",
            (cache, key, PyBytes::new(py, stored), compile_fn, rate),
        )?
        .cast_into::<PyBytes>()
        .map_err(PyErr::from)
}
