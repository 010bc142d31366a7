//! The container: magic, version, producer, then sections of
//! `id | 0x80-if-aligned`, a length varint, an optional alignment varint with
//! `0xCB` padding up to that alignment (measured from the start of the file),
//! then the data. Parsing checks every bound; emission recomputes lengths and
//! padding, because the rewrite changes the size of some sections and every
//! aligned section after them moves.

use std::ops::Range;

use super::encoding::{self, section};
use super::error::{BytecodeError, Result};
use super::reader::Reader;
use super::varint;

/// The container-level view of a payload, as returned by [`inspect`](super::inspect).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The four magic bytes (`ML\xEFR`).
    pub magic: [u8; 4],
    /// Bytecode version.
    pub version: u64,
    /// Producer string (lossily decoded as UTF-8).
    pub producer: String,
    /// Length of magic, version and producer (including its NUL).
    pub header_len: usize,
    /// Top-level sections in file order.
    pub sections: Vec<SectionInfo>,
}

/// One top-level section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionInfo {
    /// Section id (without the alignment bit).
    pub id: u8,
    /// Section name, for display.
    pub name: &'static str,
    /// Absolute offset of the id byte.
    pub header_offset: usize,
    /// Absolute offset of the data.
    pub offset: usize,
    /// Length of the data.
    pub len: usize,
    /// Whether the id byte had the alignment bit.
    pub aligned: bool,
    /// The alignment, when `aligned`.
    pub alignment: Option<u64>,
}

impl SectionInfo {
    /// Absolute byte range of the data.
    pub fn range(&self) -> Range<usize> {
        self.offset..self.offset + self.len
    }
}

/// A section header read from `reader`, with its data.
#[derive(Debug, Clone)]
pub struct RawSection<'a> {
    /// Section id (without the alignment bit).
    pub id: u8,
    /// Absolute offset of the id byte.
    pub header_offset: usize,
    /// The alignment, when the id byte had the alignment bit.
    pub alignment: Option<u64>,
    /// Absolute offset of the data.
    pub offset: usize,
    /// The data.
    pub data: &'a [u8],
}

/// Reads one section (top-level or nested) at the reader's position.
/// Padding is checked against absolute offsets, as the upstream reader aligns
/// real addresses of a buffer that starts aligned.
pub fn read_section<'a>(reader: &mut Reader<'a>) -> Result<RawSection<'a>> {
    let header_offset = reader.offset();
    let id_byte = reader.byte("section id")?;
    let id = id_byte & !encoding::SECTION_ALIGNED_FLAG;
    if id >= section::COUNT {
        return Err(BytecodeError::InvalidSectionId {
            id,
            offset: header_offset,
        });
    }
    let len = reader.varint("section length")?;
    let mut alignment = None;
    if id_byte & encoding::SECTION_ALIGNED_FLAG != 0 {
        let align_offset = reader.offset();
        let align = reader.varint("section alignment")?;
        check_alignment(align, align_offset)?;
        skip_padding(reader, align)?;
        alignment = Some(align);
    }
    let offset = reader.offset();
    let remaining = reader.remaining();
    let data =
        reader
            .bytes(len, "section data")
            .map_err(|_| BytecodeError::SectionOutOfBounds {
                name: section::name(id),
                offset,
                len,
                remaining,
            })?;
    Ok(RawSection {
        id,
        header_offset,
        alignment,
        offset,
        data,
    })
}

/// Reads a nested section that must have id `id` (`what` names it for the
/// message) and raises `max_alignment` to its alignment.
pub fn read_nested_section<'a>(
    reader: &mut Reader<'a>,
    id: u8,
    what: &str,
    max_alignment: &mut u64,
) -> Result<RawSection<'a>> {
    let raw = read_section(reader)?;
    if raw.id != id {
        return Err(BytecodeError::Malformed {
            offset: raw.header_offset,
            message: format!("expected {what}, found section id {}", raw.id),
        });
    }
    if let Some(a) = raw.alignment {
        *max_alignment = (*max_alignment).max(a);
    }
    Ok(raw)
}

/// Checks that `alignment` is a usable power of two.
pub fn check_alignment(alignment: u64, offset: usize) -> Result<()> {
    if alignment.is_power_of_two() && alignment <= encoding::MAX_ALIGNMENT {
        Ok(())
    } else {
        Err(BytecodeError::BadAlignment { alignment, offset })
    }
}

