//! Compiling through the cache, as a library: what `mlir-cache-key exec` does, for any caller.
//!
//! - [`ExecRequest`]: the compiler command, its input and output files, and what else may change
//!   its output (environment variables, platform, a user hook);
//! - [`exec_key`]: the key of a compilation: the canonical module (any [`mck_key::Computation`]),
//!   the compiler's binary digest, its arguments with the input/output paths as placeholders,
//!   and the compiler-relevant environment;
//! - [`run`]: replay a hit or a remembered failure, or compile once per key across processes
//!   ([`mck_remote::Tiered::compile_once`]) and store the result; at an address, compare
//!   fingerprints and record the run ([`AtAddress`]);
//! - [`direct_key`], [`run_direct`], [`remember_direct`]: direct mode, a manifest from the raw
//!   input to the canonical key, so a hit on unchanged bytes needs no parse;
//! - [`compiler`]: finding, hashing and running the compiler;
//! - [`audit`]: hit audits for every caller (the CLI, the settings, the Python extension): the
//!   rate's check, the sampling, the verdict and the outcomes' names; exec's audit of a hit, a
//!   false hit explained from the [`fingerprint`] of what the key leaves out, recorded with each
//!   entry.
//!
//! No MLIR: the caller canonicalizes the module (the CLI with MLIR 22, Python with jaxlib's).

pub mod audit;
pub mod compiler;
pub mod compiler_check;
mod direct;
mod error;
pub mod explain;
pub mod fingerprint;
mod key;
mod request;
mod run;
mod site;

pub use compiler::Outcome;
pub use direct::{remember_direct, run_direct};
pub use error::ExecError;
pub use key::{DIRECT_NAME, direct_key, exec_key};
pub use request::{AtAddress, ExecRequest};
pub use run::{Finished, run, run_uncached, run_with_text};
pub use site::ConflictReport;
