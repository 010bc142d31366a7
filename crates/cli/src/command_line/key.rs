//! `mlir-cache-key key`'s arguments (the MLIR binary runs it).

use crate::flags::ModuleFlags;
use crate::key_args::KeyArgs;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The module (MLIR text or bytecode, or an XLA HloModuleProto; `-` reads
    /// stdin).
    #[arg(required_unless_present = "computation_bytes")]
    pub input: Option<PathBuf>,
    /// Use these bytes as the computation entry instead of canonicalizing
    /// INPUT (requires --module-name).
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "input",
        requires = "module_name"
    )]
    pub computation_bytes: Option<PathBuf>,
    /// The key's prefix [default: the module's sym_name, or the
    /// HloModuleProto's name].
    #[arg(long, value_name = "NAME")]
    pub module_name: Option<String>,
    /// Print JAX's 16 trace lines and the flag decisions to stderr.
    #[arg(long)]
    pub explain: bool,
    /// Print the key's full record as JSON (entries, digests, readable forms).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub module: ModuleFlags,
    #[command(flatten)]
    pub key: KeyArgs,
}
