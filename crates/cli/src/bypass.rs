//! The cache never breaks a build: when `exec`, `wrap` or a compiler symlink cannot open or use
//! the cache (permissions, ownership, a missing or unwritable directory, a read-only file
//! system, a locked or damaged index), it warns once on stderr with the reason and the fix and
//! runs the compiler as if it were not there: same argv, environment and stdio, its exit code
//! returned untouched. `cache_errors = fail` keeps the strict behavior (exit 74, nothing run).
//! A usage error (a bad flag, a bad URL) is never bypassed: it still exits 64.

use crate::error::{CliError, Failure};
use crate::settings::CacheOptions;
use anyhow::anyhow;
use mck_exec::ExecError;
use mck_remote::Tiered;
use mck_settings::{CacheErrors, FLAGS_VAR, Settings};
use mck_store::StoreError;
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt as _;
use std::process::ExitCode;
use std::sync::OnceLock;

/// What opening the cache for a compile found.
pub enum CacheOpen {
    /// The settings in force, and the cache they open.
    Open(Box<(Settings, Tiered)>),
    /// Caching is off (`no_cache`).
    Off,
    /// The cache cannot be used: the compiler is to run without it, and this is why.
    Bypassed(String),
}

/// The `cache_errors` policy of this process, fixed when the settings are first read.
static POLICY: OnceLock<CacheErrors> = OnceLock::new();

fn policy() -> CacheErrors {
    POLICY.get().copied().unwrap_or_default()
}

/// The policy when the settings themselves cannot be read (the configuration file may be the
/// thing that is unreadable): the variable and the command line decide, without the file.
fn policy_without_file(cache: &CacheOptions) -> CacheErrors {
    let env = std::env::var(FLAGS_VAR).ok();
    cache
        .overrides()
        .ok()
        .and_then(|layer| Settings::from_flags_and(env.as_deref(), &layer).ok())
        .map(|s| s.cache_errors)
        .unwrap_or_default()
}

/// Reads the settings and opens the cache for a compile; an unusable cache is
/// [`CacheOpen::Bypassed`] unless `cache_errors = fail`.
pub fn open(cache: &CacheOptions) -> Result<CacheOpen, CliError> {
    let settings = match cache.resolved() {
        Ok(resolved) => resolved.settings,
        Err(e) => {
            let _ = POLICY.set(policy_without_file(cache));
            return bypassed(e);
        }
    };
    let _ = POLICY.set(settings.cache_errors);
    match mck_runs::open_cache(&settings, mck_runs::Purpose::Compile) {
        Ok(Some(store)) => Ok(CacheOpen::Open(Box::new((settings, store)))),
        Ok(None) => Ok(CacheOpen::Off),
        Err(e) => bypassed(e.into()),
    }
}

fn bypassed(error: CliError) -> Result<CacheOpen, CliError> {
    if tolerated(&error) {
        Ok(CacheOpen::Bypassed(reason(&error)))
    } else {
        Err(error)
    }
}

/// Whether `error` means the cache is unusable and the policy lets the compile go on without
/// it (a usage, input or conflict error never does, nor a key the cache refuses to build a
/// path from: that is the module's fault).
pub fn tolerated(error: &CliError) -> bool {
    error.kind == Failure::Cache && policy() == CacheErrors::Warn && !is_invalid_key(error)
}

fn is_invalid_key(error: &CliError) -> bool {
    let invalid = |e: &StoreError| matches!(e, StoreError::InvalidKey { .. });
    error.error.chain().any(|cause| {
        cause.downcast_ref::<StoreError>().is_some_and(invalid)
            || matches!(cause.downcast_ref::<ExecError>(), Some(ExecError::Cache(e)) if invalid(e))
    })
}

/// The error on one line, with its causes.
pub fn reason(error: &CliError) -> String {
    format!("{:#}", error.error).replace('\n', " ")
}

/// Warns (once: a process bypasses at most once) and runs `command` without the cache.
pub fn run_bypassed(command: &[OsString], reason: &str) -> Result<ExitCode, CliError> {
    warn_once(&format!(
        "mlir-cache-key: warning: running the compiler without the cache: {reason}\n\
         mlir-cache-key: warning: to fix it, make the cache directory yours and writable, or \
         choose another with --cache_dir=DIR in {FLAGS_VAR} (--cache_errors=fail makes this \
         an error)"
    ));
    run_named(command)
}

/// A compile whose module must be canonicalized, in a process without MLIR (the Python
/// package's command line, `command_name` its command): run without the cache and warned, as
/// past an unusable cache, so that a build never fails for want of MLIR; `cache_errors = fail`
/// refuses it instead (exit 64).
pub fn run_without_canonicalizer(
    command: &[OsString],
    cache: &CacheOptions,
    command_name: &str,
) -> Result<ExitCode, CliError> {
    let policy = POLICY
        .get()
        .copied()
        .unwrap_or_else(|| match cache.resolved() {
            Ok(resolved) => resolved.settings.cache_errors,
            Err(_) => policy_without_file(cache),
        });
    if policy == CacheErrors::Fail {
        return Err(CliError::needs_mlir(format!(
            "`{command_name}` of a module that is not a direct-mode hit"
        )));
    }
    warn_once(
        "mlir-cache-key: warning: running the compiler without the cache: this command line \
         (the Python package's) has no MLIR to canonicalize the module, so it serves \
         direct-mode hits only; the full build (`cargo install --path .`, with LLVM/MLIR 22) \
         caches misses too (--cache_errors=fail makes this an error)",
    );
    run_named(command)
}

fn warn_once(warning: &str) {
    static WARNED: OnceLock<()> = OnceLock::new();
    if WARNED.set(()).is_ok() {
        eprintln!("{warning}");
    }
}

/// [`run_plain`], a failure to start naming the compiler.
fn run_named(command: &[OsString]) -> Result<ExitCode, CliError> {
    run_plain(command).map_err(|e| {
        CliError::no_input(anyhow!(
            "cannot run {}: {e}",
            command
                .first()
                .map(|c| c.to_string_lossy())
                .unwrap_or_default()
        ))
    })
}

/// Runs `command` as it is, stdin, stdout and stderr its own, and returns its status as this
/// process's exit code (128 + signal when it was killed).
pub fn run_plain(command: &[OsString]) -> std::io::Result<ExitCode> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| std::io::Error::other("no compiler command given"))?;
    let status = std::process::Command::new(program).args(args).status()?;
    Ok(match (status.code(), status.signal()) {
        (Some(code), _) => crate::error::exit_code(code),
        (None, Some(signal)) => crate::error::exit_code(128 + signal),
        (None, None) => ExitCode::FAILURE,
    })
}
