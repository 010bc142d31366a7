//! The order in which MLIR's bytecode writer numbers attributes, replayed on
//! a parsed payload whose locations all became one `UnknownLoc`.
//!
//! Facts from upstream `mlir/lib/Bytecode/Writer/IRNumbering.cpp`: the root
//! operation is numbered, then regions from a stack (last pushed first): a
//! region's blocks, each block's arguments (location, then type) and
//! operations (name, result types, attribute dictionary, properties as the
//! op's `writeProperties` writes them, location), and after the region the
//! regions of its operations are pushed. Numbering an attribute or type that
//! already has a number only counts a reference; a new one is appended and
//! the entries its encoding writes are numbered in turn. Finally entries are
//! stably sorted by reference count (most first), then, within each run of
//! entries sharing an index width (128, then 2^14 - 128, ... entries),
//! stably grouped by dialect, the dialect that ended the previous run first.
//! Dialects are numbered in order of first use.

use super::attrs::Target;
use super::ir::BlockNode;
use super::model::Parsed;

/// A new attribute: an old kept entry, or the one `UnknownLoc` standing for
/// every location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewAttr {
    /// Attribute `i` of the input.
    Old(usize),
    /// The `UnknownLoc` every location becomes.
    Unknown,
}

/// The attributes in the order the writer would number them, or why the
/// payload's other numberings (dialects, types) would not stay as they are.
pub fn attribute_order(parsed: &Parsed<'_>, builtin: usize) -> Result<Vec<NewAttr>, String> {
    let mut n = Numbering::new(parsed, builtin);
    let [root] = parsed.ir.top[..] else {
        return Err(format!(
            "the top-level block holds {} operations, not one",
            parsed.ir.top.len()
        ));
    };
    n.op(root)?;
    let mut stack: Vec<&[BlockNode]> = parsed.ir.tree[root]
        .regions
        .iter()
        .map(Vec::as_slice)
        .collect();
    while let Some(region) = stack.pop() {
        for block in region {
            for arg in &block.args {
                match arg.loc {
                    Some((loc, _)) => n.attr(loc),
                    None => n.unknown(),
                }
                n.ty(arg.ty);
            }
            for &op in &block.ops {
                n.op(op)?;
            }
        }
        for block in region {
            for &op in &block.ops {
                stack.extend(parsed.ir.tree[op].regions.iter().map(Vec::as_slice));
            }
        }
    }
    n.finish()
}

struct Numbering<'p, 'a> {
    parsed: &'p Parsed<'a>,
    builtin: usize,
    /// Created attributes in creation order, with their reference counts.
    attrs: Vec<(NewAttr, u64)>,
    attr_slot: Vec<Option<usize>>,
    unknown_slot: Option<usize>,
    types: Vec<(usize, u64)>,
    type_slot: Vec<Option<usize>>,
    dialects: Vec<usize>,
}

impl<'p, 'a> Numbering<'p, 'a> {
    fn new(parsed: &'p Parsed<'a>, builtin: usize) -> Self {
        Numbering {
            parsed,
            builtin,
            attrs: Vec::new(),
            attr_slot: vec![None; parsed.attrs.len()],
            unknown_slot: None,
            types: Vec::new(),
            type_slot: vec![None; parsed.types.len()],
            dialects: Vec::new(),
        }
    }

    fn dialect(&mut self, d: usize) {
        if !self.dialects.contains(&d) {
            self.dialects.push(d);
        }
    }

    fn op(&mut self, op: usize) -> Result<(), String> {
        let parsed = self.parsed;
        let node = &parsed.ir.tree[op];
        if let Some(name) = parsed.dialects.op_names.get(node.name) {
            self.dialect(name.dialect);
        }
        for &t in &node.results {
            self.ty(t);
        }
        if let Some(d) = node.dict {
            self.attr(d);
        }
        if let Some(a) = node.props_attr {
            self.attr(a);
        }
        if let Some(b) = node.blob {
            let name = parsed.op_name(node.name);
            let refs = parsed.blob_reads[b].as_ref().map_err(Clone::clone)?;
            // A shared blob lists the reads of each user; this op's are its own.
            for r in refs.iter().filter(|r| r.op == name) {
                self.attr(r.attr);
            }
        }
        self.attr(node.loc);
        Ok(())
    }

