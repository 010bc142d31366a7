//! Canonical renumbering once locations are gone.
//!
//! Replacing locations in place keeps every index, so the output still
//! depends on how many location entries (and their names and file names) the
//! input had and where the producer's writer put them: MLIR numbers
//! attributes by first use and reference count, locations take part in both
//! (a deeper call-site chain adds entries and shifts every later index, a
//! name used by locations and as `sym_name` moves with its count), and it
//! numbers strings in the order its attribute entries ask for them. Here every
//! location becomes one `UnknownLoc`, dead attributes and strings are dropped,
//! and what remains is numbered as the writer numbers the module without
//! locations:
//! - attributes in the order `numbering.rs` replays;
//! - strings: those of the dialect and resource sections keep their indices
//!   (the writer asks for them first; required to be a prefix), the rest by
//!   first reference from the renumbered attribute, then type entries;
//! - types, op names, dialects and resources keep their numbers (no location
//!   takes part in numbering them; `numbering.rs` checks dialects and types);
//! - property blobs are rewritten per op (by the op's own schema) and shared
//!   by content in order of first use, as the writer does;
//! - from version 4, block arguments store no unknown location.
//!
//! Every index that changes is rewritten where it is stored: attribute and
//! type entries, the IR section (nested isolated-region sections get new
//! lengths) and the decoded property blobs (new sizes). Only when every such
//! place is known: any undecodable byte (a property blob outside the table,
//! an opaque entry, a dialect version blob) could hold an index that would go
//! stale, and then the caller keeps the in-place result.

use std::collections::BTreeMap;
use std::ops::Range;

use super::analysis::{Ent, Graph, Liveness};
use super::attrs::{Table, Target};
use super::encoding::{UNKNOWN_LOC_ENTRY, section};
use super::model::Parsed;
use super::numbering::{NewAttr, attribute_order};
use super::strings;
use super::varint;

/// The sections that renumbering rewrites.
pub struct Renumbered {
    /// String section data.
    pub strings: Vec<u8>,
    /// Attr/type offset section data.
    pub offsets: Vec<u8>,
    /// Attr/type section data.
    pub entries: Vec<u8>,
    /// IR section data.
    pub ir: Vec<u8>,
    /// Properties section data (when the payload has blobs).
    pub properties: Option<Vec<u8>>,
    /// Attributes and strings kept, for the notes.
    pub kept: (usize, usize),
}

