//! `mlir-cache-key`, the command users run: the front binary (mck-cli, no MLIR). It serves
//! direct-mode exec hits itself and hands everything else to `mlir-cache-key-mlir`.

use std::process::ExitCode;

fn main() -> ExitCode {
    mck_cli::front::main(env!("MCK_MLIR_VERSION"))
}
