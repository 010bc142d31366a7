//! Canonical private symbols (opt-in): private `func.func` symbols renamed in
//! order of first reference from the public ones, every reference updated
//! (the shim does it with MLIR's own attribute replacer).

use super::CanonError;
use crate::mlir::ffi;
use crate::mlir::ops::OpRef;

/// What renaming did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Renaming {
    /// This many private functions were renamed.
    Renamed(usize),
    /// Left as they were: a private name is also used as plain text (a string
    /// or opaque attribute text), which renaming would leave stale.
    NamesUsedAsText,
}

/// Renames the private function symbols of the module `op`.
pub(super) fn canonicalize(op: OpRef<'_>) -> Result<Renaming, CanonError> {
    // SAFETY: `op` is a live module for this call.
    match unsafe { ffi::mckCanonicalizePrivateSymbols(op.to_raw()) } {
        -1 => Ok(Renaming::NamesUsedAsText),
        n if n >= 0 => Ok(Renaming::Renamed(n as usize)),
        _ => Err(CanonError::CanonicalSymbols),
    }
}
