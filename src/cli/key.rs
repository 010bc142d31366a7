//! `mlir-cache-key key`: the JAX-compatible key of a module, its trace, its
//! record.

use super::error::CliError;
use super::module::{CanonFlags, KernelArg, ReadModule as _, with_computation};
use super::output;
use super::stored::explain_lines;
use crate::key::{Computation, KeyRecord, MosaicKernels, compute};
use anyhow::anyhow;
use mck_cli::key_args::KeyArgs;
use std::path::PathBuf;
use std::process::ExitCode;

pub use mck_cli::command_line::key::Args;

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    args.module.apply_limits()?;
    // A big module (thousands of blocks) takes seconds: a spinner after one, on a terminal.
    let progress = super::progress::Progress::spinner("keying", args.json);
    let record = record_for(
        args.input.as_ref(),
        args.computation_bytes.as_ref(),
        args.module_name.clone(),
        &args.module.canon,
        &args.key,
        args.json,
    )?;
    drop(progress);
    if args.explain {
        eprint!("{}", explain_lines(&record));
    }
    if args.json {
        let mut text = serde_json::to_string_pretty(&record).map_err(CliError::other)?;
        text.push('\n');
        output::stdout(text.as_bytes())?;
    } else {
        output::stdout(format!("{}\n", record.key).as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Computes a key record from a module or from raw computation bytes.
pub fn record_for(
    input: Option<&PathBuf>,
    computation_bytes: Option<&PathBuf>,
    module_name_override: Option<String>,
    canon: &CanonFlags,
    key: &KeyArgs,
    record_text: bool,
) -> Result<KeyRecord, CliError> {
    if let Some(path) = computation_bytes {
        let bytes = super::input::read_file(path)?;
        let name = module_name_override.unwrap_or_default();
        return compute(
            Computation::Bytes(&bytes),
            &key.inputs(name)?,
            key.recipe()?,
        )
        .map_err(CliError::input);
    }
    let path = input.ok_or_else(|| CliError::input(anyhow!("no input module")))?;
    // Releases before 0.11 hash Mosaic kernels as lowered: the recipe decides.
    let mut canon = canon.clone();
    if key.recipe()?.mosaic == MosaicKernels::Kept {
        canon.kernels = KernelArg::Keep;
    }
    with_computation(
        path,
        &canon,
        module_name_override,
        record_text,
        |name, computation| {
            compute(computation, &key.inputs(name)?, key.recipe()?).map_err(CliError::input)
        },
    )
}
