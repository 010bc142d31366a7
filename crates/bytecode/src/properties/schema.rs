//! What an operation's property blob holds, as mlir-tblgen generates its
//! `writeProperties` / `readProperties` (`OpDefinitionsGen.cpp`,
//! `genPropertiesSupport` and `genPropertiesSupportForBytecode`, read at
//! llvm/llvm-project `010bcc5c132f0236f61fb19a604da11d9337baca`):
//!
//! 1. every inherent attribute that is not derived, sorted by name (byte
//!    order): a required one as `writeAttribute` (an attribute index), an
//!    optional or default-valued one as `writeOptionalAttribute`
//!    (`(index << 1) | 1`, or `0` when absent);
//! 2. explicit `Property` arguments in declaration order (none in the table:
//!    an op with one would not decode to its exact length and falls back);
//! 3. from bytecode version 6, `operandSegmentSizes` then `resultSegmentSizes`
//!    of ops with attribute-sized segments, each a `writeSparseArray` over one
//!    `int32` per ODS operand / result (before version 6 they are a
//!    `DenseI32ArrayAttr` among the attributes; such blobs are not decoded).
//!
//! The per-op facts (attribute names, required or not, the kind their
//! constraint implies, segment counts) are the generated `table.rs`.

/// What an attribute's constraint says about the referenced entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Nothing checked.
    Any,
    /// A builtin `StringAttr` (with or without a type).
    Str,
    /// A builtin `IntegerAttr` (also `BoolAttr` and integer enums).
    Int,
    /// A builtin `TypeAttr`.
    Type,
    /// A builtin `UnitAttr`.
    Unit,
    /// A builtin `ArrayAttr`.
    Array,
    /// A builtin `DenseArrayAttr`.
    DenseArray,
    /// A builtin `FlatSymbolRefAttr`.
    FlatSymbolRef,
    /// A builtin `SymbolRefAttr` (flat or nested).
    SymbolRef,
    /// An attribute of the named dialect.
    Dialect(&'static str),
}

/// One inherent attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Attribute name.
    pub name: &'static str,
    /// Written with `writeAttribute` (else `writeOptionalAttribute`).
    pub required: bool,
    /// What the referenced entry must be.
    pub kind: Kind,
}

/// A required attribute.
pub const fn req(name: &'static str, kind: Kind) -> Field {
    Field {
        name,
        required: true,
        kind,
    }
}

/// An optional or default-valued attribute.
pub const fn opt(name: &'static str, kind: Kind) -> Field {
    Field {
        name,
        required: false,
        kind,
    }
}

/// The properties of one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpSchema {
    /// `dialect.op`.
    pub name: &'static str,
    /// Inherent attributes, sorted by name.
    pub attrs: &'static [Field],
    /// Number of ODS operands when the op has `AttrSizedOperandSegments`.
    pub operand_segments: usize,
    /// Number of ODS results when the op has `AttrSizedResultSegments`.
    pub result_segments: usize,
}

impl OpSchema {
    /// A table row.
    pub const fn new(
        name: &'static str,
        attrs: &'static [Field],
        operand_segments: usize,
        result_segments: usize,
    ) -> Self {
        OpSchema {
            name,
            attrs,
            operand_segments,
            result_segments,
        }
    }

    /// Whether the op writes segment sizes.
    pub fn has_segments(&self) -> bool {
        self.operand_segments > 0 || self.result_segments > 0
    }
}
