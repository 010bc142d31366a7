//! The dialect-free bytecode stripper on real kernels (Mosaic v0, Triton v6),
//! synthetic payloads of every version, property tests, malformed input and
//! the validation that runs before MLIR reads a payload.

mod common;

mod corpus;
mod differences;
mod listing;
mod malformed;
mod properties;
mod relocations;
mod sweep;
mod synthetic;
mod validate;