/// Consumes `0xCB` bytes until the absolute offset is a multiple of `alignment`.
pub fn skip_padding(reader: &mut Reader<'_>, alignment: u64) -> Result<()> {
    while !(reader.offset() as u64).is_multiple_of(alignment) {
        let offset = reader.offset();
        let b = reader.byte("alignment padding")?;
        if b != encoding::ALIGNMENT_BYTE {
            return Err(BytecodeError::BadPadding { offset, found: b });
        }
    }
    Ok(())
}

/// Parses magic, version, producer and the top-level section table.
pub fn parse_container(payload: &[u8]) -> Result<Header> {
    if payload.get(..4) != Some(&encoding::MAGIC[..]) {
        let found = payload
            .iter()
            .take(4)
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ");
        return Err(BytecodeError::BadMagic {
            found: if found.is_empty() {
                "nothing".into()
            } else {
                found
            },
        });
    }
    let mut reader = Reader::new(payload, 0);
    reader.bytes(4, "magic")?;
    let version = reader.varint("version")?;
    let producer = String::from_utf8_lossy(reader.nul_terminated("producer")?).into_owned();
    let header_len = reader.offset();
    let mut sections: Vec<SectionInfo> = Vec::new();
    while !reader.is_empty() {
        let raw = read_section(&mut reader)?;
        if sections.iter().any(|s| s.id == raw.id) {
            return Err(BytecodeError::DuplicateSection {
                name: section::name(raw.id),
                offset: raw.header_offset,
            });
        }
        sections.push(SectionInfo {
            id: raw.id,
            name: section::name(raw.id),
            header_offset: raw.header_offset,
            offset: raw.offset,
            len: raw.data.len(),
            aligned: raw.alignment.is_some(),
            alignment: raw.alignment,
        });
    }
    Ok(Header {
        magic: encoding::MAGIC,
        version,
        producer,
        header_len,
        sections,
    })
}

/// A section to emit: its data and the alignment its data start needs.
#[derive(Debug, Clone)]
pub struct OutSection {
    /// Section id.
    pub id: u8,
    /// New data.
    pub data: Vec<u8>,
    /// Alignment the start of the data must have (1 for none).
    pub alignment: u64,
}

/// Writes `header` followed by `sections`, each with a fresh length and, when
/// its alignment is not already met, the alignment varint and padding (the
/// upstream writer's rule).
pub fn emit(header: &[u8], sections: &[OutSection]) -> Vec<u8> {
    let total: usize = header.len() + sections.iter().map(|s| s.data.len() + 16).sum::<usize>();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(header);
    for s in sections {
        let id_pos = out.len();
        out.push(s.id);
        varint::encode(s.data.len() as u64, &mut out);
        if s.alignment > 1 && !(out.len() as u64).is_multiple_of(s.alignment) {
            out[id_pos] |= encoding::SECTION_ALIGNED_FLAG;
            varint::encode(s.alignment, &mut out);
            while !(out.len() as u64).is_multiple_of(s.alignment) {
                out.push(encoding::ALIGNMENT_BYTE);
            }
        }
        out.extend_from_slice(&s.data);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Vec<u8> {
        let mut h = encoding::MAGIC.to_vec();
        h.push(0x01); // version 0
        h.extend_from_slice(b"p\0");
        h
    }

    #[test]
    fn emitted_alignment_is_parsed_back() {
        let sections = vec![
            OutSection {
                id: 1,
                data: vec![1, 2, 3],
                alignment: 1,
            },
            OutSection {
                id: 5,
                data: vec![9; 5],
                alignment: 16,
            },
        ];
        let bytes = emit(&header(), &sections);
        let parsed = parse_container(&bytes).unwrap();
        assert_eq!(parsed.sections.len(), 2);
        let res = &parsed.sections[1];
        assert!(res.aligned);
        assert_eq!(res.offset % 16, 0);
        assert_eq!(&bytes[res.range()], &[9; 5]);
    }

    #[test]
    fn section_past_the_end_is_an_error() {
        let mut bytes = header();
        bytes.extend_from_slice(&[0x01, 0x41, 1, 2]); // dialect section of 32 bytes
        let err = parse_container(&bytes).unwrap_err();
        assert!(
            matches!(
                err,
                BytecodeError::SectionOutOfBounds {
                    len: 32,
                    remaining: 2,
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn bad_padding_and_alignment() {
        let mut bytes = header();
        bytes.extend_from_slice(&[0x81, 0x03, 0x09, 0x00]);
        assert!(matches!(
            parse_container(&bytes),
            Err(BytecodeError::BadPadding { .. })
        ));
        let mut bytes = header();
        bytes.extend_from_slice(&[0x81, 0x03, 0x07, 0x00]);
        assert!(matches!(
            parse_container(&bytes),
            Err(BytecodeError::BadAlignment { alignment: 3, .. })
        ));
    }
}
