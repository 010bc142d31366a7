//! The command line the Python wheel installs as `mlir-cache-key`: everything that needs no
//! MLIR (`front::without_mlir`), as a native program, so that a command starts in the time a
//! small Rust program takes rather than a Python interpreter's.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(mck_cli::front::without_mlir(
        std::env::args_os().skip(1).collect(),
    ))
}
