//! The key: JAX's eight entries fed, in order, into one SHA-256.
//!
//! Every input is passed explicitly ([`KeyInputs`]); nothing is read from the
//! environment here (the CLI gathers `XLA_FLAGS` and friends). One pass
//! computes the key, JAX's 16 trace lines and each entry's readable form, so
//! a miss can be explained from the record alone ([`explain`]).

pub mod compile_options;
mod error;
pub mod explain;
pub mod flags;
mod hash;
mod inputs;
mod record;
pub mod strings;

pub use error::KeyError;
pub use hash::compute;
pub use inputs::{
    Accelerator, CanonicalSource, CompileOptionsInput, Computation, KeyInputs, SourceError,
};
pub use record::{ENTRY_NAMES, EntryRecord, KeyRecord, Readable};
