//! `mlir-cache-key exec`: ccache-style wrapper. The cache, the compiler's identity and a
//! direct-mode hit come from `mck_cli::exec` (the front binary serves such hits without
//! MLIR); this half canonicalizes the module (MLIR 22) and hands the rest to the exec library
//! (`mck-exec`): the key, replay or compile-once, the result at an address.

use super::error::CliError;
use super::input;
use super::module::with_computation_of;
use crate::exec::Finished;
use crate::key::Computation;
use mck_cli::bypass::{reason, run_bypassed, tolerated};
use mck_cli::exec::{Exec, Opened, finished_code};
use std::process::ExitCode;

pub use mck_cli::exec::Args;

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    super::limits::apply(&args.limits)?;
    let exec = match Exec::open(&args)? {
        Opened::Uncached(code) => return Ok(code),
        Opened::Cache(exec) => exec,
    };
    // A cache that fails while in use is bypassed too (see `mck_cli::bypass`).
    match through_cache(&args, &exec) {
        Err(e) if tolerated(&e) => run_bypassed(&args.command, &reason(&e)),
        result => result,
    }
}

fn through_cache(args: &Args, exec: &Exec) -> Result<ExitCode, CliError> {
    let mut read_once = None;
    if exec.cache.direct
        && !mck_cli::handover::direct_already_missed()
        && let Some(code) = exec.direct_hit(&mut read_once)?
    {
        return Ok(code);
    }
    let (input_name, raw) = match read_once.take() {
        Some(read) => read,
        None => input::read_raw(&args.input)?,
    };
    // From the bytes read now, which the canonical key comes from: a file that changed since it
    // was hashed for the direct lookup must not leave a manifest naming its old bytes.
    let manifest = match exec.cache.direct {
        true => Some(exec.manifest(&mck_cli::raw_digest::of_bytes(&raw))?),
        false => None,
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
            let record = crate::exec::exec_key(
                &exec.request,
                name,
                computation,
                Some(&exec.cache.digest_cache),
            )?;
            let at = exec.at(&record)?;
            let finished =
                crate::exec::run_with_text(&exec.cache.store, &exec.request, &record, at, text)?;
            Ok((record, finished))
        },
    )?;
    // A read-only cache stores no manifest.
    if let (Some(manifest), Finished::Status { served, .. }) = (&manifest, &finished)
        && served.state().is_some()
        && !exec.cache.store.local().is_read_only()
    {
        crate::exec::remember_direct(&exec.cache.store, manifest, &record);
    }
    Ok(finished_code(finished))
}
