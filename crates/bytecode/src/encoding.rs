//! Every fact of the MLIR bytecode format this module relies on, in one place.
//!
//! The stripper never links MLIR, so the format is restated here from upstream
//! (`mlir/docs/BytecodeFormat.md`, `mlir/include/mlir/Bytecode/Encoding.h`,
//! `mlir/lib/Bytecode/Reader/BytecodeReader.cpp`,
//! `mlir/lib/Bytecode/Writer/BytecodeWriter.cpp`,
//! `mlir/include/mlir/IR/BuiltinDialectBytecode.td`). Rules that changed with the
//! bytecode version are a table ([`rules`]), not `if version >= N` scattered
//! through the readers, so a new version is one new row.

/// The four bytes every bytecode file starts with: `ML\xEFR`.
pub const MAGIC: [u8; 4] = *b"ML\xEFR";

/// Padding byte used before aligned sections and aligned resource blobs.
pub const ALIGNMENT_BYTE: u8 = 0xCB;

/// Bit of a section's id byte that says an alignment varint and padding follow.
pub const SECTION_ALIGNED_FLAG: u8 = 0x80;

/// Alignments above this are refused (the upstream reader truncates them to
/// `unsigned`, which makes larger values meaningless).
pub const MAX_ALIGNMENT: u64 = 1 << 31;

/// Deepest region nesting the IR walk follows before it reports an error.
pub const MAX_REGION_NESTING: usize = 256;

/// Section identifiers (`bytecode::Section::ID`).
pub mod section {
    /// The string table.
    pub const STRING: u8 = 0;
    /// Dialect names, their versions and operation names.
    pub const DIALECT: u8 = 1;
    /// Encoded attributes then types, back to back.
    pub const ATTR_TYPE: u8 = 2;
    /// Sizes and dialects of the entries of [`ATTR_TYPE`].
    pub const ATTR_TYPE_OFFSET: u8 = 3;
    /// Operations; nested isolated regions are nested sections with this id.
    pub const IR: u8 = 4;
    /// Resource values.
    pub const RESOURCE: u8 = 5;
    /// Resource keys, kinds and sizes.
    pub const RESOURCE_OFFSET: u8 = 6;
    /// A dialect's version (only nested inside the dialect section).
    pub const DIALECT_VERSIONS: u8 = 7;
    /// Native operation properties (version 5 and later).
    pub const PROPERTIES: u8 = 8;
    /// Number of known section ids; ids at or above this are invalid.
    pub const COUNT: u8 = 9;

    /// Human name of a section id, for messages.
    pub fn name(id: u8) -> &'static str {
        match id {
            STRING => "string",
            DIALECT => "dialect",
            ATTR_TYPE => "attr/type",
            ATTR_TYPE_OFFSET => "attr/type offset",
            IR => "ir",
            RESOURCE => "resource",
            RESOURCE_OFFSET => "resource offset",
            DIALECT_VERSIONS => "dialect versions",
            PROPERTIES => "properties",
            _ => "unknown",
        }
    }
}

/// Bits of the byte that follows an operation's name (`OpEncodingMask`).
pub mod op_mask {
    /// An attribute dictionary index follows.
    pub const HAS_ATTRS: u8 = 0b0000_0001;
    /// A result count and result types follow.
    pub const HAS_RESULTS: u8 = 0b0000_0010;
    /// An operand count and value indices follow.
    pub const HAS_OPERANDS: u8 = 0b0000_0100;
    /// A successor count and block indices follow.
    pub const HAS_SUCCESSORS: u8 = 0b0000_1000;
    /// A region count (with the isolated-from-above flag) and regions follow.
    pub const HAS_INLINE_REGIONS: u8 = 0b0001_0000;
    /// Use-list orders of the results follow (version 3 and later).
    pub const HAS_USE_LIST_ORDERS: u8 = 0b0010_0000;
    /// A properties reference follows (version 5 and later).
    pub const HAS_PROPERTIES: u8 = 0b0100_0000;
}

