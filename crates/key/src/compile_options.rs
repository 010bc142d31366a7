//! Compile options (key entry 5): JAX-compatible normalization of a serialized
//! `xla.CompileOptionsProto`, a readable text view and a field-level diff to explain misses,
//! and a canonical form for the JSON options of other compilers.
//!
//! Everything works on the protobuf wire format with a table of field names and numbers
//! (`schema`), never generated structs, so fields this table does not know still reach the key.

mod diff;
mod error;
mod json;
mod normalize;
mod schema;
mod text;
mod wire;

pub use diff::{FieldDiff, diff};
pub use error::OptionsError;
pub use json::canonical_json;
pub use normalize::{
    Change, EXCLUDED_XLA_FLAGS, NormalizeOptions, Normalized, RESET_DEBUG_OPTIONS, normalize,
    normalize_with,
};
pub use schema::{Card, FieldInfo, Kind, Msg, field_name, fields, lookup, lookup_name};
pub use text::to_text;
pub use wire::MAX_GROUP_DEPTH;
