//! The string section: a count, the sizes of the strings (each including its
//! NUL) in reverse order, then the string data front to back. The stripper
//! keeps every index and only empties strings it proved dead, so rebuilding the
//! section is a matter of writing new sizes.

use super::error::{BytecodeError, Result};
use super::reader::Reader;
use super::varint;

/// The parsed string table. Each slice is the stored bytes of one string,
/// including its final (NUL) byte.
#[derive(Debug, Clone)]
pub struct StringTable<'a> {
    /// Stored bytes of each string, terminator included.
    pub strings: Vec<&'a [u8]>,
    /// Absolute offset of each string.
    pub offsets: Vec<usize>,
}

impl<'a> StringTable<'a> {
    /// Parses the section `data`, which starts at absolute offset `base`.
    pub fn parse(data: &'a [u8], base: usize) -> Result<Self> {
        let mut reader = Reader::new(data, base);
        let count = reader.count("string", 1)?;
        let mut sizes = Vec::new();
        for _ in 0..count {
            let offset = reader.offset();
            let size = reader.varint("string size")?;
            if size == 0 {
                return Err(BytecodeError::Malformed {
                    offset,
                    message: "string size 0 leaves no room for the nul terminator".into(),
                });
            }
            sizes.push(size);
        }
        sizes.reverse();
        let total: u128 = sizes.iter().map(|&s| u128::from(s)).sum();
        if total != reader.remaining() as u128 {
            return Err(reader.malformed(format!(
                "string sizes add up to {total} bytes but {} bytes of string data remain",
                reader.remaining()
            )));
        }
        let mut strings = Vec::with_capacity(sizes.len());
        let mut offsets = Vec::with_capacity(sizes.len());
        for size in sizes {
            offsets.push(reader.offset());
            strings.push(reader.bytes(size, "string data")?);
        }
        Ok(StringTable { strings, offsets })
    }

    /// Number of strings.
    pub fn len(&self) -> usize {
        self.strings.len()
    }

    /// The string's content, without its terminator.
    pub fn content(&self, index: usize) -> &'a [u8] {
        self.strings
            .get(index)
            .map_or(&[][..], |s| &s[..s.len().saturating_sub(1)])
    }

    /// The section rebuilt with the strings marked in `empty` replaced by "".
    pub fn rebuild(&self, empty: &[bool]) -> Vec<u8> {
        let stored = |i: usize| -> &[u8] {
            if empty.get(i).copied().unwrap_or(false) {
                &[0]
            } else {
                self.strings[i]
            }
        };
        let all: Vec<&[u8]> = (0..self.strings.len()).map(stored).collect();
        write_section(&all)
    }
}

/// A string section holding `stored` (each string with its terminator):
/// count, sizes in reverse order, then the data.
pub fn write_section(stored: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    varint::encode(stored.len() as u64, &mut out);
    for s in stored.iter().rev() {
        varint::encode(s.len() as u64, &mut out);
    }
    for s in stored {
        out.extend_from_slice(s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_rebuild() {
        // two strings: "ab" and "c"; sizes reversed: 2, 3
        let data = [0x05, 0x05, 0x07, b'a', b'b', 0, b'c', 0];
        let table = StringTable::parse(&data, 0).unwrap();
        assert_eq!(table.content(0), b"ab");
        assert_eq!(table.content(1), b"c");
        assert_eq!(table.rebuild(&[false, false]), data);
        assert_eq!(
            table.rebuild(&[true, false]),
            vec![0x05, 0x05, 0x03, 0, b'c', 0]
        );
    }

    #[test]
    fn sizes_must_cover_the_data() {
        let data = [0x03, 0x07, b'a', b'b', 0, b'x'];
        assert!(StringTable::parse(&data, 0).is_err());
        let data = [0x03, 0x01];
        assert!(StringTable::parse(&data, 0).is_err());
    }
}
