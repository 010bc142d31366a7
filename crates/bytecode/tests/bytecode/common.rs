//! Shared helpers for the integration tests: test payloads and the MLIR string
//! unescaping used to extract the Triton kernel from its `ir = "..."` attribute.

#![allow(dead_code)]

use std::path::PathBuf;

/// Path of a kernel payload: Mosaic bodies live with their corpus modules,
/// Triton kernels (extracted from their `ir` attribute) under `kernels/`.
pub fn data_path(name: &str) -> PathBuf {
    let folder = if name.starts_with("tpu_") {
        "corpus/tpu"
    } else {
        "kernels"
    };
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(folder)
        .join(name)
}

/// A generated kernel set under `tests/data/kernels/<dir>`: each row of its
/// `manifest.tsv` (header skipped) split into columns, with the bytes of the
/// file the first column names.
pub fn kernel_manifest(dir: &str) -> Vec<(Vec<String>, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/kernels")
        .join(dir);
    let manifest = std::fs::read_to_string(dir.join("manifest.tsv")).expect("manifest");
    manifest
        .lines()
        .skip(1)
        .map(|line| {
            let cols: Vec<String> = line.split('\t').map(str::to_string).collect();
            let payload = std::fs::read(dir.join(&cols[0])).expect(&cols[0]);
            (cols, payload)
        })
        .collect()
}

/// Bytes of a file under `tests/data`.
pub fn data(name: &str) -> Vec<u8> {
    std::fs::read(data_path(name)).unwrap_or_else(|e| panic!("reading {name}: {e}"))
}

/// Unescapes the body of an MLIR string literal: `\XX` hex escapes and `\\`
/// (what `llvm::printEscapedString` produces), plus `\"`, `\n`, `\t`.
pub fn unescape_mlir_string(body: &str) -> Vec<u8> {
    let bytes = body.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            out.push(v);
            i += 3;
            continue;
        }
        let c = bytes.get(i + 1).copied().expect("dangling backslash");
        out.push(match c {
            b'n' => b'\n',
            b't' => b'\t',
            other => other,
        });
        i += 2;
    }
    out
}

/// Extracts and unescapes the first `ir = "..."` string attribute of `text`.
pub fn extract_ir_attr(text: &str) -> Vec<u8> {
    let start = text.find("ir = \"").expect("no ir attribute") + "ir = \"".len();
    let rest = &text[start..];
    let mut end = 0;
    let b = rest.as_bytes();
    while b[end] != b'"' {
        end += if b[end] == b'\\' { 2 } else { 1 };
    }
    unescape_mlir_string(&rest[..end])
}

/// All bytecode payloads of the test corpus.
pub const PAYLOADS: [&str; 6] = [
    "tpu_pallas_add.nounzip.a.kernel0.body.mlirbc",
    "tpu_pallas_add.nounzip.b.kernel0.body.mlirbc",
    "tpu_pallas_add.a.kernel0.body.mlirbc",
    "tpu_pallas_add.b.kernel0.body.mlirbc",
    "triton_add.a.mlirbc",
    "triton_add.b.mlirbc",
];

/// Position of `needle` in `hay` (first occurrence).
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Builds small synthetic bytecode payloads, section by section, the way the
/// upstream writer lays them out (dialect, offsets, attrs, ir, resources,
/// strings, properties).
#[derive(Debug, Clone, Default)]
pub struct Builder {
    pub version: u64,
    pub strings: Vec<Vec<u8>>,
    /// Dialect name string indices.
    pub dialects: Vec<usize>,
    /// (dialect, name string, registered)
    pub op_names: Vec<(usize, usize, bool)>,
    /// (dialect, custom, bytes)
    pub attrs: Vec<(usize, bool, Vec<u8>)>,
    pub types: Vec<(usize, bool, Vec<u8>)>,
    pub ir: Vec<u8>,
    pub props: Option<Vec<Vec<u8>>>,
    /// (offset section, resource section, alignment of the resource section)
    pub resources: Option<(Vec<u8>, Vec<u8>, u64)>,
    /// Version blobs of dialects: (dialect index, blob).
    pub versions: Vec<(usize, Vec<u8>)>,
}

pub fn v(value: u64) -> Vec<u8> {
    mck_bytecode::varint::encoded(value)
}

impl Builder {
    pub fn new(version: u64) -> Self {
        Builder {
            version,
            ..Default::default()
        }
    }

    /// Index of `s` in the string table, adding it if needed.
    pub fn string(&mut self, s: &str) -> usize {
        if let Some(i) = self.strings.iter().position(|x| x == s.as_bytes()) {
            return i;
        }
        self.strings.push(s.as_bytes().to_vec());
        self.strings.len() - 1
    }

    pub fn dialect(&mut self, name: &str) -> usize {
        let s = self.string(name);
        self.dialects.push(s);
        self.dialects.len() - 1
    }