    fn unknown(&mut self) {
        if !counted(&mut self.unknown_slot, &mut self.attrs, NewAttr::Unknown) {
            self.dialect(self.builtin);
        }
    }

    /// Numbers an attribute or type and, depth-first, what its encoding
    /// writes (without recursion: payloads may nest deeply).
    fn attr(&mut self, a: usize) {
        self.entity(Target::Attr(a));
    }

    fn ty(&mut self, t: usize) {
        self.entity(Target::Type(t));
    }

    fn entity(&mut self, first: Target) {
        let parsed = self.parsed;
        let mut stack: Vec<(&[super::attrs::Ref], usize)> = Vec::new();
        let mut next = Some(first);
        loop {
            if let Some(t) = next.take() {
                let refs = match t {
                    Target::Attr(a) if parsed.attr(a).is_location() => {
                        self.unknown();
                        None
                    }
                    Target::Attr(a) => {
                        if counted(&mut self.attr_slot[a], &mut self.attrs, NewAttr::Old(a)) {
                            None
                        } else {
                            self.dialect(parsed.table.attrs[a].dialect);
                            Some(parsed.attr(a).refs())
                        }
                    }
                    Target::Type(t) => {
                        if counted(&mut self.type_slot[t], &mut self.types, t) {
                            None
                        } else {
                            self.dialect(parsed.table.types[t].dialect);
                            Some(parsed.types[t].refs())
                        }
                    }
                    Target::Str(_) => None,
                };
                if let Some(refs) = refs {
                    stack.push((refs, 0));
                }
            }
            let Some((refs, pos)) = stack.last_mut() else {
                return;
            };
            match refs.get(*pos) {
                Some(r) => {
                    *pos += 1;
                    next = Some(r.target);
                }
                None => {
                    stack.pop();
                }
            }
        }
    }

    fn finish(mut self) -> Result<Vec<NewAttr>, String> {
        let parsed = self.parsed;
        let expected: Vec<usize> = (0..parsed.dialects.dialects.len()).collect();
        if self.dialects != expected {
            return Err(format!(
                "the dialects would be numbered {:?}",
                self.dialects
            ));
        }
        let dialect_of_type = |t: &usize| parsed.table.types[*t].dialect;
        let types = sorted(std::mem::take(&mut self.types), dialect_of_type);
        if types != (0..parsed.types.len()).collect::<Vec<_>>() {
            return Err("the types would be numbered in another order".into());
        }
        let builtin = self.builtin;
        let dialect_of_attr = |a: &NewAttr| match a {
            NewAttr::Old(a) => parsed.table.attrs[*a].dialect,
            NewAttr::Unknown => builtin,
        };
        Ok(sorted(self.attrs, dialect_of_attr))
    }
}

/// Counts a reference to `item` if it has a number (`slot`), else appends it
/// to `list` with one reference and returns false.
fn counted<T>(slot: &mut Option<usize>, list: &mut Vec<(T, u64)>, item: T) -> bool {
    match *slot {
        Some(s) => {
            list[s].1 += 1;
            true
        }
        None => {
            *slot = Some(list.len());
            list.push((item, 1));
            false
        }
    }
}

/// Entries sorted the writer's way: by reference count, then by dialect
/// within each run of one index width.
fn sorted<T: Copy>(mut entries: Vec<(T, u64)>, dialect: impl Fn(&T) -> usize) -> Vec<T> {
    entries.sort_by_key(|&(_, count)| std::cmp::Reverse(count));
    let mut items: Vec<T> = entries.into_iter().map(|(t, _)| t).collect();
    let mut first_dialect = 0;
    let mut in_group = 0usize;
    let mut start = 0;
    for width in 1..9u32 {
        if start >= items.len() {
            break;
        }
        in_group = (1usize << (7 * width)).saturating_sub(in_group);
        let end = start.saturating_add(in_group).min(items.len());
        let run = &mut items[start..end];
        run.sort_by_key(|t| {
            let d = dialect(t);
            (d != first_dialect, d)
        });
        first_dialect = dialect(&run[run.len() - 1]);
        start = end;
    }
    items
}
