//! Writing: canonical encodings of new fields, and fields written back in order.

use prost::encoding::{WireType, encode_key, encode_varint};

use crate::Field;

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

/// Writes fields back in the order given, each exactly as it is held.
pub fn write(fields: &[Field<'_>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(fields.iter().map(|f| f.raw.len()).sum());
    for f in fields {
        out.extend_from_slice(&f.raw);
    }
    out
}

/// Orders fields by number, keeping the input order of equal numbers (repeated fields, maps).
pub fn sort_by_number(fields: &mut [Field<'_>]) {
    fields.sort_by_key(|f| f.number);
}

/// A field path one level down: `a.b`, or `b` at the root.
pub fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_are_canonical() {
        let mut out = Vec::new();
        put_varint(&mut out, 1, 150);
        put_len(&mut out, 2, b"hi");
        put_fixed(&mut out, 3, WireType::ThirtyTwoBit, &[1, 0, 0, 0]);
        put_raw_varint(&mut out, 300);
        assert_eq!(
            out,
            [
                0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i', 0x1d, 1, 0, 0, 0, 0xac, 0x02
            ]
        );
        let mut fields = crate::parse(&out[..12], 0).unwrap();
        fields.reverse();
        sort_by_number(&mut fields);
        assert_eq!(write(&fields), &out[..12]);
        assert_eq!(join("", "a"), "a");
        assert_eq!(join("a", "b"), "a.b");
    }
}
