//! `mlir-cache-key why A B`: which ingredient of two keys moved, and how.

use super::canon::CanonFlags;
use super::error::CliError;
use super::key::record_for;
use super::key_args::KeyArgs;
use super::limits::InputLimits;
use super::output;
use crate::key::KeyRecord;
use crate::key::explain::explain;
use anyhow::Context as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The old side: a saved `key --json` report, or a module keyed with the
    /// options below.
    a: PathBuf,
    /// The new side, likewise.
    b: PathBuf,
    /// Print the explanation as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    canon: CanonFlags,
    #[command(flatten)]
    limits: InputLimits,
    #[command(flatten)]
    key: KeyArgs,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    args.limits.apply()?;
    let a = side(&args.a, &args)?;
    let b = side(&args.b, &args)?;
    let explanation = explain(&a, &b);
    let text = if args.json {
        let mut text = serde_json::to_string_pretty(&explanation).map_err(CliError::other)?;
        text.push('\n');
        text
    } else {
        explanation.to_string()
    };
    output::stdout(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// A saved report (JSON) or a module to key now.
fn side(path: &Path, args: &Args) -> Result<KeyRecord, CliError> {
    let bytes = super::input::read_file(path)?;
    if bytes.trim_ascii_start().starts_with(b"{") {
        return serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is not a `key --json` report", path.display()))
            .map_err(CliError::input);
    }
    record_for(
        Some(&path.to_path_buf()),
        None,
        None,
        &args.canon,
        &args.key,
        true,
    )
}
