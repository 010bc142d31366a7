//! MLIR's "PrefixVarInt": the count of trailing zero bits of the first byte is
//! the number of extra bytes (a first byte of `0x00` means 8 extra bytes), the
//! remaining bits are the value, little-endian. Writers always emit the
//! shortest form, which is what lets the stripper search undecodable bytes for
//! possible index references. Pure functions, no input offsets: the cursor in
//! `reader.rs` turns failures into positioned errors.

/// Decodes the varint at the start of `bytes`: `(value, encoded length)`, or
/// `None` when `bytes` ends before the varint does.
pub fn decode(bytes: &[u8]) -> Option<(u64, usize)> {
    let first = *bytes.first()?;
    if first & 1 == 1 {
        return Some((u64::from(first >> 1), 1));
    }
    if first == 0 {
        let raw: [u8; 8] = bytes.get(1..9)?.try_into().ok()?;
        return Some((u64::from_le_bytes(raw), 9));
    }
    let extra = first.trailing_zeros() as usize;
    let mut raw = [0u8; 8];
    raw[..=extra].copy_from_slice(bytes.get(..=extra)?);
    Some((u64::from_le_bytes(raw) >> (extra + 1), extra + 1))
}

/// Like [`decode`], but only accepts the shortest encoding of the value, the
/// only one the upstream writer produces.
pub fn decode_shortest(bytes: &[u8]) -> Option<(u64, usize)> {
    decode(bytes).filter(|&(value, len)| encoded_len(value) == len)
}

/// Number of bytes of the shortest encoding of `value`.
pub fn encoded_len(value: u64) -> usize {
    (1..=8).find(|&n| value < 1u64 << (7 * n)).unwrap_or(9)
}

/// Appends the shortest encoding of `value` to `out`.
pub fn encode(value: u64, out: &mut Vec<u8>) {
    let len = encoded_len(value);
    if len == 9 {
        out.push(0);
        out.extend_from_slice(&value.to_le_bytes());
        return;
    }
    let marked = ((value << 1) | 1) << (len - 1);
    out.extend_from_slice(&marked.to_le_bytes()[..len]);
}

/// The shortest encoding of `value` as a new vector.
pub fn encoded(value: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(9);
    encode(value, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_at_every_length_boundary() {
        let mut values = vec![0, 1, 63, 64, 127, u64::MAX, u64::MAX - 1];
        for bits in [7u32, 14, 21, 28, 35, 42, 49, 56] {
            values.extend([(1u64 << bits) - 1, 1u64 << bits]);
        }
        for value in values {
            let bytes = encoded(value);
            assert_eq!(bytes.len(), encoded_len(value), "{value}");
            assert_eq!(decode(&bytes), Some((value, bytes.len())), "{value}");
            assert_eq!(decode_shortest(&bytes), Some((value, bytes.len())));
            assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
        }
    }

    #[test]
    fn known_encodings() {
        assert_eq!(encoded(15), vec![0x1f]);
        assert_eq!(encoded(128), vec![0x02, 0x02]);
        assert_eq!(decode(&[0x02, 0x08]), Some((512, 2)));
    }

    #[test]
    fn non_shortest_forms_decode_but_are_not_shortest() {
        // 5 encoded in two bytes: (5 << 2) | 0b10.
        let long = [0x16, 0x00];
        assert_eq!(decode(&long), Some((5, 2)));
        assert_eq!(decode_shortest(&long), None);
        assert_eq!(decode(&[0x00, 1, 0, 0, 0, 0, 0, 0, 0]), Some((1, 9)));
        assert_eq!(decode_shortest(&[0x00, 1, 0, 0, 0, 0, 0, 0, 0]), None);
    }
}
