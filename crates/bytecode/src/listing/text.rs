//! Attributes and types as text, read dialect-free: builtin entries from their
//! bytecode encoding (integers and floats with their values, strings, arrays,
//! dictionaries, symbol references, shaped and function types), entries a
//! dialect wrote in assembly format as that text, and any other dialect's own
//! encoding as `#dialect<0x…>` (its bytes in hex, shortened). The text is for
//! comparing and showing; it follows MLIR's syntax where that costs nothing.

use crate::attrs::{Decoded, Table};
use crate::encoding::builtin_attr as ba;
use crate::encoding::builtin_type as bt;
use crate::model::Parsed;
use crate::reader::Reader;

/// Nesting beyond which an entry is shown as `…` (entries can nest deeply; a
/// comparison only needs to see where they differ).
const MAX_DEPTH: usize = 8;

/// Bytes of an undecodable entry shown in hex before it is cut short.
const MAX_HEX_BYTES: usize = 16;

/// The builtin `f64` type's code (`bf16`, `f16`, `f32`, `f64` follow each other).
const F64: u64 = bt::BF16 + 3;

/// `bytes` as `0x…` hex, cut after [`MAX_HEX_BYTES`] with the full length.
pub fn hex(bytes: &[u8]) -> String {
    let shown: String = bytes
        .iter()
        .take(MAX_HEX_BYTES)
        .map(|b| format!("{b:02x}"))
        .collect();
    if bytes.len() > MAX_HEX_BYTES {
        format!("0x{shown}… ({} bytes)", bytes.len())
    } else {
        format!("0x{shown}")
    }
}

/// Renders entries of one parsed payload.
pub struct Text<'p, 'a> {
    pub parsed: &'p Parsed<'a>,
}

/// Element type facts needed to read a value: bit width and how to print it.
#[derive(Clone, Copy)]
enum Scalar {
    Int { width: u64, signed: bool },
    Float { width: u64, bf16: bool },
}

impl Text<'_, '_> {
    /// Attribute `i` as text.
    pub fn attr(&self, i: usize) -> String {
        self.entry(Table::Attr, i, 0)
    }

    /// Type `i` as text.
    pub fn ty(&self, i: usize) -> String {
        self.entry(Table::Type, i, 0)
    }

    /// The entries of dictionary attribute `i` as (name, value) pairs, or
    /// `None` when it is not a decoded builtin dictionary.
    pub fn dictionary(&self, i: usize) -> Option<Vec<(String, String)>> {
        let bytes = self.parsed.entry_bytes(Table::Attr, i);
        let mut r = Reader::new(bytes, 0);
        if self.parsed.attr(i).attr_code() != Some(ba::DICTIONARY) {
            return None;
        }
        r.varint("code").ok()?;
        let n = r.varint("dictionary size").ok()?;
        let mut out = Vec::new();
        for _ in 0..n {
            let name = self.string_attr_content(index(&mut r)?);
            let value = self.entry(Table::Attr, index(&mut r)?, 1);
            out.push((name, value));
        }
        Some(out)
    }

    fn entry(&self, table: Table, i: usize, depth: usize) -> String {
        if depth > MAX_DEPTH {
            return "…".into();
        }
        let decoded = match table {
            Table::Attr => self.parsed.attrs.get(i),
            Table::Type => self.parsed.types.get(i),
        };
        let bytes = self.parsed.entry_bytes(table, i);
        match decoded {
            None => format!("<index {i} out of range>"),
            Some(Decoded::Asm) => {
                String::from_utf8_lossy(bytes.strip_suffix(b"\0").unwrap_or(bytes)).into_owned()
            }
            Some(Decoded::Builtin { .. }) => {
                let mut r = Reader::new(bytes, 0);
                let text = match table {
                    Table::Attr => self.builtin_attr(&mut r, depth),
                    Table::Type => self.builtin_type(&mut r, depth),
                };
                text.unwrap_or_else(|| format!("#builtin<{}>", hex(bytes)))
            }
            Some(Decoded::Opaque) => format!("#{}<{}>", self.dialect_of(table, i), hex(bytes)),
        }
    }

