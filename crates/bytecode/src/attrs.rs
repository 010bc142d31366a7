//! Attribute and type entries: the offset section gives each entry's dialect,
//! size and whether it uses a custom (binary) encoding; the attr/type section
//! holds the entries back to back. Builtin entries with a custom encoding are
//! decoded far enough to list every index they reference (strings, attributes,
//! types) and in which role (a nested location, a location's file name, an
//! ordinary value, ...). Entries written as assembly text reference nothing by
//! index. Anything else is "opaque": kept byte-identical, and its bytes are
//! treated as possibly holding references.

use std::ops::Range;

use super::encoding::{builtin_attr as ba, builtin_type as bt};
use super::error::{BytecodeError, Result};
use super::reader::Reader;
use super::varint;

/// Which table an entry belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    /// The attribute table.
    Attr,
    /// The type table.
    Type,
}

/// One attribute or type entry as listed in the offset section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Index of the owning dialect.
    pub dialect: usize,
    /// Whether the dialect's binary encoding was used (else assembly text).
    pub custom: bool,
    /// Byte range within the attr/type section data.
    pub range: Range<usize>,
}

/// The offset section, parsed.
#[derive(Debug, Clone, Default)]
pub struct AttrTypeTable {
    /// Attribute entries in index order.
    pub attrs: Vec<Entry>,
    /// Type entries in index order.
    pub types: Vec<Entry>,
    /// `(table, index)` of the first entry of every dialect group.
    pub group_starts: Vec<(Table, usize)>,
    /// Bytes of the attr/type section covered by entries.
    pub used_len: usize,
}

impl AttrTypeTable {
    /// Parses the offset section `data` (at absolute offset `base`) against an
    /// attr/type section of `section_len` bytes.
    pub fn parse(
        data: &[u8],
        base: usize,
        section_len: usize,
        num_dialects: usize,
    ) -> Result<Self> {
        let mut reader = Reader::new(data, base);
        let num_attrs = reader.count("attribute", 1)?;
        let num_types = reader.count("type", 1)?;
        let mut table = AttrTypeTable::default();
        let mut current = 0usize;
        for (kind, total) in [(Table::Attr, num_attrs), (Table::Type, num_types)] {
            let total = usize::try_from(total).unwrap_or(usize::MAX);
            let mut entries = Vec::new();
            while entries.len() < total {
                let dialect = reader.index("dialect", num_dialects)?;
                let offset = reader.offset();
                let n = reader.count("attr/type group", 1)?;
                let left = total - entries.len();
                if n > left as u64 {
                    return Err(BytecodeError::Malformed {
                        offset,
                        message: format!(
                            "dialect group of {n} entries exceeds the {left} entries left"
                        ),
                    });
                }
                table.group_starts.push((kind, entries.len()));
                for _ in 0..n {
                    let offset = reader.offset();
                    let (size, custom) = reader.varint_with_flag("attr/type entry size")?;
                    let end = u64::try_from(current)
                        .ok()
                        .and_then(|c| c.checked_add(size))
                        .filter(|&e| e <= section_len as u64)
                        .ok_or_else(|| BytecodeError::Malformed {
                            offset,
                            message: format!(
                                "attr/type entry of {size} bytes at section offset {current} points past the end of the {section_len}-byte section"
                            ),
                        })? as usize;
                    entries.push(Entry {
                        dialect,
                        custom,
                        range: current..end,
                    });
                    current = end;
                }
            }
            match kind {
                Table::Attr => table.attrs = entries,
                Table::Type => table.types = entries,
            }
        }
        if !reader.is_empty() {
            return Err(
                reader.malformed("unexpected trailing data in the attr/type offset section")
            );
        }
        table.used_len = current;
        Ok(table)
    }

