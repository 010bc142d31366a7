//! The protobuf wire format, one field at a time, with no generated structs.
//!
//! Generated structs drop what they do not know; a cache key must not. A message here is an
//! ordered list of [`Field`]s, each keeping its exact encoded bytes, so a field that no table
//! names (a newer XLA's option) is written back byte for byte. Only the messages on the
//! normalization path are ever opened; everything else stays an opaque payload.

use prost::encoding::{WireType, decode_varint, encode_key, encode_varint};

use super::OptionsError;
use super::schema::{self, Card, FieldInfo, Kind, Msg};

/// How deep start-group/end-group pairs may nest inside one field before we give up.
pub const MAX_GROUP_DEPTH: usize = 64;

/// Largest field number protobuf allows (2^29 - 1).
const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;

/// One field as it appeared on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub number: u32,
    pub wire_type: WireType,
    /// Absolute offset of the field's key in the outermost input (0 for fields we made).
    pub offset: usize,
    /// The whole field exactly as encoded: key, length prefix if any, payload, end-group key.
    pub raw: Vec<u8>,
    /// Where the payload lies in `raw`.
    payload: std::ops::Range<usize>,
}

impl Field {
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

    /// A new varint field in canonical encoding.
    pub fn new_varint(number: u32, value: u64) -> Field {
        let mut raw = Vec::new();
        encode_key(number, WireType::Varint, &mut raw);
        let start = raw.len();
        encode_varint(value, &mut raw);
        let end = raw.len();
        Field {
            number,
            wire_type: WireType::Varint,
            offset: 0,
            raw,
            payload: start..end,
        }
    }

    /// A new length-delimited field in canonical encoding.
    pub fn new_len(number: u32, payload: &[u8]) -> Field {
        let mut raw = Vec::with_capacity(payload.len() + 10);
        encode_key(number, WireType::LengthDelimited, &mut raw);
        encode_varint(payload.len() as u64, &mut raw);
        let start = raw.len();
        raw.extend_from_slice(payload);
        let end = raw.len();
        Field {
            number,
            wire_type: WireType::LengthDelimited,
            offset: 0,
            raw,
            payload: start..end,
        }
    }
}

/// Splits one message into its fields, in input order.
///
/// `base` is the absolute offset of `buf` in the outermost input, `path` the message's field
/// path and `msg` its table (for naming fields in errors). Never allocates more than the input
/// holds: a length is checked against what remains before anything is copied.
pub fn parse(
    buf: &[u8],
    base: usize,
    path: &str,
    msg: Option<Msg>,
) -> Result<Vec<Field>, OptionsError> {
    let mut fields = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let start = pos;
        let (number, wire_type) = read_key(buf, &mut pos, base, path)?;
        // Errors inside the field name it; the name is only built when one happens.
        let in_field = |e: OptionsError| e.with_path(join(path, &schema::field_name(msg, number)));
        let payload = match wire_type {
            WireType::Varint => {
                let p = pos;
                read_varint(buf, &mut pos, base, "").map_err(in_field)?;
                p..pos
            }
            WireType::SixtyFourBit => {
                fixed(buf, &mut pos, 8, base, "", "fixed64 value").map_err(in_field)?
            }
            WireType::ThirtyTwoBit => {
                fixed(buf, &mut pos, 4, base, "", "fixed32 value").map_err(in_field)?
            }
            WireType::LengthDelimited => {
                length_delimited(buf, &mut pos, base, "").map_err(in_field)?
            }
            WireType::StartGroup => group(buf, &mut pos, number, base, "").map_err(in_field)?,
            WireType::EndGroup => {
                return Err(OptionsError::UnmatchedEndGroup {
                    number,
                    offset: base + start,
                    path: path.to_string(),
                });
            }
        };
        let raw = buf.get(start..pos).unwrap_or_default().to_vec();
        fields.push(Field {
            number,
            wire_type,
            offset: base + start,
            raw,
            payload: (payload.start - start)..(payload.end - start),
        });
    }
    Ok(fields)
}

/// Writes fields back in the order given.
pub fn write(fields: &[Field]) -> Vec<u8> {
    let mut out = Vec::with_capacity(fields.iter().map(|f| f.raw.len()).sum());
    for f in fields {
        out.extend_from_slice(&f.raw);
    }
    out
}

/// Orders fields by number, keeping the input order of equal numbers (repeated fields, maps).
pub fn sort_by_number(fields: &mut [Field]) {
    fields.sort_by_key(|f| f.number);
}