    fn dialect_of(&self, table: Table, i: usize) -> String {
        let entries = match table {
            Table::Attr => &self.parsed.table.attrs,
            Table::Type => &self.parsed.table.types,
        };
        entries
            .get(i)
            .and_then(|e| self.parsed.dialects.dialects.get(e.dialect))
            .map(|d| String::from_utf8_lossy(self.parsed.strings.content(d.name)).into_owned())
            .unwrap_or_else(|| "?".into())
    }

    fn string(&self, i: usize) -> String {
        String::from_utf8_lossy(self.parsed.strings.content(i)).into_owned()
    }

    /// The content of a `StringAttr` (a dictionary key, a symbol name).
    fn string_attr_content(&self, i: usize) -> String {
        let bytes = self.parsed.entry_bytes(Table::Attr, i);
        let mut r = Reader::new(bytes, 0);
        match (
            self.parsed.attr(i).attr_code(),
            r.varint("code"),
            index(&mut r),
        ) {
            (Some(ba::STRING | ba::STRING_WITH_TYPE), Ok(_), Some(s)) => self.string(s),
            _ => self.entry(Table::Attr, i, 1),
        }
    }

    fn attr_list(&self, r: &mut Reader<'_>, depth: usize) -> Option<Vec<String>> {
        let n = r.varint("list").ok()?;
        (0..n)
            .map(|_| Some(self.entry(Table::Attr, index(r)?, depth + 1)))
            .collect()
    }

    fn type_list(&self, r: &mut Reader<'_>, depth: usize) -> Option<Vec<String>> {
        let n = r.varint("list").ok()?;
        (0..n)
            .map(|_| Some(self.entry(Table::Type, index(r)?, depth + 1)))
            .collect()
    }

    fn builtin_attr(&self, r: &mut Reader<'_>, depth: usize) -> Option<String> {
        let attr = |r: &mut Reader<'_>| Some(self.entry(Table::Attr, index(r)?, depth + 1));
        let ty = |r: &mut Reader<'_>| index(r);
        Some(match r.varint("code").ok()? {
            ba::ARRAY => format!("[{}]", self.attr_list(r, depth)?.join(", ")),
            ba::DICTIONARY => {
                let n = r.varint("dictionary size").ok()?;
                let mut entries = Vec::new();
                for _ in 0..n {
                    let name = self.string_attr_content(index(r)?);
                    entries.push(format!("{name} = {}", attr(r)?));
                }
                format!("{{{}}}", entries.join(", "))
            }
            ba::STRING => format!("{:?}", self.string(index(r)?)),
            ba::STRING_WITH_TYPE => {
                let s = self.string(index(r)?);
                format!("{s:?} : {}", self.entry(Table::Type, ty(r)?, depth + 1))
            }
            ba::FLAT_SYMBOL_REF => format!("@{}", self.string_attr_content(index(r)?)),
            ba::SYMBOL_REF => {
                let root = self.string_attr_content(index(r)?);
                let nested = self.attr_list(r, depth)?;
                let mut text = format!("@{root}");
                for n in nested {
                    text.push_str(&format!("::{n}"));
                }
                text
            }
            ba::TYPE => self.entry(Table::Type, ty(r)?, depth + 1),
            ba::UNIT => "unit".into(),
            ba::INTEGER | ba::FLOAT => {
                let t = ty(r)?;
                let value = self.scalar_value(r, t)?;
                format!("{value} : {}", self.entry(Table::Type, t, depth + 1))
            }
            ba::DISTINCT => format!("distinct<{}>", attr(r)?),
            ba::DENSE_ARRAY => {
                let t = ty(r)?;
                let count = r.varint("dense array size").ok()?;
                let len = r.varint("dense array blob").ok()?;
                let blob = r.bytes(len, "dense array blob").ok()?;
                let elements = self.dense_elements(t, count, blob);
                let t = self.entry(Table::Type, t, depth + 1);
                match elements {
                    Some(e) if e.is_empty() => format!("array<{t}>"),
                    Some(e) => format!("array<{t}: {}>", e.join(", ")),
                    None => format!("array<{t}: {}>", hex(blob)),
                }
            }
            ba::DENSE_INT_OR_FP_ELEMENTS => {
                let t = ty(r)?;
                let len = r.varint("dense blob").ok()?;
                let blob = r.bytes(len, "dense blob").ok()?;
                format!(
                    "dense<{}> : {}",
                    hex(blob),
                    self.entry(Table::Type, t, depth + 1)
                )
            }
            // Its dimensions, symbols and expressions are shown as stored.
            ba::AFFINE_MAP => format!("affine_map<{}>", hex(r.rest())),
            ba::UNKNOWN_LOC => "loc(unknown)".into(),
            code if ba::is_location(code) => "loc(…)".into(),
            _ => return None,
        })
    }

