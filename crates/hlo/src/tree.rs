//! Decoding with the table: a serialized HloModuleProto as a tree of named values, for the
//! text view and for checking that canonical bytes still mean what the input meant.

use prost::encoding::WireType;

use crate::HloError;
use crate::schema::{self, Card, Kind, Msg, normalize};
use crate::wire;

/// A decoded message: its fields in wire order (a packed field gives one entry per value).
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub msg: Msg,
    pub fields: Vec<FieldValue>,
}

/// One field value.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldValue {
    pub number: u32,
    /// The table's name, `None` for a field the table does not know.
    pub name: Option<&'static str>,
    pub value: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Enum(i32),
    /// The IEEE bits, so equal bits compare equal (NaN included).
    Float(u32),
    Double(u64),
    Str(String),
    Bytes(Vec<u8>),
    Message(Message),
    /// A message the table does not describe: its type and bytes.
    Opaque(&'static str, Vec<u8>),
    /// A field the table does not know, exactly as encoded.
    Unknown(Vec<u8>),
}

impl Message {
    /// The values of field `number`, in order.
    pub fn get(&self, number: u32) -> impl Iterator<Item = &Value> {
        self.fields
            .iter()
            .filter(move |f| f.number == number)
            .map(|f| &f.value)
    }
}

/// Decodes a serialized HloModuleProto with the table.
pub fn decode(bytes: &[u8]) -> Result<Message, HloError> {
    message(bytes, 0, Msg::HloModule)
}

fn message(buf: &[u8], base: usize, msg: Msg) -> Result<Message, HloError> {
    let mut fields = Vec::new();
    for f in wire::parse(buf, base)? {
        let Some(info) = schema::lookup(msg, f.number) else {
            fields.push(FieldValue {
                number: f.number,
                name: None,
                value: Value::Unknown(f.raw.to_vec()),
            });
            continue;
        };
        let push = |fields: &mut Vec<FieldValue>, value| {
            fields.push(FieldValue {
                number: f.number,
                name: Some(info.name),
                value,
            })
        };
        let wrong = || HloError::NotHlo {
            reason: format!("wire type {} in {}", f.wire_type as u8, info.name),
            offset: f.offset,
            path: String::new(),
        };
        let scalar = info.kind.wire_type();
        if f.wire_type != scalar {
            if info.card == Card::One || f.wire_type != WireType::LengthDelimited {
                return Err(wrong());
            }
            // A packed run of numbers.
            let mut pos = 0;
            while pos < f.payload().len() {
                let value = match info.kind {
                    Kind::Float | Kind::Double => {
                        let w = if info.kind == Kind::Float { 4 } else { 8 };
                        let bytes = f.payload().get(pos..pos + w).ok_or_else(wrong)?;
                        pos += w;
                        fixed(info.kind, bytes)
                    }
                    kind => {
                        let v = wire::read_varint(f.payload(), &mut pos, f.payload_offset())?;
                        varint(kind, v)
                    }
                };
                push(&mut fields, value);
            }
            continue;
        }
        let value = match info.kind {
            Kind::Bool | Kind::Int32 | Kind::Int64 | Kind::Uint32 | Kind::Uint64 | Kind::Enum => {
                varint(info.kind, f.varint().ok_or_else(wrong)?)
            }
            Kind::Float | Kind::Double => fixed(info.kind, f.payload()),
            Kind::Str => Value::Str(String::from_utf8(f.payload().to_vec()).map_err(|_| {
                HloError::NotHlo {
                    reason: format!("{} is not UTF-8", info.name),
                    offset: f.payload_offset(),
                    path: String::new(),
                }
            })?),
            Kind::Bytes => Value::Bytes(f.payload().to_vec()),
            Kind::Msg(sub) => Value::Message(message(f.payload(), f.payload_offset(), sub)?),
            Kind::Opaque(name) => Value::Opaque(name, f.payload().to_vec()),
        };
        push(&mut fields, value);
    }
    Ok(Message { msg, fields })
}

fn varint(kind: Kind, v: u64) -> Value {
    let v = normalize(kind, v);
    match kind {
        Kind::Bool => Value::Bool(v != 0),
        Kind::Enum => Value::Enum(v as i32),
        _ => Value::Int(v as i64),
    }
}

fn fixed(kind: Kind, bytes: &[u8]) -> Value {
    match (kind, bytes.try_into().ok(), bytes.try_into().ok()) {
        (Kind::Float, Some(b), _) => Value::Float(u32::from_le_bytes(b)),
        (_, _, Some(b)) => Value::Double(u64::from_le_bytes(b)),
        _ => Value::Bytes(bytes.to_vec()),
    }
}
