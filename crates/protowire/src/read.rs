//! Reading: a message split into [`Field`]s, in input order, each with its exact bytes.

use std::borrow::Cow;
use std::ops::Range;

use prost::encoding::{WireType, decode_varint, encode_key, encode_varint};

use crate::error::{Problem, WireError};

/// How deep start-group/end-group pairs may nest inside one field before we give up.
pub const MAX_GROUP_DEPTH: usize = 64;

/// Largest field number protobuf allows (2^29 - 1).
const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;

/// One field as it appeared on the wire (borrowed from the input), or as we made it (owned).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    pub number: u32,
    pub wire_type: WireType,
    /// Absolute offset of the field's key in the outermost input (0 for fields we made).
    pub offset: usize,
    /// The whole field exactly as encoded: key, length prefix if any, payload, end-group key.
    pub raw: Cow<'a, [u8]>,
    /// Where the payload lies in `raw`.
    payload: Range<usize>,
}

impl Field<'_> {
    /// The payload: the varint bytes, the fixed bytes, the bytes after a length prefix, or the
    /// fields between a group's start and end keys.
    pub fn payload(&self) -> &[u8] {
        self.raw.get(self.payload.clone()).unwrap_or_default()
    }

    /// Absolute offset of the payload in the outermost input.
    pub fn payload_offset(&self) -> usize {
        self.offset + self.payload.start
    }

    /// The value of a varint field.
    pub fn varint(&self) -> Option<u64> {
        if self.wire_type != WireType::Varint {
            return None;
        }
        let mut cur = self.payload();
        decode_varint(&mut cur).ok()
    }

    /// The same field, owning its bytes.
    pub fn into_owned(self) -> Field<'static> {
        Field {
            raw: Cow::Owned(self.raw.into_owned()),
            ..self
        }
    }
}

impl Field<'static> {
    /// A new varint field in canonical encoding.
    pub fn new_varint(number: u32, value: u64) -> Self {
        let mut raw = Vec::new();
        encode_key(number, WireType::Varint, &mut raw);
        let start = raw.len();
        encode_varint(value, &mut raw);
        Self::made(number, WireType::Varint, raw, start)
    }

    /// A new length-delimited field in canonical encoding.
    pub fn new_len(number: u32, payload: &[u8]) -> Self {
        let mut raw = Vec::with_capacity(payload.len() + 10);
        encode_key(number, WireType::LengthDelimited, &mut raw);
        encode_varint(payload.len() as u64, &mut raw);
        let start = raw.len();
        raw.extend_from_slice(payload);
        Self::made(number, WireType::LengthDelimited, raw, start)
    }

    fn made(number: u32, wire_type: WireType, raw: Vec<u8>, start: usize) -> Self {
        Field {
            number,
            wire_type,
            offset: 0,
            payload: start..raw.len(),
            raw: Cow::Owned(raw),
        }
    }
}

/// Splits one message into its fields, in input order; `base` is the absolute offset of `buf`
/// in the outermost input. A problem inside a field's value names that field.
pub fn parse(buf: &[u8], base: usize) -> Result<Vec<Field<'_>>, WireError> {
    let mut fields = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let start = pos;
        let (number, wire_type) = read_key(buf, &mut pos, base)?;
        let payload = value(buf, &mut pos, start, number, wire_type, base).map_err(|e| {
            // An end-group key is a problem of the message, not of a field's value.
            let field = (wire_type != WireType::EndGroup).then_some(number);
            WireError { field, ..e }
        })?;
        fields.push(Field {
            number,
            wire_type,
            offset: base + start,
            raw: Cow::Borrowed(buf.get(start..pos).unwrap_or_default()),
            payload: (payload.start - start)..(payload.end - start),
        });
    }
    Ok(fields)
}

