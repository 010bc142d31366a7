//! The MLIR facilities the pipeline needs, behind small safe functions.
//!
//! melior covers most of MLIR's C API; what it lacks (bytecode with a fixed
//! producer, parse diagnostics against the source, raw string attributes that
//! hold bytes rather than UTF-8) goes through the C++ shim or mlir-sys here,
//! so `unsafe` stays in this module.

mod context;
mod emit;
pub(crate) mod ffi;
mod isolate;
pub(crate) mod ops;
pub(crate) mod parse;
pub(crate) mod walk;

pub use context::new_context;
pub use emit::{BYTECODE_VERSION, EmitError, PRODUCER, write_bytecode, write_bytecode_with};
pub use isolate::{Isolation, default_timeout, isolate_bytecode_reads};
pub use parse::{ParseError, parse_module, read_bytecode_child};
pub use walk::walks_on_this_thread;
