//! The integration tests of `mck-exec`, one binary: each file under `tests/` is a module.

mod audit_sampling;
mod exec_api;
