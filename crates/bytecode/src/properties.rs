//! The properties section (version 5 and later): a count, then size-prefixed
//! blobs. A blob is written by the op's own `writeProperties` in its dialect's
//! encoding. For the ops in `properties/table.rs` (the dialects of Triton
//! kernels) that encoding is the one mlir-tblgen generates, and `decode` reads
//! it exactly; any other blob cannot be decoded without the op definitions,
//! and the stripper treats its bytes as possibly holding attribute, type and
//! string indices. Every blob stays byte-identical either way.

use std::ops::Range;

use super::error::Result;
use super::reader::Reader;

mod decode;
mod lookup;
#[cfg(test)]
mod oracle;
mod schema;
mod table;

pub use decode::{Attrs, BlobRef};
pub use schema::Kind;

/// Decodes a blob used by the operations named `users` (`dialect.op`): the
/// attribute indices each of them reads (blobs are shared by content, so
/// several ops may read one blob, each by its own schema), or why it cannot be
/// decoded (no user, an op outside the table, or bytes that do not follow an
/// op's schema exactly).
pub fn decode_blob(
    bytes: &[u8],
    base: usize,
    users: &[String],
    version: u64,
    attrs: &Attrs<'_>,
) -> std::result::Result<Vec<BlobRef>, String> {
    if users.is_empty() {
        return Err("no operation uses it".into());
    }
    let mut out = Vec::new();
    for name in users {
        let schema =
            lookup::lookup(name).ok_or_else(|| format!("{name} is not in the property table"))?;
        let refs = decode::decode(bytes, base, schema, version, attrs)
            .map_err(|e| format!("as {name}: {e}"))?;
        out.extend(refs);
    }
    Ok(out)
}

/// The property blobs, as absolute byte ranges of their contents.
#[derive(Debug, Clone, Default)]
pub struct Properties {
    /// Content of each blob (without its size prefix).
    pub blobs: Vec<Range<usize>>,
}

impl Properties {
    /// Parses the section `data` at absolute offset `base`. An empty section
    /// holds no blobs.
    pub fn parse(data: &[u8], base: usize) -> Result<Self> {
        let mut out = Properties::default();
        if data.is_empty() {
            return Ok(out);
        }
        let mut reader = Reader::new(data, base);
        let count = reader.count("properties", 1)?;
        for _ in 0..count {
            let size = reader.varint("properties size")?;
            let start = reader.offset();
            let blob = reader.bytes(size, "properties blob")?;
            out.blobs.push(start..start + blob.len());
        }
        if !reader.is_empty() {
            return Err(reader.malformed(format!(
                "{} trailing bytes after {count} property blobs",
                reader.remaining()
            )));
        }
        Ok(out)
    }
}
