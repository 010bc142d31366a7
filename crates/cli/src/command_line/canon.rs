//! `mlir-cache-key canon`'s arguments (the MLIR binary runs it).

use crate::flags::ModuleFlags;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Emit {
    Bytecode,
    Text,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// MLIR text or bytecode, or a serialized XLA HloModuleProto (optionally
    /// gzip-compressed); `-` reads stdin.
    pub input: PathBuf,
    /// Where to write the output [default: stdout].
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Output canonical bytecode (HLO: the canonical proto), or its text
    /// (MLIR generic form, with every location inline when --keep-locations
    /// keeps them in the bytes; HLO: one field per line).
    #[arg(long, value_enum, default_value = "bytecode")]
    pub emit: Emit,
    /// Print the SHA-256 of the canonical bytecode instead of the bytes.
    #[arg(long, conflicts_with = "emit")]
    pub digest: bool,
    /// Print how long each step took (parse, clone, kernels, strip, write,
    /// hash) to stderr.
    #[arg(long)]
    pub timings: bool,
    #[command(flatten)]
    pub module: ModuleFlags,
}
