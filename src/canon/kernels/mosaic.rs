//! Mosaic TPU kernels: `backend_config` is JSON whose `custom_call_config`
//! holds the kernel (`body`, base64 MLIR bytecode) and, in the producer's
//! default mode, its locations in a separate `debug_locations` blob.
//!
//! Malformed configs (not JSON, a key twice in one object, no
//! `custom_call_config` object, `body` missing, not base64 or not bytecode,
//! with or without `debug_locations`) are errors: the compiler could not use
//! them either, and guessing would hide a broken producer.

use super::json;
use super::payload::{self, Outcome};
use super::{KernelAction, KernelReport, Site};
use crate::canon::CanonError;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

pub(super) const ATTRIBUTE: &str = "backend_config";

pub(super) fn strip(site: &Site<'_>) -> Result<KernelReport, CanonError> {
    let text = site
        .op
        .attribute(ATTRIBUTE)
        .ok_or_else(|| site.error(ATTRIBUTE, "missing"))?
        .string_bytes()
        .ok_or_else(|| site.error(ATTRIBUTE, "not a string attribute"))?;
    let text = std::str::from_utf8(text)
        .map_err(|e| site.error(ATTRIBUTE, format!("not UTF-8 JSON: {e}")))?;
    // serde_json keeps key order (preserve_order) and number spellings
    // (arbitrary_precision), so re-serializing loses nothing but whitespace;
    // only a repeated key could be lost, so one is an error.
    let mut json: Value = serde_json::from_str(text)
        .map_err(|e| site.error(ATTRIBUTE, format!("not valid JSON: {e}")))?;
    json::reject_duplicate_keys(text)
        .map_err(|e| site.error(ATTRIBUTE, format!("ambiguous JSON: {e}")))?;
    let config = json
        .get_mut("custom_call_config")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| site.error(ATTRIBUTE, "JSON has no \"custom_call_config\" object"))?;

    // The body is checked whatever happens to it next.
    let field = format!("{ATTRIBUTE} (JSON custom_call_config.body)");
    let body = config
        .get("body")
        .and_then(Value::as_str)
        .ok_or_else(|| site.error(&field, "missing, or not a string"))?;
    let bytes = STANDARD
        .decode(body)
        .map_err(|e| site.error(&field, format!("invalid base64: {e}")))?;
    let info = payload::info(&bytes)
        .ok_or_else(|| site.error(&field, "not MLIR bytecode (no ML\\xEFR header)"))?;

    let action = if config.contains_key("debug_locations") {
        config.shift_remove("debug_locations");
        KernelAction::DroppedDebugLocations
    } else {
        match payload::strip(site.op, &bytes, &info) {
            Outcome::Stripped(stripped, method) => {
                config.insert("body".to_string(), Value::String(STANDARD.encode(stripped)));
                KernelAction::Stripped { method }
            }
            Outcome::LeftAsIs(reason) => KernelAction::LeftAsIs { reason },
        }
    };

    let minified = serde_json::to_string(&json)
        .map_err(|e| site.error(ATTRIBUTE, format!("cannot re-serialize JSON: {e}")))?;
    site.op
        .set_attribute(ATTRIBUTE, site.op.string_attribute(minified.as_bytes()));
    Ok(site.report(Some(info), action))
}
