//! A message's fields as data: what a reader without generated structs must know of them.
//!
//! Each crate describes the messages it opens in tables of [`FieldInfo`], its own enum `M`
//! naming its messages; the table, not generated code, says that field 109 is a string named
//! `xla_dump_to`. Tables are sorted by number ([`sorted`] checks it). [`parse_tables`] reads
//! them from text, one field a line, as protoc's descriptors state them.

use prost::encoding::WireType;

/// The scalar or message kind of a field, as far as the wire and a text view care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind<M> {
    Bool,
    Int32,
    Int64,
    Uint32,
    Uint64,
    Float,
    Double,
    /// An enum, shown by number.
    Enum,
    Str,
    Bytes,
    /// A message the crate's tables describe.
    Msg(M),
    /// A message they do not (shapes, literals, topologies…), named by its proto type: kept as
    /// it is, shown raw.
    Opaque(&'static str),
}

impl<M> Kind<M> {
    /// The wire type of one value of this kind (unpacked).
    pub fn wire_type(&self) -> WireType {
        match self {
            Kind::Bool | Kind::Int32 | Kind::Int64 | Kind::Uint32 | Kind::Uint64 | Kind::Enum => {
                WireType::Varint
            }
            Kind::Float => WireType::ThirtyTwoBit,
            Kind::Double => WireType::SixtyFourBit,
            Kind::Str | Kind::Bytes | Kind::Msg(_) | Kind::Opaque(_) => WireType::LengthDelimited,
        }
    }
}

/// Whether a field holds one value, many, or a map (repeated key/value entries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Card {
    One,
    Many,
    Map,
}

/// One field: number, name, kind, cardinality, and whether a zero value is still written
/// (explicit presence: messages and oneof members; proto3 scalars have none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldInfo<M> {
    pub number: u32,
    pub name: &'static str,
    pub kind: Kind<M>,
    pub card: Card,
    pub presence: bool,
}

impl<M> FieldInfo<M> {
    /// Whether a value of this field may come with `wire_type`: its kind's, or, for repeated
    /// numbers, a packed run.
    pub fn accepts(&self, wire_type: WireType) -> bool {
        let scalar = self.kind.wire_type();
        wire_type == scalar
            || (self.card == Card::Many
                && scalar != WireType::LengthDelimited
                && wire_type == WireType::LengthDelimited)
    }

    /// As [`accepts`](Self::accepts), with the reason for a refusal.
    pub fn check(&self, wire_type: WireType) -> Result<(), String> {
        if self.accepts(wire_type) {
            return Ok(());
        }
        let expected = self.kind.wire_type();
        Err(format!(
            "wire type {} where {} is expected",
            wire_type as u8, expected as u8
        ))
    }
}

/// A singular field.
pub const fn one<M: Copy>(number: u32, name: &'static str, kind: Kind<M>) -> FieldInfo<M> {
    FieldInfo {
        number,
        name,
        kind,
        card: Card::One,
        presence: matches!(kind, Kind::Msg(_) | Kind::Opaque(_)),
    }
}

/// A singular scalar in a oneof: a zero value is still a value.
pub const fn oneof<M: Copy>(number: u32, name: &'static str, kind: Kind<M>) -> FieldInfo<M> {
    FieldInfo {
        presence: true,
        ..one(number, name, kind)
    }
}

/// A repeated field.
pub const fn many<M: Copy>(number: u32, name: &'static str, kind: Kind<M>) -> FieldInfo<M> {
    FieldInfo {
        number,
        name,
        kind,
        card: Card::Many,
        presence: false,
    }
}

/// A map: repeated entries of the key/value message `entry`.
pub const fn map<M: Copy>(number: u32, name: &'static str, entry: M) -> FieldInfo<M> {
    FieldInfo {
        number,
        name,
        kind: Kind::Msg(entry),
        card: Card::Map,
        presence: false,
    }
}

/// The field of a sorted table with this number.
pub fn lookup<M>(table: &[FieldInfo<M>], number: u32) -> Option<&FieldInfo<M>> {
    let i = table.binary_search_by_key(&number, |f| f.number).ok()?;
    table.get(i)
}

/// A field's name for paths and errors: its table name, or `#<number>` when unknown.
pub fn name_of<M>(info: Option<&FieldInfo<M>>, number: u32) -> String {
    match info {
        Some(info) => info.name.to_string(),
        None => format!("#{number}"),
    }
}

/// Whether a table is non-empty and sorted by number without repeats; `Err` says where not.
pub fn sorted<M>(table: &[FieldInfo<M>]) -> Result<(), String> {
    if table.is_empty() {
        return Err("empty".into());
    }
    match table.windows(2).find(|w| w[0].number >= w[1].number) {
        Some(w) => Err(format!("{} then {}", w[0].number, w[1].number)),
        None => Ok(()),
    }
}

