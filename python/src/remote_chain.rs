//! The `remote` argument of `Cache(...)` (and so of `jax.install(...)`): one URL as a str, or
//! a chain, fastest first, as a list or tuple of str, each one `--remote` of the CLI.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// The URLs `remote` names, in order.
pub fn remote_urls(remote: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if let Ok(url) = remote.extract::<String>() {
        return Ok(vec![url]);
    }
    remote.extract::<Vec<String>>().map_err(|_| {
        PyTypeError::new_err("remote must be a URL (str) or a list of URLs, fastest tier first")
    })
}
