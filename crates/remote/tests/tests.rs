//! The integration tests of `mck-remote`, one binary: each file under `tests/` is a module.

mod compile_once;
mod remote_parts;
