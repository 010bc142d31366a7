//! Bounds on what reading inputs may cost: their size (decompressed), and
//! the time MLIR may take to read bytecode, in a child process that a crash
//! or a hang cannot take down with this one.

use super::error::CliError;
use crate::canon::{CanonicalModule, Options};
use crate::mlir::{Isolation, isolate_bytecode_reads, read_bytecode_child};
use anyhow::Context as _;

pub use mck_cli::flags::InputLimits;

/// The hidden command the child process runs.
pub use mck_cli::command_line::READ_BYTECODE_COMMAND;

/// Applies the limits to the rest of this process.
pub fn apply(limits: &InputLimits) -> Result<(), CliError> {
    super::input::set_max_size(limits.max_input_size);
    let program = std::env::current_exe()
        .context("cannot find this program to read bytecode in a child process")
        .map_err(CliError::other)?;
    isolate_bytecode_reads(Isolation {
        program,
        args: vec![READ_BYTECODE_COMMAND.to_string(), "--".to_string()],
        timeout: limits.parse_timeout,
    });
    Ok(())
}

/// The hidden command: MLIR reads bytecode from stdin, then the module goes
/// through what the commands do with it (canonicalize, kernels included, and
/// write), so that a crash in any of it is the child's.
pub fn read_bytecode(name: &str) -> u8 {
    read_bytecode_child(name, |module| {
        if let Ok(canonical) = CanonicalModule::from_owned(module, &Options::default()) {
            let _ = canonical.digest();
        }
    })
}
