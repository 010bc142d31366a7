//! `mlir-cache-key why A B`: which ingredient of two keys moved, and how. Stored keys and
//! saved `key --json` reports need no MLIR; a module keyed now, and the operation inside an
//! embedded kernel where two canonical modules first differ, come from the binary that links
//! MLIR ([`ReadsMlir`]).

use crate::error::CliError;
use crate::flags::ModuleFlags;
use crate::key_args::KeyArgs;
use crate::manage::{output, stored};
use crate::settings::CacheOptions;
use anyhow::Context as _;
use mck_key::explain::explain;
use mck_key::{KeyRecord, Readable};
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
    pub a: PathBuf,
    /// The new side, likewise.
    pub b: PathBuf,
    #[command(flatten)]
    pub module: ModuleFlags,
    #[command(flatten)]
    pub key: KeyArgs,
    /// Where stored keys and addresses are read from.
    #[command(flatten)]
    pub cache: CacheOptions,
    /// Print the explanation as JSON.
    #[arg(long)]
    pub json: bool,
}

/// What `why` needs MLIR for.
pub trait ReadsMlir {
    /// Applies the module limits of `args` (before any side is read).
    fn apply_limits(&self, args: &Args) -> Result<(), CliError>;
    /// The key record of the module at `path`, keyed now with `args`' options.
    fn record_for(&self, path: &Path, args: &Args) -> Result<KeyRecord, CliError>;
    /// The lines naming the kernel operation where the canonical texts `a` and `b` first
    /// differ, when that difference is inside a kernel.
    fn kernel_details(&self, a: &str, b: &str) -> Option<Vec<String>>;
}

/// Where `why` gets MLIR from.
pub enum Mlir<'a> {
    /// Linked into this process (the MLIR binary).
    Linked(&'a dyn ReadsMlir),
    /// In the MLIR binary beside this one (the front binary): what needs MLIR is a
    /// [`CliError::needs_mlir`], which the front answers by handing the command over.
    Beside,
    /// Nowhere (the Python package's command line): a module side is refused; a difference
    /// inside a kernel is explained without naming the operation, and a note says so.
    Absent,
}

pub fn run(args: Args, mlir: Mlir<'_>) -> Result<ExitCode, CliError> {
    if let Mlir::Linked(mlir) = mlir {
        mlir.apply_limits(&args)?;
    }
    let a = side(&args.a, &args, &mlir)?;
    let b = side(&args.b, &args, &mlir)?;
    let mut explanation = explain(&a, &b);
    // A difference inside a kernel: name its call and operation rather than escaped bytes.
    if let (Some(text_a), Some(text_b)) = (canonical_text(&a), canonical_text(&b))
        && let Some(first) = explanation.differences.first_mut()
        && first.position == 1
        && first_difference_in_custom_call(text_a, text_b)
    {
        match mlir {
            Mlir::Linked(mlir) => {
                if let Some(details) = mlir.kernel_details(text_a, text_b) {
                    first.details = details;
                }
            }
            Mlir::Beside => return Err(CliError::needs_mlir("`why` inside a kernel")),
            Mlir::Absent => eprintln!(
                "mlir-cache-key: note: the first difference is in a custom call's operand or \
                 kernel; the full build (with MLIR) names the operation inside the kernel"
            ),
        }
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
fn side(path: &Path, args: &Args, mlir: &Mlir<'_>) -> Result<KeyRecord, CliError> {
    if !path.exists() {
        let tiers = args.cache.open_to_manage()?;
        let what = path.to_string_lossy();
        return stored::record(&stored::require(
            tiers.local(),
            &args.cache.registry_settings()?,
            &what,
        )?);
    }
    let bytes = crate::input::read_file(path)?;
    let hlo = args.module.canon.input_format.is_hlo(&bytes);
    if !hlo && bytes.trim_ascii_start().starts_with(b"{") {
        return serde_json::from_slice(&bytes)
            .with_context(|| format!("{} is not a `key --json` report", path.display()))
            .map_err(CliError::input);
    }
    match mlir {
        Mlir::Linked(mlir) => mlir.record_for(path, args),
        Mlir::Beside | Mlir::Absent => Err(CliError::needs_mlir("`why` of a module file")),
    }
}

/// The line (from 0) where the texts `a` and `b` first differ, if they do.
pub fn first_differing_line(a: &str, b: &str) -> Option<usize> {
    let (mut x, mut y) = (a.lines(), b.lines());
    let mut line = 0;
    loop {
        match (x.next(), y.next()) {
            (None, None) => return None,
            (p, q) if p != q => return Some(line),
            _ => line += 1,
        }
    }
}

/// Whether canonical texts first differ on a custom call's line (where kernels are).
pub fn first_difference_in_custom_call(a: &str, b: &str) -> bool {
    first_differing_line(a, b)
        .and_then(|line| a.lines().nth(line))
        .is_some_and(|line| line.contains("\"stablehlo.custom_call\""))
}
