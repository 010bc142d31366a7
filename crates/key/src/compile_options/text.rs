//! A readable, deterministic text view of a CompileOptionsProto: one line per leaf.
//!
//! Hashes say *that* the options moved; this view says *which* option moved. Lines look like
//! `executable_build_options.debug_options.xla_dump_to: ""`. Names come from the table, unknown
//! fields show as `#<number>`, repeated fields are indexed (`[0]`), maps are keyed (`["k"]`) and
//! listed in key order, and fields are listed in field-number order, so the same message always
//! reads the same whatever order its bytes came in. [`leaves`] also feeds `diff`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use prost::encoding::WireType;

use super::OptionsError;
use super::schema::{self, Card, FieldInfo, Kind, Msg};
use super::wire::{self, Field, check_wire_type, merged_fields};

/// One part of a leaf's position, ordered as the canonical serialization orders fields.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum KeyPart {
    Field(u32),
    Index(usize),
    MapKey(Vec<u8>),
}

/// One line of the text view: where it is, how it reads, and its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leaf {
    pub key: Vec<KeyPart>,
    pub path: String,
    pub value: String,
}

/// The text view of a serialized CompileOptionsProto, one `path: value` line per leaf.
pub fn to_text(bytes: &[u8]) -> Result<String, OptionsError> {
    let mut out = String::new();
    for leaf in leaves(bytes)? {
        // Writing to a String cannot fail.
        let _ = writeln!(out, "{}: {}", leaf.path, leaf.value);
    }
    Ok(out)
}

/// Every leaf of a serialized CompileOptionsProto, in canonical order.
pub fn leaves(bytes: &[u8]) -> Result<Vec<Leaf>, OptionsError> {
    let fields = wire::parse(bytes, 0, "", Some(Msg::CompileOptions))?;
    let mut out = Vec::new();
    walk(Msg::CompileOptions, &fields, "", &[], &mut out)?;
    Ok(out)
}

/// Appends the leaves of one message (given as its fields) to `out`.
fn walk(
    msg: Msg,
    fields: &[Field],
    path: &str,
    key: &[KeyPart],
    out: &mut Vec<Leaf>,
) -> Result<(), OptionsError> {
    let mut by_number: BTreeMap<u32, Vec<&Field>> = BTreeMap::new();
    for f in fields {
        by_number.entry(f.number).or_default().push(f);
    }
    for (number, occurrences) in by_number {
        let mut field_key = key.to_vec();
        field_key.push(KeyPart::Field(number));
        match schema::lookup(msg, number) {
            None => unknown(number, &occurrences, path, field_key, out),
            Some(info) => {
                let field_path = wire::join(path, info.name);
                for f in &occurrences {
                    check_wire_type(info, f, &field_path)?;
                }
                known(info, &occurrences, &field_path, field_key, out)?;
            }
        }
    }
    Ok(())
}

fn unknown(number: u32, occ: &[&Field], path: &str, key: Vec<KeyPart>, out: &mut Vec<Leaf>) {
    let name = wire::join(path, &format!("#{number}"));
    for (i, f) in occ.iter().enumerate() {
        let value = render_raw(f);
        if occ.len() == 1 {
            out.push(Leaf {
                key: key.clone(),
                path: name.clone(),
                value,
            });
        } else {
            out.push(indexed(&key, &name, i, value));
        }
    }
}

fn known(
    info: &FieldInfo,
    occ: &[&Field],
    path: &str,
    key: Vec<KeyPart>,
    out: &mut Vec<Leaf>,
) -> Result<(), OptionsError> {
    match (info.card, info.kind) {
        (Card::One, Kind::Msg(m)) => {
            let fields = merged_fields(occ, path, m)?;
            message(m, &fields, path, key, out)
        }
        (Card::One, kind) => {
            // A singular field seen twice: the last one wins, as in protobuf.
            if let Some(f) = occ.last() {
                out.push(Leaf {
                    key,
                    path: path.to_string(),
                    value: render(kind, f.payload()),
                });
            }
            Ok(())
        }
        (Card::Many, Kind::Msg(m)) => {
            for (i, f) in occ.iter().enumerate() {
                let p = format!("{path}[{i}]");
                let fields = wire::parse(f.payload(), f.payload_offset(), &p, Some(m))?;
                let mut k = key.clone();
                k.push(KeyPart::Index(i));
                message(m, &fields, &p, k, out)?;
            }
            Ok(())
        }
        (Card::Many, kind) => {
            let mut i = 0;
            for f in occ {
                for value in elements(kind, f, path)? {
                    out.push(indexed(&key, path, i, value));
                    i += 1;
                }
            }
            Ok(())
        }
        (Card::Map, Kind::Msg(entry)) => map(entry, occ, path, key, out),
        (Card::Map, _) => Ok(()),
    }
}

