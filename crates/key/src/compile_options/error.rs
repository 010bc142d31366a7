//! One error type for everything this module reads: protobuf bytes and JSON text.
//!
//! A key that cannot be computed must say exactly where the input went wrong, so every
//! protobuf error carries the absolute byte offset in the input and the field path that was
//! being read (`executable_build_options.debug_options.xla_dump_to`), and every JSON error
//! carries a line and column. The wire variants are mck-protowire's; the ones below are this
//! module's own.

use mck_protowire::place;

mck_protowire::error_type! {
    /// Why compile options could not be read, normalized or canonicalized.
    pub enum OptionsError (root "CompileOptionsProto") {
        /// Well-formed protobuf, but a field we interpret has the wrong wire type.
        #[error("not a CompileOptionsProto: {reason} at byte {offset} in {}", place(.path, "CompileOptionsProto"))]
        NotCompileOptions {
            reason: String,
            offset: usize,
            path: String,
        },
        /// A device assignment that XLA itself would refuse to deserialize.
        #[error("invalid device assignment at byte {offset} in {}: {reason}", place(.path, "CompileOptionsProto"))]
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
