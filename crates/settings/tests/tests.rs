//! The integration tests of `mck-settings`, one binary: each file under `tests/` is a module.

mod settings;
