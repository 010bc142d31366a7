//! Audited hits for Python. Their one home is `mck_exec::audit` (the rate's check, the
//! sampling, the verdict, the outcomes' names), shared with the CLI; this module lends it to
//! `mlir_cache_key._audit`, which compiles (through JAX or a compile function), compares two
//! artefacts and settles the outcome in the store, and calls `_audit.audit_stored` for
//! `Cache.compile_once(..., verify_rate=)`.

use mck_exec::audit as core;
use mck_store::AuditOutcome;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};

/// A rate checked by the one check, or a `ValueError` naming the argument.
fn named(checked: Result<f64, String>, name: &str) -> PyResult<f64> {
    checked.map_err(|message| PyValueError::new_err(format!("{name}: {message}")))
}

/// `rate` when it is from 0 to 1 (NaN is not), for the argument `name`.
pub fn check_rate(rate: f64, name: &str) -> PyResult<f64> {
    named(core::check_rate(rate), name)
}

/// `rate` (a number, or a string as the settings write it) as a float from 0 to 1, or a
/// ValueError naming the argument `name`.
#[pyfunction]
#[pyo3(name = "check_rate", signature = (rate, name = "verify_hits"))]
pub fn check_rate_py(rate: &Bound<'_, PyAny>, name: &str) -> PyResult<f64> {
    if rate.is_instance_of::<PyString>() {
        return named(core::parse_rate(&rate.extract::<String>()?), name);
    }
    match rate.extract::<f64>() {
        Ok(number) => check_rate(number, name),
        Err(_) => named(core::parse_rate(&rate.repr()?.to_string()), name),
    }
}

/// Whether a hit on `key` is audited at `rate` under `seed`, after `earlier` sampled hits of
/// the key in the process: the CLI's function (`mck_exec::audit::sampled`).
#[pyfunction]
#[pyo3(signature = (seed, rate, key, earlier = 0))]
pub fn audit_sampled(seed: &str, rate: f64, key: &str, earlier: u64) -> bool {
    core::sampled(seed, rate, key, earlier)
}

/// Which hits are audited: the CLI's sampling, seeded by `seed`, else by
/// `MLIR_CACHE_KEY_AUDIT_SEED` when set, else by the time and process id.
#[pyclass(frozen, module = "mlir_cache_key")]
pub struct AuditSampler(core::Sampler);

#[pymethods]
impl AuditSampler {
    #[new]
    #[pyo3(signature = (seed = None))]
    fn new(seed: Option<String>) -> Self {
        AuditSampler(core::Sampler::new(seed))
    }

    /// True when this hit on `key` is audited at `rate`.
    fn sampled(&self, rate: f64, key: &str) -> bool {
        self.0.sample(rate, key)
    }
}

/// The verdict on a hit whose artefact is `stored`: `compile_fresh()` gives a fresh artefact
/// (once, or twice when the first differs), `same(a, b)` compares two. Returns the outcome's
/// name and the first fresh artefact. An exception of the first compile or of a comparison
/// propagates (the hit stays unaudited); one of the second compile makes the outcome
/// nondeterministic, unless it is not an `Exception` (KeyboardInterrupt): that propagates.
#[pyfunction]
pub fn audit_verdict<'py>(
    stored: Bound<'py, PyAny>,
    compile_fresh: Bound<'py, PyAny>,
    same: Bound<'py, PyAny>,
) -> PyResult<(&'static str, Bound<'py, PyAny>)> {
    let py = stored.py();
    let mut fatal: Option<PyErr> = None;
    let compile = || {
        compile_fresh.call0().inspect_err(|e| {
            if !e.is_instance_of::<PyException>(py) {
                fatal = Some(e.clone_ref(py));
            }
        })
    };
    let compare = |a: &Bound<'py, PyAny>, b: &Bound<'py, PyAny>| same.call1((a, b))?.is_truthy();
    let (outcome, fresh) = core::verdict(&stored, compile, compare)?;
    match fatal {
        Some(e) => Err(e),
        None => Ok((core::outcome_name(outcome), fresh)),
    }
}

/// Every outcome's name, as `cache stats` counts them: confirmed, false hit, nondeterministic.
pub fn outcome_names(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
    PyTuple::new(py, core::OUTCOMES.map(core::outcome_name))
}

/// An outcome by its one name.
pub fn parse_outcome(outcome: &str) -> PyResult<AuditOutcome> {
    core::parse_outcome(outcome).map_err(PyValueError::new_err)
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

/// Adds the audits' functions, the sampler and the names to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check_rate_py, m)?)?;
    m.add_function(wrap_pyfunction!(audit_sampled, m)?)?;
    m.add_function(wrap_pyfunction!(audit_verdict, m)?)?;
    m.add_class::<AuditSampler>()?;
    m.add("AUDIT_OUTCOMES", outcome_names(m.py())?)?;
    m.add("AUDIT_SEED_VARIABLE", core::SEED_VAR)?;
    Ok(())
}
