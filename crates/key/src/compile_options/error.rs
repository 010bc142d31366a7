//! One error type for everything this module reads: protobuf bytes and JSON text.
//!
//! A key that cannot be computed must say exactly where the input went wrong, so every
//! protobuf error carries the absolute byte offset in the input and the field path that was
//! being read (`executable_build_options.debug_options.xla_dump_to`), and every JSON error
//! carries a line and column.

/// Why compile options could not be read, normalized or canonicalized.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum OptionsError {
    /// The input ended inside a key, a value or a group.
    #[error("truncated {what} at byte {offset} in {}", place(.path))]
    Truncated {
        what: &'static str,
        offset: usize,
        path: String,
    },
    /// A varint longer than 10 bytes, or one that overflows 64 bits.
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
    /// A length-delimited field whose length runs past the end of its enclosing message.
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
    /// Groups nested deeper than [`MAX_GROUP_DEPTH`](super::wire::MAX_GROUP_DEPTH).
    #[error("groups nested deeper than {limit} at byte {offset} in {}", place(.path))]
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
    /// Well-formed protobuf, but a field we interpret has the wrong wire type.
    #[error("not a CompileOptionsProto: {reason} at byte {offset} in {}", place(.path))]
    NotCompileOptions {
        reason: String,
        offset: usize,
        path: String,
    },
    /// A device assignment that XLA itself would refuse to deserialize.
    #[error("invalid device assignment at byte {offset} in {}: {reason}", place(.path))]
    BadDeviceAssignment {
        reason: String,
        offset: usize,
        path: String,
    },
    /// JSON that serde_json cannot parse.
    #[error("invalid json at line {line}, column {column}: {message}")]
    Json {
        message: String,
        line: usize,
        column: usize,
    },
    /// An ignored-key path such as `a..b` or a trailing backslash.
    #[error("bad ignored key {key:?}: {reason}")]
    BadIgnoredKey { key: String, reason: &'static str },
}

impl OptionsError {
    /// The same error, placed at another field path (protobuf errors only).
    pub(crate) fn with_path(mut self, new_path: String) -> Self {
        match &mut self {
            OptionsError::Truncated { path, .. }
            | OptionsError::BadVarint { path, .. }
            | OptionsError::InvalidWireType { path, .. }
            | OptionsError::InvalidFieldNumber { path, .. }
            | OptionsError::LengthPastEnd { path, .. }
            | OptionsError::TooDeep { path, .. }
            | OptionsError::UnmatchedEndGroup { path, .. }
            | OptionsError::NotCompileOptions { path, .. }
            | OptionsError::BadDeviceAssignment { path, .. } => *path = new_path,
            OptionsError::Json { .. } | OptionsError::BadIgnoredKey { .. } => {}
        }
        self
    }
}

/// How a field path reads in an error: the root message has the empty path.
fn place(path: &str) -> &str {
    if path.is_empty() {
        "CompileOptionsProto"
    } else {
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_lowercase_name_offset_and_path() {
        let e = OptionsError::BadVarint {
            offset: 12,
            path: "executable_build_options".into(),
        };
        assert_eq!(
            e.to_string(),
            "bad varint at byte 12 in executable_build_options"
        );
        let root = OptionsError::Truncated {
            what: "key",
            offset: 0,
            path: String::new(),
        };
        assert_eq!(
            root.to_string(),
            "truncated key at byte 0 in CompileOptionsProto"
        );
    }
}
