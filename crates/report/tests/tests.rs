//! The integration tests of `mck-report`, one binary: each file under `tests/` is a module.

mod html_in_chromium;