/// `a.b`, or `b` at the root.
pub fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// Reads a varint at `*pos`, telling a truncated one from an overlong one.
pub fn read_varint(
    buf: &[u8],
    pos: &mut usize,
    base: usize,
    path: &str,
) -> Result<u64, OptionsError> {
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
                Err(OptionsError::Truncated {
                    what: "varint",
                    offset,
                    path,
                })
            } else {
                Err(OptionsError::BadVarint { offset, path })
            }
        }
    }
}

fn read_key(
    buf: &[u8],
    pos: &mut usize,
    base: usize,
    path: &str,
) -> Result<(u32, WireType), OptionsError> {
    let offset = base + *pos;
    let key = read_varint(buf, pos, base, path).map_err(|e| match e {
        OptionsError::Truncated { offset, path, .. } => OptionsError::Truncated {
            what: "key",
            offset,
            path,
        },
        other => other,
    })?;
    let number = key >> 3;
    if number == 0 || number > MAX_FIELD_NUMBER {
        return Err(OptionsError::InvalidFieldNumber {
            number,
            offset,
            path: path.to_string(),
        });
    }
    let wire_type = WireType::try_from(key & 7).map_err(|_| OptionsError::InvalidWireType {
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
    what: &'static str,
) -> Result<std::ops::Range<usize>, OptionsError> {
    let start = *pos;
    if buf.len() - start < width {
        return Err(OptionsError::Truncated {
            what,
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
) -> Result<std::ops::Range<usize>, OptionsError> {
    let len_offset = *pos;
    let length = read_varint(buf, pos, base, path)?;
    let remaining = buf.len() - *pos;
    if length > remaining as u64 {
        return Err(OptionsError::LengthPastEnd {
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
) -> Result<std::ops::Range<usize>, OptionsError> {
    let start = *pos;
    let mut open = vec![number];
    loop {
        if *pos >= buf.len() {
            return Err(OptionsError::Truncated {
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
                fixed(buf, pos, 8, base, path, "fixed64 value")?;
            }
            WireType::ThirtyTwoBit => {
                fixed(buf, pos, 4, base, path, "fixed32 value")?;
            }
            WireType::LengthDelimited => {
                length_delimited(buf, pos, base, path)?;
            }
            WireType::StartGroup => {
                if open.len() >= MAX_GROUP_DEPTH {
                    return Err(OptionsError::TooDeep {
                        limit: MAX_GROUP_DEPTH,
                        offset: base + key_pos,
                        path: path.to_string(),
                    });
                }
                open.push(n);
            }
            WireType::EndGroup => {
                if open.pop() != Some(n) {
                    return Err(OptionsError::UnmatchedEndGroup {
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

/// The fields of a singular message seen once or more: protobuf merges repeated occurrences,
/// which at the wire level is their fields one after the other.
pub fn merged_fields(occ: &[&Field], path: &str, msg: Msg) -> Result<Vec<Field>, OptionsError> {
    let mut fields = Vec::new();
    for f in occ {
        fields.extend(parse(f.payload(), f.payload_offset(), path, Some(msg))?);
    }
    Ok(fields)
}

/// Rejects a known field whose wire type its kind cannot have.
pub fn check_wire_type(info: &FieldInfo, f: &Field, path: &str) -> Result<(), OptionsError> {
    let scalar = scalar_wire_type(info.kind);
    let ok = match info.card {
        // Repeated scalars may be packed (length-delimited) or not.
        Card::Many if scalar != WireType::LengthDelimited => {
            f.wire_type == scalar || f.wire_type == WireType::LengthDelimited
        }
        _ => f.wire_type == scalar,
    };
    if ok {
        Ok(())
    } else {
        Err(OptionsError::NotCompileOptions {
            reason: format!(
                "wire type {} where {} is expected",
                f.wire_type as u8, scalar as u8
            ),
            offset: f.offset,
            path: path.to_string(),
        })
    }
}

/// The wire type of one value of this kind (unpacked).
pub fn scalar_wire_type(kind: Kind) -> WireType {
    match kind {
        Kind::Bool | Kind::Int32 | Kind::Int64 | Kind::Uint32 | Kind::Uint64 | Kind::Enum => {
            WireType::Varint
        }
        Kind::Float => WireType::ThirtyTwoBit,
        Kind::Double => WireType::SixtyFourBit,
        Kind::Str | Kind::Bytes | Kind::Msg(_) | Kind::Opaque => WireType::LengthDelimited,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARITY: [&[u8]; 7] = [
        include_bytes!("../../../../tests/data/parity/01_cpu_defaults/compile_options.pb"),
        include_bytes!(
            "../../../../tests/data/parity/02_xla_flags_kept_and_excluded/compile_options.pb"
        ),
        include_bytes!(
            "../../../../tests/data/parity/05_debug_options_all_reset_fields/compile_options.pb"
        ),
        include_bytes!("../../../../tests/data/parity/07a_gpu_assign_1/compile_options.pb"),
        include_bytes!("../../../../tests/data/parity/07b_gpu_assign_0/compile_options.pb"),
        include_bytes!("../../../../tests/data/parity/09_fallback_device_kinds/compile_options.pb"),
        include_bytes!("../../../../tests/data/parity/10_custom_hook/compile_options.pb"),
    ];

    /// Parses and rewrites the path messages (top, build options, debug options, assignment).
    fn roundtrip(buf: &[u8], base: usize, depth: usize) -> Vec<u8> {
        let mut fields = parse(buf, base, "", None).unwrap();
        sort_by_number(&mut fields);
        if depth < 3 {
            for f in fields.iter_mut() {
                let nested = (depth == 0 && f.number == 3)
                    || (depth == 1 && (f.number == 3 || f.number == 9));
                if nested {
                    let inner = roundtrip(f.payload(), f.payload_offset(), depth + 1);
                    *f = Field::new_len(f.number, &inner);
                }
            }
        }
        write(&fields)
    }

    #[test]
    fn parity_inputs_round_trip_byte_for_byte() {
        for input in PARITY {
            assert_eq!(roundtrip(input, 0, 0), input);
        }
    }

    #[test]
    fn fields_keep_offsets_and_payloads() {
        // 08 96 01: field 1 = 150; 12 02 68 69: field 2 = "hi".
        let fields = parse(&[0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i'], 100, "", None).unwrap();
        assert_eq!(fields.len(), 2);
        assert_eq!(fields[0].varint(), Some(150));
        assert_eq!(fields[1].offset, 103);
        assert_eq!(fields[1].payload(), b"hi");
        assert_eq!(fields[1].payload_offset(), 105);
        assert_eq!(Field::new_len(2, b"hi").raw, [0x12, 0x02, b'h', b'i']);
        assert_eq!(Field::new_varint(1, 150).raw, [0x08, 0x96, 0x01]);
    }

    #[test]
    fn groups_are_kept_whole() {
        // field 5 group { field 1 = 7, field 6 group {} } then field 2 = 1
        let bytes = [0x2b, 0x08, 0x07, 0x33, 0x34, 0x2c, 0x10, 0x01];
        let fields = parse(&bytes, 0, "", None).unwrap();
        assert_eq!(fields.len(), 2);
        assert_eq!(fields[0].raw, &bytes[..6]);
        assert_eq!(fields[0].payload(), &bytes[1..5]);
        assert_eq!(write(&fields), bytes);
    }

    #[test]
    fn errors_name_offset_and_path() {
        let e = parse(
            &[0x08],
            7,
            "executable_build_options",
            Some(Msg::ExecutableBuildOptions),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "truncated varint at byte 8 in executable_build_options.device_ordinal"
        );
        let e = parse(&[0x0f], 0, "", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid wire type 7 at byte 0 in CompileOptionsProto"
        );
        let e = parse(&[0x00], 0, "", None).unwrap_err();
        assert!(matches!(
            e,
            OptionsError::InvalidFieldNumber { number: 0, .. }
        ));
        let e = parse(&[0x1a, 0x05, 0x00], 0, "", Some(Msg::CompileOptions)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "length 5 at byte 1 in executable_build_options runs past the end of the message (1 bytes remain)"
        );
        let overlong = [
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ];
        assert!(matches!(
            parse(&overlong, 0, "", None).unwrap_err(),
            OptionsError::BadVarint { offset: 1, .. }
        ));
        assert!(matches!(
            parse(&[0x0c], 0, "", None).unwrap_err(),
            OptionsError::UnmatchedEndGroup { number: 1, .. }
        ));
        assert!(matches!(
            parse(&[0x0b, 0x08, 0x01], 0, "", None).unwrap_err(),
            OptionsError::Truncated { .. }
        ));
    }
}
