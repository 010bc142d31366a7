//! `mlir-cache-key canon`: canonical bytecode, its text, or its digest.

use super::error::CliError;
use super::module::{CanonOptions as _, ReadModule as _, canonical_hlo};
use super::{input, output};
use crate::canon::{CanonicalModule, timings};
use crate::mlir::{new_context, parse_module};
use std::path::PathBuf;
use std::process::ExitCode;

pub use mck_cli::command_line::canon::{Args, Emit};

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let input = args.module.read(&args.input)?;
    if args.module.canon.input_format.is_hlo(&input.bytes) {
        return run_hlo(&args, &input);
    }
    let options = args.module.canon.options();
    let context = new_context();
    if args.timings {
        let timings = timings::measure(&context, &input.bytes, &input.name, &options)?;
        for (step, time) in timings.rows() {
            eprintln!("{step:>24}: {:>10.3} ms", time.as_secs_f64() * 1e3);
        }
        eprintln!(
            "{:>24}: {:>10} bytes",
            "canonical bytecode", timings.canonical_bytes
        );
    }
    let module = parse_module(&context, &input.bytes, &input.name).map_err(CliError::input)?;
    let canonical = CanonicalModule::from_owned(module, &options)?;
    if args.digest {
        let digest = canonical.digest().map_err(CliError::other)?;
        return finish(args.output, format!("{}\n", hex::encode(digest)).as_bytes());
    }
    match args.emit {
        Emit::Text => finish(args.output, canonical.text().as_bytes()),
        Emit::Bytecode => finish(args.output, &canonical.to_bytes().map_err(CliError::other)?),
    }
}

/// `canon` of an HloModuleProto: the canonical proto, its text view, or its digest.
fn run_hlo(args: &Args, input: &input::Input) -> Result<ExitCode, CliError> {
    let start = std::time::Instant::now();
    let canonical = canonical_hlo(input, &args.module.canon)?;
    if args.timings {
        let ms = start.elapsed().as_secs_f64() * 1e3;
        eprintln!("{:>24}: {ms:>10.3} ms", "hlo canonicalize");
        eprintln!(
            "{:>24}: {:>10} bytes",
            "canonical proto",
            canonical.bytes.len()
        );
    }
    let output = args.output.clone();
    if args.digest {
        return finish(
            output,
            format!("{}\n", hex::encode(canonical.digest())).as_bytes(),
        );
    }
    match args.emit {
        Emit::Text => finish(output, canonical.text().as_bytes()),
        Emit::Bytecode => finish(output, &canonical.bytes),
    }
}

fn finish(path: Option<PathBuf>, bytes: &[u8]) -> Result<ExitCode, CliError> {
    output::write(path.as_deref(), bytes)?;
    Ok(ExitCode::SUCCESS)
}
