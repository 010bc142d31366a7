//! Stable, explainable compilation-cache keys for MLIR programs, and the
//! persistent cache that uses them.
//!
//! The pipeline is visible in the modules: [`canon`] turns a module into
//! canonical bytecode, [`key`] hashes it with the compiler's other inputs
//! into a JAX-compatible key, and [`store`] keeps compiled artefacts under
//! that key.

pub mod canon;
pub mod cli;
pub mod mlir;
mod plugin;

// The MLIR-free crates, under the names the pipeline uses.
pub use mck_bytecode as bytecode;
pub use mck_exec as exec;
pub use mck_hlo as hlo;
pub use mck_key as key;
pub use mck_remote as remote;
pub use mck_runs as runs;
pub use mck_store as store;

pub use canon::{CanonError, CanonicalModule, KernelMode, Options, canonicalize, module_name};
