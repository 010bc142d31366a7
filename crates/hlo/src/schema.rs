//! Names, numbers and kinds of the fields of the messages we open, as data.
//!
//! **Revision.** The facts are those of `xla/service/hlo.proto` and `xla/xla_data.proto`
//! (`OpMetadata`) as compiled into jaxlib 0.12.0.1, the build of JAX 0.12 (jax commit
//! `dc4af684446e65ee98eee8090e1ff6f8211473fb`, whose `third_party/xla/revision.bzl` pins the
//! XLA commit): they were read from the protobuf descriptors that `jaxlib/libjax_common.so`
//! carries, so they are exactly that XLA revision's. `scripts/gen-hlo-testdata.py` writes them
//! to `tests/data/hlo/fields.txt`, and a test checks this table against that file.
//!
//! Only the messages on the canonicalization path are described (the module, its computations
//! and instructions, `OpMetadata`, the stack-frame index, the schedule and frontend attributes);
//! every other message-typed field is [`Kind::Opaque`] and kept byte for byte. Fields that are
//! not here at all (a newer XLA's) are kept too.

pub use mck_protowire::schema::Card;
use mck_protowire::schema::{self as table, many, map, one, oneof};

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
    match msg {
        Msg::HloModule => HLO_MODULE,
        Msg::HloComputation => HLO_COMPUTATION,
        Msg::HloInstruction => HLO_INSTRUCTION,
        Msg::OpMetadata => OP_METADATA,
        Msg::StackFrameIndex => STACK_FRAME_INDEX,
        Msg::FileLocation => FILE_LOCATION,
        Msg::StackFrame => STACK_FRAME,
        Msg::HloSchedule => HLO_SCHEDULE,
        Msg::SequencesEntry => SEQUENCES_ENTRY,
        Msg::InstructionSequence => INSTRUCTION_SEQUENCE,
        Msg::FrontendAttributes => FRONTEND_ATTRIBUTES,
        Msg::FrontendAttributesEntry => STRING_MAP_ENTRY,
    }
}

/// The field of `msg` with this number, if the table knows it.
pub fn lookup(msg: Msg, number: u32) -> Option<&'static FieldInfo> {
    table::lookup(fields(msg), number)
}

/// A field's name for paths and errors: its table name, or `#<number>` when unknown.
pub fn field_name(msg: Msg, number: u32) -> String {
    table::name_of(lookup(msg, number), number)
}

use Kind as K;

#[rustfmt::skip]
static HLO_MODULE: &[FieldInfo] = &[
    one(1, "name", K::Str),
    one(2, "entry_computation_name", K::Str),
    many(3, "computations", K::Msg(Msg::HloComputation)),
    one(4, "host_program_shape", K::Opaque("xla.ProgramShapeProto")),
    one(5, "id", K::Int64),
    one(6, "entry_computation_id", K::Int64),
    one(7, "schedule", K::Msg(Msg::HloSchedule)),
    one(8, "input_output_alias", K::Opaque("xla.HloInputOutputAliasProto")),
    many(10, "cross_program_prefetches", K::Opaque("xla.CrossProgramPrefetch")),
    one(11, "is_dynamic", K::Bool),
    one(12, "spmd_output_sharding", K::Opaque("xla.OpSharding")),
    many(13, "profile_info", K::Opaque("xla.HloModuleProto.ProfileInfo")),
    many(14, "spmd_parameters_shardings", K::Opaque("xla.OpSharding")),
    one(15, "device_assignment", K::Opaque("xla.DeviceAssignmentProto")),
    one(16, "use_auto_spmd_partitioning", K::Bool),
    one(17, "stack_frame_index", K::Msg(Msg::StackFrameIndex)),
    one(18, "buffer_donor", K::Opaque("xla.HloBufferDonorProto")),
    one(19, "frontend_attributes", K::Msg(Msg::FrontendAttributes)),
    one(20, "original_value_recovery_table", K::Opaque("xla.OriginalValueRecoveryTableProto")),
    one(21, "device_type", K::Str),
    many(22, "payloads", K::Bytes),
    oneof(23, "pjrt_id", K::Int64),
    many(24, "debug_attributes", K::Opaque("xla.DebugAttributeTableEntryProto")),
    one(25, "backend_config", K::Bytes),
];

