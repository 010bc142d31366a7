//! `python -m mlir_cache_key` (and a source install's `mlir-cache-key`): the command line
//! without MLIR (`mck_cli::front::without_mlir`: the cache's commands, `why` of stored keys,
//! help, completions, the man page, direct-mode hits; a command that reads a module names the
//! full build and exits 64). The wheel's `mlir-cache-key` is the same as a native program.

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
