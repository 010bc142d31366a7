//! The protobuf wire format, one field at a time, with no generated structs.
//!
//! Generated structs drop what they do not know; a cache key must not. A message here is an
//! ordered list of [`Field`]s, each keeping its exact encoded bytes (borrowed from the input, or
//! owned once rewritten) and its absolute offset, so a field no table names is written back
//! byte for byte and an error can say where it is. Lengths are checked against what remains
//! before anything is sliced, so a hostile length never allocates or reads past the end.
//!
//! - [`read`]: [`parse`] a message into fields, [`read_varint`] inside packed values;
//! - [`write`]: canonical encodings of new fields, and fields written back in order;
//! - [`schema`]: the tables that name and type a message's fields;
//! - [`error`]: [`WireError`], and [`error_type!`], which gives a crate its own error enum
//!   with the wire variants spelled once, here.

pub mod error;
pub mod read;
pub mod schema;
pub mod write;

pub use error::{Problem, WireError, place};
pub use prost::encoding::WireType;
pub use read::{Field, MAX_GROUP_DEPTH, parse, read_varint};
pub use write::{join, put_fixed, put_len, put_raw_varint, put_varint, sort_by_number, write};
