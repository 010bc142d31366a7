//! Canonicalization: a module in, stable bytecode out.
//!
//! Steps, with results equal to JAX's order (clone, strip-debuginfo, Mosaic
//! kernels, Triton kernels, unstable pointers, bytecode), then, opt-in and not
//! JAX-compatible, canonical private symbols. One walk over the module
//! (`crate::mlir::walk`) replaces the locations as strip-debuginfo does, finds
//! the custom calls the later steps rewrite, and, for a borrowed module, saves
//! what they change; kernel errors name the op's location as it was before.

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
use crate::mlir::walk::{CustomCall, Snapshot, WalkMode, walk};
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

/// A canonicalized module, ready to be written or hashed: the caller's module
/// canonicalized where it is (put back as it was when this drops), or one this
/// owns.
pub struct CanonicalModule<'m, 'c> {
    module: Held<'m, 'c>,
    report: Report,
    /// Locations were kept (`keep_locations`): they are part of the canonical
    /// bytes, so the text shows them too.
    locations: bool,
}

enum Held<'m, 'c> {
    Owned(Module<'c>),
    /// The snapshot puts the module back when it drops.
    Borrowed {
        module: &'m mut Module<'c>,
        _undo: Snapshot,
    },
}

impl<'m, 'c> CanonicalModule<'m, 'c> {
    /// Canonicalizes the caller's module in place and puts it back exactly as
    /// it was when the result drops: the same IR, locations and attributes
    /// (the cheap equivalent of canonicalizing a clone, which costs a deep
    /// copy and its teardown). With `canonical_symbols`, which renames symbols
    /// throughout, it works on a clone instead.
    pub fn of(module: &'m mut Module<'c>, options: &Options) -> Result<Self, CanonError> {
        if options.canonical_symbols {
            return Self::from_owned(clone_module(module)?, options);
        }
        // SAFETY: the module outlives the handles used during this call.
        let op = unsafe { OpRef::from_raw(module.as_operation().to_raw()) };
        // Taken first, so an error below puts the module back as well.
        let (custom_calls, snapshot) = walk(op, walk_mode(options, true));
        let report = canonicalize_steps(op, &custom_calls, options, &mut StepTimes::default())?;
        Ok(Self {
            module: Held::Borrowed {
                module,
                _undo: snapshot,
            },
            report,
            locations: options.keep_locations,
        })
    }

    /// Canonicalizes `module` in place (CLI: it owns the module it parsed).
    pub fn from_owned(module: Module<'c>, options: &Options) -> Result<Self, CanonError> {
        // SAFETY: the module outlives the handle used during this call.
        let op = unsafe { OpRef::from_raw(module.as_operation().to_raw()) };
        let report = canonicalize_in_place(op, options)?;
        Ok(Self {
            module: Held::Owned(module),
            report,
            locations: options.keep_locations,
        })
    }

    /// Consumes the result without destroying an owned module: for a process
    /// about to exit, MLIR's teardown of a large module costs about as much as
    /// copying it. A borrowed module is put back as usual.
    pub fn leak(self) {
        match self.module {
            Held::Owned(module) => std::mem::forget(module),
            Held::Borrowed { .. } => {}
        }
    }

    pub fn report(&self) -> &Report {
        &self.report
    }

    pub fn module(&self) -> &Module<'c> {
        match &self.module {
            Held::Owned(module) => module,
            Held::Borrowed { module, .. } => module,
        }
    }

    /// Streams the canonical bytecode into `sink`, chunk by chunk.
    pub fn write(&self, sink: &mut dyn FnMut(&[u8])) -> Result<(), EmitError> {
        mlir::write_bytecode(self.module().as_operation(), sink)
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
        mlir::ops::print_operation(self.module().as_operation(), true, self.locations)
    }
}

/// The key library hashes the canonical bytes as MLIR writes them.
impl crate::key::CanonicalSource for CanonicalModule<'_, '_> {
    fn write_to(&self, sink: &mut dyn FnMut(&[u8])) -> Result<(), crate::key::SourceError> {
        Ok(self.write(sink)?)
    }
    fn text(&self) -> String {
        CanonicalModule::text(self)
    }
}

/// The canonical bytecode of `module`, which is left as it was.
pub fn canonicalize(module: &mut Module, options: &Options) -> Result<Vec<u8>, CanonError> {
    Ok(CanonicalModule::of(module, options)?.to_bytes()?)
}

/// The module's `sym_name`, the human prefix of its key (`jit_mlp`).
pub fn module_name(module: &Module) -> Option<String> {
    // SAFETY: the handle does not outlive the borrow of `module`.
    let op = unsafe { OpRef::from_raw(module.as_operation().to_raw()) };
    let name = op.attribute("sym_name")?.string_bytes()?;
    Some(String::from_utf8_lossy(name).into_owned())
}

/// The walk that canonicalization with `options` starts with: it strips the
/// locations unless they are kept, and saves what it changes when `save`
/// (a borrowed module, put back afterwards).
fn walk_mode(options: &Options, save: bool) -> WalkMode {
    WalkMode {
        strip_locations: !options.keep_locations,
        save,
    }
}

/// Canonicalizes the module `op` in place: the library's one implementation,
/// shared by the CLI, the clone path and the pass plugin.
pub(crate) fn canonicalize_in_place(
    op: OpRef<'_>,
    options: &Options,
) -> Result<Report, CanonError> {
    // Nothing saved: this module keeps its canonical form.
    let (custom_calls, _nothing_to_restore) = walk(op, walk_mode(options, false));
    canonicalize_steps(op, &custom_calls, options, &mut StepTimes::default())
}

/// Time spent in the steps after the walk (`canon --timings`).
#[derive(Debug, Default)]
struct StepTimes {
    /// Stripping the embedded kernels.
    kernels: Duration,
}

/// The steps after the walk that found `custom_calls` (and stripped the
/// locations unless they are kept), recording how long they took.
fn canonicalize_steps(
    op: OpRef<'_>,
    custom_calls: &[CustomCall<'_>],
    options: &Options,
    times: &mut StepTimes,
) -> Result<Report, CanonError> {
    let start = Instant::now();
    let mut report = Report::default();
    if !options.keep_locations && options.kernels == KernelMode::Strip {
        report.kernels = kernels::strip_all(custom_calls)?;
    }
    times.kernels = start.elapsed();
    if options.ignore_custom_partitioning {
        report.custom_partitioning_removed = partitioning::neutralize(custom_calls);
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
