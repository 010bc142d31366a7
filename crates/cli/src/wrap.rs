//! `wrap` up to what needs MLIR: the compiler found on PATH, its input and output read from its
//! own arguments (the table in [`crate::compilers`]), the cache opened, and a direct-mode hit.
//! The front binary serves such a hit itself, also when it is invoked through a symlink named
//! after a known compiler; the MLIR binary keys the module otherwise.

use crate::bypass::CacheOpen;
use crate::compilers;
use crate::error::CliError;
use crate::exec::{OpenCache, finished_code, manifest_key};
use crate::flags::{CanonFlags, InputFormat, KernelArg};
use crate::input;
use crate::settings::CacheOptions;
use anyhow::anyhow;
use mck_exec::ExecRequest;
use mck_store::CacheKey;
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Another environment variable that can change the output (repeatable;
    /// XLA_FLAGS and LIBTPU_INIT_ARGS always count).
    #[arg(long = "env", value_name = "NAME")]
    pub env: Vec<String>,
    #[command(flatten)]
    pub canon: CanonFlags,
    #[command(flatten)]
    pub cache: CacheOptions,
    /// The compiler and its arguments, exactly as the build runs them.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// The canonicalization of a compiler wrapped through a symlink: the defaults.
pub fn masquerade_flags() -> CanonFlags {
    CanonFlags {
        input_format: InputFormat::Auto,
        keep_locations: false,
        ignore_custom_partitioning: false,
        kernels: KernelArg::Strip,
        canonical_symbols: false,
    }
}

/// The process's arguments with the program named `name` (the symlink it was invoked as).
pub fn masquerade_command(name: &str) -> Vec<OsString> {
    let mut command: Vec<OsString> = std::env::args_os().collect();
    if let Some(program) = command.first_mut() {
        *program = OsString::from(name);
    }
    command
}

/// A wrapped compiler call with its cache open.
pub struct Wrap {
    /// The compiler's name as invoked (`mlir-opt`), for messages.
    pub name: String,
    pub request: ExecRequest,
    pub cache: OpenCache,
}

/// What [`prepare`] found.
pub enum Prepared {
    /// Not for the cache: the compiler (found on PATH) is to run as it is, and why.
    Uncached {
        command: Vec<OsString>,
        name: String,
        why: String,
    },
    /// The cache cannot be used: the compiler is to run without it, with one warning why.
    Bypassed {
        command: Vec<OsString>,
        reason: String,
    },
    Cache(Box<Wrap>),
}

/// Finds the compiler, its input and output, and opens the cache.
pub fn prepare(
    command: &[OsString],
    cache: &CacheOptions,
    env: Vec<String>,
) -> Result<Prepared, CliError> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| CliError::usage(anyhow!("no compiler command given")))?;
    let name = Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut command = command.to_vec();
    command[0] = resolve(program)?.into_os_string();
    let uncached = |command: Vec<OsString>, why: &str| Prepared::Uncached {
        command,
        name: name.clone(),
        why: why.to_string(),
    };
    let args: Vec<String> = match args.iter().map(|a| a.to_str().map(String::from)).collect() {
        Some(args) => args,
        None => return Ok(uncached(command, "an argument is not valid UTF-8")),
    };
    let files = match compilers::recognize(&name, &args) {
        Ok(files) => files,
        Err(why) => return Ok(uncached(command, &why)),
    };
    let (settings, store) = match crate::bypass::open(cache)? {
        CacheOpen::Open(open) => *open,
        CacheOpen::Off => return Ok(uncached(command, "caching is off (--no_cache)")),
        CacheOpen::Bypassed(reason) => return Ok(Prepared::Bypassed { command, reason }),
    };
    let request = ExecRequest {
        command,
        input: PathBuf::from(&files.input),
        output: PathBuf::from(&files.output),
        env,
        platform: String::new(),
        platform_version: String::new(),
        custom_hook: String::new(),
        lock_timeout: settings.lock_timeout,
        ignore_args: Vec::new(),
        compiler_check: Default::default(),
        verify_hits: settings.verify_hits,
    };
    Ok(Prepared::Cache(Box::new(Wrap {
        name,
        request,
        cache: OpenCache::new(store, &settings),
    })))
}

impl Wrap {
    /// The direct-mode manifest key for the digest of the input's raw bytes (`raw_digest`).
    pub fn manifest(
        &self,
        canon: &CanonFlags,
        raw_digest: &[u8; 32],
    ) -> Result<CacheKey, CliError> {
        manifest_key(
            &self.request,
            raw_digest,
            canon,
            None,
            &self.cache.digest_cache,
        )
    }

    /// A direct-mode hit, served (`None`: the module must be canonicalized; an input that can
    /// be read only once is left for the canonical path and the compiler).
    pub fn direct_hit(&self, canon: &CanonFlags) -> Result<Option<ExitCode>, CliError> {
        if input::is_stream(&self.request.input) {
            return Ok(None);
        }
        let manifest = self.manifest(
            canon,
            &input::digest_file(&self.request.input, self.cache.inode_cache.as_ref())?,
        )?;
        let finished = mck_exec::run_direct(&self.cache.store, &self.request, &manifest, |_| {
            Ok::<_, CliError>(None)
        })?;
        Ok(finished.map(finished_code))
    }
}

/// Runs the compiler as it is, stdin, stdout and stderr its own.
pub fn uncached(command: &[OsString], name: &str, why: &str) -> Result<ExitCode, CliError> {
    tracing::info!("running {name} uncached: {why}");
    crate::bypass::run_plain(command)
        .map_err(|e| CliError::input(anyhow!("cannot run {}: {e}", command[0].to_string_lossy())))
}

/// The compiler to run: a path as given, or the first executable of that name on PATH that is
/// not mlir-cache-key (so a symlink named after the compiler finds the real one).
fn resolve(program: &OsStr) -> Result<PathBuf, CliError> {
    // Either binary: a symlink may point at the front one, which hands over to the other.
    let me: Vec<PathBuf> = std::env::current_exe()
        .into_iter()
        .flat_map(|exe| {
            [
                exe.with_file_name(crate::handover::FRONT_BINARY),
                exe.with_file_name(crate::handover::MLIR_BINARY),
                exe,
            ]
        })
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    let is_me = |p: &Path| std::fs::canonicalize(p).is_ok_and(|p| me.contains(&p));
    let shown = program.to_string_lossy();
    let path = Path::new(program);
    if path.components().count() > 1 {
        if is_me(path) {
            return Err(CliError::usage(anyhow!("{shown} is mlir-cache-key itself")));
        }
        return Ok(path.to_path_buf());
    }
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| executable(p) && !is_me(p))
        .ok_or_else(|| {
            CliError::input(anyhow!(
                "{shown}: no such compiler on PATH (besides mlir-cache-key itself)"
            ))
        })
}