/// Reads a varint at `*pos`, telling a truncated one from an overlong one.
pub fn read_varint(buf: &[u8], pos: &mut usize, base: usize) -> Result<u64, WireError> {
    let rest = buf.get(*pos..).unwrap_or_default();
    let mut cur = rest;
    match decode_varint(&mut cur) {
        Ok(v) => {
            *pos += rest.len() - cur.len();
            Ok(v)
        }
        Err(_) => {
            let truncated = rest.len() < 10 && rest.iter().all(|b| b & 0x80 != 0);
            let problem = if truncated {
                Problem::Truncated("varint")
            } else {
                Problem::BadVarint
            };
            Err(WireError::new(problem, base + *pos))
        }
    }
}

fn read_key(buf: &[u8], pos: &mut usize, base: usize) -> Result<(u32, WireType), WireError> {
    let offset = base + *pos;
    let key = read_varint(buf, pos, base).map_err(|e| match e.problem {
        Problem::Truncated(_) => WireError::new(Problem::Truncated("key"), e.offset),
        _ => e,
    })?;
    let number = key >> 3;
    if number == 0 || number > MAX_FIELD_NUMBER {
        return Err(WireError::new(Problem::InvalidFieldNumber(number), offset));
    }
    let wire_type = WireType::try_from(key & 7)
        .map_err(|_| WireError::new(Problem::InvalidWireType(key & 7), offset))?;
    // `number` is at most 2^29 - 1, so it fits.
    Ok((number as u32, wire_type))
}

/// Reads the value after the key at `key_pos`; returns the payload's range (a group's content
/// for a group).
fn value(
    buf: &[u8],
    pos: &mut usize,
    key_pos: usize,
    number: u32,
    wire_type: WireType,
    base: usize,
) -> Result<Range<usize>, WireError> {
    let start = *pos;
    match wire_type {
        WireType::Varint => read_varint(buf, pos, base).map(|_| start..*pos),
        WireType::SixtyFourBit => fixed(buf, pos, 8, base, "fixed64 value"),
        WireType::ThirtyTwoBit => fixed(buf, pos, 4, base, "fixed32 value"),
        WireType::LengthDelimited => length_delimited(buf, pos, base),
        WireType::StartGroup => group(buf, pos, number, base),
        WireType::EndGroup => Err(WireError::new(
            Problem::UnmatchedEndGroup(number),
            base + key_pos,
        )),
    }
}

fn fixed(
    buf: &[u8],
    pos: &mut usize,
    width: usize,
    base: usize,
    what: &'static str,
) -> Result<Range<usize>, WireError> {
    let start = *pos;
    if buf.len() - start < width {
        return Err(WireError::new(Problem::Truncated(what), base + start));
    }
    *pos += width;
    Ok(start..*pos)
}

fn length_delimited(buf: &[u8], pos: &mut usize, base: usize) -> Result<Range<usize>, WireError> {
    let len_offset = *pos;
    let length = read_varint(buf, pos, base)?;
    let remaining = buf.len() - *pos;
    if length > remaining as u64 {
        let problem = Problem::LengthPastEnd { length, remaining };
        return Err(WireError::new(problem, base + len_offset));
    }
    let start = *pos;
    // `length <= remaining`, so it fits in usize.
    *pos += length as usize;
    Ok(start..*pos)
}

