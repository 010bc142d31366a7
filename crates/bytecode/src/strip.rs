//! The rewrite. In place, only the string, attr/type and attr/type offset
//! sections change (and the padding of aligned sections after them):
//! 1. every builtin location entry becomes `UnknownLoc`, wherever it is
//!    referenced from: a location is debug info by definition, also when it
//!    is an attribute value (upstream `strip-debuginfo` only rewrites op and
//!    block-argument locations; we go further: a location held in an attribute
//!    cannot change what a compiler produces either);
//! 2. every other attribute that is dead once locations are gone becomes
//!    `UnknownLoc` (file-name and name `StringAttr`s, fused metadata);
//! 3. strings that are dead become empty.
//!
//! When `renumber.rs` can renumber the result canonically (every index-holding
//! byte decoded), its tables, IR section and property blobs replace the
//! in-place ones; otherwise indices stay in place (noted).
//!
//! "Dead" comes from `analysis.rs`. The rewrite refuses (returns `Unchanged`
//! with the reason) when dropping a location could hide a difference the
//! upstream reader would see: a location slot that does not hold a builtin
//! location, or a location whose parts have the wrong kind. It also refuses
//! to move sections whose aligned contents it cannot keep aligned.

use super::DebugMap;
use super::analysis::{Accounting, Ent, Liveness, Why, analyse};
use super::attrs::{Decoded, Slot, Table};
use super::encoding::{UNKNOWN_LOC_ENTRY, section};
use super::error::Result;
use super::ir::{LocOwner, LocUse};
use super::model::{Parsed, ent};
use super::renumber::{Renumbered, renumber};
use super::sections::{OutSection, emit};

/// The outcome of one pass.
pub enum Pass {
    /// The rewritten payload with its counts and notes.
    Stripped {
        /// New payload bytes.
        bytes: Vec<u8>,
        /// Attribute entries rewritten to `UnknownLoc`.
        replaced: usize,
        /// Strings emptied.
        emptied: usize,
        /// Observations worth reporting.
        notes: Vec<String>,
        /// Which input bytes were dropped as debug info.
        debug: DebugMap,
    },
    /// Why no lossless rewrite could be proven.
    Unchanged(String),
}