#[rustfmt::skip]
static HLO_COMPUTATION: &[FieldInfo] = &[
    one(1, "name", K::Str),
    many(2, "instructions", K::Msg(Msg::HloInstruction)),
    one(4, "program_shape", K::Opaque("xla.ProgramShapeProto")),
    one(5, "id", K::Int64),
    one(6, "root_id", K::Int64),
    one(7, "is_fusion_computation", K::Bool),
    one(8, "execution_thread", K::Str),
    one(9, "backend_config", K::Bytes),
];

#[rustfmt::skip]
static HLO_INSTRUCTION: &[FieldInfo] = &[
    one(1, "name", K::Str),
    one(2, "opcode", K::Str),
    one(3, "shape", K::Opaque("xla.ShapeProto")),
    one(7, "metadata", K::Msg(Msg::OpMetadata)),
    one(8, "literal", K::Opaque("xla.LiteralProto")),
    one(9, "parameter_number", K::Int64),
    one(11, "fusion_kind", K::Str),
    one(13, "tuple_index", K::Int64),
    many(14, "dimensions", K::Int64),
    one(15, "window", K::Opaque("xla.Window")),
    one(16, "convolution_dimension_numbers", K::Opaque("xla.ConvolutionDimensionNumbers")),
    many(17, "slice_dimensions", K::Opaque("xla.HloInstructionProto.SliceDimensions")),
    one(18, "exponent_bits", K::Int32),
    one(19, "mantissa_bits", K::Int32),
    many(20, "dynamic_slice_sizes", K::Int64),
    one(21, "padding_config", K::Opaque("xla.PaddingConfig")),
    one(22, "outfeed_config", K::Bytes),
    one(23, "distribution", K::Enum),
    one(24, "epsilon", K::Float),
    one(25, "feature_index", K::Int64),
    one(26, "channel_id", K::Int64),
    one(27, "infeed_config", K::Bytes),
    one(28, "custom_call_target", K::Str),
    one(29, "outfeed_shape", K::Opaque("xla.ShapeProto")),
    one(30, "dot_dimension_numbers", K::Opaque("xla.DotDimensionNumbers")),
    one(31, "fft_type", K::Enum),
    many(32, "fft_length", K::Int64),
    one(33, "gather_dimension_numbers", K::Opaque("xla.GatherDimensionNumbers")),
    many(34, "gather_slice_sizes", K::Int64),
    one(35, "id", K::Int64),
    many(36, "operand_ids", K::Int64),
    many(37, "control_predecessor_ids", K::Int64),
    many(38, "called_computation_ids", K::Int64),
    one(40, "sharding", K::Opaque("xla.OpSharding")),
    one(43, "backend_config", K::Bytes),
    one(45, "all_reduce_id", K::Int64),
    one(47, "is_host_transfer", K::Bool),
    one(48, "scatter_dimension_numbers", K::Opaque("xla.ScatterDimensionNumbers")),
    many(49, "replica_groups", K::Opaque("xla.ReplicaGroup")),
    one(50, "feature_group_count", K::Int64),
    one(51, "precision_config", K::Opaque("xla.PrecisionConfig")),
    many(52, "source_target_pairs", K::Opaque("xla.SourceTarget")),
    one(54, "domain_entry_sharding", K::Opaque("xla.OpSharding")),
    one(55, "domain_exit_sharding", K::Opaque("xla.OpSharding")),
    one(56, "constrain_layout", K::Bool),
    many(57, "operand_shapes_with_layout", K::Opaque("xla.ShapeProto")),
    one(58, "batch_group_count", K::Int64),
    one(59, "triangular_solve_options", K::Opaque("xla.TriangularSolveOptions")),
    one(60, "is_stable", K::Bool),
    one(61, "parameter_replication", K::Opaque("xla.ParameterReplication")),
    one(62, "cholesky_options", K::Opaque("xla.CholeskyOptions")),
    one(63, "comparison_direction", K::Str),
    one(65, "custom_call_has_side_effect", K::Bool),
    one(66, "delta", K::Int64),
    one(67, "indices_are_sorted", K::Bool),
    one(68, "frontend_attributes", K::Msg(Msg::FrontendAttributes)),
    one(69, "unique_indices", K::Bool),
    one(70, "rng_algorithm", K::Enum),
    one(71, "use_global_device_ids", K::Bool),
    one(72, "comparison_type", K::Str),
    one(73, "is_cross_program_prefetch", K::Bool),
    many(74, "output_operand_aliasing", K::Opaque("xla.OutputOperandAliasing")),
    one(75, "padding_type", K::Enum),
    one(76, "custom_call_schedule", K::Enum),
    one(77, "custom_call_api_version", K::Enum),
    one(79, "async_execution_thread", K::Str),
    oneof(80, "cross_program_prefetch_index", K::Int32),
    one(81, "k", K::Int64),
    one(82, "statistics_viz", K::Opaque("xla.StatisticsViz")),
    one(85, "largest", K::Bool),
    one(87, "collective_device_list", K::Opaque("xla.CollectiveDeviceListProto")),
    one(88, "original_value", K::Opaque("xla.OriginalValueProto")),
    one(89, "is_composite", K::Bool),
    one(90, "ragged_dot_dimension_numbers", K::Opaque("xla.RaggedDotDimensionNumbers")),
    one(91, "result_accuracy", K::Opaque("xla.ResultAccuracy")),
    one(92, "iota_collective_device_list", K::Opaque("xla.IotaReplicaGroupListProto")),
    one(93, "mesh_axes_replica_group_list", K::Opaque("xla.MeshAxesReplicaGroupListProto")),
    one(94, "is_reverse", K::Bool),
    one(95, "num_carries", K::Int64),
    one(96, "is_associative", K::Enum),
    one(97, "conv_kind", K::Enum),
    one(98, "sparsity_config", K::Opaque("xla.SparsityConfig")),
    one(99, "backend_config_payload", K::Opaque("xla.Payload")),
    one(100, "has_dynamic_root", K::Bool),
    one(101, "block_scaling_config", K::Opaque("xla.BlockScalingConfig")),
    one(102, "comparison_order", K::Str),
    one(103, "shuffle_mode", K::Opaque("xla.ShuffleMode")),
];

