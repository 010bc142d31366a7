//! mck-hlo on hand-made encodings (one message, many spellings; unknown fields) and on hostile
//! bytes (truncated, wrong wire types, huge lengths, random): clear errors, never a panic.

use mck_hlo::{HloError, Options, canonicalize, sniff};
use proptest::prelude::*;

fn varint(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn key(number: u32, wire: u8, out: &mut Vec<u8>) {
    varint(u64::from(number) << 3 | u64::from(wire), out);
}

fn v(number: u32, value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    key(number, 0, &mut out);
    varint(value, &mut out);
    out
}

fn len(number: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    key(number, 2, &mut out);
    varint(payload.len() as u64, &mut out);
    out.extend_from_slice(payload);
    out
}

fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

/// Canonical bytes, ids kept: these tests are about encodings (ids: tests/ids.rs).
fn canon(bytes: &[u8]) -> Result<Vec<u8>, HloError> {
    let options = Options {
        keep_ids: true,
        ..Options::default()
    };
    canonicalize(bytes, &options).map(|c| c.bytes)
}

/// A small module in XLA's own spelling: fields in order, packed ids, no zero scalars.
fn neat() -> Vec<u8> {
    let metadata = cat(&[len(1, b"add"), len(2, b"jit(f)/add")]);
    let attrs = cat(&[
        len(1, &cat(&[len(1, b"a"), len(2, b"1")])),
        len(1, &cat(&[len(1, b"b"), len(2, b"2")])),
    ]);
    let instruction = cat(&[
        len(1, b"add.1"),
        len(2, b"add"),
        len(3, &[0x08, 0x0b]),
        len(7, &metadata),
        v(35, 3),
        len(36, &[1, 2]),
        len(68, &attrs),
    ]);
    let computation = cat(&[len(1, b"main"), len(2, &instruction), v(5, 1), v(6, 3)]);
    let schedule = cat(&[
        len(1, &cat(&[v(1, 1), len(2, &len(1, &[3]))])),
        len(1, &cat(&[v(1, 2), len(2, &len(1, &[4, 5]))])),
    ]);
    cat(&[
        len(1, b"m"),
        len(2, b"main"),
        len(3, &computation),
        v(6, 1),
        len(7, &schedule),
    ])
}

#[test]
fn one_message_many_spellings_one_canonical_form() {
    let neat = neat();
    assert_eq!(
        canon(&neat).unwrap(),
        neat,
        "XLA's spelling is already canonical"
    );
    // Metadata split in two occurrences, ids unpacked, fields out of order, explicit zeros,
    // the attribute map out of order with a duplicate key, schedule entries reversed.
    let metadata_1 = cat(&[len(2, b"jit(f)/add"), v(4, 0)]);
    let metadata_2 = len(1, b"add");
    let attrs = cat(&[
        len(1, &cat(&[len(1, b"b"), len(2, b"2")])),
        len(1, &cat(&[len(1, b"a"), len(2, b"old")])),
        len(1, &cat(&[len(2, b"1"), len(1, b"a")])),
    ]);
    let instruction = cat(&[
        v(36, 1),
        len(68, &attrs),
        len(7, &metadata_1),
        len(1, b"add.1"),
        v(35, 7),
        v(9, 0),
        len(2, b"add"),
        len(3, &[0x08, 0x0b]),
        len(7, &metadata_2),
        v(35, 3),
        v(36, 2),
    ]);
    let computation = cat(&[v(6, 3), len(2, &instruction), len(1, b"main"), v(5, 1)]);
    let schedule = cat(&[
        len(1, &cat(&[v(1, 2), len(2, &len(1, &[4, 5]))])),
        len(1, &cat(&[len(2, &len(1, &[3])), v(1, 1)])),
    ]);
    let messy = cat(&[
        len(7, &schedule),
        len(3, &computation),
        v(6, 1),
        len(1, b"m"),
        v(11, 0),
        len(2, b"main"),
    ]);
    assert_ne!(messy, neat);
    assert_eq!(canon(&messy).unwrap(), neat);
}

#[test]
fn unknown_fields_are_kept_in_place_by_number() {
    let neat = neat();
    // A field number no table knows, on the module; and one inside OpMetadata.
    let unknown = len(1000, b"future");
    let with_unknown = cat(&[neat.clone(), unknown.clone()]);
    let c = canonicalize(&with_unknown, &Options::default()).unwrap();
    assert_eq!(c.bytes, with_unknown);
    assert_eq!(c.report.unknown_fields, 1);
    let metadata = cat(&[len(1, b"add"), v(4, 12), len(3, b"/a.py"), v(500, 9)]);
    let module = |m: &[u8]| {
        cat(&[
            len(1, b"m"),
            len(3, &cat(&[len(2, &cat(&[len(1, b"x"), len(7, m)]))])),
        ])
    };
    let out = canon(&module(&metadata)).unwrap();
    assert_eq!(out, module(&cat(&[len(1, b"add"), v(500, 9)])));
}

#[test]
fn keep_locations_keeps_source_fields() {
    let metadata = cat(&[len(1, b"add"), len(3, b"/a.py"), v(4, 12), v(15, 2)]);
    let module = cat(&[
        len(1, b"m"),
        len(3, &len(2, &len(7, &metadata))),
        len(17, &len(1, b"/a.py")),
    ]);
    let keep = Options {
        keep_locations: true,
        keep_ids: true,
    };
    assert_eq!(canonicalize(&module, &keep).unwrap().bytes, module);
    let cleared = canon(&module).unwrap();
    assert_eq!(
        cleared,
        cat(&[len(1, b"m"), len(3, &len(2, &len(7, &len(1, b"add"))))])
    );
}

#[test]
fn every_truncation_is_an_error_or_a_shorter_module_never_a_panic() {
    let input = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/hlo/mlp.a.pb"),
    )
    .unwrap();
    let mut errors = 0;
    for cut in 0..input.len() {
        if let Err(e) = canon(&input[..cut]) {
            errors += 1;
            assert!(e.offset() <= cut, "{e} past the cut at {cut}");
        }
    }
    assert!(
        errors > input.len() / 2,
        "only {errors} truncations were errors"
    );
    let e = canon(&input[..input.len() - 1]).unwrap_err();
    assert!(
        e.to_string().contains("runs past the end") || e.to_string().contains("truncated"),
        "{e}"
    );
}

