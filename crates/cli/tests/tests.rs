//! The integration tests of `mck-cli`, one binary: each file under `tests/` is a module.

mod docs;
mod import_cycles;
mod test_layout;
