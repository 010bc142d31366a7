//! Kernels embedded in custom-call attributes.
//!
//! Mosaic TPU kernels are MLIR bytecode, base64 inside the JSON string
//! `backend_config`; Triton GPU kernels are raw MLIR bytecode in the `ir`
//! entry of the `mhlo.backend_config` dictionary. Both are written by the
//! producer's newer MLIR, so stripping them must be lossless or not at all.

mod json;
mod mosaic;
mod payload;
mod triton;

use super::CanonError;
use crate::mlir::ops::OpRef;
use crate::mlir::walk::CustomCall;
use serde::Serialize;

/// Call targets of the custom calls that carry kernels.
const MOSAIC_TARGET: &[u8] = b"tpu_custom_call";
const TRITON_TARGET: &[u8] = b"__gpu$xla.gpu.triton";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KernelKind {
    Mosaic,
    Triton,
}

/// What a kernel's bytecode header says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PayloadInfo {
    pub version: u64,
    pub producer: String,
    pub size: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StripMethod {
    /// Rewritten at the bytecode-container level, without its dialects.
    Container,
    /// Read and rewritten by this MLIR after a byte-exact round trip proved
    /// it reads the payload losslessly.
    Mlir,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum KernelAction {
    /// Mosaic producer default: the `debug_locations` blob was deleted; the
    /// body carries no locations and is left untouched.
    DroppedDebugLocations,
    /// Debug info was stripped from the payload.
    Stripped { method: StripMethod },
    /// The payload was left byte-identical (a possible miss, never a false hit).
    LeftAsIs { reason: String },
}

/// One embedded kernel and what happened to it.
#[derive(Debug, Clone, Serialize)]
pub struct KernelReport {
    /// Index among the module's `stablehlo.custom_call` ops.
    pub custom_call: usize,
    /// Pre-order position among all operations of the module.
    pub operation: usize,
    /// The op's location before stripping.
    pub location: String,
    pub kind: KernelKind,
    pub payload: Option<PayloadInfo>,
    #[serde(flatten)]
    pub action: KernelAction,
}

/// Where a kernel sits, for reports and error messages.
struct Site<'m> {
    op: OpRef<'m>,
    custom_call: usize,
    call: CustomCall<'m>,
    kind: KernelKind,
}

impl Site<'_> {
    fn describe(&self) -> String {
        format!(
            "stablehlo.custom_call #{} ({} kernel, operation #{} in pre-order) at {}",
            self.custom_call,
            match self.kind {
                KernelKind::Mosaic => "Mosaic",
                KernelKind::Triton => "Triton",
            },
            self.call.position,
            shorten(&self.call.location_text(), 160),
        )
    }

    fn error(&self, attribute: &str, reason: impl Into<String>) -> CanonError {
        CanonError::Kernel {
            op: self.describe(),
            attribute: attribute.to_string(),
            reason: reason.into(),
        }
    }

    fn report(&self, payload: Option<PayloadInfo>, action: KernelAction) -> KernelReport {
        if let KernelAction::LeftAsIs { reason } = &action {
            tracing::warn!("{}: kernel left as is: {reason}", self.describe());
        }
        KernelReport {
            custom_call: self.custom_call,
            operation: self.call.position,
            location: self.call.location_text(),
            kind: self.kind,
            payload,
            action,
        }
    }
}

fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// The kernel a custom call carries: its kind and payload bytes (Mosaic's decoded from
/// base64), or `None` for a call without a readable kernel (`why` compares them).
pub(crate) fn payload_of(op: OpRef<'_>) -> Option<(KernelKind, Vec<u8>)> {
    match op.attribute("call_target_name")?.string_bytes()? {
        MOSAIC_TARGET => {
            let text =
                std::str::from_utf8(op.attribute(mosaic::ATTRIBUTE)?.string_bytes()?).ok()?;
            let json: serde_json::Value = serde_json::from_str(text).ok()?;
            let body = json.pointer("/custom_call_config/body")?.as_str()?;
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(body)
                .ok()?;
            Some((KernelKind::Mosaic, bytes))
        }
        TRITON_TARGET => Some((KernelKind::Triton, triton::ir_entry(op)?.to_vec())),
        _ => None,
    }
}

/// Strips every embedded kernel among `custom_calls`, in order.
pub(super) fn strip_all(custom_calls: &[CustomCall<'_>]) -> Result<Vec<KernelReport>, CanonError> {
    let mut reports = Vec::new();
    for (index, &call) in custom_calls.iter().enumerate() {
        let target = call
            .op
            .attribute("call_target_name")
            .and_then(|a| a.string_bytes());
        let kind = match target {
            Some(MOSAIC_TARGET) => KernelKind::Mosaic,
            Some(TRITON_TARGET) => KernelKind::Triton,
            _ => continue,
        };
        let site = Site {
            op: call.op,
            custom_call: index,
            call,
            kind,
        };
        reports.push(match kind {
            KernelKind::Mosaic => mosaic::strip(&site)?,
            KernelKind::Triton => triton::strip(&site),
        });
    }
    Ok(reports)
}
