//! What a MODULE argument is (MLIR or an XLA HloModuleProto, from its content or
//! `--input-format`), and its canonical form as the key's computation entry.

use super::error::CliError;
use super::input::{self, Input};
use crate::canon::{CanonicalModule, KernelMode, Options, module_name};
use crate::key::{CanonicalSource, Computation, SourceError};
use crate::mlir::{new_context, parse_module};
use anyhow::anyhow;
use std::path::Path;

pub use mck_cli::flags::{CanonFlags, InputFormat, KernelArg, ModuleFlags};

impl From<crate::canon::CanonError> for CliError {
    fn from(e: crate::canon::CanonError) -> Self {
        CliError::input(e)
    }
}

/// How the commands that read one module (`canon`, `kernels`, `key`, `why`) take it in: the
/// canonicalizer's flags and the input's limits.
/// Reading a MODULE argument under its limits (bytecode read by MLIR in a child process).
pub trait ReadModule {
    /// Applies the limits: the size bound and the isolation of bytecode reads.
    fn apply_limits(&self) -> Result<(), CliError>;
    /// Applies the limits, then reads `path` (`-`: stdin).
    fn read(&self, path: &Path) -> Result<Input, CliError>;
}

impl ReadModule for ModuleFlags {
    fn apply_limits(&self) -> Result<(), CliError> {
        super::limits::apply(&self.limits)
    }

    fn read(&self, path: &Path) -> Result<Input, CliError> {
        self.apply_limits()?;
        input::read(path)
    }
}

/// The canonicalizer's options the flags ask for.
pub trait CanonOptions {
    fn options(&self) -> Options;
}

impl CanonOptions for CanonFlags {
    fn options(&self) -> Options {
        Options {
            keep_locations: self.keep_locations,
            ignore_custom_partitioning: self.ignore_custom_partitioning,
            kernels: match self.kernels {
                KernelArg::Strip => KernelMode::Strip,
                KernelArg::Keep => KernelMode::Keep,
            },
            canonical_symbols: self.canonical_symbols,
        }
    }
}

/// The canonical HloModuleProto of an input read as one.
pub fn canonical_hlo(input: &Input, canon: &CanonFlags) -> Result<crate::hlo::Canonical, CliError> {
    // Ids are renumbered: they are names, not semantics (the CLI has no knob to keep them).
    let options = crate::hlo::Options {
        keep_locations: canon.keep_locations,
        keep_ids: false,
    };
    crate::hlo::canonicalize(&input.bytes, &options).map_err(|e| {
        let hint = match canon.input_format {
            InputFormat::Auto => " (read as an HloModuleProto; --input-format mlir reads MLIR)",
            _ => "",
        };
        CliError::input(anyhow!("{}: {e}{hint}", input.name))
    })
}

/// A canonical HloModuleProto as the key's computation: its bytes, and its text view for
/// explaining misses.
pub struct HloSource<'a>(pub &'a crate::hlo::Canonical);

impl CanonicalSource for HloSource<'_> {
    fn write_to(&self, sink: &mut dyn FnMut(&[u8])) -> Result<(), SourceError> {
        sink(&self.0.bytes);
        Ok(())
    }
    fn text(&self) -> String {
        self.0.text()
    }
}

/// Reads and canonicalizes the module at `path` (MLIR or HLO) and hands `f` its name (the
/// override, else MLIR's `sym_name` or the HloModuleProto's `name`) and its computation.
pub fn with_computation<R>(
    path: &Path,
    canon: &CanonFlags,
    name_override: Option<String>,
    record_text: bool,
    f: impl FnOnce(String, Computation<'_>) -> Result<R, CliError>,
) -> Result<R, CliError> {
    with_computation_of(input::read(path)?, canon, name_override, record_text, f)
}

/// As [`with_computation`], for an input already read.
pub fn with_computation_of<R>(
    input: Input,
    canon: &CanonFlags,
    name_override: Option<String>,
    record_text: bool,
    f: impl FnOnce(String, Computation<'_>) -> Result<R, CliError>,
) -> Result<R, CliError> {
    let missing_name = |what: &str| {
        CliError::input(anyhow!(
            "{}: the module has no {what} to name its key; pass --module-name",
            input.name
        ))
    };
    if canon.input_format.is_hlo(&input.bytes) {
        let canonical = canonical_hlo(&input, canon)?;
        let name = match name_override {
            Some(name) => name,
            None if !canonical.name.is_empty() => canonical.name.clone(),
            None => return Err(missing_name("name")),
        };
        let source = HloSource(&canonical);
        return f(
            name,
            Computation::Module {
                module: &source,
                record_text,
            },
        );
    }
    let context = new_context();
    let module = parse_module(&context, &input.bytes, &input.name).map_err(CliError::input)?;
    let name = match name_override.or_else(|| module_name(&module)) {
        Some(name) => name,
        None => return Err(missing_name("sym_name")),
    };
    let canonical = CanonicalModule::from_owned(module, &canon.options())?;
    let result = f(
        name,
        Computation::Module {
            module: &canonical,
            record_text,
        },
    );
    // The command ends with this module: MLIR's teardown of it and of the context would cost
    // about as much as the canonicalization (~100 ms on the 2000-block corpus module).
    canonical.leak();
    std::mem::forget(context);
    result
}