    fn builtin_type(&self, r: &mut Reader<'_>, depth: usize) -> Option<String> {
        let ty = |r: &mut Reader<'_>| Some(self.entry(Table::Type, index(r)?, depth + 1));
        let attr = |r: &mut Reader<'_>| Some(self.entry(Table::Attr, index(r)?, depth + 1));
        Some(match r.varint("code").ok()? {
            bt::INTEGER => {
                let w = r.varint("integer type").ok()?;
                let prefix = ["i", "si", "ui"].get((w & 3) as usize)?;
                format!("{prefix}{}", w >> 2)
            }
            bt::INDEX => "index".into(),
            bt::NONE => "none".into(),
            code @ bt::BF16..=bt::F128 => {
                ["bf16", "f16", "f32", "f64", "f80", "f128"][(code - bt::BF16) as usize].into()
            }
            bt::FUNCTION => {
                let inputs = self.type_list(r, depth)?.join(", ");
                let results = self.type_list(r, depth)?.join(", ");
                format!("({inputs}) -> ({results})")
            }
            bt::COMPLEX => format!("complex<{}>", ty(r)?),
            bt::MEMREF => {
                let shape = shape(r)?;
                format!("memref<{shape}{}, {}>", ty(r)?, attr(r)?)
            }
            bt::MEMREF_WITH_MEMSPACE => {
                let space = attr(r)?;
                let shape = shape(r)?;
                format!("memref<{shape}{}, {}, {space}>", ty(r)?, attr(r)?)
            }
            bt::RANKED_TENSOR => format!("tensor<{}{}>", shape(r)?, ty(r)?),
            bt::RANKED_TENSOR_WITH_ENCODING => {
                let encoding = attr(r)?;
                format!("tensor<{}{}, {encoding}>", shape(r)?, ty(r)?)
            }
            bt::TUPLE => format!("tuple<{}>", self.type_list(r, depth)?.join(", ")),
            bt::UNRANKED_MEMREF => format!("memref<*x{}>", ty(r)?),
            bt::UNRANKED_MEMREF_WITH_MEMSPACE => {
                let space = attr(r)?;
                format!("memref<*x{}, {space}>", ty(r)?)
            }
            bt::UNRANKED_TENSOR => format!("tensor<*x{}>", ty(r)?),
            bt::VECTOR => format!("vector<{}{}>", shape(r)?, ty(r)?),
            _ => return None,
        })
    }

    /// What a scalar of type `t` is, if it is a builtin integer, index or
    /// float type of known width.
    fn scalar(&self, t: usize) -> Option<Scalar> {
        if !matches!(self.parsed.types.get(t), Some(Decoded::Builtin { .. })) {
            return None;
        }
        let mut r = Reader::new(self.parsed.entry_bytes(Table::Type, t), 0);
        match r.varint("code").ok()? {
            bt::INTEGER => {
                let w = r.varint("integer type").ok()?;
                Some(Scalar::Int {
                    width: w >> 2,
                    signed: w & 3 != 2,
                })
            }
            bt::INDEX => Some(Scalar::Int {
                width: 64,
                signed: true,
            }),
            code @ bt::BF16..=F64 => Some(Scalar::Float {
                width: [16, 16, 32, 64][(code - bt::BF16) as usize],
                bf16: code == bt::BF16,
            }),
            _ => None,
        }
    }

