//! `mlir-cache-key kernels`' arguments (the MLIR binary runs it).

use crate::flags::ModuleFlags;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// MLIR text or bytecode (an HloModuleProto has no kernels to list); `-`
    /// reads stdin.
    pub input: PathBuf,
    #[command(flatten)]
    pub module: ModuleFlags,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}