/// One analysis and rewrite of a parsed payload.
pub fn run(parsed: &Parsed<'_>, use_invariant: bool) -> Result<Pass> {
    let graph = parsed.graph();
    let live = analyse(&graph, use_invariant);
    let mut notes = Vec::new();
    match &live.accounting {
        Accounting::Used { forced } => notes.push(format!(
            "{} undecodable byte regions; the writer invariant matched {forced} entities referenced only from them",
            graph.regions.len()
        )),
        Accounting::Violated(why) => notes.push(format!(
            "the writer invariant does not hold ({why}); only candidate positions were used"
        )),
        Accounting::Disabled => notes.push("the writer invariant was not used".into()),
        Accounting::NotNeeded => {}
    }
    if let Some(reason) = check_locations(parsed) {
        return Ok(Pass::Unchanged(reason));
    }
    if let Some(reason) = check_file_names(parsed, &live) {
        return Ok(Pass::Unchanged(reason));
    }

    // Attributes to rewrite: every location, and every other attribute that is
    // dead once locations are gone.
    let builtin = parsed.builtin.first().copied();
    let mut replace = vec![false; parsed.attrs.len()];
    for (i, d) in parsed.attrs.iter().enumerate() {
        if !d.is_location() && live.live.contains_key(&Ent::Attr(i)) {
            continue;
        }
        let entry = &parsed.table.attrs[i];
        let already_unknown = parsed.builtin.contains(&entry.dialect)
            && entry.custom
            && parsed.entry_bytes(Table::Attr, i) == UNKNOWN_LOC_ENTRY;
        if already_unknown {
            continue;
        }
        if *d == Decoded::Opaque {
            notes.push(format!(
                "attribute #{i} is reachable only from debug locations but its encoding is not understood; kept"
            ));
            continue;
        }
        if builtin.is_none() {
            notes.push(format!(
                "attribute #{i} is dead but there is no builtin dialect to hold UnknownLoc; kept"
            ));
            continue;
        }
        replace[i] = true;
    }
    for i in 0..parsed.types.len() {
        if !live.live.contains_key(&Ent::Type(i)) {
            notes.push(format!(
                "type #{i} is reachable only from debug locations; kept"
            ));
        }
    }
    // Entries that locations use (names, file names, metadata) but that stay.
    let mut kept: Vec<String> = parsed
        .attrs
        .iter()
        .filter(|d| d.is_location())
        .flat_map(|d| d.refs())
        .map(|r| ent(r.target))
        .filter(|e| !matches!(e, Ent::Attr(i) if parsed.attr(*i).is_location()))
        .filter_map(|e| {
            live.live.get(&e).map(|why| {
                format!(
                    "{e} is used by debug locations and {}; kept",
                    describe_why(why)
                )
            })
        })
        .collect();
    kept.sort();
    kept.dedup();
    notes.extend(kept);
    let empty: Vec<bool> = (0..parsed.strings.len())
        .map(|i| !live.live.contains_key(&Ent::Str(i)) && !parsed.strings.content(i).is_empty())
        .collect();

    // Rebuild.
    let attr_sec = parsed.section(section::ATTR_TYPE);
    let attr_data = attr_sec.map_or(&[][..], |s| &parsed.payload[s.range()]);
    let (offsets, attr_bytes) =
        parsed
            .table
            .rebuild(attr_data, |table, i| match (table, builtin) {
                (Table::Attr, Some(b)) if replace[i] => Some((b, true, &UNKNOWN_LOC_ENTRY[..])),
                _ => None,
            });
    let string_bytes = parsed.strings.rebuild(&empty);
    let renumbered = match renumber(parsed, &graph, &live, &replace) {
        Ok(r) => {
            notes.push(format!(
                "renumbered canonically: {} attributes and {} strings kept",
                r.kept.0, r.kept.1
            ));
            Some(r)
        }
        Err(why) => {
            notes.push(format!("indices kept in place: {why}"));
            None
        }
    };
    let mut out_sections = Vec::new();
    for s in &parsed.header.sections {
        let inner = match s.id {
            section::DIALECT => parsed.dialects.nested_alignment,
            section::IR => parsed.ir.nested_alignment,
            section::RESOURCE => parsed.resources.alignment,
            _ => 1,
        };
        if inner > 1 && !(s.offset as u64).is_multiple_of(inner) {
            return Ok(Pass::Unchanged(format!(
                "the {} section holds data aligned to {inner} bytes but starts at offset {:#x}, so moving it cannot be proven lossless",
                s.name, s.offset
            )));
        }
        let data = match (s.id, &renumbered) {
            (section::STRING, Some(r)) => r.strings.clone(),
            (section::ATTR_TYPE, Some(r)) => r.entries.clone(),
            (section::ATTR_TYPE_OFFSET, Some(r)) => r.offsets.clone(),
            (section::IR, Some(r)) => r.ir.clone(),
            (
                section::PROPERTIES,
                Some(Renumbered {
                    properties: Some(p),
                    ..
                }),
            ) => p.clone(),
            (section::STRING, None) => string_bytes.clone(),
            (section::ATTR_TYPE, None) => attr_bytes.clone(),
            (section::ATTR_TYPE_OFFSET, None) => offsets.clone(),
            _ => parsed.payload[s.range()].to_vec(),
        };
        out_sections.push(OutSection {
            id: s.id,
            data,
            alignment: s.alignment.unwrap_or(1).max(inner),
        });
    }
    let bytes = emit(&parsed.payload[..parsed.header.header_len], &out_sections);
    let attr_base = attr_sec.map_or(0, |s| s.offset);
    let debug = DebugMap {
        attrs_replaced: (0..replace.len())
            .filter(|&i| replace[i])
            .map(|i| {
                let r = &parsed.table.attrs[i].range;
                (i, attr_base + r.start..attr_base + r.end)
            })
            .collect(),
        strings_emptied: (0..empty.len())
            .filter(|&i| empty[i])
            .map(|i| {
                let start = parsed.strings.offsets[i];
                (i, start..start + parsed.strings.strings[i].len())
            })
            .collect(),
        location_scalars: (0..replace.len())
            .filter(|&i| replace[i])
            .flat_map(|i| parsed.attr(i).scalars().iter().cloned())
            .collect(),
        location_refs: match renumbered {
            Some(_) => parsed
                .ir
                .loc_uses
                .iter()
                .map(|u| u.offset..u.offset + varint_len(parsed.payload, u.offset))
                .collect(),
            None => Vec::new(),
        },
    };
    Ok(Pass::Stripped {
        bytes,
        replaced: replace.iter().filter(|&&r| r).count(),
        emptied: empty.iter().filter(|&&e| e).count(),
        notes,
        debug,
    })
}

