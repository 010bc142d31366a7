//! `mlir-cache-key wrap -- COMPILER ARGS…`, and the same when this binary is invoked through a
//! symlink named after a known compiler: find the input and output in the arguments (the table
//! in `mck_cli::compilers`), then do exactly what `exec` does, direct mode included. An argument
//! shape the table cannot read, or an input that cannot be keyed, runs the compiler uncached,
//! with one info line saying why; a cache that cannot be used, with one warning.

use super::error::{CliError, Failure};
use super::input;
use super::module::{CanonFlags, with_computation_of};
use super::settings::CacheOptions;
use crate::exec::Finished;
use mck_cli::bypass::{reason, run_bypassed, tolerated};
use mck_cli::exec::finished_code;
use mck_cli::wrap::{Prepared, masquerade_command, masquerade_flags, prepare, uncached};
use std::process::ExitCode;

pub use mck_cli::wrap::Args;

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    wrap(&args.command, &args.canon, &args.cache, args.env)
}

/// This binary, invoked as `name` (a symlink named after a known compiler): wraps the next
/// `name` on PATH.
pub fn masquerade(name: &str) -> ExitCode {
    let command = masquerade_command(name);
    match wrap(
        &command,
        &masquerade_flags(),
        &CacheOptions::default(),
        Vec::new(),
    ) {
        Ok(code) => code,
        Err(e) => e.report(),
    }
}

fn wrap(
    command: &[std::ffi::OsString],
    canon: &CanonFlags,
    cache: &CacheOptions,
    env: Vec<String>,
) -> Result<ExitCode, CliError> {
    // The input is untrusted like any module: the default size cap, and MLIR reads bytecode in
    // a child process.
    super::limits::apply(&super::limits::InputLimits::default())?;
    let wrap = match prepare(command, cache, env)? {
        Prepared::Uncached { command, name, why } => return uncached(&command, &name, &why),
        Prepared::Bypassed { command, reason } => return run_bypassed(&command, &reason),
        Prepared::Cache(wrap) => wrap,
    };
    // A cache that fails while in use is bypassed too (the compiler found, not this binary).
    match through_cache(&wrap, canon) {
        Err(e) if tolerated(&e) => run_bypassed(&wrap.request.command, &reason(&e)),
        result => result,
    }
}

fn through_cache(wrap: &mck_cli::wrap::Wrap, canon: &CanonFlags) -> Result<ExitCode, CliError> {
    if wrap.cache.direct
        && !mck_cli::handover::direct_already_missed()
        && let Some(code) = wrap.direct_hit(canon)?
    {
        return Ok(code);
    }
    let request = &wrap.request;
    let (input_name, raw) = input::read_raw(&request.input)?;
    // From the bytes read now, which the canonical key comes from.
    let manifest = match wrap.cache.direct {
        true => Some(wrap.manifest(canon, &mck_cli::raw_digest::of_bytes(&raw))?),
        false => None,
    };
    let keyed = input::decode(input_name, raw).and_then(|input| {
        with_computation_of(input, canon, None, true, |name, computation| {
            Ok(crate::exec::exec_key(
                request,
                name,
                computation,
                Some(&wrap.cache.digest_cache),
            )?)
        })
    });
    let record = match keyed {
        Ok(record) => record,
        Err(e) if e.kind == Failure::Input => {
            // One line: the first of the error (a parse error goes on with the source).
            let error = format!("{:#}", e.error);
            let first = error.lines().next().unwrap_or_default();
            let why = format!("cannot key its input {}: {first}", request.input.display());
            return uncached(&request.command, &wrap.name, &why);
        }
        Err(e) => return Err(e),
    };
    let finished = crate::exec::run(&wrap.cache.store, request, &record, None)?;
    // A read-only cache stores no manifest.
    if let (Some(manifest), Finished::Status { served, .. }) = (&manifest, &finished)
        && served.state().is_some()
        && !wrap.cache.store.local().is_read_only()
    {
        crate::exec::remember_direct(&wrap.cache.store, manifest, &record);
    }
    Ok(finished_code(finished))
}