/// Skips a group's content up to its matching end-group key; returns the content's range.
fn group(buf: &[u8], pos: &mut usize, number: u32, base: usize) -> Result<Range<usize>, WireError> {
    let start = *pos;
    let mut open = vec![number];
    loop {
        if *pos >= buf.len() {
            let problem = Problem::Truncated("group (no end-group key)");
            return Err(WireError::new(problem, base + *pos));
        }
        let key_pos = *pos;
        let (n, wire_type) = read_key(buf, pos, base)?;
        match wire_type {
            WireType::StartGroup if open.len() >= MAX_GROUP_DEPTH => {
                let problem = Problem::TooDeep {
                    limit: MAX_GROUP_DEPTH,
                };
                return Err(WireError::new(problem, base + key_pos));
            }
            WireType::StartGroup => open.push(n),
            WireType::EndGroup if open.last() == Some(&n) => {
                open.pop();
                if open.is_empty() {
                    return Ok(start..key_pos);
                }
            }
            // A mismatched end-group key is refused by `value`.
            _ => {
                value(buf, pos, key_pos, n, wire_type, base)?;
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
        let fields = parse(&buf, 100).unwrap();
        assert_eq!(fields.len(), 2);
        assert_eq!(fields[0].varint(), Some(150));
        assert_eq!(fields[1].offset, 103);
        assert_eq!(fields[1].payload(), b"hi");
        assert_eq!(fields[1].payload_offset(), 105);
        assert!(matches!(fields[1].raw, Cow::Borrowed(_)));
        assert_eq!(fields[1].clone().into_owned(), fields[1]);
        assert_eq!(&*Field::new_len(2, b"hi").raw, [0x12, 0x02, b'h', b'i']);
        assert_eq!(&*Field::new_varint(1, 150).raw, [0x08, 0x96, 0x01]);
        assert_eq!(Field::new_len(2, b"hi").payload(), b"hi");
    }

    #[test]
    fn groups_are_kept_whole() {
        // field 5 group { field 1 = 7, field 6 group {} } then field 2 = 1
        let bytes = [0x2b, 0x08, 0x07, 0x33, 0x34, 0x2c, 0x10, 0x01];
        let fields = parse(&bytes, 0).unwrap();
        assert_eq!(fields.len(), 2);
        assert_eq!(&*fields[0].raw, &bytes[..6]);
        assert_eq!(fields[0].payload(), &bytes[1..5]);
        assert_eq!(crate::write(&fields), bytes);
    }

    fn problem(bytes: &[u8]) -> (Problem, usize, Option<u32>) {
        let e = parse(bytes, 0).unwrap_err();
        (e.problem, e.offset, e.field)
    }

    #[test]
    fn malformed_input_names_the_problem_offset_and_field() {
        assert_eq!(
            parse(&[0x08], 7).unwrap_err(),
            WireError {
                problem: Problem::Truncated("varint"),
                offset: 8,
                field: Some(1)
            }
        );
        assert_eq!(problem(&[0x0f]), (Problem::InvalidWireType(7), 0, None));
        assert_eq!(problem(&[0x00]), (Problem::InvalidFieldNumber(0), 0, None));
        assert_eq!(problem(&[0x80]), (Problem::Truncated("key"), 0, None));
        let past = Problem::LengthPastEnd {
            length: 5,
            remaining: 1,
        };
        assert_eq!(problem(&[0x1a, 0x05, 0x00]), (past, 1, Some(3)));
        let huge = [0x1a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f];
        assert!(matches!(
            problem(&huge).0,
            Problem::LengthPastEnd { remaining: 0, .. }
        ));
        let overlong = [
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ];
        assert_eq!(problem(&overlong), (Problem::BadVarint, 1, Some(1)));
        assert_eq!(
            problem(&[0x08, 0x01, 0x0c]),
            (Problem::UnmatchedEndGroup(1), 2, None)
        );
        assert_eq!(
            problem(&[0x0b, 0x14]),
            (Problem::UnmatchedEndGroup(2), 1, Some(1))
        );
        assert_eq!(
            problem(&[0x0b, 0x08, 0x01]),
            (Problem::Truncated("group (no end-group key)"), 3, Some(1))
        );
        assert_eq!(
            problem(&[0x0b, 0x0d, 0x01]),
            (Problem::Truncated("fixed32 value"), 2, Some(1))
        );
        let deep: Vec<u8> = std::iter::repeat_n(0x0b, MAX_GROUP_DEPTH + 1).collect();
        assert_eq!(
            problem(&deep),
            (
                Problem::TooDeep {
                    limit: MAX_GROUP_DEPTH
                },
                MAX_GROUP_DEPTH,
                Some(1)
            )
        );
    }
}
