//! The whole payload parsed into the tables the stripper reasons about, and
//! the reference graph built from them. Parsing validates every structure the
//! upstream reader would validate before it reads operations (sections,
//! strings, dialects, resources, the attr/type offset table, properties, the IR
//! walk), so a payload that parses here is well-formed at the container level.

use super::analysis::{Ent, Graph, Label, Region};
use super::attrs::{self, AttrTypeTable, Counts, Decoded, Table, Target};
use super::dialects::DialectSection;
use super::encoding::{self, section};
use super::error::{BytecodeError, Result};
use super::ir::{self, IrContext, IrRefs};
use super::properties::{BlobRef, Properties};
use super::resources::Resources;
use super::sections::{Header, SectionInfo, parse_container};
use super::strings::StringTable;
use super::varint;

mod blobs;

/// A parsed payload.
#[derive(Debug)]
pub struct Parsed<'a> {
    /// The raw payload.
    pub payload: &'a [u8],
    /// Container header and section table.
    pub header: Header,
    /// Strings.
    pub strings: StringTable<'a>,
    /// Dialects and op names.
    pub dialects: DialectSection,
    /// Indices of dialects named "builtin".
    pub builtin: Vec<usize>,
    /// The attr/type offset table.
    pub table: AttrTypeTable,
    /// Decoded attribute entries.
    pub attrs: Vec<Decoded>,
    /// Decoded type entries.
    pub types: Vec<Decoded>,
    /// The references MLIR resolves while reading each attribute, then each
    /// type (see [`attrs::decode_with_reads`]).
    pub reads: Vec<Vec<attrs::Ref>>,
    /// Property blobs.
    pub props: Properties,
    /// Each blob decoded by the property table, or why it is not.
    pub blob_reads: Vec<std::result::Result<Vec<BlobRef>, String>>,
    /// Resource facts.
    pub resources: Resources,
    /// What the IR references.
    pub ir: IrRefs,
}

