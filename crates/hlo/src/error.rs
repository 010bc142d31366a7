//! Why an HloModuleProto could not be canonicalized: always where (the absolute byte offset in
//! the input) and in which field (`computations[1].instructions[4].metadata.source_line`).

/// A malformed or unexpected HloModuleProto.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum HloError {
    /// The input ended inside a key, a value or a group.
    #[error("truncated {what} at byte {offset} in {}", place(.path))]
    Truncated {
        what: &'static str,
        offset: usize,
        path: String,
    },
    /// A varint longer than 10 bytes.
    #[error("bad varint at byte {offset} in {}", place(.path))]
    BadVarint { offset: usize, path: String },
    /// A key whose low three bits are 6 or 7.
    #[error("invalid wire type {wire_type} at byte {offset} in {}", place(.path))]
    InvalidWireType {
        wire_type: u64,
        offset: usize,
        path: String,
    },
    /// Field number 0, or one above 2^29 - 1.
    #[error("invalid field number {number} at byte {offset} in {}", place(.path))]
    InvalidFieldNumber {
        number: u64,
        offset: usize,
        path: String,
    },
    /// A length that runs past the end of its enclosing message.
    #[error(
        "length {length} at byte {offset} in {} runs past the end of the message ({remaining} bytes remain)",
        place(.path)
    )]
    LengthPastEnd {
        length: u64,
        remaining: usize,
        offset: usize,
        path: String,
    },
    /// Start-group/end-group pairs nested too deep, or messages nested too deep.
    #[error("nested deeper than {limit} at byte {offset} in {}", place(.path))]
    TooDeep {
        limit: usize,
        offset: usize,
        path: String,
    },
    /// An end-group key with no matching start-group key.
    #[error("unmatched end-group key for field {number} at byte {offset} in {}", place(.path))]
    UnmatchedEndGroup {
        number: u32,
        offset: usize,
        path: String,
    },
    /// Well-formed protobuf, but not an HloModuleProto: a known field with the wrong wire type,
    /// a string that is not UTF-8.
    #[error("not an HloModuleProto: {reason} at byte {offset} in {}", place(.path))]
    NotHlo {
        reason: String,
        offset: usize,
        path: String,
    },
}

impl HloError {
    /// The same error, placed at another field path.
    pub(crate) fn at(mut self, new_path: &str) -> Self {
        match &mut self {
            HloError::Truncated { path, .. }
            | HloError::BadVarint { path, .. }
            | HloError::InvalidWireType { path, .. }
            | HloError::InvalidFieldNumber { path, .. }
            | HloError::LengthPastEnd { path, .. }
            | HloError::TooDeep { path, .. }
            | HloError::UnmatchedEndGroup { path, .. }
            | HloError::NotHlo { path, .. } => *path = new_path.to_string(),
        }
        self
    }

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

/// How a field path reads in an error: the root message has the empty path.
fn place(path: &str) -> &str {
    if path.is_empty() {
        "HloModuleProto"
    } else {
        path
    }
}