/// A message field: its leaves, or `{}` when it is present but has none.
fn message(
    msg: Msg,
    fields: &[Field],
    path: &str,
    key: Vec<KeyPart>,
    out: &mut Vec<Leaf>,
) -> Result<(), OptionsError> {
    let before = out.len();
    walk(msg, fields, path, &key, out)?;
    if out.len() == before {
        out.push(Leaf {
            key,
            path: path.to_string(),
            value: "{}".to_string(),
        });
    }
    Ok(())
}

/// Map entries, one key each (the last entry for a key wins), in key order.
fn map(
    entry: Msg,
    occ: &[&Field],
    path: &str,
    key: Vec<KeyPart>,
    out: &mut Vec<Leaf>,
) -> Result<(), OptionsError> {
    let mut entries: BTreeMap<Vec<u8>, Vec<Field>> = BTreeMap::new();
    for (i, f) in occ.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let fields = wire::parse(f.payload(), f.payload_offset(), &p, Some(entry))?;
        let mut k = Vec::new();
        let mut value = Vec::new();
        for e in fields {
            if let Some(info) = schema::lookup(entry, e.number) {
                check_wire_type(info, &e, &wire::join(&p, info.name))?;
            }
            match e.number {
                1 => k = e.payload().to_vec(),
                2 => value.push(e),
                _ => {}
            }
        }
        entries.insert(k, value);
    }
    let value_kind = schema::lookup(entry, 2).map(|i| i.kind);
    for (k, value) in entries {
        let p = format!("{path}[{}]", quote(&k));
        let mut leaf_key = key.clone();
        leaf_key.push(KeyPart::MapKey(k));
        match value_kind {
            Some(Kind::Msg(m)) => {
                let refs: Vec<&Field> = value.iter().collect();
                let fields = merged_fields(&refs, &p, m)?;
                message(m, &fields, &p, leaf_key, out)?;
            }
            Some(kind) => out.push(Leaf {
                key: leaf_key,
                path: p,
                value: value
                    .last()
                    .map_or_else(|| render(kind, &[]), |f| render(kind, f.payload())),
            }),
            None => {}
        }
    }
    Ok(())
}

/// The elements of one occurrence of a repeated scalar field, packed or not.
fn elements(kind: Kind, f: &Field, path: &str) -> Result<Vec<String>, OptionsError> {
    let scalar = kind.wire_type();
    if f.wire_type == scalar {
        return Ok(vec![render(kind, f.payload())]);
    }
    let payload = f.payload();
    let base = f.payload_offset();
    let mut values = Vec::new();
    let mut pos = 0;
    while pos < payload.len() {
        let start = pos;
        let width = match scalar {
            WireType::ThirtyTwoBit => 4,
            WireType::SixtyFourBit => 8,
            _ => {
                wire::packed_varint(payload, &mut pos, base, path)?;
                0
            }
        };
        if width > 0 {
            if payload.len() - pos < width {
                return Err(OptionsError::Truncated {
                    what: "packed value",
                    offset: base + pos,
                    path: path.to_string(),
                });
            }
            pos += width;
        }
        values.push(render(kind, payload.get(start..pos).unwrap_or_default()));
    }
    Ok(values)
}

/// How a scalar value reads, given its payload bytes.
pub fn render(kind: Kind, payload: &[u8]) -> String {
    let varint = || {
        let mut cur = payload;
        prost::encoding::decode_varint(&mut cur).unwrap_or(0)
    };
    match kind {
        Kind::Bool => (varint() != 0).to_string(),
        // int32 and enums are sign-extended to 64 bits on the wire; keep the low 32.
        Kind::Int32 | Kind::Enum => (varint() as i32).to_string(),
        Kind::Int64 => (varint() as i64).to_string(),
        Kind::Uint32 => (varint() as u32).to_string(),
        Kind::Uint64 => varint().to_string(),
        Kind::Float => fixed(payload, |b| format!("{:?}", f32::from_le_bytes(b))),
        Kind::Double => fixed(payload, |b| format!("{:?}", f64::from_le_bytes(b))),
        Kind::Str | Kind::Bytes => quote(payload),
        Kind::Msg(_) | Kind::Opaque(_) => hex_bytes(payload),
    }
}

