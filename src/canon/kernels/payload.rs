//! Stripping one kernel payload (MLIR bytecode) under the lossless rule.
//!
//! This MLIR is used only when a byte-exact round trip (read, then write with
//! the payload's own version and producer) reproduces the input: then it
//! provably read every byte. Otherwise (unknown attribute codes, properties of
//! dialects we lack) the payload is left as is and the reason is reported.

use super::StripMethod;
use crate::mlir::ops::OpRef;
use crate::mlir::{self, parse_module};
use melior::ContextRef;

pub(super) enum Outcome {
    Stripped(Vec<u8>, StripMethod),
    LeftAsIs(String),
}

/// Version and producer from a bytecode header, or `None` if `bytes` is not
/// MLIR bytecode.
pub(super) fn info(bytes: &[u8]) -> Option<super::PayloadInfo> {
    let rest = bytes.strip_prefix(b"ML\xefR")?;
    let (version, used) = read_varint(rest)?;
    let rest = &rest[used..];
    let end = rest.iter().position(|&b| b == 0)?;
    Some(super::PayloadInfo {
        version,
        producer: String::from_utf8_lossy(&rest[..end]).into_owned(),
        size: bytes.len(),
    })
}

/// MLIR's prefix varint: the first byte's trailing zeros count the extra bytes.
fn read_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let first = *bytes.first()?;
    if first == 0 {
        let word: [u8; 8] = bytes.get(1..9)?.try_into().ok()?;
        return Some((u64::from_le_bytes(word), 9));
    }
    let extra = first.trailing_zeros() as usize;
    let mut word = [0u8; 8];
    word[..=extra].copy_from_slice(bytes.get(..=extra)?);
    Some((u64::from_le_bytes(word) >> (extra + 1), extra + 1))
}

pub(super) fn strip(anchor: OpRef<'_>, bytes: &[u8]) -> Outcome {
    let Some(info) = info(bytes) else {
        return Outcome::LeftAsIs("not MLIR bytecode".to_string());
    };
    strip_with_mlir(anchor, bytes, &info)
}

fn strip_with_mlir(anchor: OpRef<'_>, bytes: &[u8], info: &super::PayloadInfo) -> Outcome {
    let left = |reason: String| Outcome::LeftAsIs(reason);
    let Ok(version) = i64::try_from(info.version) else {
        return left(format!("bytecode version {} is out of range", info.version));
    };
    // SAFETY: the anchor's context outlives this call.
    let context =
        unsafe { ContextRef::from_raw(mlir_sys::mlirOperationGetContext(anchor.to_raw())) };
    // SAFETY: as above.
    let context = unsafe { context.to_ref() };
    let module = match parse_module(context, bytes, "kernel") {
        Ok(module) => module,
        Err(e) => {
            let first = e.diagnostics.lines().next().unwrap_or("").trim();
            return left(format!("MLIR 22 cannot read it ({first})"));
        }
    };
    let write = |producer: &str| {
        let mut out = Vec::with_capacity(bytes.len());
        mlir::write_bytecode_with(
            module.as_operation().to_raw(),
            version,
            producer,
            &mut |chunk| out.extend_from_slice(chunk),
        )
        .map(|()| out)
    };
    match write(&info.producer) {
        Ok(round_trip) if round_trip == bytes => {}
        Ok(_) => {
            return left(
                "MLIR 22 reads it, but not losslessly (writing it back changes its bytes)"
                    .to_string(),
            );
        }
        Err(e) => return left(format!("MLIR 22 cannot write it back: {e}")),
    }
    // SAFETY: the module is live and owned here.
    if unsafe { mlir::ffi::mckStripDebugInfo(module.as_operation().to_raw()) }.value == 0 {
        return left("strip-debuginfo failed on the kernel".to_string());
    }
    match write(&info.producer) {
        Ok(stripped) => Outcome::Stripped(stripped, StripMethod::Mlir),
        Err(e) => left(format!("MLIR 22 cannot write it back: {e}")),
    }
}