    /// The value of an `IntegerAttr` or `FloatAttr` of type `t`, written as
    /// MLIR writes an APInt of known width.
    fn scalar_value(&self, r: &mut Reader<'_>, t: usize) -> Option<String> {
        let scalar = self.scalar(t)?;
        let width = match scalar {
            Scalar::Int { width, .. } | Scalar::Float { width, .. } => width,
        };
        if width > 64 {
            return None;
        }
        let bits = if width <= 8 {
            u64::from(r.byte("value").ok()?)
        } else {
            let z = r.varint("value").ok()?;
            (z >> 1) ^ (z & 1).wrapping_neg()
        };
        if !r.is_empty() {
            return None;
        }
        Some(show_scalar(scalar, bits))
    }

    /// Elements of a dense array of element type `t`, little-endian.
    fn dense_elements(&self, t: usize, count: u64, blob: &[u8]) -> Option<Vec<String>> {
        let scalar = self.scalar(t)?;
        let width = match scalar {
            Scalar::Int { width: 1, .. } => 8,
            Scalar::Int { width, .. } | Scalar::Float { width, .. } => width,
        };
        let size = usize::try_from(width / 8)
            .ok()
            .filter(|&s| s > 0 && s <= 8)?;
        if width % 8 != 0 || blob.len() as u64 != count.checked_mul(size as u64)? {
            return None;
        }
        Some(
            blob.chunks(size)
                .map(|c| {
                    let bits = c
                        .iter()
                        .rev()
                        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
                    show_scalar(scalar, bits)
                })
                .collect(),
        )
    }
}

/// `bits` as MLIR shows a value of `scalar`'s type.
fn show_scalar(scalar: Scalar, bits: u64) -> String {
    match scalar {
        Scalar::Int { width: 1, .. } => (bits & 1 == 1).to_string(),
        Scalar::Int { width, signed } => {
            let unused = 64 - width.min(64);
            if signed {
                (((bits << unused) as i64) >> unused).to_string()
            } else {
                ((bits << unused) >> unused).to_string()
            }
        }
        Scalar::Float { width: 64, .. } => format!("{:?}", f64::from_bits(bits)),
        Scalar::Float { width: 32, .. } => format!("{:?}", f32::from_bits(bits as u32)),
        Scalar::Float { bf16: true, .. } => format!("{:?}", f32::from_bits((bits as u32) << 16)),
        Scalar::Float { .. } => format!("{:?}", half_to_f32(bits as u16)),
    }
}

/// An IEEE half-precision value, widened.
fn half_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((h >> 10) & 0x1f);
    let fraction = f32::from(h & 0x3ff);
    match exponent {
        0 => sign * fraction * 2f32.powi(-24),
        31 if fraction == 0.0 => sign * f32::INFINITY,
        31 => f32::NAN,
        e => sign * (1.0 + fraction / 1024.0) * 2f32.powi(e - 15),
    }
}

/// A table index read from an entry.
fn index(r: &mut Reader<'_>) -> Option<usize> {
    usize::try_from(r.varint("index").ok()?).ok()
}

/// A shape (`2x?x3x`), as MLIR writes it: a list of signed varints.
fn shape(r: &mut Reader<'_>) -> Option<String> {
    let n = r.varint("rank").ok()?;
    let mut text = String::new();
    for _ in 0..n {
        let z = r.varint("dimension").ok()?;
        let dim = ((z >> 1) ^ (z & 1).wrapping_neg()) as i64;
        if dim == i64::MIN {
            text.push_str("?x");
        } else {
            text.push_str(&format!("{dim}x"));
        }
    }
    Some(text)
}
