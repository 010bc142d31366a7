//! The resource sections: the offset section lists groups (external providers,
//! then dialects) of `(key string, size, kind)` entries; the resource section
//! holds their values back to back. The stripper keeps both byte-identical.
//! It reads them for two facts: which strings they use (keys and string
//! values stay alive) and the largest blob alignment, because blobs are padded
//! relative to the start of the file and must stay aligned when the sections
//! before them shrink.

use super::encoding::resource_kind;
use super::error::Result;
use super::reader::{Reader, check_index};
use super::sections::{check_alignment, skip_padding};

/// What the resource sections tell the stripper.
#[derive(Debug, Clone)]
pub struct Resources {
    /// String indices used, with their absolute offsets.
    pub string_refs: Vec<(usize, usize)>,
    /// Largest blob alignment (1 when there are no aligned blobs).
    pub alignment: u64,
}

impl Default for Resources {
    fn default() -> Self {
        Resources {
            string_refs: Vec::new(),
            alignment: 1,
        }
    }
}

impl Resources {
    /// Parses the offset section and the resource section (absolute offsets
    /// `offsets_base` and `data_base`).
    pub fn parse(
        offsets: &[u8],
        offsets_base: usize,
        data: &[u8],
        data_base: usize,
        num_strings: usize,
        num_dialects: usize,
    ) -> Result<Self> {
        let mut out = Resources::default();
        let mut reader = Reader::new(offsets, offsets_base);
        let mut values = Reader::new(data, data_base);
        let external = reader.count("external resource group", 1)?;
        for _ in 0..external {
            let offset = reader.offset();
            let key = reader.index("string", num_strings)?;
            out.string_refs.push((key, offset));
            out.parse_group(&mut reader, &mut values, num_strings)?;
        }
        while !reader.is_empty() {
            reader.index("dialect", num_dialects)?;
            out.parse_group(&mut reader, &mut values, num_strings)?;
        }
        Ok(out)
    }

    fn parse_group(
        &mut self,
        reader: &mut Reader<'_>,
        values: &mut Reader<'_>,
        num_strings: usize,
    ) -> Result<()> {
        let n = reader.count("resource", 1)?;
        for _ in 0..n {
            let offset = reader.offset();
            let key = reader.index("string", num_strings)?;
            self.string_refs.push((key, offset));
            let size = reader.varint("resource size")?;
            let kind_offset = reader.offset();
            let kind = reader.byte("resource kind")?;
            let value_base = values.offset();
            let value = values.bytes(size, "resource value")?;
            if value.is_empty() {
                continue; // a declaration without data
            }
            let mut v = Reader::new(value, value_base);
            match kind {
                resource_kind::BLOB => {
                    let align_offset = v.offset();
                    let alignment = v.varint("resource blob alignment")?;
                    check_alignment(alignment, align_offset)?;
                    let len = v.varint("resource blob size")?;
                    skip_padding(&mut v, alignment)?;
                    v.bytes(len, "resource blob")?;
                    self.alignment = self.alignment.max(alignment);
                }
                resource_kind::BOOL => {
                    v.byte("resource bool")?;
                }
                resource_kind::STRING => {
                    let offset = v.offset();
                    let s = v.varint("resource string")?;
                    self.string_refs
                        .push((check_index("string", s, num_strings, offset)?, offset));
                }
                other => {
                    return Err(super::error::BytecodeError::Malformed {
                        offset: kind_offset,
                        message: format!("unknown resource kind {other}"),
                    });
                }
            }
            if !v.is_empty() {
                return Err(v.malformed("unexpected trailing bytes in a resource value"));
            }
        }
        Ok(())
    }
}
