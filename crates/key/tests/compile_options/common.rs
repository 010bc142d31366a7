//! Helpers shared by the integration tests: parity data and a tiny protobuf builder.
#![allow(dead_code)]

use std::path::PathBuf;

/// The parity vectors: name and platform (from each vector's env.json).
pub const VECTORS: [(&str, &str); 7] = [
    ("01_cpu_defaults", "cpu"),
    ("02_xla_flags_kept_and_excluded", "cpu"),
    ("05_debug_options_all_reset_fields", "cpu"),
    ("07a_gpu_assign_1", "gpu"),
    ("07b_gpu_assign_0", "gpu"),
    ("09_fallback_device_kinds", "gpu"),
    ("10_custom_hook", "cpu"),
];

/// A file under `tests/data/` (`snapshots/…`, `parity/<vector>/…`).
pub fn data_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(file)
}

pub fn data(file: &str) -> Vec<u8> {
    std::fs::read(data_path(file)).unwrap_or_else(|e| panic!("reading {file}: {e}"))
}

/// The first `n` of the normalization's `changes`, as the notes say them.
pub fn first_notes(changes: &[impl ToString], n: usize) -> Vec<String> {
    changes.iter().take(n).map(ToString::to_string).collect()
}

pub fn input(name: &str) -> Vec<u8> {
    data(&format!("parity/{name}/compile_options.pb"))
}

pub fn expected(name: &str) -> Vec<u8> {
    data(&format!("parity/{name}/compile_options.normalized.pb"))
}

pub fn varint_bytes(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        if v < 0x80 {
            out.push(v as u8);
            return out;
        }
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
}

/// A varint field.
pub fn vf(number: u32, value: u64) -> Vec<u8> {
    let mut out = varint_bytes(u64::from(number) << 3);
    out.extend(varint_bytes(value));
    out
}

/// A length-delimited field.
pub fn lf(number: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = varint_bytes((u64::from(number) << 3) | 2);
    out.extend(varint_bytes(payload.len() as u64));
    out.extend_from_slice(payload);
    out
}

/// A fixed32 field.
pub fn f32f(number: u32, value: u32) -> Vec<u8> {
    let mut out = varint_bytes((u64::from(number) << 3) | 5);
    out.extend(value.to_le_bytes());
    out
}

pub fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

/// The 20 reset DebugOptions fields at their zero value, as (number, is_string).
pub const RESET_NUMBERS: [(u32, bool); 20] = [
    (61, true),
    (102, false),
    (109, true),
    (110, true),
    (111, true),
    (112, false),
    (113, false),
    (114, false),
    (115, false),
    (116, false),
    (118, false),
    (132, false),
    (144, false),
    (149, false),
    (151, false),
    (153, false),
    (154, true),
    (164, false),
    (310, true),
    (324, false),
];

/// One reset field at its zero value.
pub fn zero(number: u32, is_string: bool) -> Vec<u8> {
    if is_string {
        lf(number, b"")
    } else {
        vf(number, 0)
    }
}
