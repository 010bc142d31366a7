//! The integration tests of `mck-hlo`, one binary: each file under `tests/` is a module.

mod hlo;
mod ids;
mod wire;
