//! A dialect-free walk of the IR section. The stripper never rewrites it; it
//! walks it to learn which attribute indices are used as operation and
//! block-argument locations (the only places `strip-debuginfo` changes) and
//! which attributes, types and property blobs the operations use for anything
//! else. Operation layout: name, mask byte, location, then what the mask says
//! (attribute dictionary, properties, results, operands, successors, use-list
//! orders, regions); isolated regions are nested IR sections from version 2.
//! The walk also numbers values as MLIR does ([`Values`]), to check the counts
//! and indices MLIR's reader trusts.

use super::dialects::OpName;
use super::encoding::{MAX_REGION_NESTING, VersionRules, op_mask, section};
use super::error::{BytecodeError, Result};
use super::reader::Reader;
use super::sections::read_nested_section;
use super::values::{Order, ValueId, Values};

/// Where a location index was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocOwner {
    /// The location of an operation.
    Op,
    /// The location of an argument of a block in the operation's regions.
    BlockArg,
}

/// A location slot: an attribute index used as a location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocUse {
    /// The attribute index.
    pub attr: usize,
    /// Absolute offset of the index.
    pub offset: usize,
    /// What it is the location of.
    pub owner: LocOwner,
    /// Pre-order number of the operation (from 0).
    pub op: usize,
    /// Its operation name index.
    pub op_name: usize,
}

/// What the IR section references.
#[derive(Debug, Clone, Default)]
pub struct IrRefs {
    /// Operation and block-argument locations.
    pub loc_uses: Vec<LocUse>,
    /// Attributes used as values (dictionaries, unregistered-op properties),
    /// with their absolute offsets.
    pub attr_refs: Vec<(usize, usize)>,
    /// Types used (results, block arguments), with their absolute offsets.
    pub type_refs: Vec<(usize, usize)>,
    /// Property blobs used: blob, absolute offset, operation name index.
    pub props_refs: Vec<(usize, usize, usize)>,
    /// Number of operations.
    pub ops: usize,
    /// Largest alignment of a nested IR section (1 when none is aligned).
    pub nested_alignment: u64,
    /// Nested IR sections (isolated regions, version 2+): absolute offset of
    /// the section id byte, and absolute range of the data.
    pub nested_sections: Vec<(usize, std::ops::Range<usize>)>,
    /// Every operation, by its index in walk order.
    pub tree: Vec<OpNode>,
    /// The operations of the top-level block.
    pub top: Vec<usize>,
}

/// One operation's references, as MLIR's writer numbers them.
#[derive(Debug, Clone, Default)]
pub struct OpNode {
    /// Operation name index.
    pub name: usize,
    /// Location attribute index.
    pub loc: usize,
    /// Attribute dictionary index, if any.
    pub dict: Option<usize>,
    /// Property blob index (registered op, v5+), if any.
    pub blob: Option<usize>,
    /// Properties stored as an attribute (unregistered op), if any.
    pub props_attr: Option<usize>,
    /// Result type indices.
    pub results: Vec<usize>,
    /// Operand value numbers, as stored.
    pub operands: Vec<u64>,
    /// Successor block indices, as stored.
    pub successors: Vec<u64>,
    /// Regions, each a list of blocks.
    pub regions: Vec<Vec<BlockNode>>,
}

/// One block: its arguments and operations.
#[derive(Debug, Clone, Default)]
pub struct BlockNode {
    /// Arguments: type index, its absolute offset, and the location (index
    /// and absolute offset) when stored.
    pub args: Vec<BlockArg>,
    /// Operation indices.
    pub ops: Vec<usize>,
}

/// One block argument.
#[derive(Debug, Clone, Copy)]
pub struct BlockArg {
    /// Type index.
    pub ty: usize,
    /// Absolute offset of the type varint.
    pub ty_offset: usize,
    /// Location attribute index and the absolute offset of its varint.
    pub loc: Option<(usize, usize)>,
}

/// Tables the walk checks indices against.
#[derive(Debug, Clone, Copy)]
pub struct IrContext<'a> {
    /// Format rules of the payload's version.
    pub rules: &'a VersionRules,
    /// Operation names from the dialect section.
    pub op_names: &'a [OpName],
    /// Number of attributes.
    pub num_attrs: usize,
    /// Number of types.
    pub num_types: usize,
    /// Number of property blobs.
    pub num_props: usize,
}

