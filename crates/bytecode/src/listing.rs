//! A read-only, dialect-free listing of a payload's operations, for explaining
//! how two kernels differ: each operation in pre-order with its place in the
//! region tree, name, attributes and properties as text where they decode
//! (`listing/text.rs`), operand value numbers, successors, result and block
//! argument types. Locations are left out: they never change what a kernel
//! computes, so two kernels that differ only in them list the same.

use crate::error::BytecodeError;
use crate::ir::{BlockNode, OpNode};
use crate::model::Parsed;

mod text;

use text::{Text, hex};

/// Where an operation sits: one step per enclosing operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// Pre-order position of the enclosing operation.
    pub parent: usize,
    /// Region of that operation.
    pub region: usize,
    /// Block of that region.
    pub block: usize,
}

/// One operation, read without its dialect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpView {
    /// Pre-order position, from 0.
    pub position: usize,
    /// Enclosing operations, outermost first (empty at the top level).
    pub path: Vec<Place>,
    /// `dialect.op`.
    pub name: String,
    /// The attribute dictionary: (name, value as text).
    pub attributes: Vec<(String, String)>,
    /// The properties: (inherent attribute, value as text) when the property
    /// table decodes them, else one `("properties", hex bytes)` entry.
    pub properties: Vec<(String, String)>,
    /// Operand value numbers, as the bytecode numbers values.
    pub operands: Vec<u64>,
    /// Successor block indices.
    pub successors: Vec<u64>,
    /// Result types as text.
    pub results: Vec<String>,
    /// Argument types of each block of each region, in order.
    pub block_arguments: Vec<Vec<String>>,
}

/// What differs between two operations at one position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// What it is: `name`, `attribute x`, `property x`, `operands`, ...
    pub aspect: String,
    /// Old value as text (`absent` when there is none).
    pub old: String,
    /// New value as text.
    pub new: String,
}

/// The first operation at which two listings differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpDifference {
    /// Its pre-order position.
    pub position: usize,
    /// The old operation, if the old listing has one there.
    pub old: Option<OpView>,
    /// The new operation, if the new listing has one there.
    pub new: Option<OpView>,
    /// Everything that differs, in the order of [`OpView`]'s fields.
    pub changes: Vec<Change>,
}

/// Lists the operations of `payload` in pre-order.
pub fn ops(payload: &[u8]) -> Result<Vec<OpView>, BytecodeError> {
    let parsed = Parsed::parse(payload)?;
    let text = Text { parsed: &parsed };
    let mut out = Vec::with_capacity(parsed.ir.tree.len());
    let mut stack: Vec<(usize, Vec<Place>)> = parsed
        .ir
        .top
        .iter()
        .rev()
        .map(|&op| (op, Vec::new()))
        .collect();
    while let Some((op, path)) = stack.pop() {
        let node = &parsed.ir.tree[op];
        out.push(view(&text, op, node, path.clone()));
        let children = node
            .regions
            .iter()
            .enumerate()
            .flat_map(|(region, blocks)| {
                blocks.iter().enumerate().flat_map(move |(block, b)| {
                    b.ops.iter().map(move |&child| (child, region, block))
                })
            });
        let children: Vec<_> = children.collect();
        for (child, region, block) in children.into_iter().rev() {
            let mut inner = path.clone();
            inner.push(Place {
                parent: op,
                region,
                block,
            });
            stack.push((child, inner));
        }
    }
    Ok(out)
}

