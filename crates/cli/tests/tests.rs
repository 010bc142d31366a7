//! The integration tests of `mck-cli`, one binary: each file under `tests/` is a module, and
//! what they share about the workspace (`tests/workspace/`) is declared once, here.

mod workspace;

mod docs;
mod import_cycles;
mod settings_options;
mod test_layout;