/// What changed in the format from one bytecode version to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRules {
    /// The version these rules describe.
    pub version: u64,
    /// Dialect entries are `(name << 1) | hasVersion`, with a nested version
    /// section (`kDialectVersioning`, 1).
    pub dialect_versioning: bool,
    /// Regions of isolated-from-above ops are nested IR sections
    /// (`kLazyLoading`, 2).
    pub isolated_regions_in_sections: bool,
    /// Ops and block arguments may carry use-list orders (`kUseListOrdering`, 3).
    pub use_list_orders: bool,
    /// Block arguments are `(type << 1) | hasLoc` and the dialect section starts
    /// its op names with their total count (`kElideUnknownBlockArgLocation`, 4).
    pub elide_unknown_block_arg_locs: bool,
    /// Op names are `(name << 1) | wasRegistered`, ops may reference the
    /// properties section, which is then required (`kNativePropertiesEncoding`, 5).
    pub native_properties: bool,
}

const fn row(version: u64) -> VersionRules {
    VersionRules {
        version,
        dialect_versioning: version >= 1,
        isolated_regions_in_sections: version >= 2,
        use_list_orders: version >= 3,
        elide_unknown_block_arg_locs: version >= 4,
        native_properties: version >= 5,
    }
}

/// One row per supported version; version 6 (`kNativePropertiesODSSegmentSize`)
/// changed what ODS writes into properties, not the container.
const RULES: [VersionRules; 7] = [row(0), row(1), row(2), row(3), row(4), row(5), row(6)];

/// Newest bytecode version this module can read.
pub const MAX_VERSION: u64 = 6;

/// The rules for `version`, or `None` when it is newer than [`MAX_VERSION`].
pub fn rules(version: u64) -> Option<&'static VersionRules> {
    usize::try_from(version).ok().and_then(|v| RULES.get(v))
}

/// Name of the builtin dialect, whose attribute and type encodings we decode.
pub const BUILTIN_DIALECT: &[u8] = b"builtin";

/// Codes of builtin attributes (the order of `BuiltinDialectAttributes`; the
/// list is append-only upstream).
pub mod builtin_attr {
    /// `ArrayAttr { elements: Attribute[] }`
    pub const ARRAY: u64 = 0;
    /// `DictionaryAttr { attrs: (StringAttr name, Attribute value)[] }`
    pub const DICTIONARY: u64 = 1;
    /// `StringAttr { value: string }`
    pub const STRING: u64 = 2;
    /// `StringAttr { value: string, type: Type }`
    pub const STRING_WITH_TYPE: u64 = 3;
    /// `FlatSymbolRefAttr { root: StringAttr }`
    pub const FLAT_SYMBOL_REF: u64 = 4;
    /// `SymbolRefAttr { root: StringAttr, nested: FlatSymbolRefAttr[] }`
    pub const SYMBOL_REF: u64 = 5;
    /// `TypeAttr { value: Type }`
    pub const TYPE: u64 = 6;
    /// `UnitAttr {}`
    pub const UNIT: u64 = 7;
    /// `IntegerAttr { type: Type, value: APInt }`
    pub const INTEGER: u64 = 8;
    /// `FloatAttr { type: Type, value: APFloat }`
    pub const FLOAT: u64 = 9;
    /// `CallSiteLoc { callee: Location, caller: Location }`
    pub const CALL_SITE_LOC: u64 = 10;
    /// `FileLineColLoc { filename: StringAttr, line: varint, column: varint }`
    pub const FILE_LINE_COL_LOC: u64 = 11;
    /// `FusedLoc { locations: Location[] }`
    pub const FUSED_LOC: u64 = 12;
    /// `FusedLoc { locations: Location[], metadata: Attribute }`
    pub const FUSED_LOC_WITH_METADATA: u64 = 13;
    /// `NameLoc { name: StringAttr, child: Location }`
    pub const NAME_LOC: u64 = 14;
    /// `UnknownLoc {}`
    pub const UNKNOWN_LOC: u64 = 15;
    /// `DenseResourceElementsAttr { type: Type, handle: resource }`
    pub const DENSE_RESOURCE_ELEMENTS: u64 = 16;
    /// `DenseArrayAttr { elementType: Type, size: varint, data: blob }`
    pub const DENSE_ARRAY: u64 = 17;
    /// `DenseIntOrFPElementsAttr` / `DenseTypedElementsAttr { type: Type, data: blob }`
    pub const DENSE_INT_OR_FP_ELEMENTS: u64 = 18;
    /// `DenseStringElementsAttr { type: Type, isSplat: varint, data: string[] }`
    pub const DENSE_STRING_ELEMENTS: u64 = 19;
    /// `SparseElementsAttr { type: Type, indices: Attribute, values: Attribute }`
    pub const SPARSE_ELEMENTS: u64 = 20;
    /// `DistinctAttr { referenced: Attribute }`
    pub const DISTINCT: u64 = 21;
    /// `FileLineColRange { filename: StringAttr, lineCols: varint[] (0 to 4) }`
    pub const FILE_LINE_COL_RANGE: u64 = 22;
    /// `AffineMapAttr`: dims, symbols and expressions as varints; no references.
    pub const AFFINE_MAP: u64 = 23;

