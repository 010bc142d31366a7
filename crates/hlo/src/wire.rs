//! The protobuf wire format, one field at a time, borrowing the input.
//!
//! A message is split into [`Field`]s that point into the input, each with its exact bytes and
//! absolute offset, so unknown fields can be written back byte for byte and errors can say
//! where they are. Lengths are checked against what remains before anything is sliced, so a
//! hostile length never allocates or reads past the end.

use prost::encoding::{WireType, decode_varint, encode_key, encode_varint};

use crate::HloError;

/// How deep start-group/end-group pairs may nest inside one (unknown) field.
pub const MAX_GROUP_DEPTH: usize = 64;

/// Largest field number protobuf allows (2^29 - 1).
const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;

/// One field as it appeared on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    pub number: u32,
    pub wire_type: WireType,
    /// Absolute offset of the field's key in the outermost input.
    pub offset: usize,
    /// The whole field exactly as encoded: key, length prefix if any, payload, end-group key.
    pub raw: &'a [u8],
    /// The varint bytes, the fixed bytes, the bytes after a length prefix, or a group's content.
    pub payload: &'a [u8],
    /// Absolute offset of the payload in the outermost input.
    pub payload_offset: usize,
}

impl Field<'_> {
    /// The value of a varint field.
    pub fn varint(&self) -> Option<u64> {
        if self.wire_type != WireType::Varint {
            return None;
        }
        let mut cur = self.payload;
        decode_varint(&mut cur).ok()
    }
}

/// Splits one message into its fields, in input order. `base` is the absolute offset of `buf`
/// in the outermost input; `path` names the message in errors.
pub fn parse<'a>(buf: &'a [u8], base: usize, path: &str) -> Result<Vec<Field<'a>>, HloError> {
    let mut fields = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let start = pos;
        let (number, wire_type) = read_key(buf, &mut pos, base, path)?;
        let payload = match wire_type {
            WireType::Varint => {
                let p = pos;
                read_varint(buf, &mut pos, base, path)?;
                p..pos
            }
            WireType::SixtyFourBit => fixed(buf, &mut pos, 8, base, path)?,
            WireType::ThirtyTwoBit => fixed(buf, &mut pos, 4, base, path)?,
            WireType::LengthDelimited => length_delimited(buf, &mut pos, base, path)?,
            WireType::StartGroup => group(buf, &mut pos, number, base, path)?,
            WireType::EndGroup => {
                return Err(HloError::UnmatchedEndGroup {
                    number,
                    offset: base + start,
                    path: path.to_string(),
                });
            }
        };
        fields.push(Field {
            number,
            wire_type,
            offset: base + start,
            raw: buf.get(start..pos).unwrap_or_default(),
            payload: buf.get(payload.clone()).unwrap_or_default(),
            payload_offset: base + payload.start,
        });
    }
    Ok(fields)
}

/// Appends a varint field in canonical encoding.
pub fn put_varint(out: &mut Vec<u8>, number: u32, value: u64) {
    encode_key(number, WireType::Varint, out);
    encode_varint(value, out);
}

/// Appends a length-delimited field in canonical encoding.
pub fn put_len(out: &mut Vec<u8>, number: u32, payload: &[u8]) {
    encode_key(number, WireType::LengthDelimited, out);
    encode_varint(payload.len() as u64, out);
    out.extend_from_slice(payload);
}

/// Appends a fixed-width field (4 or 8 bytes, as read).
pub fn put_fixed(out: &mut Vec<u8>, number: u32, wire_type: WireType, bytes: &[u8]) {
    encode_key(number, wire_type, out);
    out.extend_from_slice(bytes);
}

/// Appends a varint value without a key (inside a packed field).
pub fn put_raw_varint(out: &mut Vec<u8>, value: u64) {
    encode_varint(value, out);
}

/// Reads a varint at `*pos`, telling a truncated one from an overlong one.
pub fn read_varint(buf: &[u8], pos: &mut usize, base: usize, path: &str) -> Result<u64, HloError> {
    let rest = buf.get(*pos..).unwrap_or_default();
    let mut cur = rest;
    match decode_varint(&mut cur) {
        Ok(v) => {
            *pos += rest.len() - cur.len();
            Ok(v)
        }
        Err(_) => {
            let offset = base + *pos;
            let path = path.to_string();
            if rest.len() < 10 && rest.iter().all(|b| b & 0x80 != 0) {
                Err(HloError::Truncated {
                    what: "varint",
                    offset,
                    path,
                })
            } else {
                Err(HloError::BadVarint { offset, path })
            }
        }
    }
}

fn read_key(
    buf: &[u8],
    pos: &mut usize,
    base: usize,
    path: &str,
) -> Result<(u32, WireType), HloError> {
    let offset = base + *pos;
    let key = read_varint(buf, pos, base, path).map_err(|e| match e {
        HloError::Truncated { offset, path, .. } => HloError::Truncated {
            what: "key",
            offset,
            path,
        },
        other => other,
    })?;
    let number = key >> 3;
    if number == 0 || number > MAX_FIELD_NUMBER {
        return Err(HloError::InvalidFieldNumber {
            number,
            offset,
            path: path.to_string(),
        });
    }
    let wire_type = WireType::try_from(key & 7).map_err(|_| HloError::InvalidWireType {
        wire_type: key & 7,
        offset,
        path: path.to_string(),
    })?;
    // `number` is at most 2^29 - 1, so it fits.
    Ok((number as u32, wire_type))
}

