//! Checking a payload before MLIR's reader sees it.
//!
//! MLIR's reader assumes much of what it reads: it allocates what counts
//! declare, and indexes with some values it never bounds. A payload that
//! passes [`validate`] has every section, count, index and value number
//! checked against what backs it (see `model.rs` and `values.rs`); one that
//! fails gets an error naming the offset and the section.

use std::fmt;

use super::attrs::{Ref, Target};
use super::error::BytecodeError;
use super::model::Parsed;
use super::ops::{OpNameInfo, names};
use super::sections::{Header, SectionInfo, parse_container};

/// What a valid payload holds, for callers that go on to read it.
#[derive(Debug, Clone)]
pub struct Validated {
    /// Container header and section table.
    pub header: Header,
    /// The operation names of the dialect section.
    pub op_names: Vec<OpNameInfo>,
    /// Number of operations in the IR.
    pub operations: usize,
}

/// A payload that is not well-formed, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// What is wrong.
    pub error: BytecodeError,
    /// The top-level section holding the offset of the error, when the
    /// section table could be read.
    pub section: Option<SectionInfo>,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.error)?;
        if let Some(s) = &self.section {
            write!(
                f,
                " (in the {} section, bytes {:#x}..{:#x})",
                s.name,
                s.offset,
                s.offset + s.len
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for Invalid {}

/// Checks everything MLIR's reader reads before building operations:
/// container, sections, strings, dialects, resources, the attribute and type
/// tables, properties, and the IR with its value numbering.
pub fn validate(payload: &[u8]) -> Result<Validated, Invalid> {
    let invalid = |error: BytecodeError| Invalid {
        section: error
            .offset()
            .and_then(|offset| section_at(payload, offset)),
        error,
    };
    let parsed = Parsed::parse(payload).map_err(invalid)?;
    no_reference_cycle(&parsed.reads, parsed.attrs.len()).map_err(invalid)?;
    Ok(Validated {
        op_names: names(&parsed.strings, &parsed.dialects),
        operations: parsed.ir.ops,
        header: parsed.header,
    })
}

/// Refuses a cycle of references among attributes and types: MLIR resolves
/// an entry's references before the entry, so it would never finish. The
/// writer cannot produce one (an entry exists before anything refers to it).
/// `reads` lists what each attribute, then each type, makes MLIR resolve.
fn no_reference_cycle(reads: &[Vec<Ref>], num_attrs: usize) -> Result<(), BytecodeError> {
    let node = |t: Target| match t {
        Target::Attr(i) => Some(i),
        Target::Type(i) => Some(num_attrs + i),
        Target::Str(_) => None,
    };
    // 0: unvisited, 1: on the path, 2: done. Iterative: chains can be long.
    let mut state = vec![0u8; reads.len()];
    for root in 0..state.len() {
        if state[root] != 0 {
            continue;
        }
        let mut path = vec![(root, 0usize)];
        state[root] = 1;
        while let Some((n, next)) = path.last_mut() {
            let refs = reads.get(*n).map_or(&[][..], Vec::as_slice);
            let Some(r) = refs.get(*next) else {
                state[*n] = 2;
                path.pop();
                continue;
            };
            *next += 1;
            let Some(to) = node(r.target) else { continue };
            match state[to] {
                0 => {
                    state[to] = 1;
                    path.push((to, 0));
                }
                1 => {
                    return Err(BytecodeError::Malformed {
                        offset: r.offset,
                        message: format!(
                            "{} refers back to itself through {} (a reference cycle)",
                            describe(to, num_attrs),
                            describe(*n, num_attrs)
                        ),
                    });
                }
                _ => {}
            }
        }
    }
    Ok(())
}

fn describe(node: usize, num_attrs: usize) -> String {
    if node < num_attrs {
        format!("attribute {node}")
    } else {
        format!("type {}", node - num_attrs)
    }
}

/// The top-level section whose data holds `offset` (or ends there: a read
/// past the end), else whose header does.
fn section_at(payload: &[u8], offset: usize) -> Option<SectionInfo> {
    let sections = parse_container(payload).ok()?.sections;
    let in_data = sections
        .iter()
        .position(|s| (s.offset..=s.offset + s.len).contains(&offset));
    let index = in_data.or_else(|| {
        sections
            .iter()
            .position(|s| (s.header_offset..s.offset).contains(&offset))
    })?;
    sections.into_iter().nth(index)
}
