//! Names, numbers and kinds of the fields we read, as data.
//!
//! Field numbers are facts of XLA's public `.proto` files; this table is what lets the text view
//! say `xla_dump_to` instead of `#109` and lets normalization know that field 109 is a string.
//! Fields that are not here are still carried through untouched: a newer XLA's fields reach the
//! key even before this table learns their names.
//!
//! Source of the facts: the protobuf descriptors that jaxlib 0.12.0.1 (the JAX release of the
//! parity vectors) carries for `xla/pjrt/proto/compile_options.proto`, `xla/xla.proto` and
//! `xla/xla_data.proto`, checked against those files in openxla/xla. Only the messages on the
//! normalization path are described; other message-typed fields are [`Kind::Opaque`].

use super::debug_options_table::DEBUG_OPTIONS;

use mck_protowire::schema as table;
pub use mck_protowire::schema::Card;
pub(super) use mck_protowire::schema::{many, map, one};

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
    match msg {
        Msg::CompileOptions => COMPILE_OPTIONS,
        Msg::ExecutableBuildOptions => EXECUTABLE_BUILD_OPTIONS,
        Msg::OptionOverride => OPTION_OVERRIDE,
        Msg::EnvOptionOverridesEntry => ENV_OPTION_OVERRIDES_ENTRY,
        Msg::DebugOptions => DEBUG_OPTIONS,
        Msg::DeviceAssignment => DEVICE_ASSIGNMENT,
        Msg::ComputationDevice => COMPUTATION_DEVICE,
        Msg::ThunkBufferDebugFilter => THUNK_BUFFER_DEBUG_FILTER,
        Msg::IntRangeInclusive => INT_RANGE_INCLUSIVE,
        Msg::CollectiveFilter => COLLECTIVE_FILTER,
        Msg::StringMapEntry => STRING_MAP_ENTRY,
    }
}

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

pub(super) static COMPILE_OPTIONS: &[FieldInfo] = &[
    many(1, "argument_layouts", Kind::Opaque("xla.ShapeProto")),
    one(2, "parameter_is_tupled_arguments", Kind::Bool),
    one(
        3,
        "executable_build_options",
        Kind::Msg(Msg::ExecutableBuildOptions),
    ),
    one(4, "compile_portable_executable", Kind::Bool),
    one(5, "profile_version", Kind::Int64),
    one(6, "serialized_multi_slice_config", Kind::Bytes),
    map(7, "env_option_overrides", Msg::EnvOptionOverridesEntry),
    one(
        8,
        "target_config",
        Kind::Opaque("stream_executor.GpuTargetConfigProto"),
    ),
    one(9, "allow_in_place_mlir_modification", Kind::Bool),
    one(10, "matrix_unit_operand_precision", Kind::Enum),
    one(11, "compiler_variant", Kind::Str),
    many(12, "individually_defined_output_indices", Kind::Int32),
];

pub(super) static EXECUTABLE_BUILD_OPTIONS: &[FieldInfo] = &[
    one(1, "device_ordinal", Kind::Int64),
    one(2, "result_layout", Kind::Opaque("xla.ShapeProto")),
    one(3, "debug_options", Kind::Msg(Msg::DebugOptions)),
    one(4, "num_replicas", Kind::Int64),
    one(5, "num_partitions", Kind::Int64),
    one(6, "use_spmd_partitioning", Kind::Bool),
    one(7, "use_auto_spmd_partitioning", Kind::Bool),
    one(8, "deduplicate_hlo", Kind::Bool),
    one(9, "device_assignment", Kind::Msg(Msg::DeviceAssignment)),
    one(10, "alias_passthrough_params", Kind::Bool),
    one(11, "run_backend_only", Kind::Bool),
    many(12, "allow_spmd_sharding_propagation_to_output", Kind::Bool),
    one(
        13,
        "comp_envs",
        Kind::Opaque("xla.CompilationEnvironmentsProto"),
    ),
    one(14, "fdo_profile", Kind::Bytes),
    one(15, "device_memory_size", Kind::Int64),
    many(16, "auto_spmd_partitioning_mesh_shape", Kind::Int64),
    many(17, "auto_spmd_partitioning_mesh_ids", Kind::Int64),
    many(
        18,
        "allow_spmd_sharding_propagation_to_parameters",
        Kind::Bool,
    ),
    one(19, "use_shardy_partitioner", Kind::Bool),
    one(22, "process_index", Kind::Int64),
    one(23, "process_count", Kind::Int64),
    one(24, "optimization_level", Kind::Enum),
    one(25, "memory_fitting_level", Kind::Enum),
    one(27, "gpu_topology", Kind::Opaque("xla.GpuTopologyProto")),
];

pub(super) static OPTION_OVERRIDE: &[FieldInfo] = &[
    one(1, "string_field", Kind::Str),
    one(2, "bool_field", Kind::Bool),
    one(3, "int_field", Kind::Int64),
    one(4, "double_field", Kind::Double),
];

pub(super) static ENV_OPTION_OVERRIDES_ENTRY: &[FieldInfo] = &[
    one(1, "key", Kind::Str),
    one(2, "value", Kind::Msg(Msg::OptionOverride)),
];

pub(super) static DEVICE_ASSIGNMENT: &[FieldInfo] = &[
    one(1, "replica_count", Kind::Int32),
    one(2, "computation_count", Kind::Int32),
    many(3, "computation_devices", Kind::Msg(Msg::ComputationDevice)),
];

pub(super) static COMPUTATION_DEVICE: &[FieldInfo] = &[many(1, "replica_device_ids", Kind::Int64)];

pub(super) static THUNK_BUFFER_DEBUG_FILTER: &[FieldInfo] = &[
    many(1, "thunk_id_ranges", Kind::Msg(Msg::IntRangeInclusive)),
    many(2, "profile_annotation_regexes", Kind::Str),
];

pub(super) static INT_RANGE_INCLUSIVE: &[FieldInfo] =
    &[one(1, "first", Kind::Int64), one(2, "last", Kind::Int64)];

pub(super) static COLLECTIVE_FILTER: &[FieldInfo] = &[
    one(1, "collective", Kind::Enum),
    one(2, "max_size_bytes", Kind::Int64),
    one(3, "op_type", Kind::Enum),
];

pub(super) static STRING_MAP_ENTRY: &[FieldInfo] =
    &[one(1, "key", Kind::Str), one(2, "value", Kind::Str)];

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Msg; 11] = [
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

    #[test]
    fn tables_are_sorted_unique_and_in_range() {
        for msg in ALL {
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
