//! Stripping one kernel payload (MLIR bytecode) under the lossless rule.
//!
//! First the dialect-free container rewriter ([`crate::bytecode`]), which
//! needs no dialect and changes only debug info. When it cannot prove a
//! rewrite lossless, this MLIR is tried, but only if a byte-exact round trip
//! (read, then write with the payload's own version and producer) reproduces
//! the input, proving it read every byte. Otherwise the payload is left as is
//! and the reasons are reported: a possible miss, never a false hit.

use super::{PayloadInfo, StripMethod};
use crate::bytecode::{self, StripOutput};
use crate::mlir::ops::OpRef;
use crate::mlir::walk::{WalkMode, walk};
use crate::mlir::{self, parse_module};
use melior::ContextRef;

pub(super) enum Outcome {
    Stripped(Vec<u8>, StripMethod),
    LeftAsIs(String),
}

const MAGIC: &[u8] = b"ML\xefR";

/// Version and producer from a bytecode header, or `None` if `bytes` does not
/// start like MLIR bytecode.
pub(super) fn info(bytes: &[u8]) -> Option<PayloadInfo> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let (version, used) = bytecode::varint::decode(rest)?;
    let rest = &rest[used..];
    let end = rest.iter().position(|&b| b == 0)?;
    Some(PayloadInfo {
        version,
        producer: String::from_utf8_lossy(&rest[..end]).into_owned(),
        size: bytes.len(),
    })
}

pub(super) fn strip(anchor: OpRef<'_>, bytes: &[u8], info: &PayloadInfo) -> Outcome {
    let container_reason = match bytecode::strip_locations(bytes) {
        Ok(report) => match report.output {
            StripOutput::Stripped(stripped) => {
                return Outcome::Stripped(stripped, StripMethod::Container);
            }
            StripOutput::Unchanged { reason } => reason,
        },
        Err(e) => format!("malformed bytecode: {e}"),
    };
    match strip_with_mlir(anchor, bytes, info) {
        Ok(stripped) => Outcome::Stripped(stripped, StripMethod::Mlir),
        Err(mlir_reason) => Outcome::LeftAsIs(format!(
            "container rewrite: {container_reason}; MLIR 22: {mlir_reason}"
        )),
    }
}

fn strip_with_mlir(anchor: OpRef<'_>, bytes: &[u8], info: &PayloadInfo) -> Result<Vec<u8>, String> {
    let version = i64::try_from(info.version)
        .map_err(|_| format!("version {} is out of range", info.version))?;
    // SAFETY: the anchor's context outlives this call.
    let context =
        unsafe { ContextRef::from_raw(mlir_sys::mlirOperationGetContext(anchor.to_raw())) };
    // SAFETY: as above.
    let context = unsafe { context.to_ref() };
    let module = parse_module(context, bytes, "kernel").map_err(|e| {
        let first = e.diagnostics.lines().next().unwrap_or("").trim();
        format!(
            "cannot read it ({})",
            first.trim_start_matches("kernel:0:0: error: ")
        )
    })?;
    let write = || {
        let mut out = Vec::with_capacity(bytes.len());
        mlir::write_bytecode_with(
            module.as_operation().to_raw(),
            version,
            &info.producer,
            &mut |chunk| out.extend_from_slice(chunk),
        )
        .map(|()| out)
        .map_err(|e| format!("cannot write it back: {e}"))
    };
    if write()? != bytes {
        return Err("reads it, but not losslessly (writing it back changes its bytes)".into());
    }
    // SAFETY: the module is live and owned here.
    let kernel = unsafe { OpRef::from_raw(module.as_operation().to_raw()) };
    // The walk's strip-debuginfo; nothing to find or put back in a kernel.
    let mode = WalkMode {
        strip_locations: true,
        save: false,
    };
    drop(walk(kernel, mode));
    write()
}