    /// Rebuilds the offset and attr/type sections with some entries replaced.
    /// `replace(table, index)` returns the new dialect, custom flag and bytes of
    /// a replaced entry. Original group boundaries are kept; a group is split
    /// where a replaced entry changes dialect. Returns `(offsets, data)`.
    pub fn rebuild<'e>(
        &self,
        section: &'e [u8],
        replace: impl Fn(Table, usize) -> Option<(usize, bool, &'e [u8])>,
    ) -> (Vec<u8>, Vec<u8>) {
        let mut offsets = Vec::new();
        let mut data = Vec::with_capacity(section.len());
        varint::encode(self.attrs.len() as u64, &mut offsets);
        varint::encode(self.types.len() as u64, &mut offsets);
        for (kind, entries) in [(Table::Attr, &self.attrs), (Table::Type, &self.types)] {
            let items: Vec<(usize, bool, &[u8])> = entries
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    replace(kind, i).unwrap_or((
                        e.dialect,
                        e.custom,
                        section.get(e.range.clone()).unwrap_or(&[]),
                    ))
                })
                .collect();
            let mut start = 0;
            while start < items.len() {
                let dialect = items[start].0;
                let mut end = start + 1;
                while end < items.len()
                    && items[end].0 == dialect
                    && !self.group_starts.contains(&(kind, end))
                {
                    end += 1;
                }
                varint::encode(dialect as u64, &mut offsets);
                varint::encode((end - start) as u64, &mut offsets);
                for &(_, custom, bytes) in &items[start..end] {
                    varint::encode(
                        ((bytes.len() as u64) << 1) | u64::from(custom),
                        &mut offsets,
                    );
                    data.extend_from_slice(bytes);
                }
                start = end;
            }
        }
        data.extend_from_slice(section.get(self.used_len..).unwrap_or(&[]));
        (offsets, data)
    }
}

/// What an index inside an entry points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// An attribute index.
    Attr(usize),
    /// A type index.
    Type(usize),
    /// A string index.
    Str(usize),
}

/// The role of a reference, which decides what stripping may do with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Slot {
    /// An ordinary value (array element, dictionary entry, type parameter, ...).
    Value,
    /// A location nested in a location (call site, fused, name child).
    NestedLoc,
    /// The file name `StringAttr` of a file location.
    LocFilename,
    /// The name `StringAttr` of a `NameLoc`.
    LocName,
    /// The metadata attribute of a fused location.
    LocMetadata,
}

/// One decoded reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ref {
    /// What it points at.
    pub target: Target,
    /// Its role.
    pub slot: Slot,
    /// Absolute offset of the index in the payload.
    pub offset: usize,
}

/// What is known about an entry's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// Assembly-format text: references nothing by index.
    Asm,
    /// A custom encoding we cannot read: may reference anything.
    Opaque,
    /// A builtin entry with its code and every reference it makes.
    Builtin {
        /// Whether this is an attribute or a type.
        table: Table,
        /// The builtin attribute or type code.
        code: u64,
        /// The references, in encoding order.
        refs: Vec<Ref>,
        /// Absolute ranges of the line and column varints of a file location.
        scalars: Vec<Range<usize>>,
    },
}

