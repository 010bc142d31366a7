//! A bounds-checked cursor over a slice of the payload. Every read either
//! succeeds or returns an error that names the absolute offset and the numbers
//! involved; nothing here can panic or allocate in proportion to a count read
//! from the input.

use super::error::{BytecodeError, Result};
use super::varint;

/// A cursor over `data`, whose first byte is at absolute offset `base`.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    /// A cursor at the start of `data`, which begins at absolute offset `base`.
    pub fn new(data: &'a [u8], base: usize) -> Self {
        Reader { data, pos: 0, base }
    }

    /// Absolute offset of the next byte.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// Whether everything has been read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The unread bytes, without consuming them.
    pub fn rest(&self) -> &'a [u8] {
        &self.data[self.pos..]
    }

    fn truncated(&self, what: &'static str, needed: u64) -> BytecodeError {
        BytecodeError::Truncated {
            what,
            offset: self.offset(),
            needed,
            remaining: self.remaining(),
        }
    }

    /// Reads one byte.
    pub fn byte(&mut self, what: &'static str) -> Result<u8> {
        let b = *self
            .data
            .get(self.pos)
            .ok_or_else(|| self.truncated(what, 1))?;
        self.pos += 1;
        Ok(b)
    }

    /// Reads `len` bytes.
    pub fn bytes(&mut self, len: u64, what: &'static str) -> Result<&'a [u8]> {
        let n = usize::try_from(len)
            .ok()
            .filter(|&n| n <= self.remaining())
            .ok_or_else(|| self.truncated(what, len))?;
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Reads a varint (any valid form, as the upstream reader does).
    pub fn varint(&mut self, what: &'static str) -> Result<u64> {
        match varint::decode(self.rest()) {
            Some((value, len)) => {
                self.pos += len;
                Ok(value)
            }
            None => {
                let needed = match self.rest().first() {
                    None => 1,
                    Some(0) => 9,
                    Some(b) => u64::from(b.trailing_zeros()) + 1,
                };
                Err(self.truncated(what, needed))
            }
        }
    }

    /// Reads a varint holding `(value << 1) | flag`.
    pub fn varint_with_flag(&mut self, what: &'static str) -> Result<(u64, bool)> {
        let raw = self.varint(what)?;
        Ok((raw >> 1, raw & 1 == 1))
    }

    /// Reads a count of elements each at least `min_elem_size` bytes long, and
    /// refuses counts the remaining bytes cannot hold.
    pub fn count(&mut self, what: &'static str, min_elem_size: usize) -> Result<u64> {
        let offset = self.offset();
        let count = self.varint(what)?;
        self.count_of(what, count, min_elem_size, offset)
    }

    /// Checks a count already read at `offset`, as [`Reader::count`] does.
    pub fn count_of(
        &self,
        what: &'static str,
        count: u64,
        min_elem_size: usize,
        offset: usize,
    ) -> Result<u64> {
        let fits = u128::from(count) * min_elem_size as u128 <= self.remaining() as u128;
        if !fits {
            return Err(BytecodeError::CountTooLarge {
                what,
                count,
                remaining: self.remaining(),
                offset,
            });
        }
        Ok(count)
    }

    /// Reads an index and checks it against the size of its table.
    pub fn index(&mut self, what: &'static str, table_len: usize) -> Result<usize> {
        let offset = self.offset();
        let index = self.varint(what)?;
        check_index(what, index, table_len, offset)
    }

    /// Reads a NUL-terminated string, returning it without the NUL.
    pub fn nul_terminated(&mut self, what: &'static str) -> Result<&'a [u8]> {
        let rest = self.rest();
        let len = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| BytecodeError::Malformed {
                offset: self.offset(),
                message: format!("no nul terminator for the {what}"),
            })?;
        self.pos += len + 1;
        Ok(&rest[..len])
    }

    /// An error at the current offset.
    pub fn malformed(&self, message: impl Into<String>) -> BytecodeError {
        BytecodeError::Malformed {
            offset: self.offset(),
            message: message.into(),
        }
    }
}

/// Checks `index < table_len`, returning it as a `usize`.
pub fn check_index(
    what: &'static str,
    index: u64,
    table_len: usize,
    offset: usize,
) -> Result<usize> {
    usize::try_from(index)
        .ok()
        .filter(|&i| i < table_len)
        .ok_or(BytecodeError::InvalidIndex {
            what,
            index,
            count: table_len,
            offset,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_read_names_offset_and_numbers() {
        let mut r = Reader::new(&[1, 2, 3], 0x1f0);
        let err = r.bytes(12, "blob").unwrap_err();
        assert_eq!(
            err.to_string(),
            "attempting to parse 12 bytes when only 3 remain at offset 0x1f0 (blob)"
        );
    }

    #[test]
    fn huge_counts_are_refused() {
        // 2^56 as a nine-byte varint, then nothing.
        let data = [0u8, 0, 0, 0, 0, 0, 0, 0, 1];
        let err = Reader::new(&data, 0).count("string", 1).unwrap_err();
        assert!(matches!(err, BytecodeError::CountTooLarge { .. }), "{err}");
    }

    #[test]
    fn truncated_varint() {
        let err = Reader::new(&[0x00, 1, 2], 4).varint("len").unwrap_err();
        assert!(
            err.to_string()
                .contains("attempting to parse 9 bytes when only 3 remain at offset 0x4")
        );
    }
}
