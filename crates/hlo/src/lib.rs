//! Canonical XLA `HloModuleProto` bytes for cache keys, at the protobuf wire level.
//!
//! JAX, torch-xla and the Neuron stack hand compilers a serialized `xla.HloModuleProto`. Two
//! checkouts of one program lower to protos that differ only in debug information (each
//! instruction's `OpMetadata` source file, line and column, and their end, or its
//! `stack_frame_id`, and the module's `StackFrameIndexProto`) and in ids (the module's, from a
//! per-process counter; computations' and instructions', from wherever the frontend's counters
//! stood). [`canonicalize`] clears exactly the debug fields (unless
//! [`Options::keep_locations`]), renumbers the ids in a canonical order with every reference
//! rewritten (unless [`Options::keep_ids`]; see `ids.rs`), keeps every other field, including
//! fields this crate's table does not know, and encodes the result deterministically, so the
//! bytes can be a cache key's computation entry.
//!
//! - [`schema`]: the field table (from jaxlib 0.12.0.1's own descriptors; the revision is
//!   recorded there);
//! - [`canonicalize`], [`Canonical`], [`Report`];
//! - [`tree::decode`]: the bytes decoded with the table (field names and values);
//! - [`sniff`]: whether some bytes are an HloModuleProto rather than MLIR.
//!
//! Malformed input (truncated, wrong wire types, lengths past the end) is an [`HloError`]
//! naming the byte offset and field path; nothing here panics or allocates more than the input
//! holds. The wire format itself is mck-protowire's.

mod canon;
mod error;
mod ids;
pub mod schema;
mod text;
pub mod tree;

use mck_protowire as wire;

pub use canon::{Canonical, Options, Report, canonicalize};
pub use error::HloError;
pub use text::to_text;

/// Whether `bytes` look like a serialized HloModuleProto: they parse as protobuf, every known
/// top-level field has its wire type, and there is a name and at least one computation.
/// MLIR text and bytecode do not (bytecode starts with `ML\xefR`, which is no valid key).
pub fn sniff(bytes: &[u8]) -> bool {
    if bytes.starts_with(b"ML\xefR") {
        return false;
    }
    let Ok(fields) = wire::parse(bytes, 0) else {
        return false;
    };
    let mut computations = 0;
    let mut name = false;
    for f in &fields {
        if let Some(info) = schema::lookup(schema::Msg::HloModule, f.number)
            && !info.accepts(f.wire_type)
        {
            return false;
        }
        match f.number {
            1 => name = std::str::from_utf8(f.payload()).is_ok(),
            3 => {
                if wire::parse(f.payload(), 0).is_err() {
                    return false;
                }
                computations += 1;
            }
            _ => {}
        }
    }
    name && computations > 0
}
