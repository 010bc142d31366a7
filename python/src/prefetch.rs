//! The prefetch side of `mlir_cache_key._native`: each run's keys in order of first use (per
//! program identity, in the store's `v1/prefetch/`) and the prefetch counters `cache stats`
//! shows. `mlir_cache_key._prefetch` drives them; the file I/O runs with the interpreter
//! detached.

use mck_store::PrefetchCounters;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::{Cache, store_error, value_error};

/// The keys the newest recorded run of `identity` other than `except_run` used, in order of
/// first use, with the context (JSON text) recorded with them; None when there is no such run
/// (or the cache is off).
#[pyfunction]
#[pyo3(signature = (cache, identity, *, except_run = ""))]
pub fn last_run_keys(
    py: Python<'_>,
    cache: PyRef<'_, Cache>,
    identity: &str,
    except_run: &str,
) -> Option<(Vec<String>, String)> {
    let tiered = cache.tiered.as_ref()?;
    let last = py.detach(|| tiered.local().last_run_keys(identity, except_run))?;
    Some((last.keys, last.context.to_string()))
}

/// Records that `run` of `identity` used `keys` so far, in order of first use, with `context`
/// (JSON text), replacing what `run` recorded before.
#[pyfunction]
pub fn record_run_keys(
    py: Python<'_>,
    cache: PyRef<'_, Cache>,
    identity: &str,
    run: &str,
    keys: Vec<String>,
    context: &str,
) -> PyResult<()> {
    let Some(tiered) = cache.tiered.as_ref() else {
        return Ok(());
    };
    let context: serde_json::Value = serde_json::from_str(context)
        .map_err(|e| value_error(format!("the prefetch context is not JSON: {e}")))?;
    py.detach(|| {
        tiered
            .local()
            .record_run_keys(identity, run, &keys, &context)
    })
    .map_err(store_error)
}

/// Adds one run's prefetch counts (`prefetched`, `prefetched_bytes`, `prefetched_ms`, `used…`,
/// `wasted…`; absent ones are zero) to the cache's counters.
#[pyfunction]
#[pyo3(signature = (cache, **counts))]
pub fn record_prefetch(
    py: Python<'_>,
    cache: PyRef<'_, Cache>,
    counts: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let Some(tiered) = cache.tiered.as_ref() else {
        return Ok(());
    };
    let counts = PrefetchCounters::try_from_fn(|name| -> PyResult<u64> {
        match counts.map(|c| c.get_item(name)).transpose()?.flatten() {
            Some(value) => value.extract(),
            None => Ok(0),
        }
    })?;
    py.detach(|| tiered.local().record_prefetch(&counts));
    Ok(())
}
