//! The dialect-free bytecode stripper on real kernels (Mosaic v0, Triton v6),
//! synthetic payloads of every version, property tests and malformed input.

#[path = "bytecode/common.rs"]
mod common;

#[path = "bytecode/corpus.rs"]
mod corpus;
#[path = "bytecode/differences.rs"]
mod differences;
#[path = "bytecode/malformed.rs"]
mod malformed;
#[path = "bytecode/properties.rs"]
mod properties;
#[path = "bytecode/sweep.rs"]
mod sweep;
#[path = "bytecode/synthetic.rs"]
mod synthetic;
