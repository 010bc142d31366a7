//! The integration tests of `mck-runs`, one binary: each file under `tests/` is a module.

mod pins;
