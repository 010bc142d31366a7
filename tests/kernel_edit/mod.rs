//! Editing the Mosaic kernel inside a corpus module, shared by the kernel
//! tests (`canon_kernels.rs`, `kernel_counts.rs`).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

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
