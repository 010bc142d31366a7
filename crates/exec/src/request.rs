//! What one compilation through the cache is.

use crate::compiler_check::CompilerCheck;
use mck_runs::Address;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// A compiler command and the files it reads and writes.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// The compiler and its arguments; `input` and `output` appear among them.
    pub command: Vec<OsString>,
    /// The module the command compiles.
    pub input: PathBuf,
    /// The file the command writes: stored on success, restored on a hit.
    pub output: PathBuf,
    /// Environment variables besides `XLA_FLAGS` and `LIBTPU_INIT_ARGS` that can change the
    /// output.
    pub env: Vec<String>,
    pub platform: String,
    pub platform_version: String,
    /// A user string hashed into the key.
    pub custom_hook: String,
    /// How long to wait for another process compiling the same key before compiling anyway.
    pub lock_timeout: Duration,
    /// Glob patterns of arguments that do not change the output (dump directories,
    /// verbosity): left out of the key, and recorded as left out.
    pub ignore_args: Vec<String>,
    /// What stands for the compiler in the key.
    pub compiler_check: CompilerCheck,
    /// The fraction of hits audited (recompiled and compared; `audit.rs`): 0 never, 1 always.
    pub verify_hits: f64,
}

/// Where a compilation's result is recorded, within which run.
#[derive(Debug, Clone)]
pub struct AtAddress {
    pub address: Address,
    pub run: String,
    /// Replace the fingerprint at a conflicting address, for this run.
    pub overwrite_conflicts: bool,
    /// The cache options in force, as command-line words, for the commands a conflict prints.
    pub cache_args: String,
    /// Where addresses and run records live (the cache directory's file, or a shared one).
    pub registry: mck_settings::RegistrySettings,
    /// `cache_errors = fail`: a shared registry that cannot be reached fails the exec instead
    /// of leaving it unaddressed.
    pub strict: bool,
}