/// Walks the IR section `data` at absolute offset `base`.
pub fn walk(data: &[u8], base: usize, ctx: IrContext<'_>) -> Result<IrRefs> {
    let mut walker = Walker {
        ctx,
        out: IrRefs {
            nested_alignment: 1,
            ..Default::default()
        },
        values: Values::default(),
    };
    let mut reader = Reader::new(data, base);
    // The top level is a block without a region header; MLIR gives it no
    // value slots, and reading arguments there would touch a scope it has not
    // opened yet.
    let offset = reader.offset();
    walker.values.open_region(0, offset);
    let (has_args, top) = walker.block(&mut reader, 0, (0, 0))?;
    walker.out.top = top.ops;
    if has_args {
        return Err(BytecodeError::Malformed {
            offset,
            message: "the top-level block has arguments".into(),
        });
    }
    walker.values.close_region()?;
    walker.values.finish()?;
    Ok(walker.out)
}

struct Walker<'a> {
    ctx: IrContext<'a>,
    out: IrRefs,
    values: Values,
}

impl Walker<'_> {
    /// Walks a block; returns whether it has arguments, and the block.
    fn block(
        &mut self,
        r: &mut Reader<'_>,
        depth: usize,
        parent: (usize, usize),
    ) -> Result<(bool, BlockNode)> {
        let (num_ops, has_args) = r.varint_with_flag("block header")?;
        let mut node = BlockNode::default();
        if has_args && depth > 0 {
            node.args = self.block_args(r, parent)?;
        }
        for _ in 0..num_ops {
            node.ops.push(self.op(r, depth)?);
        }
        Ok((has_args, node))
    }

    fn block_args(
        &mut self,
        r: &mut Reader<'_>,
        (op, op_name): (usize, usize),
    ) -> Result<Vec<BlockArg>> {
        let mut args = Vec::new();
        let offset = r.offset();
        let num_args = r.count("block argument", 1)?;
        let first = self.values.define(num_args, true, offset)?;
        for _ in 0..num_args {
            let offset = r.offset();
            let (ty, has_loc) = if self.ctx.rules.elide_unknown_block_arg_locs {
                r.varint_with_flag("block argument type")?
            } else {
                (r.varint("block argument type")?, true)
            };
            let ty = super::reader::check_index("type", ty, self.ctx.num_types, offset)?;
            self.out.type_refs.push((ty, offset));
            let mut arg = BlockArg {
                ty,
                ty_offset: offset,
                loc: None,
            };
            if has_loc {
                let offset = r.offset();
                let attr = r.index("attribute", self.ctx.num_attrs)?;
                self.out.loc_uses.push(LocUse {
                    attr,
                    offset,
                    owner: LocOwner::BlockArg,
                    op,
                    op_name,
                });
                arg.loc = Some((attr, offset));
            }
            args.push(arg);
        }
        if self.ctx.rules.use_list_orders && r.byte("block use-list flag")? != 0 {
            self.use_lists(r, num_args, first, true)?;
        }
        Ok(args)
    }

    /// Reads the use-list orders of the values `first..first + range`.
    fn use_lists(
        &mut self,
        r: &mut Reader<'_>,
        range: u64,
        first: ValueId,
        need_one: bool,
    ) -> Result<()> {
        let offset = r.offset();
        let n = if range > 1 {
            r.varint("use-list count")?
        } else {
            1
        };
        if need_one && n == 0 {
            return Err(BytecodeError::Malformed {
                offset,
                message: "block argument use-list orders announced but none given".into(),
            });
        }
        for _ in 0..n {
            let index = if range > 1 {
                r.varint("use-list value index")?
            } else {
                0
            };
            let offset = r.offset();
            let (len, pairs) = r.varint_with_flag("use-list length")?;
            let len = r.count_of("use-list index", len, 1, offset)?;
            let mut indices = Vec::new();
            for _ in 0..len {
                indices.push(r.varint("use-list index")?);
            }
            // MLIR ignores orders of values the range does not have.
            if index < range {
                self.values.order(Order {
                    value: first + index as usize,
                    pairs,
                    indices,
                    offset,
                });
            }
        }
        Ok(())
    }

    /// Walks an operation; returns its index.
    fn op(&mut self, r: &mut Reader<'_>, depth: usize) -> Result<usize> {
        let op_index = self.out.ops;
        self.out.ops += 1;
        self.out.tree.push(OpNode::default());
        let name = r.index("operation name", self.ctx.op_names.len())?;
        let mask = r.byte("operation mask")?;
        let offset = r.offset();
        let attr = r.index("attribute", self.ctx.num_attrs)?;
        self.out.loc_uses.push(LocUse {
            attr,
            offset,
            owner: LocOwner::Op,
            op: op_index,
            op_name: name,
        });
        let mut node = OpNode {
            name,
            loc: attr,
            ..OpNode::default()
        };
        if mask & op_mask::HAS_ATTRS != 0 {
            let offset = r.offset();
            let dict = r.index("attribute", self.ctx.num_attrs)?;
            self.out.attr_refs.push((dict, offset));
            node.dict = Some(dict);
        }
        if mask & op_mask::HAS_PROPERTIES != 0 {
            let offset = r.offset();
            match self.ctx.op_names.get(name).and_then(|n| n.registered) {
                Some(true) => {
                    let p = r.index("properties", self.ctx.num_props)?;
                    self.out.props_refs.push((p, offset, name));
                    node.blob = Some(p);
                }
                Some(false) => {
                    let a = r.index("attribute", self.ctx.num_attrs)?;
                    self.out.attr_refs.push((a, offset));
                    node.props_attr = Some(a);
                }
                None => {
                    return Err(BytecodeError::Malformed {
                        offset,
                        message: format!(
                            "operation has properties in bytecode version {}, which predates them",
                            self.ctx.rules.version
                        ),
                    });
                }
            }
        }
        let mut num_results = 0;
        if mask & op_mask::HAS_RESULTS != 0 {
            num_results = r.count("result", 1)?;
            for _ in 0..num_results {
                let offset = r.offset();
                let ty = r.index("type", self.ctx.num_types)?;
                self.out.type_refs.push((ty, offset));
                node.results.push(ty);
            }
        }
        // MLIR defines them after reading the operands; the uses counted are
        // the same either way.
        let results = self.values.define_results(num_results, r.offset())?;
        if mask & op_mask::HAS_OPERANDS != 0 {
            for _ in 0..r.count("operand", 1)? {
                let offset = r.offset();
                let slot = r.varint("operand")?;
                self.values.use_slot(slot, offset)?;
                node.operands.push(slot);
            }
        }
        if mask & op_mask::HAS_SUCCESSORS != 0 {
            for _ in 0..r.count("successor", 1)? {
                node.successors.push(r.varint("successor")?);
            }
        }
        if self.ctx.rules.use_list_orders && mask & op_mask::HAS_USE_LIST_ORDERS != 0 {
            self.use_lists(r, num_results, results, false)?;
        }
        if mask & op_mask::HAS_INLINE_REGIONS != 0 {
            let offset = r.offset();
            let (num_regions, isolated) = r.varint_with_flag("region count")?;
            let num_regions = r.count_of("region", num_regions, 1, offset)?;
            if num_regions == 0 {
                self.out.tree[op_index] = node;
                return Ok(op_index);
            }
            if depth >= MAX_REGION_NESTING {
                return Err(BytecodeError::TooDeep {
                    limit: MAX_REGION_NESTING,
                    offset: r.offset(),
                });
            }
            if isolated {
                self.values.open_scope();
            }
            if isolated && self.ctx.rules.isolated_regions_in_sections {
                let raw = read_nested_section(
                    r,
                    section::IR,
                    "an ir section for regions",
                    &mut self.out.nested_alignment,
                )?;
                self.out
                    .nested_sections
                    .push((raw.header_offset, raw.offset..raw.offset + raw.data.len()));
                let mut sub = Reader::new(raw.data, raw.offset);
                for _ in 0..num_regions {
                    node.regions
                        .push(self.region(&mut sub, depth + 1, (op_index, name))?);
                }
            } else {
                for _ in 0..num_regions {
                    node.regions
                        .push(self.region(r, depth + 1, (op_index, name))?);
                }
            }
            if isolated {
                self.values.close_scope();
            }
        }
        self.out.tree[op_index] = node;
        Ok(op_index)
    }

    fn region(
        &mut self,
        r: &mut Reader<'_>,
        depth: usize,
        parent: (usize, usize),
    ) -> Result<Vec<BlockNode>> {
        let num_blocks = r.count("region block", 1)?;
        let mut blocks = Vec::new();
        if num_blocks == 0 {
            return Ok(blocks);
        }
        let offset = r.offset();
        let declared = r.varint("region value count")?;
        self.values.open_region(declared, offset);
        for _ in 0..num_blocks {
            blocks.push(self.block(r, depth, parent)?.1);
        }
        self.values.close_region()?;
        Ok(blocks)
    }
}