fn fixed(
    buf: &[u8],
    pos: &mut usize,
    width: usize,
    base: usize,
    path: &str,
) -> Result<std::ops::Range<usize>, HloError> {
    let start = *pos;
    if buf.len() - start < width {
        return Err(HloError::Truncated {
            what: if width == 8 {
                "fixed64 value"
            } else {
                "fixed32 value"
            },
            offset: base + start,
            path: path.to_string(),
        });
    }
    *pos += width;
    Ok(start..*pos)
}

fn length_delimited(
    buf: &[u8],
    pos: &mut usize,
    base: usize,
    path: &str,
) -> Result<std::ops::Range<usize>, HloError> {
    let len_offset = *pos;
    let length = read_varint(buf, pos, base, path)?;
    let remaining = buf.len() - *pos;
    if length > remaining as u64 {
        return Err(HloError::LengthPastEnd {
            length,
            remaining,
            offset: base + len_offset,
            path: path.to_string(),
        });
    }
    let start = *pos;
    // `length <= remaining`, so it fits in usize.
    *pos += length as usize;
    Ok(start..*pos)
}

/// Skips a group's content up to its matching end-group key; returns the content's range.
fn group(
    buf: &[u8],
    pos: &mut usize,
    number: u32,
    base: usize,
    path: &str,
) -> Result<std::ops::Range<usize>, HloError> {
    let start = *pos;
    let mut open = vec![number];
    loop {
        if *pos >= buf.len() {
            return Err(HloError::Truncated {
                what: "group (no end-group key)",
                offset: base + *pos,
                path: path.to_string(),
            });
        }
        let key_pos = *pos;
        let (n, wt) = read_key(buf, pos, base, path)?;
        match wt {
            WireType::Varint => {
                read_varint(buf, pos, base, path)?;
            }
            WireType::SixtyFourBit => {
                fixed(buf, pos, 8, base, path)?;
            }
            WireType::ThirtyTwoBit => {
                fixed(buf, pos, 4, base, path)?;
            }
            WireType::LengthDelimited => {
                length_delimited(buf, pos, base, path)?;
            }
            WireType::StartGroup => {
                if open.len() >= MAX_GROUP_DEPTH {
                    return Err(HloError::TooDeep {
                        limit: MAX_GROUP_DEPTH,
                        offset: base + key_pos,
                        path: path.to_string(),
                    });
                }
                open.push(n);
            }
            WireType::EndGroup => {
                if open.pop() != Some(n) {
                    return Err(HloError::UnmatchedEndGroup {
                        number: n,
                        offset: base + key_pos,
                        path: path.to_string(),
                    });
                }
                if open.is_empty() {
                    return Ok(start..key_pos);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_borrow_with_offsets() {
        // 08 96 01: field 1 = 150; 12 02 68 69: field 2 = "hi".
        let buf = [0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i'];
        let fields = parse(&buf, 100, "").unwrap();
        assert_eq!(fields.len(), 2);
        assert_eq!(fields[0].varint(), Some(150));
        assert_eq!(fields[1].offset, 103);
        assert_eq!(fields[1].payload, b"hi");
        assert_eq!(fields[1].payload_offset, 105);
        let mut out = Vec::new();
        put_varint(&mut out, 1, 150);
        put_len(&mut out, 2, b"hi");
        assert_eq!(out, buf);
    }

    #[test]
    fn groups_are_kept_whole() {
        // field 5 group { field 1 = 7, field 6 group {} } then field 2 = 1
        let bytes = [0x2b, 0x08, 0x07, 0x33, 0x34, 0x2c, 0x10, 0x01];
        let fields = parse(&bytes, 0, "").unwrap();
        assert_eq!(fields.len(), 2);
        assert_eq!(fields[0].raw, &bytes[..6]);
        assert_eq!(fields[0].payload, &bytes[1..5]);
    }

    #[test]
    fn malformed_input_is_an_error_naming_the_place() {
        let e = parse(&[0x08], 7, "computations[0]").unwrap_err();
        assert_eq!(
            e.to_string(),
            "truncated varint at byte 8 in computations[0]"
        );
        let e = parse(&[0x0f], 0, "").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid wire type 7 at byte 0 in HloModuleProto"
        );
        assert!(matches!(
            parse(&[0x00], 0, "").unwrap_err(),
            HloError::InvalidFieldNumber { number: 0, .. }
        ));
        let e = parse(&[0x1a, 0x05, 0x00], 0, "").unwrap_err();
        assert_eq!(
            e.to_string(),
            "length 5 at byte 1 in HloModuleProto runs past the end of the message (1 bytes remain)"
        );
        let huge = [0x1a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f];
        assert!(matches!(
            parse(&huge, 0, "").unwrap_err(),
            HloError::LengthPastEnd { remaining: 0, .. }
        ));
        let overlong = [
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ];
        assert!(matches!(
            parse(&overlong, 0, "").unwrap_err(),
            HloError::BadVarint { offset: 1, .. }
        ));
        assert!(matches!(
            parse(&[0x0c], 0, "").unwrap_err(),
            HloError::UnmatchedEndGroup { number: 1, .. }
        ));
        assert!(matches!(
            parse(&[0x0b, 0x08, 0x01], 0, "").unwrap_err(),
            HloError::Truncated { .. }
        ));
        let deep: Vec<u8> = std::iter::repeat_n(0x0b, MAX_GROUP_DEPTH + 1).collect();
        assert!(matches!(
            parse(&deep, 0, "").unwrap_err(),
            HloError::TooDeep { .. }
        ));
    }
}
