//! The key: JAX's eight entries fed, in order, into one SHA-256.
//!
//! Every input is passed explicitly ([`KeyInputs`]); nothing is read from the
//! environment here (the CLI gathers `XLA_FLAGS` and friends). One pass
//! computes the key, JAX's 16 trace lines and each entry's readable form, so
//! a miss can be explained from the record alone ([`explain`]). What differs between JAX
//! releases is one [`JaxRecipe`] per release group, passed to [`compute`].

pub mod compile_options;
mod error;
pub mod explain;
pub mod flags;
mod hash;
mod inputs;
mod recipe;
mod record;
pub mod strings;

/// The producer string of canonical bytecode (written by the root crate's emitter, shown by
/// `--version`): the default embeds the LLVM patch version, which reaches the key through the
/// compiler-version entry instead. Bump the suffix when canonical bytes change.
pub const CANONICAL_PRODUCER: &str = "mlir-cache-key/2";

pub use error::KeyError;
pub use hash::{Detail, compute, compute_with};
pub use inputs::{
    Accelerator, CanonicalSource, CompileOptionsInput, Computation, KeyInputs, SourceError,
};
pub use recipe::{
    AcceleratorHash, CallbackArgument, JaxRecipe, MosaicKernels, RECIPES, UnknownJaxVersion,
};
pub use record::{ENTRY_NAMES, EntryRecord, KeyRecord, Readable};
