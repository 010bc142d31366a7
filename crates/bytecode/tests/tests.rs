//! The integration tests of `mck-bytecode`, one binary: each file under `tests/` is a module.

mod bytecode;
