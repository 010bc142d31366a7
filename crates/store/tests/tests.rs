//! The integration tests of `mck-store`, one binary: each file under `tests/` is a module, and
//! the helpers they share (`tests/store/common.rs`) are declared once, here.

#[path = "store/common.rs"]
mod common;

mod store_api;
mod store_history;
mod store_processes;
mod store_suspect;
mod store_torn;