#[rustfmt::skip]
static OP_METADATA: &[FieldInfo] = &[
    one(1, "op_type", K::Str),
    one(2, "op_name", K::Str),
    one(3, "source_file", K::Str),
    one(4, "source_line", K::Int32),
    many(5, "profile_type", K::Enum),
    one(8, "size_of_generated_code_in_bytes", K::Int64),
    one(9, "size_of_memory_working_set_in_bytes", K::Int64),
    one(10, "profile_info", K::Opaque("xla.OpMetadata.ProfileInfo")),
    one(12, "deduplicated_name", K::Str),
    one(15, "stack_frame_id", K::Int32),
    one(16, "scheduling_name", K::Str),
    one(17, "source_end_line", K::Int32),
    one(18, "source_column", K::Int32),
    one(19, "source_end_column", K::Int32),
    one(20, "metadata_payload", K::Opaque("xla.Payload")),
];

#[rustfmt::skip]
static STACK_FRAME_INDEX: &[FieldInfo] = &[
    many(1, "file_names", K::Str),
    many(2, "function_names", K::Str),
    many(3, "file_locations", K::Msg(Msg::FileLocation)),
    many(4, "stack_frames", K::Msg(Msg::StackFrame)),
];

#[rustfmt::skip]
static FILE_LOCATION: &[FieldInfo] = &[
    one(1, "file_name_id", K::Int32),
    one(2, "function_name_id", K::Int32),
    one(3, "line", K::Int32),
    one(4, "column", K::Int32),
    one(5, "end_line", K::Int32),
    one(6, "end_column", K::Int32),
];

#[rustfmt::skip]
static STACK_FRAME: &[FieldInfo] = &[
    one(1, "file_location_id", K::Int32),
    one(2, "parent_frame_id", K::Int32),
];

static HLO_SCHEDULE: &[FieldInfo] = &[map(1, "sequences", Msg::SequencesEntry)];

static SEQUENCES_ENTRY: &[FieldInfo] = &[
    one(1, "key", K::Int64),
    one(2, "value", K::Msg(Msg::InstructionSequence)),
];

static INSTRUCTION_SEQUENCE: &[FieldInfo] = &[many(1, "instruction_ids", K::Int64)];

static FRONTEND_ATTRIBUTES: &[FieldInfo] = &[map(1, "map", Msg::FrontendAttributesEntry)];

static STRING_MAP_ENTRY: &[FieldInfo] = &[one(1, "key", K::Str), one(2, "value", K::Str)];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_unique_and_nonempty() {
        for msg in ALL {
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