/// Reads field tables written one field a line, `message number name type label [presence]`
/// (`#` starts a comment line): `type` is a scalar's proto name (`int64`, `string`, `enum`…)
/// or a message's; `label` is `optional` or `repeated`; `presence` marks a oneof member.
/// `is(m, name)` says whether the message `m` of `all` has the proto name `name` (`package`,
/// such as `xla.`, left out); a repeated field of such a message whose name ends in `Entry` is
/// a map; a message none of `all` is, is opaque. Returns the table of each of `all`, in its
/// order, sorted by number.
pub fn parse_tables<M: Copy>(
    text: &'static str,
    package: &str,
    all: &[M],
    is: impl Fn(M, &str) -> bool,
) -> Result<Vec<Vec<FieldInfo<M>>>, String> {
    let find = |name: &str| {
        let name = name.strip_prefix(package).unwrap_or(name);
        all.iter().position(|&m| is(m, name))
    };
    let mut tables = vec![Vec::new(); all.len()];
    for (i, line) in text.lines().enumerate() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| format!("line {}: {why}: {line:?}", i + 1);
        let words: Vec<&'static str> = line.split(' ').collect();
        let [owner, number, name, type_name, label, ref rest @ ..] = words[..] else {
            return Err(bad("fewer than five words"));
        };
        let owner = find(owner).ok_or_else(|| bad("an unknown message"))?;
        let number = number.parse().map_err(|_| bad("no field number"))?;
        let kind = match type_name {
            "bool" => Kind::Bool,
            "int32" => Kind::Int32,
            "int64" => Kind::Int64,
            "uint32" => Kind::Uint32,
            "uint64" => Kind::Uint64,
            "float" => Kind::Float,
            "double" => Kind::Double,
            "enum" => Kind::Enum,
            "string" => Kind::Str,
            "bytes" => Kind::Bytes,
            other => find(other).map_or(Kind::Opaque(other), |i| Kind::Msg(all[i])),
        };
        let presence = match *rest {
            [] => false,
            ["presence"] => true,
            _ => return Err(bad("a sixth word other than presence")),
        };
        let info = match (label, kind) {
            ("optional", _) if presence => oneof(number, name, kind),
            ("optional", _) => one(number, name, kind),
            ("repeated", Kind::Msg(entry)) if type_name.ends_with("Entry") => {
                map(number, name, entry)
            }
            ("repeated", _) => many(number, name, kind),
            _ => return Err(bad("a label other than optional or repeated")),
        };
        tables[owner].push(info);
    }
    for table in &mut tables {
        table.sort_by_key(|f| f.number);
    }
    Ok(tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    static TABLE: &[FieldInfo<()>] = &[
        one(1, "name", Kind::Str),
        oneof(2, "zero_is_a_value", Kind::Int64),
        many(3, "ids", Kind::Int64),
        map(4, "attributes", ()),
        one(5, "shape", Kind::Opaque("xla.ShapeProto")),
    ];

    #[test]
    fn tables_describe_fields() {
        assert_eq!(lookup(TABLE, 3).map(|f| f.name), Some("ids"));
        assert_eq!(lookup(TABLE, 6), None);
        assert_eq!(name_of(lookup(TABLE, 1), 1), "name");
        assert_eq!(name_of(lookup(TABLE, 9), 9), "#9");
        let presence: Vec<bool> = TABLE.iter().map(|f| f.presence).collect();
        assert_eq!(presence, [false, true, false, false, true]);
        assert_eq!(sorted(TABLE), Ok(()));
        assert_eq!(sorted(&TABLE[..0]), Err("empty".into()));
        assert_eq!(sorted(&[TABLE[1], TABLE[0]]), Err("2 then 1".into()));
    }

    #[test]
    fn tables_read_from_text() {
        let text = "# a comment\n\
            M 1 name string optional\n\
            M 3 ids int64 repeated\n\
            M 2 zero_is_a_value int64 optional presence\n\
            M 4 attributes xla.M.AttributesEntry repeated\n\
            M 5 shape xla.ShapeProto optional\n";
        // One message type (the unit type) for M and its map entry.
        let parse = |text| parse_tables(text, "xla.", &[()], |_, name| name.starts_with('M'));
        assert_eq!(parse(text).unwrap(), [TABLE], "sorted by number");
        let bad = parse("M 1 name string\n").unwrap_err();
        assert_eq!(bad, "line 1: fewer than five words: \"M 1 name string\"");
        assert!(parse("N 1 a bool optional\n").is_err());
        assert!(parse("M x a bool optional\n").is_err());
        assert!(parse("M 1 a bool required\n").is_err());
        assert!(parse("M 1 a bool optional extra\n").is_err());
    }

    #[test]
    fn repeated_numbers_may_be_packed() {
        let ids = lookup(TABLE, 3).unwrap();
        assert!(ids.accepts(WireType::Varint) && ids.accepts(WireType::LengthDelimited));
        let name = lookup(TABLE, 1).unwrap();
        assert!(name.accepts(WireType::LengthDelimited) && !name.accepts(WireType::Varint));
        assert!(!lookup(TABLE, 2).unwrap().accepts(WireType::LengthDelimited));
        assert_eq!(
            name.check(WireType::Varint),
            Err("wire type 0 where 2 is expected".into())
        );
        assert_eq!(Kind::<()>::Double.wire_type(), WireType::SixtyFourBit);
    }
}
