//! Errors for bytecode that is not well-formed. Each one names the absolute
//! offset in the payload and the numbers involved, in the style of the upstream
//! reader ("attempting to parse N bytes when only M remain"), so a bad kernel
//! can be located with a hex dump. A payload that is well-formed but cannot be
//! stripped losslessly is not an error: see `StripOutput::Unchanged`.

/// A malformed or unsupported bytecode payload.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub enum BytecodeError {
    /// The payload does not start with `ML\xEFR`.
    #[error("not MLIR bytecode: expected magic 4d 4c ef 52, found {found}")]
    BadMagic {
        /// Hex of the first bytes found.
        found: String,
    },
    /// A read ran past the end of the enclosing section or payload.
    #[error(
        "attempting to parse {needed} bytes when only {remaining} remain at offset {offset:#x} ({what})"
    )]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Absolute offset of the read.
        offset: usize,
        /// Bytes the read needed.
        needed: u64,
        /// Bytes that were left.
        remaining: usize,
    },
    /// The bytecode version is newer than this reader knows.
    #[error("unsupported bytecode version {version} (known versions are 0 to {max})")]
    UnsupportedVersion {
        /// Version found in the header.
        version: u64,
        /// Newest known version.
        max: u64,
    },
    /// A section id outside the known range.
    #[error("invalid section id {id} at offset {offset:#x}")]
    InvalidSectionId {
        /// The id (without the alignment bit).
        id: u8,
        /// Absolute offset of the id byte.
        offset: usize,
    },
    /// A section length that runs past the end of its container.
    #[error(
        "{name} section at offset {offset:#x} declares {len} bytes when only {remaining} remain"
    )]
    SectionOutOfBounds {
        /// Section name.
        name: &'static str,
        /// Absolute offset of the section data.
        offset: usize,
        /// Declared length.
        len: u64,
        /// Bytes left in the container.
        remaining: usize,
    },
    /// The same top-level section appears twice.
    #[error("duplicate {name} section at offset {offset:#x}")]
    DuplicateSection {
        /// Section name.
        name: &'static str,
        /// Absolute offset of the second section's id byte.
        offset: usize,
    },
    /// A required top-level section is absent.
    #[error("missing {name} section (id {id})")]
    MissingSection {
        /// Section name.
        name: &'static str,
        /// Section id.
        id: u8,
    },
    /// A section or blob alignment that is not a power of two (or absurdly large).
    #[error(
        "invalid alignment {alignment} at offset {offset:#x}: expected a power of two up to 2^31"
    )]
    BadAlignment {
        /// The alignment value.
        alignment: u64,
        /// Absolute offset of the alignment varint.
        offset: usize,
    },
    /// A padding byte that is not `0xcb`.
    #[error("expected alignment byte 0xcb at offset {offset:#x}, found {found:#04x}")]
    BadPadding {
        /// Absolute offset of the byte.
        offset: usize,
        /// The byte found.
        found: u8,
    },
    /// An index past the end of the table it refers to.
    #[error("invalid {what} index {index} at offset {offset:#x}: only {count} exist")]
    InvalidIndex {
        /// Table kind ("string", "attribute", ...).
        what: &'static str,
        /// The index read.
        index: u64,
        /// Size of the table.
        count: usize,
        /// Absolute offset of the index.
        offset: usize,
    },
    /// A count of elements that the remaining bytes cannot possibly hold.
    #[error("{what} count {count} at offset {offset:#x} exceeds the {remaining} bytes that remain")]
    CountTooLarge {
        /// What is counted.
        what: &'static str,
        /// The declared count.
        count: u64,
        /// Bytes left.
        remaining: usize,
        /// Absolute offset of the count.
        offset: usize,
    },
    /// Regions nested deeper than the walker follows.
    #[error("regions nested deeper than {limit} levels at offset {offset:#x}")]
    TooDeep {
        /// The nesting limit.
        limit: usize,
        /// Absolute offset where the limit was hit.
        offset: usize,
    },
    /// Any other structural inconsistency.
    #[error("malformed bytecode at offset {offset:#x}: {message}")]
    Malformed {
        /// Absolute offset of the problem.
        offset: usize,
        /// What is wrong, lowercase, no final period.
        message: String,
    },
}

impl BytecodeError {
    /// The absolute offset the error names, if any.
    pub fn offset(&self) -> Option<usize> {
        match self {
            BytecodeError::BadMagic { .. }
            | BytecodeError::UnsupportedVersion { .. }
            | BytecodeError::MissingSection { .. } => None,
            BytecodeError::Truncated { offset, .. }
            | BytecodeError::InvalidSectionId { offset, .. }
            | BytecodeError::SectionOutOfBounds { offset, .. }
            | BytecodeError::DuplicateSection { offset, .. }
            | BytecodeError::BadAlignment { offset, .. }
            | BytecodeError::BadPadding { offset, .. }
            | BytecodeError::InvalidIndex { offset, .. }
            | BytecodeError::CountTooLarge { offset, .. }
            | BytecodeError::TooDeep { offset, .. }
            | BytecodeError::Malformed { offset, .. } => Some(*offset),
        }
    }
}

/// Shorthand for results of this module.
pub type Result<T> = std::result::Result<T, BytecodeError>;
