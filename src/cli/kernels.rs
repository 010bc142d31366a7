//! `mlir-cache-key kernels`: every embedded kernel, and how it is stripped.

use super::error::CliError;
use super::module::{CanonOptions as _, ReadModule as _, canonical_hlo};
use super::output;
use crate::canon::{CanonicalModule, KernelAction, KernelKind};
use crate::mlir::{new_context, parse_module};
use std::fmt::Write as _;
use std::process::ExitCode;

pub use mck_cli::command_line::kernels::Args;

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let input = args.module.read(&args.input)?;
    if args.module.canon.input_format.is_hlo(&input.bytes) {
        // Checks that it is one; HLO custom calls are keyed as they are.
        canonical_hlo(&input, &args.module.canon)?;
        let text: &[u8] = if args.json {
            b"[]\n"
        } else {
            b"no kernels: HLO input (custom-call payloads are keyed as they are)\n"
        };
        output::stdout(text)?;
        return Ok(ExitCode::SUCCESS);
    }
    let context = new_context();
    let module = parse_module(&context, &input.bytes, &input.name).map_err(CliError::input)?;
    let canonical = CanonicalModule::from_owned(module, &args.module.canon.options())?;
    let kernels = &canonical.report().kernels;
    let text = if args.json {
        let mut text = serde_json::to_string_pretty(kernels).map_err(CliError::other)?;
        text.push('\n');
        text
    } else {
        table(kernels)
    };
    output::stdout(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

fn table(kernels: &[crate::canon::KernelReport]) -> String {
    let mut out = String::new();
    if kernels.is_empty() {
        out.push_str("no embedded kernels\n");
        return out;
    }
    let _ = writeln!(
        out,
        "{:<6} {:<9} {:<7} {:<16} {:>9}  action",
        "call", "kind", "version", "producer", "bytes"
    );
    for k in kernels {
        let kind = match k.kind {
            KernelKind::Mosaic => "mosaic",
            KernelKind::Triton => "triton",
        };
        let (version, producer, size) = match &k.payload {
            Some(p) => (
                p.version.to_string(),
                p.producer.clone(),
                p.size.to_string(),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let action = match &k.action {
            KernelAction::DroppedDebugLocations => {
                "dropped debug_locations (body untouched)".to_string()
            }
            KernelAction::Stripped { method } => format!("stripped ({method:?})").to_lowercase(),
            KernelAction::LeftAsIs { reason } => format!("left as is: {reason}"),
        };
        let _ = writeln!(
            out,
            "#{:<5} {:<9} {:<7} {:<16} {:>9}  {}",
            k.custom_call, kind, version, producer, size, action
        );
        let _ = writeln!(out, "       operation #{} at {}", k.operation, k.location);
    }
    out
}
