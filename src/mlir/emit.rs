//! Bytecode emission with a pinned version and a fixed producer string.

use super::ffi;
use melior::ir::operation::OperationRef;
use mlir_sys::{MlirOperation, MlirStringRef};
use std::ffi::c_void;

/// The bytecode version of canonical output: MLIR 22's current version.
/// Pinned so that a newer MLIR's default cannot silently change every key.
pub const BYTECODE_VERSION: i64 = 6;

/// The producer string of canonical output (defined MLIR-free, so `--version` needs no MLIR).
pub const PRODUCER: &str = mck_key::CANONICAL_PRODUCER;

#[derive(Debug, thiserror::Error)]
#[error("cannot write MLIR bytecode version {version} with producer {producer:?}")]
pub struct EmitError {
    pub version: i64,
    pub producer: String,
}

/// Writes `op` as canonical bytecode, passing the bytes to `sink` in chunks.
pub fn write_bytecode(
    op: OperationRef<'_, '_>,
    sink: &mut dyn FnMut(&[u8]),
) -> Result<(), EmitError> {
    write_bytecode_with(op.to_raw(), BYTECODE_VERSION, PRODUCER, sink)
}

/// Writes `op` with an explicit version and producer (embedded kernels keep
/// their own).
pub fn write_bytecode_with(
    op: MlirOperation,
    version: i64,
    producer: &str,
    sink: &mut dyn FnMut(&[u8]),
) -> Result<(), EmitError> {
    unsafe extern "C" fn forward(chunk: MlirStringRef, data: *mut c_void) {
        // SAFETY: `data` is the `&mut &mut dyn FnMut` passed below, alive for
        // the whole call; `chunk` points at `length` bytes owned by the writer.
        unsafe {
            let sink = &mut *(data as *mut &mut dyn FnMut(&[u8]));
            if chunk.length > 0 {
                sink(std::slice::from_raw_parts(
                    chunk.data.cast::<u8>(),
                    chunk.length,
                ));
            }
        }
    }
    let mut sink = sink;
    let producer_ref = MlirStringRef {
        data: producer.as_ptr().cast(),
        length: producer.len(),
    };
    // SAFETY: `op` is a live operation owned by the caller; the callback and
    // its data outlive the call.
    let result = unsafe {
        ffi::mckWriteBytecode(
            op,
            version,
            producer_ref,
            Some(forward),
            (&mut sink as *mut &mut dyn FnMut(&[u8])).cast(),
        )
    };
    if result.value == 0 {
        return Err(EmitError {
            version,
            producer: producer.to_string(),
        });
    }
    Ok(())
}
