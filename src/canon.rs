//! Canonicalization: a module in, stable bytecode out.
//!
//! Steps, with results equal to JAX's order (clone, strip-debuginfo, Mosaic
//! kernels, Triton kernels, unstable pointers, bytecode), then, opt-in and not
//! JAX-compatible, canonical private symbols: kernels are handled
//! before strip-debuginfo only so that errors can still name the op's source
//! location; the two touch disjoint parts of the IR (attributes vs locations),
//! so the order does not change the output.

mod error;
pub mod kernels;
mod options;
mod partitioning;
mod symbols;
pub mod timings;

pub use error::CanonError;
pub use kernels::{KernelAction, KernelKind, KernelReport, PayloadInfo};
pub use options::{KernelMode, Options};
pub use symbols::Renaming;

use crate::mlir::ops::OpRef;
use crate::mlir::{self, EmitError};
use melior::ir::{Module, Operation};
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};

/// What canonicalization did, for `kernels` listings and diagnostics.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Report {
    pub kernels: Vec<KernelReport>,
    /// How many `CustomSPMDPartitioning` pointers became `"REMOVED"`.
    pub custom_partitioning_removed: usize,
    /// What `canonical_symbols` did (`None` when it was off).
    pub private_symbols: Option<Renaming>,
}

/// A canonicalized module, owned, ready to be written or hashed.
pub struct CanonicalModule<'c> {
    module: Module<'c>,
    report: Report,
    /// Locations were kept (`keep_locations`): they are part of the canonical
    /// bytes, so the text shows them too.
    locations: bool,
}

impl<'c> CanonicalModule<'c> {
    /// Canonicalizes a clone of `module`; the caller's module is not touched.
    pub fn of(module: &Module<'c>, options: &Options) -> Result<Self, CanonError> {
        Self::from_owned(clone_module(module)?, options)
    }

    /// Canonicalizes `module` in place (CLI: it owns the module it parsed).
    pub fn from_owned(module: Module<'c>, options: &Options) -> Result<Self, CanonError> {
        // SAFETY: the module outlives the handle used during this call.
        let op = unsafe { OpRef::from_raw(module.as_operation().to_raw()) };
        let report = canonicalize_in_place(op, options)?;
        Ok(Self {
            module,
            report,
            locations: options.keep_locations,
        })
    }

    pub fn report(&self) -> &Report {
        &self.report
    }

    pub fn module(&self) -> &Module<'c> {
        &self.module
    }

    /// Streams the canonical bytecode into `sink`, chunk by chunk.
    pub fn write(&self, sink: &mut dyn FnMut(&[u8])) -> Result<(), EmitError> {
        mlir::write_bytecode(self.module.as_operation(), sink)
    }

    pub fn to_bytes(&self) -> Result<Vec<u8>, EmitError> {
        let mut bytes = Vec::new();
        self.write(&mut |chunk| bytes.extend_from_slice(chunk))?;
        Ok(bytes)
    }

    /// SHA-256 of the canonical bytecode, hashed as it is written.
    pub fn digest(&self) -> Result<[u8; 32], EmitError> {
        let mut hasher = Sha256::new();
        self.write(&mut |chunk| hasher.update(chunk))?;
        Ok(hasher.finalize().into())
    }

    /// The canonical module as MLIR text (generic form for every op, so it
    /// reads back the same in any MLIR). When locations were kept they are in
    /// the canonical bytes, so the text prints them too, inline after each
    /// operation and block argument; otherwise it is location-free.
    pub fn text(&self) -> String {
        mlir::ops::print_operation(self.module.as_operation(), true, self.locations)
    }
}

/// The key library hashes the canonical bytes as MLIR writes them.
impl crate::key::CanonicalSource for CanonicalModule<'_> {
    fn write_to(&self, sink: &mut dyn FnMut(&[u8])) -> Result<(), crate::key::SourceError> {
        Ok(self.write(sink)?)
    }
    fn text(&self) -> String {
        CanonicalModule::text(self)
    }
}

/// The canonical bytecode of `module`, which is left untouched.
pub fn canonicalize(module: &Module, options: &Options) -> Result<Vec<u8>, CanonError> {
    Ok(CanonicalModule::of(module, options)?.to_bytes()?)
}

/// The module's `sym_name`, the human prefix of its key (`jit_mlp`).
pub fn module_name(module: &Module) -> Option<String> {
    // SAFETY: the handle does not outlive the borrow of `module`.
    let op = unsafe { OpRef::from_raw(module.as_operation().to_raw()) };
    let name = op.attribute("sym_name")?.string_bytes()?;
    Some(String::from_utf8_lossy(name).into_owned())
}

/// Canonicalizes the module `op` in place: the library's one implementation,
/// shared by the CLI, the clone path and the pass plugin.
pub(crate) fn canonicalize_in_place(
    op: OpRef<'_>,
    options: &Options,
) -> Result<Report, CanonError> {
    canonicalize_steps(op, options, &mut StepTimes::default())
}

/// Time spent in the in-place steps (`canon --timings`).
#[derive(Debug, Default)]
struct StepTimes {
    /// The op walk and the kernel stripping.
    kernels: Duration,
    strip_debuginfo: Duration,
}

/// [`canonicalize_in_place`], recording how long its steps took.
fn canonicalize_steps(
    op: OpRef<'_>,
    options: &Options,
    times: &mut StepTimes,
) -> Result<Report, CanonError> {
    let start = Instant::now();
    let custom_calls = op.collect_named("stablehlo.custom_call");
    let mut report = Report::default();
    if !options.keep_locations {
        if options.kernels == KernelMode::Strip {
            report.kernels = kernels::strip_all(&custom_calls)?;
        }
        times.kernels = start.elapsed();
        let start = Instant::now();
        strip_debug_info(op)?;
        times.strip_debuginfo = start.elapsed();
    } else {
        times.kernels = start.elapsed();
    }
    if options.ignore_custom_partitioning {
        report.custom_partitioning_removed = partitioning::neutralise(&custom_calls);
    }
    if options.canonical_symbols {
        report.private_symbols = Some(symbols::canonicalize(op)?);
    }
    Ok(report)
}

/// A deep copy of `module`, owned by the caller.
fn clone_module<'c>(module: &Module<'c>) -> Result<Module<'c>, CanonError> {
    // SAFETY: the clone is a new top-level operation that we own; it is a
    // builtin.module because `module` is.
    let clone = unsafe {
        Operation::from_raw(mlir_sys::mlirOperationClone(module.as_operation().to_raw()))
    };
    Module::from_operation(clone).ok_or(CanonError::NotAModule)
}

/// Runs upstream `strip-debuginfo` on `op`.
fn strip_debug_info(op: OpRef<'_>) -> Result<(), CanonError> {
    // SAFETY: `op` is live for this call.
    let stripped = unsafe { mlir::ffi::mckStripDebugInfo(op.to_raw()) };
    if stripped.value == 0 {
        return Err(CanonError::StripDebugInfo);
    }
    Ok(())
}
