//! Names, numbers and kinds of the fields we read, as data.
//!
//! Field numbers are facts of XLA's public `.proto` files; this table is what lets the text view
//! say `xla_dump_to` instead of `#109` and lets normalization know that field 109 is a string.
//! Fields that are not here are still carried through untouched: a newer XLA's fields reach the
//! key even before this table learns their names.
//!
//! Source of the facts: the protobuf descriptors that jaxlib 0.12.0.1 (the JAX release of the
//! parity vectors) carries for `xla/pjrt/proto/compile_options.proto`, `xla/xla.proto` and
//! `xla/xla_data.proto`, written one field a line to `fields.txt` next to this file by
//! `scripts/gen-hlo-testdata.py --tables` and read from it. Only the messages on the
//! normalization path are described; other message-typed fields are [`Kind::Opaque`].

use std::sync::LazyLock;

use mck_protowire::schema as table;
pub use mck_protowire::schema::Card;

/// The scalar or message kind of a field (mck-protowire's, over this table's messages).
pub type Kind = table::Kind<Msg>;

/// One field: number, name, kind and cardinality.
pub type FieldInfo = table::FieldInfo<Msg>;

/// The messages this table describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Msg {
    CompileOptions,
    ExecutableBuildOptions,
    OptionOverride,
    EnvOptionOverridesEntry,
    DebugOptions,
    DeviceAssignment,
    ComputationDevice,
    ThunkBufferDebugFilter,
    IntRangeInclusive,
    CollectiveFilter,
    /// The entry of every `map<string, string>` in DebugOptions.
    StringMapEntry,
}

/// The fields of `msg`, sorted by number.
pub fn fields(msg: Msg) -> &'static [FieldInfo] {
    TABLES.get(msg as usize).map_or(&[], Vec::as_slice)
}

/// Every described message, in declaration order.
pub const ALL: [Msg; 11] = [
    Msg::CompileOptions,
    Msg::ExecutableBuildOptions,
    Msg::OptionOverride,
    Msg::EnvOptionOverridesEntry,
    Msg::DebugOptions,
    Msg::DeviceAssignment,
    Msg::ComputationDevice,
    Msg::ThunkBufferDebugFilter,
    Msg::IntRangeInclusive,
    Msg::CollectiveFilter,
    Msg::StringMapEntry,
];

impl Msg {
    /// Whether `name` (a proto message name, package left out) is this message.
    fn is(self, name: &str) -> bool {
        match self {
            Msg::CompileOptions => name == "CompileOptionsProto",
            Msg::ExecutableBuildOptions => name == "ExecutableBuildOptionsProto",
            Msg::OptionOverride => name == "OptionOverrideProto",
            Msg::EnvOptionOverridesEntry => name == "CompileOptionsProto.EnvOptionOverridesEntry",
            Msg::DebugOptions => name == "DebugOptions",
            Msg::DeviceAssignment => name == "DeviceAssignmentProto",
            Msg::ComputationDevice => name == "DeviceAssignmentProto.ComputationDevice",
            Msg::ThunkBufferDebugFilter => name == "ThunkBufferDebugFilter",
            Msg::IntRangeInclusive => name == "IntRangeInclusive",
            Msg::CollectiveFilter => name == "DebugOptions.CollectiveFilter",
            // Every map<string, string> of DebugOptions has its own entry type, all alike.
            Msg::StringMapEntry => name.starts_with("DebugOptions.") && name.ends_with("Entry"),
        }
    }
}

/// The tables, by message (in the order of [`ALL`]), read once from `fields.txt`.
static TABLES: LazyLock<Vec<Vec<FieldInfo>>> = LazyLock::new(|| {
    let tables = table::parse_tables(include_str!("fields.txt"), "xla.", &ALL, |m, name| {
        m.is(name)
    });
    // The file is part of the build, and the tests read it whole.
    tables.unwrap_or_else(|e| panic!("crates/key/src/compile_options/fields.txt: {e}"))
});

/// The field of `msg` with this number, if the table knows it.
pub fn lookup(msg: Msg, number: u32) -> Option<&'static FieldInfo> {
    table::lookup(fields(msg), number)
}

/// The field of `msg` with this name, if the table knows it.
pub fn lookup_name(msg: Msg, name: &str) -> Option<&'static FieldInfo> {
    fields(msg).iter().find(|f| f.name == name)
}

/// A field's name for paths and errors: its table name, or `#<number>` when unknown.
pub fn field_name(msg: Option<Msg>, number: u32) -> String {
    table::name_of(msg.and_then(|m| lookup(m, number)), number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_unique_and_in_range() {
        for (i, msg) in ALL.into_iter().enumerate() {
            assert_eq!(msg as usize, i, "ALL is in declaration order");
            let t = fields(msg);
            assert_eq!(table::sorted(t), Ok(()), "{msg:?}");
            let mut names: Vec<_> = t.iter().map(|f| f.name).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), t.len(), "{msg:?} has a duplicate name");
        }
    }

    #[test]
    fn facts_spot_checked() {
        assert_eq!(
            lookup(Msg::DebugOptions, 109).map(|f| f.name),
            Some("xla_dump_to")
        );
        assert_eq!(
            lookup_name(Msg::DebugOptions, "xla_gpu_per_fusion_autotune_cache_dir")
                .map(|f| f.number),
            Some(310)
        );
        assert_eq!(
            lookup(Msg::ExecutableBuildOptions, 9).map(|f| f.kind),
            Some(Kind::Msg(Msg::DeviceAssignment))
        );
        assert_eq!(
            lookup(Msg::CompileOptions, 7).map(|f| f.card),
            Some(Card::Map)
        );
        assert_eq!(
            lookup(Msg::DebugOptions, 557).map(|f| f.name),
            Some("xla_gpu_experimental_enable_tensor_ir")
        );
        assert_eq!(fields(Msg::DebugOptions).len(), 349);
        assert_eq!(field_name(Some(Msg::DebugOptions), 9999), "#9999");
    }
}
