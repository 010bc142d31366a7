//! Compile options (key entry 5): JAX parity of the normalization, synthetic
//! cases, hostile bytes, and the readable text and diff used to explain misses.

mod common;

mod bad_input;
mod parity;
mod synthetic;
mod text_and_diff;
