//! Compile options (key entry 5): JAX parity of the normalization, synthetic
//! cases, hostile bytes, and the readable text and diff used to explain misses.

#[path = "compile_options/common.rs"]
mod common;

#[path = "compile_options/bad_input.rs"]
mod bad_input;
#[path = "compile_options/parity.rs"]
mod parity;
#[path = "compile_options/synthetic.rs"]
mod synthetic;
#[path = "compile_options/text_and_diff.rs"]
mod text_and_diff;
