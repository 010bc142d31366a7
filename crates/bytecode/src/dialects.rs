//! The dialect section: dialect names (from version 1 with an optional nested
//! version section), then operation names grouped by dialect (from version 5
//! with the "was registered" flag that decides how an op's properties are
//! encoded). The stripper never rewrites this section; it reads it to resolve
//! names, to learn which strings it keeps alive, and to find the version blobs
//! it cannot decode.

use std::ops::Range;

use super::encoding::{self, VersionRules, section};
use super::error::Result;
use super::reader::Reader;
use super::sections::read_nested_section;

/// One dialect entry.
#[derive(Debug, Clone)]
pub struct Dialect {
    /// Index of its name in the string table.
    pub name: usize,
    /// Absolute range of its version blob, if any.
    pub version: Option<Range<usize>>,
}

/// One operation name.
#[derive(Debug, Clone)]
pub struct OpName {
    /// Index of the owning dialect.
    pub dialect: usize,
    /// Index of the name (without the dialect prefix) in the string table.
    pub name: usize,
    /// Whether the op was registered when written (version 5 and later).
    pub registered: Option<bool>,
}

/// The parsed dialect section.
#[derive(Debug, Clone, Default)]
pub struct DialectSection {
    /// Dialects in index order.
    pub dialects: Vec<Dialect>,
    /// Operation names in index order.
    pub op_names: Vec<OpName>,
    /// Every string index the section uses, with its absolute offset.
    pub string_refs: Vec<(usize, usize)>,
    /// Largest alignment of a nested version section (1 when none is aligned).
    pub nested_alignment: u64,
}

impl DialectSection {
    /// Parses the section `data` at absolute offset `base`.
    pub fn parse(
        data: &[u8],
        base: usize,
        rules: &VersionRules,
        num_strings: usize,
    ) -> Result<Self> {
        let mut reader = Reader::new(data, base);
        let mut out = DialectSection {
            nested_alignment: 1,
            ..Default::default()
        };
        let count = reader.count("dialect", 1)?;
        for _ in 0..count {
            let offset = reader.offset();
            let (name, has_version) = if rules.dialect_versioning {
                reader.varint_with_flag("dialect name")?
            } else {
                (reader.varint("dialect name")?, false)
            };
            let name = super::reader::check_index("string", name, num_strings, offset)?;
            out.string_refs.push((name, offset));
            let mut version = None;
            if has_version {
                let raw = read_nested_section(
                    &mut reader,
                    section::DIALECT_VERSIONS,
                    "a dialect version section",
                    &mut out.nested_alignment,
                )?;
                version = Some(raw.offset..raw.offset + raw.data.len());
            }
            out.dialects.push(Dialect { name, version });
        }
        if rules.elide_unknown_block_arg_locs {
            // Total number of op names: only a capacity hint upstream, but one
            // it reserves, so it must be one the section can back.
            reader.count("op name", 1)?;
        }
        while !reader.is_empty() {
            let dialect = reader.index("dialect", out.dialects.len())?;
            let n = reader.count("op name", 1)?;
            for _ in 0..n {
                let offset = reader.offset();
                let (name, registered) = if rules.native_properties {
                    let (name, flag) = reader.varint_with_flag("op name")?;
                    (name, Some(flag))
                } else {
                    (reader.varint("op name")?, None)
                };
                let name = super::reader::check_index("string", name, num_strings, offset)?;
                out.string_refs.push((name, offset));
                out.op_names.push(OpName {
                    dialect,
                    name,
                    registered,
                });
            }
        }
        Ok(out)
    }

    /// Indices of the dialects named "builtin".
    pub fn builtin_dialects(&self, strings: &super::strings::StringTable<'_>) -> Vec<usize> {
        self.dialects
            .iter()
            .enumerate()
            .filter(|(_, d)| strings.content(d.name) == encoding::BUILTIN_DIALECT)
            .map(|(i, _)| i)
            .collect()
    }
}
