//! `mlir-cache-key-mlir`: every command, with MLIR 22 linked in; started by the front binary
//! `mlir-cache-key` (installed beside it) with the user's arguments.

use std::process::ExitCode;

fn main() -> ExitCode {
    mck_cli::handover::take_marker();
    mlir_cache_key::cli::main()
}
