//! Stable, explainable compilation-cache keys for MLIR programs, and the
//! persistent cache that uses them.
//!
//! The pipeline is visible in the modules: [`canon`] turns a module into
//! canonical bytecode, [`key`] hashes it with the compiler's other inputs
//! into a JAX-compatible key, and [`store`] keeps compiled artefacts under
//! that key.

pub mod bytecode;
pub mod canon;
pub mod cli;
pub mod key;
pub mod mlir;
mod plugin;
pub mod store;

pub use canon::{CanonError, CanonicalModule, KernelMode, Options, canonicalize, module_name};
