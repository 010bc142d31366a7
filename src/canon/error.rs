//! Canonicalization errors; each names the operation and attribute at fault.

use crate::mlir::{EmitError, ParseError};

#[derive(Debug, thiserror::Error)]
pub enum CanonError {
    /// A malformed embedded kernel, e.g. `backend_config` that is not JSON.
    #[error("{op}: attribute {attribute}: {reason}")]
    Kernel {
        /// Which op: custom call number, target, pre-order position, location.
        op: String,
        /// The attribute (and JSON field) at fault.
        attribute: String,
        reason: String,
    },
    #[error("renaming private symbols failed: an operation rejected its updated properties")]
    CanonicalSymbols,
    #[error("the top-level operation is not a builtin.module")]
    NotAModule,
    #[error(transparent)]
    Emit(#[from] EmitError),
    #[error(transparent)]
    Parse(#[from] ParseError),
}
