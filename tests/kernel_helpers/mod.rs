//! Helpers of the kernel tests (`canon_kernels.rs`, `kernel_counts.rs`):
//! canonicalizing a module with its kernel report, and editing the Mosaic
//! kernel inside a corpus module.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mlir_cache_key::canon::{CanonicalModule, KernelAction, Options};
use mlir_cache_key::mlir::{new_context, parse_module};

/// The canonical digest (hex), what happened to each kernel, and the
/// canonical text of `source`.
pub fn canonical(source: &[u8]) -> (String, Vec<KernelAction>, String) {
    let context = new_context();
    let mut module = parse_module(&context, source, "test").expect("parse");
    let canonical = CanonicalModule::of(&mut module, &Options::default()).expect("canonicalize");
    let actions = canonical
        .report()
        .kernels
        .iter()
        .map(|k| k.action.clone())
        .collect();
    (
        hex::encode(canonical.digest().expect("digest")),
        actions,
        canonical.text(),
    )
}

/// Replaces the base64 Mosaic body of `module` by `edit(body)`.
pub fn edit_mosaic_body(module: &[u8], edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let text = String::from_utf8(module.to_vec()).expect("utf-8");
    let start = text.find("\\22body\\22: \\22").expect("body") + "\\22body\\22: \\22".len();
    let end = start + text[start..].find("\\22").expect("end of body");
    let mut body = STANDARD.decode(&text[start..end]).expect("base64");
    edit(&mut body);
    format!(
        "{}{}{}",
        &text[..start],
        STANDARD.encode(&body),
        &text[end..]
    )
    .into_bytes()
}
