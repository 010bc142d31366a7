//! What can be wrong with protobuf bytes, where, and an error enum for each reader built on it.
//!
//! The reader reports a [`WireError`]: the [`Problem`], its absolute byte offset, and the field
//! whose value it was in. A crate that reads one kind of message names the field path and the
//! root message in its own error type, declared with [`error_type!`](crate::error_type), so the
//! wire variants and their messages exist once.

/// What is wrong with the bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The input ended inside a key (`"key"`), a value or a group.
    Truncated(&'static str),
    /// A varint longer than 10 bytes, or one that overflows 64 bits.
    BadVarint,
    /// A key whose low three bits are 6 or 7.
    InvalidWireType(u64),
    /// Field number 0, or one above 2^29 - 1.
    InvalidFieldNumber(u64),
    /// A length that runs past the end of its enclosing message.
    LengthPastEnd { length: u64, remaining: usize },
    /// Groups nested deeper than [`MAX_GROUP_DEPTH`](crate::MAX_GROUP_DEPTH).
    TooDeep { limit: usize },
    /// An end-group key with no matching start-group key.
    UnmatchedEndGroup(u32),
}

/// A problem at a place in the outermost input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError {
    pub problem: Problem,
    /// Absolute byte offset.
    pub offset: usize,
    /// The field whose value (or group content) the problem is in; `None` when the problem is in
    /// a key itself, or the bytes were not read as a message's fields.
    pub field: Option<u32>,
}

impl WireError {
    pub(crate) fn new(problem: Problem, offset: usize) -> Self {
        WireError {
            problem,
            offset,
            field: None,
        }
    }
}

/// How a field path reads in an error: the root message (`root`) has the empty path.
pub fn place<'a>(path: &'a str, root: &'a str) -> &'a str {
    if path.is_empty() { root } else { path }
}

/// Declares a crate's error enum: the wire variants, each with its offset and field path, worded
/// once here, then the crate's own variants; `root` names the message an empty path is in.
/// Adds `from_wire`, which places a [`WireError`] at a field path.
///
/// The crate needs `thiserror` among its dependencies (the derive names it).
#[macro_export]
macro_rules! error_type {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident (root $root:literal) {
            $($own:tt)*
        }
    ) => {
        $(#[$meta])*
        #[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
        $vis enum $name {
            /// The input ended inside a key, a value or a group.
            #[error("truncated {what} at byte {offset} in {}", $crate::place(.path, $root))]
            Truncated {
                what: &'static str,
                offset: usize,
                path: String,
            },
            /// A varint longer than 10 bytes, or one that overflows 64 bits.
            #[error("bad varint at byte {offset} in {}", $crate::place(.path, $root))]
            BadVarint { offset: usize, path: String },
            /// A key whose low three bits are 6 or 7.
            #[error("invalid wire type {wire_type} at byte {offset} in {}", $crate::place(.path, $root))]
            InvalidWireType {
                wire_type: u64,
                offset: usize,
                path: String,
            },
            /// Field number 0, or one above 2^29 - 1.
            #[error("invalid field number {number} at byte {offset} in {}", $crate::place(.path, $root))]
            InvalidFieldNumber {
                number: u64,
                offset: usize,
                path: String,
            },
            /// A length that runs past the end of its enclosing message.
            #[error(
                "length {length} at byte {offset} in {} runs past the end of the message ({remaining} bytes remain)",
                $crate::place(.path, $root)
            )]
            LengthPastEnd {
                length: u64,
                remaining: usize,
                offset: usize,
                path: String,
            },
            /// Groups nested deeper than [`MAX_GROUP_DEPTH`]($crate::MAX_GROUP_DEPTH).
            #[error("groups nested deeper than {limit} at byte {offset} in {}", $crate::place(.path, $root))]
            TooDeep {
                limit: usize,
                offset: usize,
                path: String,
            },
            /// An end-group key with no matching start-group key.
            #[error("unmatched end-group key for field {number} at byte {offset} in {}", $crate::place(.path, $root))]
            UnmatchedEndGroup {
                number: u32,
                offset: usize,
                path: String,
            },
            $($own)*
        }

        impl $name {
            /// A wire reader's error, placed at the field path `path`.
            pub fn from_wire(e: $crate::WireError, path: String) -> Self {
                let offset = e.offset;
                match e.problem {
                    $crate::Problem::Truncated(what) => $name::Truncated { what, offset, path },
                    $crate::Problem::BadVarint => $name::BadVarint { offset, path },
                    $crate::Problem::InvalidWireType(wire_type) => {
                        $name::InvalidWireType { wire_type, offset, path }
                    }
                    $crate::Problem::InvalidFieldNumber(number) => {
                        $name::InvalidFieldNumber { number, offset, path }
                    }
                    $crate::Problem::LengthPastEnd { length, remaining } => $name::LengthPastEnd {
                        length,
                        remaining,
                        offset,
                        path,
                    },
                    $crate::Problem::TooDeep { limit } => $name::TooDeep { limit, offset, path },
                    $crate::Problem::UnmatchedEndGroup(number) => {
                        $name::UnmatchedEndGroup { number, offset, path }
                    }
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::error_type! {
        /// An error type as a crate declares it.
        enum TestError (root "TestProto") {
            /// One of the crate's own.
            #[error("odd at byte {offset}")]
            Odd { offset: usize },
        }
    }

    #[test]
    fn wire_errors_are_placed_and_worded_once() {
        let e = WireError::new(Problem::Truncated("key"), 0);
        assert_eq!(
            TestError::from_wire(e, String::new()).to_string(),
            "truncated key at byte 0 in TestProto"
        );
        let e = WireError::new(Problem::BadVarint, 12);
        assert_eq!(
            TestError::from_wire(e, "a.b".into()).to_string(),
            "bad varint at byte 12 in a.b"
        );
        assert_eq!(TestError::Odd { offset: 3 }.to_string(), "odd at byte 3");
    }
}