#[test]
fn errors_say_where_and_in_which_field() {
    // computations[0].instructions[1] has a truncated varint (id).
    let instruction_ok = len(1, b"a");
    let instruction_bad = [0xa8, 0x02, 0x80]; // field 35 (id), varint cut short
    let computation = cat(&[len(2, &instruction_ok), len(2, &instruction_bad)]);
    let module = cat(&[len(1, b"m"), len(3, &computation)]);
    let e = canon(&module).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "truncated varint at byte {} in computations[0].instructions[1]",
            module.len() - 1
        )
    );

    // A known field with the wrong wire type.
    let e = canon(&cat(&[len(1, b"m"), v(3, 1)])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "not an HloModuleProto: wire type 0 where 2 is expected at byte 3 in computations"
    );
    let bad_line = cat(&[len(1, b"m"), len(3, &len(2, &len(7, &len(4, b"x"))))]);
    let e = canon(&bad_line).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("in computations[0].instructions[0].metadata.source_line"),
        "{e}"
    );

    // A huge length.
    let mut huge = vec![0x1a];
    varint(u64::MAX >> 1, &mut huge);
    let e = canon(&huge).unwrap_err();
    assert!(
        matches!(e, HloError::LengthPastEnd { offset: 1, .. }),
        "{e}"
    );

    // A string that is not UTF-8.
    let e = canon(&len(1, &[0xff, 0xfe])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "not an HloModuleProto: a string that is not UTF-8 at byte 2 in name"
    );

    // Invalid wire type inside a nested message.
    let e = canon(&cat(&[len(1, b"m"), len(3, &[0x0f])])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid wire type 7 at byte 5 in computations[0]"
    );
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = canon(&bytes);
        let _ = sniff(&bytes);
        let _ = mck_hlo::to_text(&bytes);
        let _ = mck_hlo::tree::decode(&bytes);
    }

    #[test]
    fn canonical_form_is_a_fixed_point(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(once) = canon(&bytes) {
            prop_assert_eq!(canon(&once).unwrap(), once);
        }
    }
}