/// The leaf of element `i` of the repeated field at `key` and `path`.
fn indexed(key: &[KeyPart], path: &str, i: usize, value: String) -> Leaf {
    let mut key = key.to_vec();
    key.push(KeyPart::Index(i));
    Leaf {
        key,
        path: format!("{path}[{i}]"),
        value,
    }
}

/// A fixed-width value as `show` reads it, or its bytes in hex when it is not `N` bytes long.
fn fixed<const N: usize>(payload: &[u8], show: impl Fn([u8; N]) -> String) -> String {
    match <[u8; N]>::try_from(payload) {
        Ok(b) => show(b),
        Err(_) => hex_bytes(payload),
    }
}

/// An unknown field, by wire type alone.
fn render_raw(f: &Field) -> String {
    let p = f.payload();
    match f.wire_type {
        WireType::Varint => render(Kind::Uint64, p),
        WireType::ThirtyTwoBit => fixed(p, |b| format!("0x{:08x}", u32::from_le_bytes(b))),
        WireType::SixtyFourBit => fixed(p, |b| format!("0x{:016x}", u64::from_le_bytes(b))),
        WireType::LengthDelimited => hex_bytes(p),
        WireType::StartGroup | WireType::EndGroup => format!("group {}", hex_bytes(p)),
    }
}

/// `<N bytes: 0a0b…>`: bytes that have no readable form here.
fn hex_bytes(p: &[u8]) -> String {
    let mut s = format!("<{} bytes", p.len());
    if !p.is_empty() {
        s.push_str(": ");
        for b in p {
            let _ = write!(s, "{b:02x}");
        }
    }
    s.push('>');
    s
}

/// A double-quoted string: UTF-8 kept, quotes, backslashes, control bytes and invalid UTF-8
/// escaped the same way on every platform and toolchain.
pub fn quote(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() + 2);
    s.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => s.push_str("\\\""),
                '\\' => s.push_str("\\\\"),
                '\n' => s.push_str("\\n"),
                '\r' => s.push_str("\\r"),
                '\t' => s.push_str("\\t"),
                c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                    let _ = write!(s, "\\x{:02x}", c as u32);
                }
                c => s.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(s, "\\x{b:02x}");
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_render_by_kind() {
        let minus_one = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(render(Kind::Int32, &minus_one), "-1");
        assert_eq!(render(Kind::Int64, &minus_one), "-1");
        assert_eq!(render(Kind::Uint64, &minus_one), "18446744073709551615");
        assert_eq!(render(Kind::Bool, &[1]), "true");
        assert_eq!(render(Kind::Float, &1.1f32.to_le_bytes()), "1.1");
        assert_eq!(render(Kind::Double, &0.5f64.to_le_bytes()), "0.5");
        assert_eq!(
            render(Kind::Opaque("xla.ShapeProto"), &[0x0a, 0x00]),
            "<2 bytes: 0a00>"
        );
        assert_eq!(render(Kind::Opaque("xla.ShapeProto"), &[]), "<0 bytes>");
    }

    #[test]
    fn quoting_is_explicit() {
        assert_eq!(
            quote(b"a\"b\\c\nd\x01\xff\xc3\xa9"),
            "\"a\\\"b\\\\c\\nd\\x01\\xffé\""
        );
    }

    #[test]
    fn packed_and_unpacked_repeated_fields_share_one_index() {
        // executable_build_options { mesh_shape: packed [2, 3], then unpacked 4 }
        let ebo = [0x82, 0x01, 0x02, 0x02, 0x03, 0x80, 0x01, 0x04];
        let mut top = vec![0x1a, ebo.len() as u8];
        top.extend_from_slice(&ebo);
        let text = to_text(&top).unwrap();
        assert_eq!(
            text,
            "executable_build_options.auto_spmd_partitioning_mesh_shape[0]: 2\n\
             executable_build_options.auto_spmd_partitioning_mesh_shape[1]: 3\n\
             executable_build_options.auto_spmd_partitioning_mesh_shape[2]: 4\n"
        );
    }

    #[test]
    fn wrong_wire_type_on_a_known_field_is_not_compile_options() {
        // executable_build_options as a varint
        let e = to_text(&[0x18, 0x01]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "not a CompileOptionsProto: wire type 0 where 2 is expected at byte 0 in executable_build_options"
        );
    }
}