/// Renumbers `parsed` given the in-place decision `replace` (attributes that
/// became `UnknownLoc`; strings follow from the kept entries), or says why
/// it cannot.
pub fn renumber(
    parsed: &Parsed<'_>,
    graph: &Graph<'_>,
    live: &Liveness,
    replace: &[bool],
) -> Result<Renumbered, String> {
    if let Some(region) = graph.regions.first() {
        return Err(format!(
            "{} undecodable byte regions (the first at offset {:#x}) may hold indices",
            graph.regions.len(),
            region.start
        ));
    }
    let builtin = *parsed
        .builtin
        .first()
        .ok_or("there is no builtin dialect to hold UnknownLoc")?;
    if parsed.ir.nested_alignment > 1 {
        return Err("a nested IR section is aligned".into());
    }
    if let Some(t) = (0..parsed.types.len()).find(|&t| !live.live.contains_key(&Ent::Type(t))) {
        return Err(format!("type #{t} is reachable only from debug locations"));
    }
    let attr_sec = parsed
        .section(section::ATTR_TYPE)
        .ok_or("no attr/type section")?;
    if parsed.table.used_len != attr_sec.len {
        return Err("the attr/type section has bytes outside its entries".into());
    }
    let fixed_strings = fixed_string_prefix(parsed)?;
    let rules = crate::encoding::rules(parsed.header.version).ok_or("unsupported version")?;

    let order = attribute_order(parsed, builtin)?;
    if let Some(a) = order.iter().find_map(|n| match n {
        NewAttr::Old(a) if replace[*a] => Some(*a),
        _ => None,
    }) {
        return Err(format!(
            "attribute #{a} is dead once locations are gone, yet referenced"
        ));
    }
    if let Some(a) = (0..parsed.attrs.len()).find(|&a| {
        !parsed.attr(a).is_location() && !replace[a] && !order.contains(&NewAttr::Old(a))
    }) {
        return Err(format!(
            "attribute #{a} is kept but not numbered from the IR"
        ));
    }
    let mut new_attr = vec![usize::MAX; parsed.attrs.len()];
    let mut unknown = usize::MAX;
    for (n, a) in order.iter().enumerate() {
        match a {
            NewAttr::Old(a) => new_attr[*a] = n,
            NewAttr::Unknown => unknown = n,
        }
    }
    let attr_index = |a: usize| -> Result<u64, String> {
        let n = if parsed.attr(a).is_location() {
            unknown
        } else {
            new_attr[a]
        };
        if n == usize::MAX {
            return Err(format!("attribute #{a} is used but was dropped"));
        }
        Ok(n as u64)
    };

    // Strings: the fixed prefix, then by first reference from the new entries.
    let mut new_str: Vec<usize> = (0..parsed.strings.len())
        .map(|s| if s < fixed_strings { s } else { usize::MAX })
        .collect();
    let mut string_order: Vec<usize> = (0..fixed_strings).collect();
    let entry_refs = order
        .iter()
        .filter_map(|a| match a {
            NewAttr::Old(a) => Some(parsed.attr(*a).refs()),
            NewAttr::Unknown => None,
        })
        .chain(parsed.types.iter().map(|t| t.refs()));
    for refs in entry_refs {
        for r in refs {
            if let Target::Str(s) = r.target
                && new_str[s] == usize::MAX
            {
                new_str[s] = string_order.len();
                string_order.push(s);
            }
        }
    }

    // Every stored index that changes, by absolute offset: its new value.
    let mut patches = Patches::default();
    let new_target = |t: Target| -> Result<u64, String> {
        match t {
            Target::Attr(a) => attr_index(a),
            Target::Type(t) => Ok(t as u64),
            Target::Str(s) => Ok(new_str[s] as u64),
        }
    };
    let mut table = TableWriter::default();
    let mut write_entry = |table: &mut TableWriter, kind: Table, i: usize| -> Result<(), String> {
        let (entry, decoded) = match kind {
            Table::Attr => (&parsed.table.attrs[i], &parsed.attrs[i]),
            Table::Type => (&parsed.table.types[i], &parsed.types[i]),
        };
        for r in decoded.refs() {
            patches.set(r.offset, new_target(r.target)?)?;
        }
        let start = attr_sec.offset + entry.range.start;
        let bytes = patches.copy(parsed.payload, start..start + entry.range.len())?;
        table.push(entry.dialect, entry.custom, &bytes);
        Ok(())
    };
    for a in &order {
        match a {
            NewAttr::Old(a) => write_entry(&mut table, Table::Attr, *a)?,
            NewAttr::Unknown => table.push(builtin, true, &UNKNOWN_LOC_ENTRY),
        }
    }
    let attr_groups = std::mem::take(&mut table.groups);
    for t in 0..parsed.types.len() {
        write_entry(&mut table, Table::Type, t)?;
    }
    let mut offsets = Vec::new();
    varint::encode(order.len() as u64, &mut offsets);
    varint::encode(parsed.types.len() as u64, &mut offsets);
    for (dialect, sizes) in attr_groups.iter().chain(&table.groups) {
        varint::encode(*dialect as u64, &mut offsets);
        varint::encode(sizes.len() as u64, &mut offsets);
        for &size in sizes {
            varint::encode(size, &mut offsets);
        }
    }

    // The IR section and the property blobs.
    for &(a, offset) in &parsed.ir.attr_refs {
        patches.set(offset, attr_index(a)?)?;
    }
    for u in &parsed.ir.loc_uses {
        patches.set(u.offset, attr_index(u.attr)?)?;
    }
    if rules.elide_unknown_block_arg_locs {
        // The writer stores no location for an argument whose location is
        // unknown: `(type << 1) | hasLoc` loses its flag, the index goes.
        for arg in parsed
            .ir
            .tree
            .iter()
            .flat_map(|op| &op.regions)
            .flatten()
            .flat_map(|b| &b.args)
        {
            if let Some((_, loc_offset)) = arg.loc {
                patches.set(arg.ty_offset, (arg.ty as u64) << 1)?;
                patches.delete(loc_offset);
            }
        }
    }
    // Each op's blob rewritten by its own schema (ops of different names may
    // share a blob whose bytes they read differently), then shared again by
    // content in the order ops use them, as the writer's properties section
    // does; the IR's blob indices follow.
    let mut properties = None;
    if !parsed.props.blobs.is_empty() {
        let mut blobs: Vec<Vec<u8>> = Vec::new();
        let mut used = vec![false; parsed.props.blobs.len()];
        for &(b, offset, name) in &parsed.ir.props_refs {
            used[b] = true;
            let op = parsed.op_name(name);
            let mut own = Patches::default();
            for r in parsed.blob_reads[b].as_ref().map_err(Clone::clone)? {
                if r.op != op {
                    continue;
                }
                let stored = varint_at(parsed.payload, r.offset);
                let new = attr_index(r.attr)?;
                let value = if stored == r.attr as u64 {
                    new
                } else {
                    (new << 1) | 1 // an optional attribute, present
                };
                own.set(r.offset, value)?;
            }
            let bytes = own.copy(parsed.payload, parsed.props.blobs[b].clone())?;
            let index = blobs.iter().position(|x| *x == bytes).unwrap_or_else(|| {
                blobs.push(bytes);
                blobs.len() - 1
            });
            patches.set(offset, index as u64)?;
        }
        if let Some(b) = used.iter().position(|u| !u) {
            return Err(format!("property blob #{b} is used by no operation"));
        }
        let mut out = Vec::new();
        varint::encode(blobs.len() as u64, &mut out);
        for bytes in &blobs {
            varint::encode(bytes.len() as u64, &mut out);
            out.extend_from_slice(bytes);
        }
        properties = Some(out);
    }
    let ir_sec = parsed.section(section::IR).ok_or("no IR section")?;
    let ir = patches.copy_nested(parsed.payload, ir_sec.range(), &parsed.ir.nested_sections)?;

    let stored: Vec<&[u8]> = string_order
        .iter()
        .map(|&s| parsed.strings.strings[s])
        .collect();
    Ok(Renumbered {
        strings: strings::write_section(&stored),
        offsets,
        entries: table.entries,
        ir,
        properties,
        kept: (order.len(), string_order.len()),
    })
}

