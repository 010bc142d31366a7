//! `mlir-cache-key wrap -- COMPILER ARGS…`, and the same when this binary is invoked through a
//! symlink named after a known compiler: find the input and output in the arguments (the table
//! in [`super::compilers`]), then do exactly what `exec` does. An argument shape the table
//! cannot read, or an input that cannot be keyed, runs the compiler uncached, with one info line
//! saying why.

use super::canon::{CanonFlags, KernelArg};
use super::compilers;
use super::error::{CliError, Failure};
use super::module::{InputFormat, with_computation};
use super::settings::CacheOptions;
use crate::exec::{ExecRequest, Finished};
use crate::store::Tiered;
use anyhow::anyhow;
use mck_cli::exec::exit_code;
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Another environment variable that can change the output (repeatable;
    /// XLA_FLAGS and LIBTPU_INIT_ARGS always count).
    #[arg(long = "env", value_name = "NAME")]
    env: Vec<String>,
    #[command(flatten)]
    canon: CanonFlags,
    #[command(flatten)]
    cache: CacheOptions,
    /// The compiler and its arguments, exactly as the build runs them.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    wrap(&args.command, &args.canon, &args.cache, args.env)
}

/// This binary, invoked as `name` (a symlink named after a known compiler): wraps the next
/// `name` on PATH.
pub fn masquerade(name: &str) -> ExitCode {
    let mut command: Vec<OsString> = std::env::args_os().collect();
    command[0] = OsString::from(name);
    let canon = CanonFlags {
        input_format: InputFormat::Auto,
        keep_locations: false,
        ignore_custom_partitioning: false,
        kernels: KernelArg::Strip,
        canonical_symbols: false,
    };
    match wrap(&command, &canon, &CacheOptions::default(), Vec::new()) {
        Ok(code) => code,
        Err(e) => e.report(),
    }
}

fn wrap(
    command: &[OsString],
    canon: &CanonFlags,
    cache: &CacheOptions,
    env: Vec<String>,
) -> Result<ExitCode, CliError> {
    // The input is untrusted like any module: the default size cap, and MLIR reads bytecode in
    // a child process.
    super::limits::apply(&super::limits::InputLimits::default())?;
    let (program, args) = command
        .split_first()
        .ok_or_else(|| CliError::usage(anyhow!("no compiler command given")))?;
    let name = Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut command = command.to_vec();
    command[0] = resolve(program)?.into_os_string();
    let args: Vec<String> = match args.iter().map(|a| a.to_str().map(String::from)).collect() {
        Some(args) => args,
        None => return uncached(&command, &name, "an argument is not valid UTF-8"),
    };
    let files = match compilers::recognize(&name, &args) {
        Ok(files) => files,
        Err(why) => return uncached(&command, &name, &why),
    };
    let settings = cache.settings()?;
    let Some(store) = Tiered::open(&settings)? else {
        return uncached(&command, &name, "caching is off (--no_cache)");
    };
    let request = ExecRequest {
        command: command.clone(),
        input: PathBuf::from(&files.input),
        output: PathBuf::from(&files.output),
        env,
        platform: String::new(),
        platform_version: String::new(),
        custom_hook: String::new(),
        lock_timeout: Duration::from_secs(600),
        ignore_args: Vec::new(),
        compiler_check: Default::default(),
    };
    let digests = store.local().layout().compilers_dir();
    let keyed = with_computation(&request.input, canon, None, true, |name, computation| {
        Ok(crate::exec::exec_key(
            &request,
            name,
            computation,
            Some(&digests),
        )?)
    });
    let record = match keyed {
        Ok(record) => record,
        Err(e) if e.kind == Failure::Input => {
            // One line: the first of the error (a parse error goes on with the source).
            let error = format!("{:#}", e.error);
            let first = error.lines().next().unwrap_or_default();
            let why = format!("cannot key its input {}: {first}", files.input);
            return uncached(&command, &name, &why);
        }
        Err(e) => return Err(e),
    };
    match crate::exec::run(&store, &request, &record, None)? {
        Finished::Status { code, .. } => Ok(exit_code(code)),
        Finished::Conflict(report) => Err(CliError::other(anyhow!("{report}"))),
    }
}

/// Runs the compiler as it is, stdin, stdout and stderr its own.
fn uncached(command: &[OsString], name: &str, why: &str) -> Result<ExitCode, CliError> {
    tracing::info!("running {name} uncached: {why}");
    let status = std::process::Command::new(&command[0])
        .args(&command[1..])
        .status()
        .map_err(|e| {
            CliError::input(anyhow!("cannot run {}: {e}", command[0].to_string_lossy()))
        })?;
    Ok(match (status.code(), status.signal()) {
        (Some(code), _) => exit_code(code),
        (None, Some(signal)) => exit_code(128 + signal),
        (None, None) => ExitCode::FAILURE,
    })
}

/// The compiler to run: a path as given, or the first executable of that name on PATH that is
/// not this binary (so a symlink named after the compiler finds the real one).
fn resolve(program: &OsStr) -> Result<PathBuf, CliError> {
    // This binary, and the front binary beside it that hands over to this one.
    let me: Vec<PathBuf> = std::env::current_exe()
        .into_iter()
        .flat_map(|exe| [exe.with_file_name(mck_cli::front::FRONT_BINARY), exe])
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