fn varint_len(payload: &[u8], offset: usize) -> usize {
    payload
        .get(offset..)
        .and_then(super::varint::decode)
        .map_or(1, |(_, len)| len)
}

fn describe_why(why: &Why) -> String {
    match why {
        Why::Root(place) => format!("is also used directly by {place}"),
        Why::Possible(place) => format!("may also be referenced by {place}"),
        Why::Via(from, slot) => format!("is also used by {from} {}", slot_name(*slot)),
    }
}

fn slot_name(slot: Slot) -> &'static str {
    match slot {
        Slot::Value => "as an attribute value",
        Slot::NestedLoc => "as a nested location",
        Slot::LocFilename => "as a file name",
        Slot::LocName => "as a location name",
        Slot::LocMetadata => "as location metadata",
    }
}

fn owner_name(parsed: &Parsed<'_>, u: &LocUse) -> String {
    let name = parsed.op_name(u.op_name);
    match u.owner {
        LocOwner::Op => format!("operation #{} ({name})", u.op),
        LocOwner::BlockArg => format!("a block argument in operation #{} ({name})", u.op),
    }
}

/// A file name that stays only because undecodable bytes may reference it
/// would make the result depend on where the sources were checked out: refuse
/// rather than return a payload that is stripped in name only. (Names and
/// metadata kept that way are noted instead: they come from the code.)
fn check_file_names(parsed: &Parsed<'_>, live: &Liveness) -> Option<String> {
    for (l, d) in parsed.attrs.iter().enumerate() {
        if !d.is_location() {
            continue;
        }
        for r in d.refs().iter().filter(|r| r.slot == Slot::LocFilename) {
            let Ent::Attr(t) = ent(r.target) else {
                continue;
            };
            let mut suspects = vec![Ent::Attr(t)];
            suspects.extend(parsed.attr(t).refs().iter().map(|r| ent(r.target)));
            for e in suspects {
                if let Some(Why::Possible(place)) = live.live.get(&e)
                    && !live.known_live.contains(&e)
                {
                    return Some(format!(
                        "{e}, the file name of location attribute #{l}, may be referenced by {place}"
                    ));
                }
            }
        }
    }
    None
}

/// Location slots must hold builtin locations, and every location about to be
/// replaced must be well-formed: otherwise the rewrite could turn a payload
/// the upstream reader rejects into one it accepts.
fn check_locations(parsed: &Parsed<'_>) -> Option<String> {
    for u in &parsed.ir.loc_uses {
        if !parsed.attr(u.attr).is_location() {
            return Some(format!(
                "attribute #{}, the location of {} at offset {:#x}, is not a builtin location",
                u.attr,
                owner_name(parsed, u),
                u.offset
            ));
        }
    }
    for (i, d) in parsed.attrs.iter().enumerate() {
        if !d.is_location() {
            continue;
        }
        for r in d.refs() {
            let Ent::Attr(t) = ent(r.target) else {
                continue;
            };
            let target = parsed.attr(t);
            let ok = match r.slot {
                Slot::NestedLoc => target.is_location(),
                Slot::LocFilename | Slot::LocName => target.is_string_attr(),
                Slot::LocMetadata | Slot::Value => true,
            };
            if !ok {
                return Some(format!(
                    "location attribute #{i} uses attribute #{t} {}, which has the wrong kind",
                    slot_name(r.slot)
                ));
            }
        }
    }
    None
}