impl<'a> Parsed<'a> {
    /// Parses and validates `payload`.
    pub fn parse(payload: &'a [u8]) -> Result<Self> {
        let header = parse_container(payload)?;
        let rules = encoding::rules(header.version).ok_or(BytecodeError::UnsupportedVersion {
            version: header.version,
            max: encoding::MAX_VERSION,
        })?;
        let find = |id: u8| header.sections.iter().find(|s| s.id == id);
        let required = |id: u8| {
            find(id).ok_or(BytecodeError::MissingSection {
                name: section::name(id),
                id,
            })
        };
        let data = |s: &SectionInfo| &payload[s.range()];

        let string_sec = required(section::STRING)?;
        let strings = StringTable::parse(data(string_sec), string_sec.offset)?;

        let props = match find(section::PROPERTIES) {
            Some(s) => Properties::parse(data(s), s.offset)?,
            None if rules.native_properties => {
                return Err(BytecodeError::MissingSection {
                    name: section::name(section::PROPERTIES),
                    id: section::PROPERTIES,
                });
            }
            None => Properties::default(),
        };

        let dialect_sec = required(section::DIALECT)?;
        let dialects =
            DialectSection::parse(data(dialect_sec), dialect_sec.offset, rules, strings.len())?;
        let builtin = dialects.builtin_dialects(&strings);

        let resources = match (find(section::RESOURCE_OFFSET), find(section::RESOURCE)) {
            (Some(o), Some(r)) => Resources::parse(
                data(o),
                o.offset,
                data(r),
                r.offset,
                strings.len(),
                dialects.dialects.len(),
            )?,
            (None, None) => Resources::default(),
            (Some(_), None) => {
                return Err(BytecodeError::MissingSection {
                    name: section::name(section::RESOURCE),
                    id: section::RESOURCE,
                });
            }
            (None, Some(_)) => {
                return Err(BytecodeError::MissingSection {
                    name: section::name(section::RESOURCE_OFFSET),
                    id: section::RESOURCE_OFFSET,
                });
            }
        };

        let attr_sec = required(section::ATTR_TYPE)?;
        let offset_sec = required(section::ATTR_TYPE_OFFSET)?;
        let table = AttrTypeTable::parse(
            data(offset_sec),
            offset_sec.offset,
            attr_sec.len,
            dialects.dialects.len(),
        )?;
        let counts = Counts {
            attrs: table.attrs.len(),
            types: table.types.len(),
            strings: strings.len(),
        };
        let attr_data = data(attr_sec);
        let mut reads = Vec::new();
        let mut decode_all = |kind: Table, entries: &[attrs::Entry]| -> Result<Vec<Decoded>> {
            entries
                .iter()
                .map(|e| {
                    let bytes = attr_data.get(e.range.clone()).unwrap_or(&[]);
                    let is_builtin = builtin.contains(&e.dialect);
                    let (decoded, read) = attrs::decode_with_reads(
                        kind,
                        bytes,
                        attr_sec.offset + e.range.start,
                        is_builtin,
                        e.custom,
                        counts,
                    )?;
                    reads.push(read);
                    Ok(decoded)
                })
                .collect()
        };
        let attrs = decode_all(Table::Attr, &table.attrs)?;
        let types = decode_all(Table::Type, &table.types)?;

        let ir_sec = required(section::IR)?;
        let ir = ir::walk(
            data(ir_sec),
            ir_sec.offset,
            IrContext {
                rules,
                op_names: &dialects.op_names,
                num_attrs: counts.attrs,
                num_types: counts.types,
                num_props: props.blobs.len(),
            },
        )?;

        let mut parsed = Parsed {
            payload,
            header,
            strings,
            dialects,
            builtin,
            table,
            attrs,
            types,
            reads,
            props,
            blob_reads: Vec::new(),
            resources,
            ir,
        };
        parsed.blob_reads = parsed.read_blobs();
        Ok(parsed)
    }

    /// The section with id `id`, if present.
    pub fn section(&self, id: u8) -> Option<&SectionInfo> {
        self.header.sections.iter().find(|s| s.id == id)
    }

    /// The decoded entry of an attribute.
    pub fn attr(&self, i: usize) -> &Decoded {
        self.attrs.get(i).unwrap_or(&Decoded::Opaque)
    }

