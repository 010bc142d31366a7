//! The operation names a payload uses, and whether each was registered when
//! written: from version 5, a registered op's properties are in its dialect's
//! own encoding, which a reader without that dialect misreads silently.

use super::BytecodeError;
use super::dialects::DialectSection;
use super::encoding::{self, section};
use super::sections::parse_container;
use super::strings::StringTable;

/// One operation name of the dialect section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpNameInfo {
    /// `dialect.op`.
    pub name: String,
    /// Whether the writer had the op registered (`None` before version 5).
    pub registered: Option<bool>,
}

/// Lists the payload's operation names without reading its IR.
pub fn op_names(payload: &[u8]) -> Result<Vec<OpNameInfo>, BytecodeError> {
    let header = parse_container(payload)?;
    let rules = encoding::rules(header.version).ok_or(BytecodeError::UnsupportedVersion {
        version: header.version,
        max: encoding::MAX_VERSION,
    })?;
    let find = |id: u8| {
        header
            .sections
            .iter()
            .find(|s| s.id == id)
            .ok_or(BytecodeError::MissingSection {
                name: section::name(id),
                id,
            })
    };
    let string_sec = find(section::STRING)?;
    let strings = StringTable::parse(&payload[string_sec.range()], string_sec.offset)?;
    let dialect_sec = find(section::DIALECT)?;
    let dialects = DialectSection::parse(
        &payload[dialect_sec.range()],
        dialect_sec.offset,
        rules,
        strings.len(),
    )?;
    Ok(names(&strings, &dialects))
}

/// The operation names of a parsed dialect section.
pub(crate) fn names(strings: &StringTable<'_>, dialects: &DialectSection) -> Vec<OpNameInfo> {
    let text = |index: usize| String::from_utf8_lossy(strings.content(index)).into_owned();
    dialects
        .op_names
        .iter()
        .map(|op| {
            let dialect = dialects
                .dialects
                .get(op.dialect)
                .map(|d| text(d.name))
                .unwrap_or_default();
            OpNameInfo {
                name: format!("{dialect}.{}", text(op.name)),
                registered: op.registered,
            }
        })
        .collect()
}
