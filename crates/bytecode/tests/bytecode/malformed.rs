//! Malformed input returns an error naming the place; it never panics, never
//! allocates in proportion to a count the input cannot back, and never
//! recurses without bound.

use super::common;

use common::*;
use mck_bytecode::{BytecodeError, inspect, strip_locations};

#[test]
fn every_truncation_of_every_payload_is_an_error() {
    for name in PAYLOADS {
        let payload = data(name);
        for len in 0..payload.len() {
            let r = strip_locations(&payload[..len]);
            assert!(r.is_err(), "{name} truncated to {len} bytes: {r:?}");
        }
    }
}

#[test]
fn bad_magic() {
    let mut payload = data("triton_add.a.mlirbc");
    payload[3] = b'X';
    let err = inspect(&payload).unwrap_err();
    assert!(matches!(err, BytecodeError::BadMagic { .. }));
    assert_eq!(
        err.to_string(),
        "not MLIR bytecode: expected magic 4d 4c ef 52, found 4d 4c ef 58"
    );
    assert!(matches!(
        strip_locations(b""),
        Err(BytecodeError::BadMagic { .. })
    ));
}

#[test]
fn overlong_and_truncated_varints() {
    // Version as a nine-byte varint that is cut short.
    let err = inspect(b"ML\xefR\x00\x01\x02").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("attempting to parse 9 bytes when only 3 remain at offset 0x4"),
        "{err}"
    );
    // Version 2^56 in its nine-byte form: a supported container, unknown version.
    let mut p = b"ML\xefR\x00\x00\x00\x00\x00\x00\x00\x00\x01p\x00".to_vec();
    assert!(inspect(&p).is_ok());
    assert!(matches!(
        strip_locations(&p),
        Err(BytecodeError::UnsupportedVersion { .. })
    ));
    // A section length in nine bytes pointing far past the end.
    p = b"ML\xefR\x0dp\x00\x01\x00\xff\xff\xff\xff\xff\xff\xff\x7f".to_vec();
    assert!(
        matches!(inspect(&p), Err(BytecodeError::SectionOutOfBounds { .. })),
        "{:?}",
        inspect(&p)
    );
}

#[test]
fn section_lengths_past_the_end() {
    let payload = data("tpu_pallas_add.nounzip.a.kernel0.body.mlirbc");
    let h = inspect(&payload).unwrap();
    for s in &h.sections {
        // Grow each length varint by 64 (lengths here are 1- or 2-byte varints).
        let mut edited = payload.clone();
        let len_at = s.header_offset + 1;
        if edited[len_at] & 1 == 1 && edited[len_at] < 0x80 {
            edited[len_at] += 0x80;
            assert!(strip_locations(&edited).is_err(), "section {}", s.id);
        }
    }
}

#[test]
fn huge_counts_do_not_allocate() {
    let (mut b, _) = small_module("f.py", 1, 2);
    let good = b.build();
    assert!(strip_locations(&good).is_ok());
    // A string section that claims 2^50 strings.
    b.strings.clear();
    let payload = b.build();
    let h = inspect(&payload).unwrap();
    let strings = h.sections.iter().find(|s| s.id == 0).unwrap();
    let mut edited = payload[..strings.header_offset].to_vec();
    let mut data = v(1 << 50);
    data.extend_from_slice(&[0x03; 4]);
    edited.push(0);
    edited.extend(v(data.len() as u64));
    edited.extend(data);
    let err = strip_locations(&edited).unwrap_err();
    assert!(matches!(err, BytecodeError::CountTooLarge { .. }), "{err}");
    // An attr/type offset section that claims 2^60 attributes.
    let mut b2 = small_module("f.py", 1, 2).0;
    b2.attrs.clear();
    let p = b2.build();
    let h = inspect(&p).unwrap();
    let offs = h.sections.iter().find(|s| s.id == 3).unwrap();
    let mut edited = p[..offs.header_offset].to_vec();
    let mut data = v(1 << 60);
    data.extend(v(0));
    edited.push(3);
    edited.extend(v(data.len() as u64));
    edited.extend(data);
    edited.extend_from_slice(&p[offs.range().end..]);
    assert!(matches!(
        strip_locations(&edited),
        Err(BytecodeError::CountTooLarge { .. })
    ));
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let (mut b, loc) = small_module("f.py", 1, 2);
    let op = b.op(0, "wrap", true);
    let depth = 5000;
    let mut ir = v(1 << 1);
    for _ in 0..depth {
        ir.extend(v(op as u64));
        ir.push(0x10); // has regions
        ir.extend(v(loc as u64));
        ir.extend(v(1 << 1)); // one region, not isolated
        ir.extend(v(1)); // one block
        ir.extend(v(0)); // no values
        ir.extend(v(1 << 1)); // one op, no args
    }
    ir.extend(v(op as u64));
    ir.push(0);
    ir.extend(v(loc as u64));
    b.ir = ir;
    let err = strip_locations(&b.build()).unwrap_err();
    assert!(
        matches!(err, BytecodeError::TooDeep { limit: 256, .. }),
        "{err}"
    );
}

#[test]
fn invalid_indices_are_reported() {
    let (mut b, _) = small_module("f.py", 1, 2);
    b.ir[3] = 0x7f; // location index 63 of 6 attributes
    let err = strip_locations(&b.build()).unwrap_err();
    assert!(
        err.to_string().starts_with("invalid attribute index 63"),
        "{err}"
    );
}

#[test]
fn duplicate_and_missing_sections() {
    let p = data("tpu_pallas_add.nounzip.a.kernel0.body.mlirbc");
    let h = inspect(&p).unwrap();
    let ir = h.sections.iter().find(|s| s.id == 4).unwrap();
    let mut dup = p.clone();
    dup.extend_from_slice(&p[ir.header_offset..ir.range().end]);
    assert!(matches!(
        strip_locations(&dup),
        Err(BytecodeError::DuplicateSection { .. })
    ));
    let mut missing = p[..ir.header_offset].to_vec();
    missing.extend_from_slice(&p[ir.range().end..]);
    assert!(matches!(
        strip_locations(&missing),
        Err(BytecodeError::MissingSection { id: 4, .. })
    ));
}
