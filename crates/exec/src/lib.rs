//! Compiling through the cache, as a library: what `mlir-cache-key exec` does, for any caller.
//!
//! - [`ExecRequest`]: the compiler command, its input and output files, and what else may change
//!   its output (environment variables, platform, a user hook);
//! - [`exec_key`]: the key of a compilation: the canonical module (any [`mck_key::Computation`]),
//!   the compiler's binary digest, its arguments with the input/output paths as placeholders,
//!   and the compiler-relevant environment;
//! - [`run`]: replay a hit or a remembered failure, or compile once per key across processes
//!   ([`mck_store::Tiered::compile_once`]) and store the result; at an address, compare
//!   fingerprints and record the run ([`AtAddress`]);
//! - [`compiler`]: finding, hashing and running the compiler.
//!
//! No MLIR: the caller canonicalizes the module (the CLI with MLIR 22, Python with jaxlib's).

pub mod compiler;
pub mod compiler_check;
mod error;
mod explain;
mod key;
mod request;
mod run;
mod site;

pub use compiler::Outcome;
pub use error::ExecError;
pub use key::exec_key;
pub use request::{AtAddress, ExecRequest};
pub use run::{Finished, run, run_uncached};
pub use site::ConflictReport;