    /// The raw bytes of an attribute or type entry.
    pub fn entry_bytes(&self, table: Table, i: usize) -> &'a [u8] {
        let entries = match table {
            Table::Attr => &self.table.attrs,
            Table::Type => &self.table.types,
        };
        let payload: &'a [u8] = self.payload;
        match (self.section(section::ATTR_TYPE), entries.get(i)) {
            (Some(s), Some(e)) => payload
                .get(s.offset + e.range.start..s.offset + e.range.end)
                .unwrap_or(&[]),
            _ => &[],
        }
    }

    /// Name of an operation name index, for messages ("dialect.op").
    pub fn op_name(&self, name: usize) -> String {
        let Some(op) = self.dialects.op_names.get(name) else {
            return "?".into();
        };
        let dialect = self
            .dialects
            .dialects
            .get(op.dialect)
            .map(|d| self.strings.content(d.name))
            .unwrap_or(b"?");
        format!(
            "{}.{}",
            String::from_utf8_lossy(dialect),
            String::from_utf8_lossy(self.strings.content(op.name))
        )
    }

    /// Builds the reference graph.
    pub fn graph(&self) -> Graph<'a> {
        let mut g = Graph {
            num_attrs: self.attrs.len(),
            num_types: self.types.len(),
            num_strings: self.strings.len(),
            ..Default::default()
        };
        let known = |g: &mut Graph<'a>, e: Ent| *g.known_refs.entry(e).or_insert(0) += 1;

        for (table, decoded) in [(Table::Attr, &self.attrs), (Table::Type, &self.types)] {
            for (i, d) in decoded.iter().enumerate() {
                let from = match table {
                    Table::Attr => Ent::Attr(i),
                    Table::Type => Ent::Type(i),
                };
                for r in d.refs() {
                    let to = ent(r.target);
                    known(&mut g, to);
                    // Every location is replaced, so nothing stays alive through one.
                    if !d.is_location() {
                        g.edges.entry(from).or_default().push((to, r.slot));
                    }
                }
                if *d == Decoded::Opaque {
                    g.regions.push(Region {
                        label: match table {
                            Table::Attr => Label::Attr(i),
                            Table::Type => Label::Type(i),
                        },
                        start: self.section(section::ATTR_TYPE).map_or(0, |s| s.offset)
                            + self.table_entry(table, i).map_or(0, |e| e.range.start),
                        bytes: self.entry_bytes(table, i),
                    });
                }
            }
        }
        for &(a, offset) in &self.ir.attr_refs {
            known(&mut g, Ent::Attr(a));
            g.roots.push((
                Ent::Attr(a),
                format!("an operation's attributes or properties at offset {offset:#x}"),
            ));
        }
        for &(t, offset) in &self.ir.type_refs {
            known(&mut g, Ent::Type(t));
            g.roots
                .push((Ent::Type(t), format!("a value type at offset {offset:#x}")));
        }
        for l in &self.ir.loc_uses {
            known(&mut g, Ent::Attr(l.attr));
        }
        for &(s, offset) in &self.dialects.string_refs {
            known(&mut g, Ent::Str(s));
            g.roots.push((
                Ent::Str(s),
                format!("the dialect section at offset {offset:#x}"),
            ));
        }
        for &(s, offset) in &self.resources.string_refs {
            known(&mut g, Ent::Str(s));
            g.roots.push((
                Ent::Str(s),
                format!("the resource sections at offset {offset:#x}"),
            ));
        }
        for (i, (blob, read)) in self.props.blobs.iter().zip(&self.blob_reads).enumerate() {
            match read {
                Ok(refs) => {
                    for r in refs {
                        known(&mut g, Ent::Attr(r.attr));
                        g.roots.push((
                            Ent::Attr(r.attr),
                            format!(
                                "property blob #{i} as the {} attribute of {} at offset {:#x}",
                                r.field, r.op, r.offset
                            ),
                        ));
                    }
                }
                Err(_) => g.regions.push(Region {
                    label: Label::Props(i),
                    start: blob.start,
                    bytes: self.payload.get(blob.clone()).unwrap_or(&[]),
                }),
            }
        }
        for (i, d) in self.dialects.dialects.iter().enumerate() {
            let Some(range) = d.version.clone() else {
                continue;
            };
            let bytes = self.payload.get(range.clone()).unwrap_or(&[]);
            let plain_varint = varint::decode(bytes).is_some_and(|(_, len)| len == bytes.len());
            if self.builtin.contains(&i) && plain_varint {
                continue; // the builtin dialect's version is one varint
            }
            g.regions.push(Region {
                label: Label::DialectVersion(i),
                start: range.start,
                bytes,
            });
        }
        for (i, d) in self.attrs.iter().enumerate() {
            if d.is_location() {
                g.exempt.push(Ent::Attr(i));
            }
        }
        g.exempt.extend((0..self.strings.len()).map(Ent::Str));
        g
    }

    fn table_entry(&self, table: Table, i: usize) -> Option<&attrs::Entry> {
        match table {
            Table::Attr => self.table.attrs.get(i),
            Table::Type => self.table.types.get(i),
        }
    }
}

/// The graph node of a reference target.
pub fn ent(t: Target) -> Ent {
    match t {
        Target::Attr(i) => Ent::Attr(i),
        Target::Type(i) => Ent::Type(i),
        Target::Str(i) => Ent::Str(i),
    }
}
