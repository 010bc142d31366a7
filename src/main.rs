//! The `mlir-cache-key` command: a thin layer over the library.

use std::process::ExitCode;

fn main() -> ExitCode {
    mlir_cache_key::cli::main()
}