/// How many strings keep their index: those the dialect and resource
/// sections reference, which must be exactly the first ones.
fn fixed_string_prefix(parsed: &Parsed<'_>) -> Result<usize, String> {
    let mut fixed = vec![false; parsed.strings.len()];
    for &(s, _) in parsed
        .dialects
        .string_refs
        .iter()
        .chain(&parsed.resources.string_refs)
    {
        fixed[s] = true;
    }
    let prefix = fixed.iter().take_while(|&&f| f).count();
    match fixed[prefix..].iter().position(|&f| f) {
        None => Ok(prefix),
        Some(p) => Err(format!(
            "string #{} is named by the dialect or resource section but follows string #{prefix}, which is not",
            prefix + p
        )),
    }
}

/// The entries of the new attr/type section and their dialect groups.
#[derive(Default)]
struct TableWriter {
    entries: Vec<u8>,
    /// `(dialect, (size << 1) | custom of each entry)`.
    groups: Vec<(usize, Vec<u64>)>,
}

impl TableWriter {
    fn push(&mut self, dialect: usize, custom: bool, bytes: &[u8]) {
        let size = ((bytes.len() as u64) << 1) | u64::from(custom);
        match self.groups.last_mut() {
            Some((d, sizes)) if *d == dialect => sizes.push(size),
            _ => self.groups.push((dialect, vec![size])),
        }
        self.entries.extend_from_slice(bytes);
    }
}

/// The prefix varint stored at `offset` (0 where none can be read: the walk checked it).
fn varint_at(payload: &[u8], offset: usize) -> u64 {
    payload
        .get(offset..)
        .and_then(varint::decode)
        .map_or(0, |(v, _)| v)
}

/// New values of stored varints by absolute offset (`None`: removed).
#[derive(Default)]
struct Patches(BTreeMap<usize, Option<u64>>);

impl Patches {
    /// Sets the value at `offset`; two readings of one place must agree.
    fn set(&mut self, offset: usize, value: u64) -> Result<(), String> {
        match self.0.insert(offset, Some(value)) {
            Some(old) if old != Some(value) => Err(format!(
                "the index at offset {offset:#x} is read two ways ({old:?} and {value})"
            )),
            _ => Ok(()),
        }
    }

    /// Removes the varint at `offset`.
    fn delete(&mut self, offset: usize) {
        self.0.insert(offset, None);
    }

    /// `payload[range]` with the patched varints re-encoded. Patched varints
    /// must lie inside `range` and not overlap (two readings of one blob
    /// could disagree on where an index starts).
    fn copy(&self, payload: &[u8], range: Range<usize>) -> Result<Vec<u8>, String> {
        let mut out = Vec::with_capacity(range.len());
        let mut pos = range.start;
        for (&offset, &value) in self.0.range(range.clone()) {
            let len = payload
                .get(offset..range.end)
                .and_then(varint::decode)
                .map(|(_, len)| len)
                .filter(|_| offset >= pos)
                .ok_or_else(|| {
                    format!("the index at offset {offset:#x} overlaps another or its end")
                })?;
            out.extend_from_slice(&payload[pos..offset]);
            if let Some(value) = value {
                varint::encode(value, &mut out);
            }
            pos = offset + len;
        }
        out.extend_from_slice(&payload[pos..range.end]);
        Ok(out)
    }

    /// [`Self::copy`] for an IR section: every nested section in `range`
    /// (`(id offset, data)`, unaligned) is rewritten with its new length.
    fn copy_nested(
        &self,
        payload: &[u8],
        range: Range<usize>,
        nested: &[(usize, Range<usize>)],
    ) -> Result<Vec<u8>, String> {
        let mut out = Vec::with_capacity(range.len());
        let mut pos = range.start;
        for (header, data) in nested {
            if *header < pos || data.end > range.end {
                continue; // inside an earlier child, or outside this range
            }
            out.extend_from_slice(&self.copy(payload, pos..*header)?);
            let inner = self.copy_nested(payload, data.clone(), nested)?;
            out.push(section::IR);
            varint::encode(inner.len() as u64, &mut out);
            out.extend_from_slice(&inner);
            pos = data.end;
        }
        out.extend_from_slice(&self.copy(payload, pos..range.end)?);
        Ok(out)
    }
}