fn view(text: &Text<'_, '_>, position: usize, node: &OpNode, path: Vec<Place>) -> OpView {
    let parsed = text.parsed;
    let name = parsed.op_name(node.name);
    let attributes = node.dict.map_or_else(Vec::new, |d| {
        text.dictionary(d)
            .unwrap_or_else(|| vec![("attributes".into(), text.attr(d))])
    });
    let mut properties = Vec::new();
    if let Some(a) = node.props_attr {
        properties = text
            .dictionary(a)
            .unwrap_or_else(|| vec![("properties".into(), text.attr(a))]);
    }
    if let Some(blob) = node.blob {
        properties = match parsed.blob_reads.get(blob) {
            Some(Ok(refs)) => refs
                .iter()
                .filter(|r| r.op == name)
                .map(|r| (r.field.to_string(), text.attr(r.attr)))
                .collect(),
            _ => {
                let range = parsed.props.blobs.get(blob).cloned().unwrap_or(0..0);
                let bytes = parsed.payload.get(range).unwrap_or(&[]);
                vec![("properties".into(), hex(bytes))]
            }
        };
    }
    let block_arguments = node
        .regions
        .iter()
        .flatten()
        .map(|b: &BlockNode| b.args.iter().map(|a| text.ty(a.ty)).collect())
        .collect();
    OpView {
        position,
        path,
        name,
        attributes,
        properties,
        operands: node.operands.clone(),
        successors: node.successors.clone(),
        results: node.results.iter().map(|&t| text.ty(t)).collect(),
        block_arguments,
    }
}

/// The first position at which the listings `old` and `new` differ, or `None`
/// when they are the same.
pub fn first_difference(old: &[OpView], new: &[OpView]) -> Option<OpDifference> {
    let len = old.len().max(new.len());
    (0..len).find_map(|i| {
        let (a, b) = (old.get(i), new.get(i));
        let changes = match (a, b) {
            (Some(a), Some(b)) => changes(a, b),
            (Some(a), None) => vec![change("operation", &a.name, "absent")],
            (None, Some(b)) => vec![change("operation", "absent", &b.name)],
            (None, None) => Vec::new(),
        };
        (!changes.is_empty()).then(|| OpDifference {
            position: i,
            old: a.cloned(),
            new: b.cloned(),
            changes,
        })
    })
}

fn change(aspect: &str, old: &str, new: &str) -> Change {
    Change {
        aspect: aspect.into(),
        old: old.into(),
        new: new.into(),
    }
}

fn changes(a: &OpView, b: &OpView) -> Vec<Change> {
    let mut out = Vec::new();
    if a.name != b.name {
        out.push(change("name", &a.name, &b.name));
    }
    if a.path != b.path {
        out.push(change("place", &places(&a.path), &places(&b.path)));
    }
    named_changes("attribute", &a.attributes, &b.attributes, &mut out);
    named_changes("property", &a.properties, &b.properties, &mut out);
    let lists = [
        ("operands", list(&a.operands), list(&b.operands)),
        ("successors", list(&a.successors), list(&b.successors)),
        ("result types", list(&a.results), list(&b.results)),
        (
            "block argument types",
            list(&a.block_arguments),
            list(&b.block_arguments),
        ),
    ];
    for (aspect, x, y) in lists {
        if x != y {
            out.push(change(aspect, &x, &y));
        }
    }
    out
}

/// Changes between two (name, text) lists, by name, in the old list's order
/// then the new names.
fn named_changes(
    kind: &str,
    old: &[(String, String)],
    new: &[(String, String)],
    out: &mut Vec<Change>,
) {
    let find = |list: &[(String, String)], name: &str| {
        list.iter()
            .find(|(n, _)| n == name)
            .map_or_else(|| "absent".to_string(), |(_, v)| v.clone())
    };
    let names = old.iter().map(|(n, _)| n).chain(
        new.iter()
            .map(|(n, _)| n)
            .filter(|n| !old.iter().any(|(o, _)| o == *n)),
    );
    for name in names {
        let (x, y) = (find(old, name), find(new, name));
        if x != y {
            out.push(change(&format!("{kind} {name}"), &x, &y));
        }
    }
}

fn list<T: std::fmt::Debug>(items: &[T]) -> String {
    format!("{items:?}")
}

fn places(path: &[Place]) -> String {
    let steps: Vec<String> = path
        .iter()
        .map(|p| format!("#{} region {} block {}", p.parent, p.region, p.block))
        .collect();
    if steps.is_empty() {
        "top level".into()
    } else {
        steps.join(" / ")
    }
}
