//! `mlir-cache-key why A B`: which ingredient of two keys moved, and how; inside an embedded
//! kernel, which operation of it (`why_kernel`).

use super::error::CliError;
use super::key::record_for;
use super::key_args::KeyArgs;
use super::module::ModuleFlags;
use super::output;
use super::settings::CacheOptions;
use super::stored;
use crate::key::explain::explain;
use crate::key::{KeyRecord, Readable};
use anyhow::Context as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  mlir-cache-key why old.json new.mlir --platform cpu\n  \
                        mlir-cache-key why jit_f-<64 hex> jit_f-<64 hex> --cache-dir /tmp/c"
)]
pub struct Args {
    /// The old side: a saved `key --json` report, a module keyed with the
    /// options below, or (when no such file exists) a key or address stored in the cache.
    a: PathBuf,
    /// The new side, likewise.
    b: PathBuf,
    #[command(flatten)]
    module: ModuleFlags,
    #[command(flatten)]
    key: KeyArgs,
    /// Where stored keys and addresses are read from.
    #[command(flatten)]
    cache: CacheOptions,
    /// Print the explanation as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    args.module.apply_limits()?;
    let a = side(&args.a, &args)?;
    let b = side(&args.b, &args)?;
    let mut explanation = explain(&a, &b);
    // A difference inside a kernel: name its call and operation rather than escaped bytes.
    if let (Some(text_a), Some(text_b)) = (canonical_text(&a), canonical_text(&b))
        && let Some(first) = explanation.differences.first_mut()
        && first.position == 1
        && let Some(details) = super::why_kernel::kernel_details(text_a, text_b)
    {
        first.details = details;
    }
    let text = if args.json {
        output::versioned("why", &explanation)?
    } else {
        explanation.to_string()
    };
    output::stdout(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The canonical module text a record keeps, if any.
fn canonical_text(record: &KeyRecord) -> Option<&str> {
    match &record.entries.first()?.readable {
        Readable::Computation { text, .. } => text.as_deref(),
        _ => None,
    }
}

/// A saved report (JSON), a module to key now, or a stored key or address.
fn side(path: &Path, args: &Args) -> Result<KeyRecord, CliError> {
    if !path.exists() {
        let tiers = args.cache.open_to_manage()?;
        let what = path.to_string_lossy();
        return stored::record(&stored::require(tiers.local(), &what)?);
    }
    let bytes = super::input::read_file(path)?;
    let hlo = args.module.canon.input_format.is_hlo(&bytes);
    if !hlo && bytes.trim_ascii_start().starts_with(b"{") {
        return serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is not a `key --json` report", path.display()))
            .map_err(CliError::input);
    }
    record_for(
        Some(&path.to_path_buf()),
        None,
        None,
        &args.module.canon,
        &args.key,
        true,
    )
}
