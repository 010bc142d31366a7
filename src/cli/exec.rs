//! `mlir-cache-key exec`: ccache-style wrapper. Parses the arguments, canonicalizes the module
//! (MLIR 22), and hands the rest to the exec library (`mck-exec`): the key, replay or
//! compile-once, the result at an address.

use super::address_args::AddressArgs;
use super::canon::CanonFlags;
use super::error::{CliError, Failure};
use super::input;
use super::limits::InputLimits;
use super::module::with_computation_of;
use super::settings::CacheOptions;
use crate::exec::compiler_check::CompilerCheck;
use crate::exec::{AtAddress, ExecError, ExecRequest, Finished};
use crate::key::{Computation, KeyRecord};
use crate::store::{CacheKey, Tiered};
use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The module the command compiles (MLIR text or bytecode, or an XLA
    /// HloModuleProto).
    #[arg(long, value_name = "MODULE")]
    input: PathBuf,
    /// The file the command writes: stored on success, restored on a hit.
    #[arg(long, value_name = "FILE")]
    output: PathBuf,
    /// The key's prefix [default: the module's sym_name, or the
    /// HloModuleProto's name].
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
    /// A glob of compiler arguments that do not change the output, left out of
    /// the key (repeatable), e.g. '--dump-dir=*' or '-v'. XLA flags JAX leaves
    /// out of its key (--xla_dump_to…) are left out without it.
    #[arg(
        long = "ignore-arg",
        value_name = "PATTERN",
        allow_hyphen_values = true
    )]
    ignore_args: Vec<String>,
    /// What stands for the compiler in the key: content (its executable, and
    /// the script an interpreter runs), mtime, none, string:VALUE or
    /// command:CMD (the output of a shell command).
    #[arg(long, value_name = "CHECK", default_value = "content")]
    compiler_check: CompilerCheck,
    /// Do not use direct mode (a manifest from the input's raw bytes to the
    /// canonical key that serves a hit without parsing the module).
    #[arg(long)]
    no_direct: bool,
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
        ignore_args: args.ignore_args.clone(),
        compiler_check: args.compiler_check.clone(),
    };
    let Some(store) = Tiered::open(&settings)? else {
        tracing::info!("caching is off (--no_cache): running the compiler");
        return Ok(exit_code(crate::exec::run_uncached(&request)?));
    };
    let digest_cache = store.local().layout().compilers_dir();
    let run_id = std::cell::OnceCell::<String>::new();
    let at = |record: &KeyRecord| -> Result<Option<AtAddress>, CliError> {
        Ok(match args.address.address(&record.module_name)? {
            Some(address) => Some(AtAddress {
                address,
                // One run id for both paths (a fresh one is made once).
                run: match run_id.get() {
                    Some(id) => String::clone(id),
                    None => {
                        let id = args.address.run_id()?;
                        let _ = run_id.set(id.clone());
                        id
                    }
                },
                overwrite_conflicts: args.address.overwrite_cache_conflicts,
                cache_args: args.cache.as_args(),
            }),
            None => None,
        })
    };
    // A direct hit needs only the input's digest, streamed; stdin can be read only once.
    let mut read = match args.input.as_os_str() == "-" {
        true => Some(input::read_raw(&args.input)?),
        false => None,
    };
    if !args.no_direct {
        let digest = match &read {
            Some((_, raw)) => Sha256::digest(raw).into(),
            None => input::digest_file(&args.input)?,
        };
        let manifest = direct_manifest(&args, &request, &digest, &digest_cache)?;
        if let Some(finished) = crate::exec::run_direct(&store, &request, &manifest, at)? {
            return Ok(finished_code(finished));
        }
    }
    let (input_name, raw) = match read.take() {
        Some(read) => read,
        None => input::read_raw(&args.input)?,
    };
    // From the bytes read now, which the canonical key comes from: a file that changed since it
    // was hashed above must not leave a manifest naming its old bytes.
    let manifest = match args.no_direct {
        true => None,
        false => Some(direct_manifest(
            &args,
            &request,
            &Sha256::digest(&raw).into(),
            &digest_cache,
        )?),
    };
    // The key without the canonical text; a miss renders it (to explain and keep it).
    let (record, finished) = with_computation_of(
        input::decode(input_name, raw)?,
        &args.canon,
        args.module_name.clone(),
        false,
        |name, computation| {
            let text = match &computation {
                Computation::Module { module, .. } => Some(*module),
                Computation::Bytes(_) => None,
            };
            let record = crate::exec::exec_key(&request, name, computation, Some(&digest_cache))?;
            let at = at(&record)?;
            let finished = crate::exec::run_with_text(&store, &request, &record, at, text)?;
            Ok((record, finished))
        },
    )?;
    if let (Some(manifest), Finished::Status { served, .. }) = (&manifest, &finished)
        && served.state().is_some()
    {
        crate::exec::remember_direct(&store, manifest, &record);
    }
    Ok(finished_code(finished))
}

fn finished_code(finished: Finished) -> ExitCode {
    match finished {
        Finished::Status { code, .. } => exit_code(code),
        Finished::Conflict(report) => {
            eprintln!("mlir-cache-key: error: {report}");
            ExitCode::from(Failure::Conflict.code())
        }
    }
}

/// The direct-mode manifest key of this exec, for the SHA-256 of the input's raw bytes.
fn direct_manifest(
    args: &Args,
    request: &ExecRequest,
    raw_sha256: &[u8; 32],
    digest_cache: &Path,
) -> Result<CacheKey, CliError> {
    // The canonicalizer's version and options: what else maps raw bytes to a canonical key.
    let canon = format!("{} {:?}", env!("CARGO_PKG_VERSION"), args.canon);
    Ok(crate::exec::direct_key(
        request,
        raw_sha256,
        &canon,
        args.module_name.as_deref(),
        Some(digest_cache),
    )?)
}

/// A status as a process exit code: 0 stays 0, anything else is clamped to 1–255.
pub(super) fn exit_code(status: i32) -> ExitCode {
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
            ExecError::Missing(_) => Failure::NoInput,
            ExecError::Cache(crate::store::StoreError::Refused(_)) => Failure::Usage,
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
