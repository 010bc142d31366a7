//! Why an HloModuleProto could not be canonicalized: always where (the absolute byte offset in
//! the input) and in which field (`computations[1].instructions[4].metadata.source_line`).
//! The wire variants are mck-protowire's; the ones below are this crate's own.

use mck_protowire::{WireError, place};

mck_protowire::error_type! {
    /// A malformed or unexpected HloModuleProto.
    pub enum HloError (root "HloModuleProto") {
        /// Well-formed protobuf, but not an HloModuleProto: a known field with the wrong wire
        /// type, a string that is not UTF-8.
        #[error("not an HloModuleProto: {reason} at byte {offset} in {}", place(.path, "HloModuleProto"))]
        NotHlo {
            reason: String,
            offset: usize,
            path: String,
        },
    }
}

/// A wire error in the root message (callers below the root use [`HloError::from_wire`]).
impl From<WireError> for HloError {
    fn from(e: WireError) -> Self {
        HloError::from_wire(e, String::new())
    }
}

impl HloError {
    /// The absolute byte offset the error is at.
    pub fn offset(&self) -> usize {
        match self {
            HloError::Truncated { offset, .. }
            | HloError::BadVarint { offset, .. }
            | HloError::InvalidWireType { offset, .. }
            | HloError::InvalidFieldNumber { offset, .. }
            | HloError::LengthPastEnd { offset, .. }
            | HloError::TooDeep { offset, .. }
            | HloError::UnmatchedEndGroup { offset, .. }
            | HloError::NotHlo { offset, .. } => *offset,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mck_protowire::{MAX_GROUP_DEPTH, parse};

    fn at(bytes: &[u8], base: usize, path: &str) -> HloError {
        HloError::from_wire(parse(bytes, base).unwrap_err(), path.into())
    }

    fn root(bytes: &[u8]) -> HloError {
        parse(bytes, 0).unwrap_err().into()
    }

    #[test]
    fn malformed_input_is_an_error_naming_the_place() {
        assert_eq!(
            at(&[0x08], 7, "computations[0]").to_string(),
            "truncated varint at byte 8 in computations[0]"
        );
        assert_eq!(
            root(&[0x0f]).to_string(),
            "invalid wire type 7 at byte 0 in HloModuleProto"
        );
        assert!(matches!(
            root(&[0x00]),
            HloError::InvalidFieldNumber { number: 0, .. }
        ));
        assert_eq!(
            root(&[0x1a, 0x05, 0x00]).to_string(),
            "length 5 at byte 1 in HloModuleProto runs past the end of the message (1 bytes remain)"
        );
        let huge = [0x1a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f];
        assert!(matches!(
            root(&huge),
            HloError::LengthPastEnd { remaining: 0, .. }
        ));
        let overlong = [
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ];
        assert!(matches!(
            root(&overlong),
            HloError::BadVarint { offset: 1, .. }
        ));
        assert!(matches!(
            root(&[0x0c]),
            HloError::UnmatchedEndGroup { number: 1, .. }
        ));
        assert!(matches!(
            root(&[0x0b, 0x08, 0x01]),
            HloError::Truncated { .. }
        ));
        let deep: Vec<u8> = std::iter::repeat_n(0x0b, MAX_GROUP_DEPTH + 1).collect();
        assert!(matches!(root(&deep), HloError::TooDeep { .. }));
        assert_eq!(root(&deep).offset(), MAX_GROUP_DEPTH);
    }
}