    /// Whether `code` is one of the builtin location attributes.
    pub fn is_location(code: u64) -> bool {
        matches!(
            code,
            CALL_SITE_LOC
                | FILE_LINE_COL_LOC
                | FUSED_LOC
                | FUSED_LOC_WITH_METADATA
                | NAME_LOC
                | UNKNOWN_LOC
                | FILE_LINE_COL_RANGE
        )
    }

    /// Whether `code` is a `StringAttr` (with or without a type).
    pub fn is_string(code: u64) -> bool {
        matches!(code, STRING | STRING_WITH_TYPE)
    }
}

/// The complete encoding of an `UnknownLoc` entry: its code as a varint.
pub const UNKNOWN_LOC_ENTRY: [u8; 1] = [0x1f];

/// Codes of builtin types (the order of `BuiltinDialectTypes`).
pub mod builtin_type {
    /// `IntegerType { widthAndSignedness: varint }`
    pub const INTEGER: u64 = 0;
    /// `IndexType {}`
    pub const INDEX: u64 = 1;
    /// `FunctionType { inputs: Type[], results: Type[] }`
    pub const FUNCTION: u64 = 2;
    /// `BFloat16Type {}` (codes 3 to 8 are parameterless float types)
    pub const BF16: u64 = 3;
    /// `Float128Type {}`
    pub const F128: u64 = 8;
    /// `ComplexType { elementType: Type }`
    pub const COMPLEX: u64 = 9;
    /// `MemRefType { shape: svarint[], elementType: Type, layout: Attribute }`
    pub const MEMREF: u64 = 10;
    /// `MemRefType { memorySpace: Attribute, shape, elementType, layout }`
    pub const MEMREF_WITH_MEMSPACE: u64 = 11;
    /// `NoneType {}`
    pub const NONE: u64 = 12;
    /// `RankedTensorType { shape: svarint[], elementType: Type }`
    pub const RANKED_TENSOR: u64 = 13;
    /// `RankedTensorType { encoding: Attribute, shape, elementType }`
    pub const RANKED_TENSOR_WITH_ENCODING: u64 = 14;
    /// `TupleType { types: Type[] }`
    pub const TUPLE: u64 = 15;
    /// `UnrankedMemRefType { elementType: Type }`
    pub const UNRANKED_MEMREF: u64 = 16;
    /// `UnrankedMemRefType { memorySpace: Attribute, elementType: Type }`
    pub const UNRANKED_MEMREF_WITH_MEMSPACE: u64 = 17;
    /// `UnrankedTensorType { elementType: Type }`
    pub const UNRANKED_TENSOR: u64 = 18;
    /// `VectorType { shape: svarint[], elementType: Type }`
    pub const VECTOR: u64 = 19;
    /// `VectorType { scalableDims: bool[], shape: svarint[], elementType: Type }`
    pub const VECTOR_WITH_SCALABLE_DIMS: u64 = 20;
    /// First of the parameterless float types added later (TF32, FP8, FP6, FP4).
    pub const FIRST_NEW_FLOAT: u64 = 21;
    /// Last of them (`Float8E8M0FNUType`).
    pub const LAST_NEW_FLOAT: u64 = 32;
}

/// Kinds of resource entries (`AsmResourceEntryKind`).
pub mod resource_kind {
    /// Alignment varint, size varint, padding, data.
    pub const BLOB: u8 = 0;
    /// One byte.
    pub const BOOL: u8 = 1;
    /// A string index.
    pub const STRING: u8 = 2;
}
