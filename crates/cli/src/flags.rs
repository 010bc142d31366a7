//! Options shared by the commands that read and canonicalize modules. They live here, apart
//! from the canonicalizer, because direct mode keys on them (`exec`'s manifest covers every
//! option that could move the canonical key) without loading MLIR.

use mck_settings::{parse_seconds, parse_size};
use std::time::Duration;

/// Options shared by every command that canonicalizes a module.
#[derive(Debug, Clone, clap::Args)]
pub struct CanonFlags {
    /// What MODULE is: an XLA HloModuleProto, MLIR, or told from its content.
    #[arg(long, value_enum, default_value = "auto", value_name = "FORMAT")]
    pub input_format: InputFormat,
    /// Keep debug locations (skip strip-debuginfo and kernel stripping), like
    /// JAX's jax_compilation_cache_include_metadata_in_key; for HLO, keep the
    /// OpMetadata source locations and the stack-frame index.
    #[arg(long)]
    pub keep_locations: bool,
    /// Replace the process address of CustomSPMDPartitioning custom calls by
    /// "REMOVED", so runs share keys (MLIR only).
    #[arg(long)]
    pub ignore_custom_partitioning: bool,
    /// What to do with kernels embedded in custom calls (MLIR only: HLO
    /// custom calls are kept as they are).
    #[arg(long, value_enum, default_value = "strip")]
    pub kernels: KernelArg,
    /// Rename private func.func symbols in order of first reference from the
    /// public ones (private_0, private_1, ...), so traces whose private
    /// functions got other numeric suffixes share a key. Not JAX-compatible.
    #[arg(long)]
    pub canonical_symbols: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum KernelArg {
    Strip,
    Keep,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    /// An HloModuleProto when the bytes parse as one or are binary but not
    /// MLIR bytecode; else MLIR.
    #[default]
    Auto,
    /// A serialized xla.HloModuleProto.
    Hlo,
    /// MLIR text or bytecode.
    Mlir,
}

impl InputFormat {
    /// Whether `bytes` are to be read as an HloModuleProto.
    pub fn is_hlo(self, bytes: &[u8]) -> bool {
        match self {
            InputFormat::Auto => mck_hlo::sniff(bytes) || binary_not_mlir(bytes),
            InputFormat::Hlo => true,
            InputFormat::Mlir => false,
        }
    }
}

/// Binary (not UTF-8) and not MLIR bytecode: a damaged proto gets the HLO error, not MLIR's.
fn binary_not_mlir(bytes: &[u8]) -> bool {
    !bytes.starts_with(b"ML\xefR") && std::str::from_utf8(bytes).is_err()
}

/// Options of the commands that read modules (`canon`, `kernels`, `key`,
/// `why`, `exec`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct InputLimits {
    /// Largest input accepted, after gzip decompression, e.g. 8Gi
    /// [default: 4Gi].
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub max_input_size: Option<u64>,
    /// Bound on MLIR reading one bytecode module or kernel, in a child
    /// process [default: 30 s plus 1 s per MiB].
    #[arg(long, value_name = "SECONDS", value_parser = |s: &str| parse_seconds(s, false))]
    pub parse_timeout: Option<Duration>,
}

/// A module argument's options: how it is canonicalized, and what reading it may cost.
#[derive(Debug, clap::Args)]
pub struct ModuleFlags {
    #[command(flatten)]
    pub canon: CanonFlags,
    #[command(flatten)]
    pub limits: InputLimits,
}
