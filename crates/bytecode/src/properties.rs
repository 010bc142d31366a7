//! The properties section (version 5 and later): a count, then size-prefixed
//! blobs. A blob is written by the op's own `writeProperties` in its dialect's
//! encoding, so without the op definitions it cannot be decoded: the stripper
//! keeps every blob byte-identical and treats its bytes as possibly holding
//! attribute, type and string indices.

use std::ops::Range;

use super::error::Result;
use super::reader::Reader;

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
