//! `mlir-cache-key exec`: ccache-style wrapper. Parses the arguments, canonicalizes the module
//! (MLIR 22), and hands the rest to the exec library (`mck-exec`): the key, replay or
//! compile-once, the result at an address.

use super::address_args::AddressArgs;
use super::canon::CanonFlags;
use super::error::{CliError, Failure};
use super::input;
use super::limits::InputLimits;
use super::settings::CacheOptions;
use crate::canon::{CanonicalModule, module_name};
use crate::exec::{AtAddress, ExecError, ExecRequest, Finished};
use crate::key::{Computation, KeyRecord};
use crate::mlir::{new_context, parse_module};
use crate::store::Tiered;
use anyhow::anyhow;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The module the command compiles (MLIR text or bytecode).
    #[arg(long, value_name = "MODULE")]
    input: PathBuf,
    /// The file the command writes: stored on success, restored on a hit.
    #[arg(long, value_name = "FILE")]
    output: PathBuf,
    /// The key's prefix [default: the module's sym_name].
    #[arg(long, value_name = "NAME")]
    module_name: Option<String>,
    /// Another environment variable that can change the output (repeatable;
    /// XLA_FLAGS and LIBTPU_INIT_ARGS always count).
    #[arg(long = "env", value_name = "NAME")]
    env: Vec<String>,
    /// Platform the command compiles for.
    #[arg(long, value_name = "S", default_value = "")]
    platform: String,
    /// Platform version.
    #[arg(long, value_name = "S", default_value = "")]
    platform_version: String,
    /// A user string hashed into the key.
    #[arg(long, value_name = "S", default_value = "")]
    custom_hook: String,
    /// Seconds to wait for another process compiling the same key before
    /// compiling anyway.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    lock_timeout: u64,
    #[command(flatten)]
    canon: CanonFlags,
    #[command(flatten)]
    limits: InputLimits,
    #[command(flatten)]
    address: AddressArgs,
    #[command(flatten)]
    cache: CacheOptions,
    /// The compiler and its arguments; MODULE and FILE appear among them.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    args.limits.apply()?;
    let settings = args.cache.settings()?;
    let request = ExecRequest {
        command: args.command.clone(),
        input: args.input.clone(),
        output: args.output.clone(),
        env: args.env.clone(),
        platform: args.platform.clone(),
        platform_version: args.platform_version.clone(),
        custom_hook: args.custom_hook.clone(),
        lock_timeout: Duration::from_secs(args.lock_timeout),
    };
    let record = key_record(&args, &request)?;
    let Some(store) = Tiered::open(&settings)? else {
        tracing::info!("caching is off (--no_cache): running the compiler");
        return Ok(exit_code(crate::exec::run_uncached(&request)?));
    };
    let at = match args.address.address(&record.module_name)? {
        Some(address) => Some(AtAddress {
            address,
            run: args.address.run_id()?,
            overwrite_conflicts: args.address.overwrite_cache_conflicts,
            cache_args: args.cache.as_args(),
        }),
        None => None,
    };
    match crate::exec::run(&store, &request, &record, at)? {
        Finished::Status { code, .. } => Ok(exit_code(code)),
        Finished::Conflict(report) => {
            eprintln!("mlir-cache-key: error: {report}");
            Ok(ExitCode::from(Failure::Conflict.code()))
        }
    }
}

/// Parses and canonicalizes the module, then derives the exec key.
fn key_record(args: &Args, request: &ExecRequest) -> Result<KeyRecord, CliError> {
    let module = input::read(&args.input)?;
    let context = new_context();
    let parsed = parse_module(&context, &module.bytes, &module.name).map_err(CliError::input)?;
    let name = args
        .module_name
        .clone()
        .or_else(|| module_name(&parsed))
        .ok_or_else(|| {
            CliError::input(anyhow!(
                "{}: the module has no sym_name to name its key; pass --module-name",
                module.name
            ))
        })?;
    let canonical = CanonicalModule::from_owned(parsed, &args.canon.options())?;
    let computation = Computation::Module {
        module: &canonical,
        record_text: true,
    };
    Ok(crate::exec::exec_key(request, name, computation)?)
}

/// A status as a process exit code: 0 stays 0, anything else is clamped to 1–255.
fn exit_code(status: i32) -> ExitCode {
    if status == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(status.clamp(1, 255) as u8)
    }
}

impl From<ExecError> for CliError {
    fn from(e: ExecError) -> Self {
        let kind = match &e {
            ExecError::Input(_) => Failure::Input,
            ExecError::Cache(_) => Failure::Cache,
            ExecError::RunConflict(_) => Failure::Conflict,
            ExecError::Other(_) => Failure::Other,
        };
        CliError {
            kind,
            error: e.into(),
        }
    }
}
