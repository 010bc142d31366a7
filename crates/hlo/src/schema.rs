//! Names, numbers and kinds of the fields of the messages we open, as data.
//!
//! **Revision.** The facts are those of `xla/service/hlo.proto` and `xla/xla_data.proto`
//! (`OpMetadata`) as compiled into jaxlib 0.12.0.1, the build of JAX 0.12 (jax commit
//! `dc4af684446e65ee98eee8090e1ff6f8211473fb`, whose `third_party/xla/revision.bzl` pins the
//! XLA commit): they were read from the protobuf descriptors that `jaxlib/libjax_common.so`
//! carries, so they are exactly that XLA revision's. `scripts/gen-hlo-testdata.py` writes them
//! to `fields.txt` next to this file, one field a line, and the table is read from it.
//!
//! Only the messages on the canonicalization path are described (the module, its computations
//! and instructions, `OpMetadata`, the stack-frame index, the schedule and frontend attributes);
//! every other message-typed field is [`Kind::Opaque`] and kept byte for byte. Fields that are
//! not here at all (a newer XLA's) are kept too.

use std::sync::LazyLock;

use mck_protowire::schema as table;
pub use mck_protowire::schema::Card;

/// The scalar or message kind of a field (mck-protowire's, over this table's messages).
pub type Kind = table::Kind<Msg>;

/// One field of a described message.
pub type FieldInfo = table::FieldInfo<Msg>;

/// The messages this table describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Msg {
    HloModule,
    HloComputation,
    HloInstruction,
    OpMetadata,
    StackFrameIndex,
    FileLocation,
    StackFrame,
    HloSchedule,
    SequencesEntry,
    InstructionSequence,
    FrontendAttributes,
    FrontendAttributesEntry,
}

/// Every described message.
pub const ALL: [Msg; 12] = [
    Msg::HloModule,
    Msg::HloComputation,
    Msg::HloInstruction,
    Msg::OpMetadata,
    Msg::StackFrameIndex,
    Msg::FileLocation,
    Msg::StackFrame,
    Msg::HloSchedule,
    Msg::SequencesEntry,
    Msg::InstructionSequence,
    Msg::FrontendAttributes,
    Msg::FrontendAttributesEntry,
];

impl Msg {
    /// The proto message name (nested messages as `Outer.Inner`).
    pub fn proto_name(self) -> &'static str {
        match self {
            Msg::HloModule => "HloModuleProto",
            Msg::HloComputation => "HloComputationProto",
            Msg::HloInstruction => "HloInstructionProto",
            Msg::OpMetadata => "OpMetadata",
            Msg::StackFrameIndex => "StackFrameIndexProto",
            Msg::FileLocation => "StackFrameIndexProto.FileLocation",
            Msg::StackFrame => "StackFrameIndexProto.StackFrame",
            Msg::HloSchedule => "HloScheduleProto",
            Msg::SequencesEntry => "HloScheduleProto.SequencesEntry",
            Msg::InstructionSequence => "HloScheduleProto.InstructionSequence",
            Msg::FrontendAttributes => "FrontendAttributes",
            Msg::FrontendAttributesEntry => "FrontendAttributes.MapEntry",
        }
    }
}

/// The debug information canonicalization clears (unless locations are kept): where each
/// instruction came from in the frontend's source, and the module's table of stack frames.
/// None of it reaches the compiled program.
pub const DEBUG_FIELDS: [(Msg, u32); 7] = [
    (Msg::OpMetadata, 3),  // source_file
    (Msg::OpMetadata, 4),  // source_line
    (Msg::OpMetadata, 15), // stack_frame_id
    (Msg::OpMetadata, 17), // source_end_line
    (Msg::OpMetadata, 18), // source_column
    (Msg::OpMetadata, 19), // source_end_column
    (Msg::HloModule, 17),  // stack_frame_index
];

/// Whether canonicalization clears this field.
pub fn is_debug(msg: Msg, number: u32) -> bool {
    DEBUG_FIELDS.contains(&(msg, number))
}

/// The fields of `msg`, sorted by number.
pub fn fields(msg: Msg) -> &'static [FieldInfo] {
    TABLES.get(msg as usize).map_or(&[], Vec::as_slice)
}

/// The tables, by message (in the order of [`ALL`]), read once from `fields.txt`.
static TABLES: LazyLock<Vec<Vec<FieldInfo>>> = LazyLock::new(|| {
    let tables = table::parse_tables(include_str!("fields.txt"), "xla.", &ALL, |m, name| {
        m.proto_name() == name
    });
    // The file is part of the build, and the tests read it whole.
    tables.unwrap_or_else(|e| panic!("crates/hlo/src/fields.txt: {e}"))
});

/// The field of `msg` with this number, if the table knows it.
pub fn lookup(msg: Msg, number: u32) -> Option<&'static FieldInfo> {
    table::lookup(fields(msg), number)
}

/// A varint as its kind reads it: bools are 0 or 1, 32-bit values sign-extended (the 5- and
/// 10-byte encodings of a negative int32 are one value).
pub(crate) fn normalize(kind: Kind, v: u64) -> u64 {
    match kind {
        Kind::Bool => u64::from(v != 0),
        Kind::Int32 | Kind::Enum => i64::from(v as i32) as u64,
        _ => v,
    }
}

/// A field's name for paths and errors: its table name, or `#<number>` when unknown.
pub fn field_name(msg: Msg, number: u32) -> String {
    table::name_of(lookup(msg, number), number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_unique_and_nonempty() {
        for (i, msg) in ALL.into_iter().enumerate() {
            assert_eq!(msg as usize, i, "ALL is in declaration order");
            assert_eq!(table::sorted(fields(msg)), Ok(()), "{msg:?}");
        }
    }

    #[test]
    fn debug_fields_are_in_the_table() {
        for (msg, number) in DEBUG_FIELDS {
            assert!(lookup(msg, number).is_some(), "{msg:?} #{number}");
        }
        assert_eq!(field_name(Msg::OpMetadata, 15), "stack_frame_id");
        assert_eq!(field_name(Msg::HloModule, 999), "#999");
    }
}
