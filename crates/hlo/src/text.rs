//! A readable view of a canonical HloModuleProto, one field per line, for explaining misses
//! (`why` diffs it line by line) and for `canon --emit text`. Never hashed.
//!
//! Described messages show field names; messages the table does not describe (shapes,
//! literals…) show on one line in raw form (`{1: 11 2: "x" 3: <0408>}`), so a changed shape or
//! constant is one changed line.

use std::fmt::Write as _;

use crate::tree::{self, Message, Value};
use crate::wire;

/// How deep raw (undescribed) messages are opened before showing bytes.
const MAX_RAW_DEPTH: usize = 16;

/// The text view of `bytes`, or the decoding error as a line when they do not decode.
pub fn to_text(bytes: &[u8]) -> String {
    match tree::decode(bytes) {
        Ok(m) => {
            let mut out = String::from("HloModuleProto\n");
            message(&mut out, &m, 1);
            out
        }
        Err(e) => format!("(not a decodable HloModuleProto: {e})\n"),
    }
}

fn message(out: &mut String, m: &Message, indent: usize) {
    let pad = "  ".repeat(indent);
    for f in &m.fields {
        let name = match f.name {
            Some(name) => name.to_string(),
            None => format!("#{}", f.number),
        };
        match &f.value {
            Value::Message(inner) => {
                let _ = writeln!(out, "{pad}{name} {{");
                message(out, inner, indent + 1);
                let _ = writeln!(out, "{pad}}}");
            }
            value => {
                let _ = writeln!(out, "{pad}{name}: {}", scalar(value));
            }
        }
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Enum(e) => e.to_string(),
        Value::Float(bits) => format!("{:?}", f32::from_bits(*bits)),
        Value::Double(bits) => format!("{:?}", f64::from_bits(*bits)),
        Value::Str(s) => format!("{s:?}"),
        Value::Bytes(b) => bytes(b),
        Value::Opaque(_, b) => raw(b, 0),
        Value::Unknown(b) => format!("<{}>", hex::encode(b)),
        Value::Message(_) => String::new(),
    }
}

/// Bytes as a string when they are printable UTF-8, else as hex.
fn bytes(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) if !s.chars().any(char::is_control) => format!("{s:?}"),
        _ => format!("<{}>", hex::encode(b)),
    }
}

/// An undescribed message in protoc's raw style, on one line.
fn raw(b: &[u8], depth: usize) -> String {
    if b.is_empty() {
        return "{}".into();
    }
    let fields = match wire::parse(b, 0) {
        Ok(fields) if depth < MAX_RAW_DEPTH => fields,
        _ => return bytes(b),
    };
    let mut out = String::from("{");
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let _ = write!(out, "{}: ", f.number);
        match f.varint() {
            Some(v) => {
                let _ = write!(out, "{v}");
            }
            None if f.wire_type == prost::encoding::WireType::LengthDelimited => {
                let printable = std::str::from_utf8(f.payload())
                    .is_ok_and(|s| !s.is_empty() && !s.chars().any(char::is_control));
                if printable {
                    out.push_str(&bytes(f.payload()));
                } else {
                    out.push_str(&raw(f.payload(), depth + 1));
                }
            }
            None => {
                let _ = write!(out, "<{}>", hex::encode(f.payload()));
            }
        }
    }
    out.push('}');
    out
}
