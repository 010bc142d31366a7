//! Payloads that differ in anything but debug info must never strip to the
//! same bytes: constants, op names and attribute strings are kept as they are.

use super::common;

use common::*;
use mck_bytecode::{StripOutput, strip_locations};

/// The stripped output, or `None` for Unchanged / Err.
fn output(payload: &[u8]) -> Option<Vec<u8>> {
    strip_locations(payload).ok()?.output.stripped()
}

/// Replaces the first occurrence of `from` by `to` (same length).
fn edit(payload: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let at = find(payload, from)
        .unwrap_or_else(|| panic!("{:?} not found", String::from_utf8_lossy(from)));
    let mut out = payload.to_vec();
    out[at..at + to.len()].copy_from_slice(to);
    out
}

fn assert_differs(original: &[u8], edited: &[u8], what: &str) {
    let base = output(original).expect("original strips");
    if let Some(out) = output(edited) {
        assert_ne!(out, base, "{what}: edited payload strips to the same bytes");
    }
}

#[test]
fn flipped_dense_constant_differs() {
    // Mosaic: a dense array attribute (code 17) holding [1, 2, ...].
    let m = data("tpu_pallas_add.nounzip.a.kernel0.body.mlirbc");
    let dense = [0x23, 0x0b, 0x09, 0x21, 0x01, 0x00, 0x00, 0x00, 0x01];
    let mut flipped = dense;
    flipped[8] = 0x05;
    assert_differs(&m, &edit(&m, &dense, &flipped), "mosaic dense array");
    // Triton: the f32 constant of arith.constant (FloatAttr, code 9).
    let t = data("triton_add.a.mlirbc");
    let float = [0x13, 0x09, 0x10, 0x00, 0x00, 0x00, 0x10];
    let mut flipped = float;
    flipped[6] = 0x20;
    assert_differs(&t, &edit(&t, &float, &flipped), "triton float constant");
}

#[test]
fn changed_op_name_differs() {
    let m = data("tpu_pallas_add.nounzip.a.kernel0.body.mlirbc");
    assert_differs(
        &m,
        &edit(&m, b"arith.addf\0", b"arith.subf\0"),
        "mosaic op name",
    );
    let t = data("triton_add.a.mlirbc");
    assert_differs(&t, &edit(&t, b"addf\0", b"subf\0"), "triton op name");
}

#[test]
fn changed_attribute_string_differs() {
    let mosaic = "tpu_pallas_add.nounzip.a.kernel0.body.mlirbc";
    let triton = "triton_add.a.mlirbc";
    let edits: [(&str, &[u8], &[u8], &str); 5] = [
        (mosaic, b"add_kernel\0", b"add_kernex\0", "mosaic sym_name"),
        (
            mosaic,
            b"dimension_semantics",
            b"dimension_semantict",
            "mosaic attr name",
        ),
        (triton, b"add_kernel\0", b"add_kernex\0", "triton sym_name"),
        (
            triton,
            b"tt.divisibility",
            b"tt.divisibilitx",
            "triton attr name",
        ),
        (triton, b"public", b"privat", "triton visibility"),
    ];
    for (name, from, to, what) in edits {
        let payload = data(name);
        assert_differs(&payload, &edit(&payload, from, to), what);
    }
}

#[test]
fn changed_property_blob_differs() {
    let t = data("triton_add.a.mlirbc");
    let h = mck_bytecode::inspect(&t).unwrap();
    let props = h.sections.iter().find(|s| s.id == 8).unwrap();
    for offset in props.range() {
        let mut edited = t.clone();
        edited[offset] ^= 0x02;
        assert_differs(&t, &edited, &format!("property byte {offset:#x}"));
    }
}

#[test]
fn every_single_byte_outside_debug_info_matters() {
    for name in PAYLOADS {
        let payload = data(name);
        let report = strip_locations(&payload).unwrap();
        let StripOutput::Stripped(base) = &report.output else {
            continue;
        };
        for offset in 0..payload.len() {
            if report.debug.contains(offset) {
                continue;
            }
            for delta in [1u8, 0x80] {
                let mut edited = payload.clone();
                edited[offset] = edited[offset].wrapping_add(delta);
                if let Some(out) = output(&edited) {
                    assert_ne!(
                        &out, base,
                        "{name}: byte {offset:#x} + {delta} strips to the same bytes"
                    );
                }
            }
        }
    }
}