    pub fn op(&mut self, dialect: usize, name: &str, registered: bool) -> usize {
        let s = self.string(name);
        self.op_names.push((dialect, s, registered));
        self.op_names.len() - 1
    }

    pub fn attr(&mut self, dialect: usize, bytes: Vec<u8>) -> usize {
        self.attrs.push((dialect, true, bytes));
        self.attrs.len() - 1
    }

    pub fn ty(&mut self, dialect: usize, bytes: Vec<u8>) -> usize {
        self.types.push((dialect, true, bytes));
        self.types.len() - 1
    }

    /// A builtin `StringAttr` entry (code 2) for `s`.
    pub fn string_attr(&mut self, builtin: usize, s: &str) -> usize {
        let i = self.string(s);
        let mut b = v(2);
        b.extend(v(i as u64));
        self.attr(builtin, b)
    }

    fn section(out: &mut Vec<u8>, id: u8, data: &[u8], align: u64) {
        let id_pos = out.len();
        out.push(id);
        out.extend(v(data.len() as u64));
        if align > 1 && !(out.len() as u64).is_multiple_of(align) {
            out[id_pos] |= 0x80;
            out.extend(v(align));
            while !(out.len() as u64).is_multiple_of(align) {
                out.push(0xcb);
            }
        }
        out.extend_from_slice(data);
    }

    pub fn build(&self) -> Vec<u8> {
        let mut out = b"ML\xefR".to_vec();
        out.extend(v(self.version));
        out.extend_from_slice(b"test\0");
        // dialects
        let mut d = v(self.dialects.len() as u64);
        for &name in &self.dialects {
            d.extend(v(if self.version >= 1 {
                (name as u64) << 1
            } else {
                name as u64
            }));
        }
        if self.version >= 4 {
            d.extend(v(self.op_names.len() as u64));
        }
        for &(dialect, name, registered) in &self.op_names {
            d.extend(v(dialect as u64));
            d.extend(v(1));
            d.extend(v(if self.version >= 5 {
                (name as u64) << 1 | registered as u64
            } else {
                name as u64
            }));
        }
        Self::section(&mut out, 1, &d, 1);
        // attr/type offsets and data
        let mut offsets = v(self.attrs.len() as u64);
        offsets.extend(v(self.types.len() as u64));
        let mut data = Vec::new();
        for (dialect, custom, bytes) in self.attrs.iter().chain(&self.types) {
            offsets.extend(v(*dialect as u64));
            offsets.extend(v(1));
            offsets.extend(v((bytes.len() as u64) << 1 | *custom as u64));
            data.extend_from_slice(bytes);
        }
        Self::section(&mut out, 3, &offsets, 1);
        Self::section(&mut out, 2, &data, 1);
        Self::section(&mut out, 4, &self.ir, 1);
        if let Some((offsets, values, align)) = &self.resources {
            Self::section(&mut out, 6, offsets, 1);
            Self::section(&mut out, 5, values, *align);
        }
        let mut s = v(self.strings.len() as u64);
        for st in self.strings.iter().rev() {
            s.extend(v(st.len() as u64 + 1));
        }
        for st in &self.strings {
            s.extend_from_slice(st);
            s.push(0);
        }
        Self::section(&mut out, 0, &s, 1);
        if let Some(props) = &self.props {
            let mut p = v(props.len() as u64);
            for blob in props {
                p.extend(v(blob.len() as u64));
                p.extend_from_slice(blob);
            }
            Self::section(&mut out, 8, &p, 1);
        }
        out
    }
}

/// A small valid version-0 module: `builtin.module` with an attribute
/// dictionary `{name = "value"}`, located at `file:line:col` (a
/// `FileLineColLoc`). Returns the builder and the index of the location.
pub fn small_module(file: &str, line: u64, col: u64) -> (Builder, usize) {
    let mut b = Builder::new(0);
    let builtin = b.dialect("builtin");
    let module = b.op(builtin, "module", true);
    let name = b.string_attr(builtin, "name");
    let value = b.string_attr(builtin, "value");
    let mut dict = v(1);
    dict.extend(v(1));
    dict.extend(v(name as u64));
    dict.extend(v(value as u64));
    let dict = b.attr(builtin, dict);
    let file = b.string_attr(builtin, file);
    let mut loc = v(11);
    loc.extend(v(file as u64));
    loc.extend(v(line));
    loc.extend(v(col));
    let loc = b.attr(builtin, loc);
    // top block: one op, no args; op: name, mask (attrs), loc, dict
    let mut ir = v(1 << 1);
    ir.extend(v(module as u64));
    ir.push(0x01);
    ir.extend(v(loc as u64));
    ir.extend(v(dict as u64));
    b.ir = ir;
    (b, loc)
}