impl Decoded {
    /// The builtin code, if decoded.
    #[cfg(test)]
    pub fn code(&self) -> Option<u64> {
        match self {
            Decoded::Builtin { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The builtin attribute code, if this is a decoded builtin attribute.
    pub fn attr_code(&self) -> Option<u64> {
        match self {
            Decoded::Builtin {
                table: Table::Attr,
                code,
                ..
            } => Some(*code),
            _ => None,
        }
    }

    /// The decoded references (empty unless builtin).
    pub fn refs(&self) -> &[Ref] {
        match self {
            Decoded::Builtin { refs, .. } => refs,
            _ => &[],
        }
    }

    /// Absolute ranges of a file location's line and column varints.
    pub fn scalars(&self) -> &[Range<usize>] {
        match self {
            Decoded::Builtin { scalars, .. } => scalars,
            _ => &[],
        }
    }

    /// Whether this is a decoded builtin location attribute.
    pub fn is_location(&self) -> bool {
        self.attr_code().is_some_and(ba::is_location)
    }

    /// Whether this is a decoded builtin `StringAttr`.
    pub fn is_string_attr(&self) -> bool {
        self.attr_code().is_some_and(ba::is_string)
    }
}

/// Sizes of the tables references are checked against.
#[derive(Debug, Clone, Copy)]
pub struct Counts {
    /// Number of attributes.
    pub attrs: usize,
    /// Number of types.
    pub types: usize,
    /// Number of strings.
    pub strings: usize,
}

/// A reader of one builtin entry that records references; `None` means the
/// entry does not follow the layout we know, and is then treated as opaque,
/// unless `error` says why MLIR could not read it either.
struct Dec<'a> {
    r: Reader<'a>,
    counts: Counts,
    refs: Vec<Ref>,
    scalars: Vec<Range<usize>>,
    error: Option<BytecodeError>,
}

impl Dec<'_> {
    fn varint(&mut self) -> Option<u64> {
        self.r.varint("builtin entry").ok()
    }

    fn scalar(&mut self) -> Option<()> {
        let start = self.r.offset();
        self.varint()?;
        self.scalars.push(start..self.r.offset());
        Some(())
    }

    fn index(&mut self, len: usize) -> Option<(usize, usize)> {
        let offset = self.r.offset();
        let i = usize::try_from(self.varint()?).ok().filter(|&i| i < len)?;
        Some((i, offset))
    }

    /// Reads an index below `len` and records it as a reference.
    fn reference(&mut self, len: usize, target: fn(usize) -> Target, slot: Slot) -> Option<()> {
        let (i, offset) = self.index(len)?;
        self.refs.push(Ref {
            target: target(i),
            slot,
            offset,
        });
        Some(())
    }

    fn attr(&mut self, slot: Slot) -> Option<()> {
        self.reference(self.counts.attrs, Target::Attr, slot)
    }

    fn ty(&mut self) -> Option<()> {
        self.reference(self.counts.types, Target::Type, Slot::Value)
    }

    fn string(&mut self) -> Option<()> {
        self.reference(self.counts.strings, Target::Str, Slot::Value)
    }

    /// A list count, checked: MLIR reserves it before reading the elements.
    fn count(&mut self, what: &'static str) -> Option<u64> {
        self.r.count(what, 1).map_err(|e| self.error = Some(e)).ok()
    }

    fn list(&mut self, mut each: impl FnMut(&mut Self) -> Option<()>) -> Option<u64> {
        let n = self.count("builtin list")?;
        for _ in 0..n {
            each(self)?;
        }
        Some(n)
    }

    fn blob(&mut self) -> Option<()> {
        let n = self.varint()?;
        self.r.bytes(n, "builtin blob").ok().map(|_| ())
    }

    fn bool_list(&mut self) -> Option<()> {
        let n = self.count("builtin bool list")?;
        self.r.bytes(n, "builtin bool list").ok().map(|_| ())
    }

    fn svarint_list(&mut self) -> Option<()> {
        self.list(|d| d.varint().map(|_| ())).map(|_| ())
    }
}

/// Decodes the entry `bytes` (at absolute offset `base`) of `table`, with the
/// references MLIR's reader resolves before it can tell whether the entry is
/// well-formed: all of a decoded entry's, or those read before the point
/// where a builtin entry stops following its layout. Errors only for what
/// MLIR's reader could not survive either (a list count the entry cannot
/// back, which it reserves).
pub fn decode_with_reads(
    table: Table,
    bytes: &[u8],
    base: usize,
    builtin: bool,
    custom: bool,
    counts: Counts,
) -> Result<(Decoded, Vec<Ref>)> {
    if !custom {
        return Ok((Decoded::Asm, Vec::new()));
    }
    if !builtin {
        return Ok((Decoded::Opaque, Vec::new()));
    }
    let mut d = Dec {
        r: Reader::new(bytes, base),
        counts,
        refs: Vec::new(),
        scalars: Vec::new(),
        error: None,
    };
    let decoded = match table {
        Table::Attr => decode_attr(&mut d),
        Table::Type => decode_type(&mut d),
    };
    if let Some(error) = d.error {
        return Err(error);
    }
    Ok(match decoded {
        Some(code) => (
            Decoded::Builtin {
                table,
                code,
                refs: d.refs.clone(),
                scalars: d.scalars,
            },
            d.refs,
        ),
        None => (Decoded::Opaque, d.refs),
    })
}

fn decode_attr(d: &mut Dec<'_>) -> Option<u64> {
    let code = d.varint()?;
    match code {
        ba::ARRAY => d.list(|d| d.attr(Slot::Value)).map(|_| ())?,
        ba::DICTIONARY => d
            .list(|d| d.attr(Slot::Value).and_then(|_| d.attr(Slot::Value)))
            .map(|_| ())?,
        ba::STRING => d.string()?,
        ba::STRING_WITH_TYPE => {
            d.string()?;
            d.ty()?
        }
        ba::FLAT_SYMBOL_REF | ba::DISTINCT => d.attr(Slot::Value)?,
        ba::SYMBOL_REF => {
            d.attr(Slot::Value)?;
            d.list(|d| d.attr(Slot::Value)).map(|_| ())?
        }
        ba::TYPE => d.ty()?,
        ba::UNIT | ba::UNKNOWN_LOC => {}
        // The value that follows depends on the type's width; it is data.
        ba::INTEGER | ba::FLOAT => {
            d.ty()?;
            return Some(code);
        }
        ba::CALL_SITE_LOC => {
            d.attr(Slot::NestedLoc)?;
            d.attr(Slot::NestedLoc)?
        }
        ba::FILE_LINE_COL_LOC => {
            d.attr(Slot::LocFilename)?;
            d.scalar()?;
            d.scalar()?;
        }
        ba::FUSED_LOC => d.list(|d| d.attr(Slot::NestedLoc)).map(|_| ())?,
        ba::FUSED_LOC_WITH_METADATA => {
            d.list(|d| d.attr(Slot::NestedLoc))?;
            d.attr(Slot::LocMetadata)?
        }
        ba::NAME_LOC => {
            d.attr(Slot::LocName)?;
            d.attr(Slot::NestedLoc)?
        }
        ba::DENSE_RESOURCE_ELEMENTS => {
            d.ty()?;
            d.varint()?; // dialect resource handle
        }
        ba::DENSE_ARRAY => {
            d.ty()?;
            d.varint()?;
            d.blob()?
        }
        ba::DENSE_INT_OR_FP_ELEMENTS => {
            d.ty()?;
            d.blob()?
        }
        ba::DENSE_STRING_ELEMENTS => {
            d.ty()?;
            d.varint()?;
            // One string if splat, else one per element: all the rest.
            while !d.r.is_empty() {
                d.string()?;
            }
        }
        ba::SPARSE_ELEMENTS => {
            d.ty()?;
            d.attr(Slot::Value)?;
            d.attr(Slot::Value)?
        }
        ba::FILE_LINE_COL_RANGE => {
            d.attr(Slot::LocFilename)?;
            let n = d.list(|d| d.scalar())?;
            if n > 4 {
                return None;
            }
        }
        // Dimensions, symbols and expressions: varints without references.
        ba::AFFINE_MAP => return Some(code),
        _ => return None,
    }
    d.r.is_empty().then_some(code)
}

fn decode_type(d: &mut Dec<'_>) -> Option<u64> {
    let code = d.varint()?;
    match code {
        bt::INTEGER => {
            d.varint()?;
        }
        bt::INDEX | bt::NONE => {}
        bt::BF16..=bt::F128 => {}
        bt::FIRST_NEW_FLOAT..=bt::LAST_NEW_FLOAT => {}
        bt::FUNCTION => {
            d.list(|d| d.ty())?;
            d.list(|d| d.ty())?;
        }
        bt::COMPLEX | bt::UNRANKED_MEMREF | bt::UNRANKED_TENSOR => d.ty()?,
        bt::MEMREF => {
            d.svarint_list()?;
            d.ty()?;
            d.attr(Slot::Value)?
        }
        bt::MEMREF_WITH_MEMSPACE => {
            d.attr(Slot::Value)?;
            d.svarint_list()?;
            d.ty()?;
            d.attr(Slot::Value)?
        }
        bt::RANKED_TENSOR | bt::VECTOR => {
            d.svarint_list()?;
            d.ty()?
        }
        bt::RANKED_TENSOR_WITH_ENCODING => {
            d.attr(Slot::Value)?;
            d.svarint_list()?;
            d.ty()?
        }
        bt::TUPLE => {
            d.list(|d| d.ty())?;
        }
        bt::UNRANKED_MEMREF_WITH_MEMSPACE => {
            d.attr(Slot::Value)?;
            d.ty()?
        }
        bt::VECTOR_WITH_SCALABLE_DIMS => {
            d.bool_list()?;
            d.svarint_list()?;
            d.ty()?
        }
        _ => return None,
    }
    d.r.is_empty().then_some(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes an entry at offset 0 against [`COUNTS`]; `kind` is whether it
    /// is builtin, then whether it is in a custom encoding.
    fn decode(table: Table, bytes: &[u8], kind: (bool, bool)) -> Result<Decoded> {
        decode_with_reads(table, bytes, 0, kind.0, kind.1, COUNTS).map(|(d, _)| d)
    }

    const COUNTS: Counts = Counts {
        attrs: 50,
        types: 10,
        strings: 30,
    };

    fn attr(bytes: &[u8]) -> Decoded {
        decode(Table::Attr, bytes, (true, true)).unwrap()
    }

    #[test]
    fn decodes_locations_with_roles() {
        // FileLineColRange(filename #7, [9, 4, 14])
        let d = attr(&[0x2d, 0x0f, 0x07, 0x13, 0x09, 0x1d]);
        assert_eq!(d.code(), Some(ba::FILE_LINE_COL_RANGE));
        assert_eq!(d.refs()[0].target, Target::Attr(7));
        assert_eq!(d.refs()[0].slot, Slot::LocFilename);
        // NameLoc(name #37, child #38)
        let d = attr(&[0x1d, 0x4b, 0x4d]);
        assert_eq!(
            d.refs().iter().map(|r| r.slot).collect::<Vec<_>>(),
            [Slot::LocName, Slot::NestedLoc]
        );
        assert!(d.is_location());
    }

    #[test]
    fn unknown_or_inexact_entries_are_opaque() {
        assert_eq!(attr(&[0x7f]), Decoded::Opaque); // code 63
        assert_eq!(attr(&[0x05, 0x03, 0x03]), Decoded::Opaque); // trailing byte
        assert_eq!(attr(&[0x05, 0x7f]), Decoded::Opaque); // string 63 out of range
        // An array of 2^56 elements: MLIR would reserve them.
        let huge = decode(
            Table::Attr,
            &[0x01, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            (true, true),
        );
        assert!(
            matches!(huge, Err(BytecodeError::CountTooLarge { .. })),
            "{huge:?}"
        );
        assert_eq!(
            decode(Table::Attr, b"#a.b<c>\0", (false, false)).unwrap(),
            Decoded::Asm
        );
        assert_eq!(
            decode(Table::Attr, &[0x05, 0x03], (false, true)).unwrap(),
            Decoded::Opaque
        );
    }

    #[test]
    fn decodes_memref_type_references() {
        // memref<256x256xf32, #attr25, #attr69 memspace> as in the Mosaic kernel,
        // with indices scaled into COUNTS.
        let d = decode(
            Table::Type,
            &[0x17, 0x21, 0x05, 0x02, 0x08, 0x02, 0x08, 0x07, 0x33],
            (true, true),
        )
        .unwrap();
        let targets: Vec<_> = d.refs().iter().map(|r| r.target).collect();
        assert_eq!(
            targets,
            [Target::Attr(16), Target::Type(3), Target::Attr(25)]
        );
    }

    #[test]
    fn rebuild_splits_groups_on_dialect_change() {
        let table = AttrTypeTable {
            attrs: vec![
                Entry {
                    dialect: 1,
                    custom: false,
                    range: 0..2,
                },
                Entry {
                    dialect: 1,
                    custom: false,
                    range: 2..4,
                },
            ],
            types: vec![],
            group_starts: vec![(Table::Attr, 0)],
            used_len: 4,
        };
        let section = [b'a', 0, b'b', 0];
        let unknown = [0x1fu8];
        let (offsets, data) =
            table.rebuild(&section, |_, i| (i == 1).then_some((0, true, &unknown[..])));
        assert_eq!(data, vec![b'a', 0, 0x1f]);
        // 2 attrs, 0 types, group(dialect 1, 1 entry: size 2 asm), group(dialect 0, 1 entry: size 1 custom)
        assert_eq!(
            offsets,
            vec![0x05, 0x01, 0x03, 0x03, 0x09, 0x01, 0x03, 0x07]
        );
        let reparsed = AttrTypeTable::parse(&offsets, 0, data.len(), 2).unwrap();
        assert_eq!(
            reparsed.attrs[1],
            Entry {
                dialect: 0,
                custom: true,
                range: 2..3
            }
        );
    }
}
