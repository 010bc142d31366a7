//! The integration tests of `mck-key`, one binary: each file under `tests/` is a module.

mod compile_options;
mod key_parity;
