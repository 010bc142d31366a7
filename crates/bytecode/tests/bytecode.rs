//! The dialect-free bytecode stripper on real kernels (Mosaic v0, Triton v6),
//! synthetic payloads of every version, property tests, malformed input and
//! the validation that runs before MLIR reads a payload.

#[path = "bytecode/common.rs"]
mod common;

#[path = "bytecode/corpus.rs"]
mod corpus;
#[path = "bytecode/differences.rs"]
mod differences;
#[path = "bytecode/listing.rs"]
mod listing;
#[path = "bytecode/malformed.rs"]
mod malformed;
#[path = "bytecode/properties.rs"]
mod properties;
#[path = "bytecode/relocations.rs"]
mod relocations;
#[path = "bytecode/sweep.rs"]
mod sweep;
#[path = "bytecode/synthetic.rs"]
mod synthetic;
#[path = "bytecode/validate.rs"]
mod validate;
