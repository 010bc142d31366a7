//! The `mlir-opt` pass plugin: `mlirGetPassPluginInfo` and the pass bodies.
//!
//! The symbol is defined in Rust because rustc's cdylib export list hides C++
//! symbols. The passes are declared in the C++ shim; their bodies call the
//! library's one canonicalizer. A panic in a body becomes a pass failure with a
//! diagnostic: it must never unwind into mlir-opt's C++ frames.

use crate::canon::{self, KernelMode, Options};
use crate::mlir::ffi::{self, MckPassOptions};
use crate::mlir::ops::OpRef;
use mlir_sys::{MlirLocation, MlirLogicalResult, MlirOperation};
use std::ffi::{CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// mlir-opt's `PassPluginLibraryInfo` (mlir/Tools/Plugins/PassPlugin.h).
#[repr(C)]
pub struct PassPluginLibraryInfo {
    api_version: u32,
    plugin_name: *const c_char,
    plugin_version: *const c_char,
    register_pass_registry_callbacks: extern "C" fn(),
}

const MLIR_PLUGIN_API_VERSION: u32 = 1;

extern "C" fn register() {
    // SAFETY: registers two pass constructors with MLIR's global registry.
    unsafe { ffi::mckRegisterPasses(Some(canonicalize_pass), Some(digest_pass)) }
}

/// The entry point mlir-opt's `--load-pass-plugin` looks up.
#[unsafe(no_mangle)]
pub extern "C" fn mlirGetPassPluginInfo() -> PassPluginLibraryInfo {
    PassPluginLibraryInfo {
        api_version: MLIR_PLUGIN_API_VERSION,
        plugin_name: c"mlir-cache-key".as_ptr(),
        plugin_version: concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast(),
        register_pass_registry_callbacks: register,
    }
}

/// # Safety
/// `raw` points to a live options struct.
unsafe fn options_from(raw: *const MckPassOptions) -> Options {
    // SAFETY: the caller's contract.
    let raw = unsafe { *raw };
    Options {
        keep_locations: raw.keepLocations,
        ignore_custom_partitioning: raw.ignoreCustomPartitioning,
        kernels: if raw.stripKernels {
            KernelMode::Strip
        } else {
            KernelMode::Keep
        },
        canonical_symbols: raw.canonicalSymbols,
    }
}

fn result(ok: bool) -> MlirLogicalResult {
    MlirLogicalResult {
        value: i8::from(ok),
    }
}

/// Reports `message` as an error diagnostic at `location` (the module's, taken
/// before canonicalization stripped it), as mlir-opt shows them.
///
/// # Safety
/// `location` belongs to a live context.
unsafe fn emit_error(location: MlirLocation, message: &str) {
    let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    // SAFETY: live location; MLIR copies the message.
    unsafe { mlir_sys::mlirEmitError(location, message.as_ptr()) }
}

/// Runs a pass body, turning a panic into a failed pass with an error on `op`.
///
/// # Safety
/// `op` is a live operation for the call.
unsafe fn guarded(
    op: MlirOperation,
    pass: &str,
    body: impl FnOnce() -> MlirLogicalResult,
) -> MlirLogicalResult {
    // SAFETY: live operation (the caller's contract).
    let location = unsafe { mlir_sys::mlirOperationGetLocation(op) };
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            // SAFETY: the location of the pass's live module.
            unsafe { emit_error(location, &format!("{pass}: internal error: {what}")) };
            result(false)
        }
    }
}

unsafe extern "C" fn canonicalize_pass(
    op: MlirOperation,
    options: *const MckPassOptions,
) -> MlirLogicalResult {
    // SAFETY: the shim passes mlir-opt's live module and options for the call.
    unsafe {
        guarded(op, "cache-key-canonicalize", || {
            canonicalize_body(op, options)
        })
    }
}

unsafe extern "C" fn digest_pass(
    op: MlirOperation,
    options: *const MckPassOptions,
) -> MlirLogicalResult {
    // SAFETY: as above.
    unsafe { guarded(op, "cache-key-digest", || digest_body(op, options)) }
}

/// # Safety
/// `op` is a live module operation and `options` a live struct, both for the call.
unsafe fn canonicalize_body(
    op: MlirOperation,
    options: *const MckPassOptions,
) -> MlirLogicalResult {
    // SAFETY: the caller's contract.
    let options = unsafe { options_from(options) };
    // SAFETY: mlir-opt owns the module for the duration of the pass.
    let module = unsafe { OpRef::from_raw(op) };
    // SAFETY: live module; taken before its location is stripped.
    let location = unsafe { mlir_sys::mlirOperationGetLocation(op) };
    match canon::canonicalize_in_place(module, &options) {
        Ok(_) => result(true),
        Err(e) => {
            // SAFETY: live context.
            unsafe { emit_error(location, &format!("cache-key-canonicalize: {e}")) };
            result(false)
        }
    }
}

/// # Safety
/// As [`canonicalize_body`].
unsafe fn digest_body(op: MlirOperation, options: *const MckPassOptions) -> MlirLogicalResult {
    // SAFETY: the caller's contract.
    let options = unsafe { options_from(options) };
    // SAFETY: as above; canonicalized in place and put back before the digest is attached.
    let digest = unsafe {
        let mut module = melior::ir::Module::from_raw(mlir_sys::mlirModuleFromOperation(op));
        let digest =
            canon::CanonicalModule::of(&mut module, &options).and_then(|c| Ok(c.digest()?));
        // The module belongs to mlir-opt: do not let the wrapper destroy it.
        std::mem::forget(module);
        digest
    };
    match digest {
        Ok(digest) => {
            // SAFETY: live module op of mlir-opt's context.
            let module = unsafe { OpRef::from_raw(op) };
            module.set_attribute(
                "cache_key.digest",
                module.string_attribute(hex::encode(digest).as_bytes()),
            );
            result(true)
        }
        Err(e) => {
            // SAFETY: live module, put back as it was (its location too).
            unsafe {
                emit_error(
                    mlir_sys::mlirOperationGetLocation(op),
                    &format!("cache-key-digest: {e}"),
                )
            };
            result(false)
        }
    }
}
