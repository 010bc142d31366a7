//! `mlir-cache-key` and `python -m mlir_cache_key`: the cache's command line from the wheel,
//! which carries no MLIR (`mck_cli::front::without_mlir`: `cache`, `runs`, `config`,
//! `--version`; a command that reads MLIR names the full build and exits 64).

use std::ffi::OsString;

use pyo3::prelude::*;

/// Runs the command line on `args` (without the program's name) with the interpreter
/// detached; its exit code.
#[pyfunction]
fn cli(py: Python<'_>, args: Vec<String>) -> u8 {
    let args: Vec<OsString> = args.into_iter().map(OsString::from).collect();
    py.detach(|| mck_cli::front::without_mlir(args))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cli, m)?)
}
