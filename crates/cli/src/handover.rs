//! The hand-over between the two binaries: their names, and the marker the front binary sets
//! when it hands a direct miss to the MLIR binary (which then does not look the manifest up
//! again, nor count a second remote miss). A leaf: it uses nothing else of this crate.

use std::process::Command;
use std::sync::OnceLock;

/// The front binary's file name.
pub const FRONT_BINARY: &str = "mlir-cache-key";
/// The binary that links MLIR and runs every command, installed beside the front one.
pub const MLIR_BINARY: &str = "mlir-cache-key-mlir";
/// The environment variable that carries the marker.
const DIRECT_MISSED: &str = "MLIR_CACHE_KEY_DIRECT_MISSED";

/// The front binary's side: tells the MLIR binary `command` starts that the direct lookup
/// already missed.
pub fn mark_direct_missed(command: &mut Command) {
    command.env(DIRECT_MISSED, "1");
}

static MISSED: OnceLock<bool> = OnceLock::new();

/// The MLIR binary's first step: takes the front binary's marker out of the environment, so
/// the compiler (which may be another mlir-cache-key) does not inherit it.
pub fn take_marker() {
    let missed = std::env::var_os(DIRECT_MISSED).is_some();
    if missed {
        // SAFETY: called first thing in `main`, before this process starts any thread.
        unsafe { std::env::remove_var(DIRECT_MISSED) };
    }
    let _ = MISSED.set(missed);
}

/// Whether the front binary already missed the direct lookup of this exec or wrap.
pub fn direct_already_missed() -> bool {
    MISSED.get().copied().unwrap_or(false)
}
