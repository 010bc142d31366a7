//! Hostile and broken bytes: always an error value with a place, never a panic or a hang.

use super::common;

use common::{VECTORS, input, lf, varint_bytes};
use mck_key::compile_options::{
    MAX_GROUP_DEPTH, NormalizeOptions, OptionsError, diff, normalize, to_text,
};

const GPU: NormalizeOptions<'static> = NormalizeOptions { platform: "gpu" };

/// Runs every entry point; returns whether normalize accepted the bytes.
fn exercise(bytes: &[u8]) -> bool {
    let ok = normalize(bytes, &GPU).is_ok();
    let _ = normalize(bytes, &NormalizeOptions { platform: "cpu" });
    let _ = to_text(bytes);
    let _ = diff(bytes, bytes);
    ok
}

#[test]
fn every_truncation_of_a_real_file_is_an_error() {
    let full = input("07a_gpu_assign_1");
    // The prefixes that end between top-level fields are complete messages: the empty one and
    // the one that stops after executable_build_options (1139 bytes); all others are cut.
    let whole_top_level = [0, 3 + 1136];
    for len in 0..full.len() {
        let accepted = exercise(&full[..len]);
        assert_eq!(
            accepted,
            whole_top_level.contains(&len),
            "prefix of {len} bytes"
        );
    }
    let e = normalize(&full[..100], &GPU).unwrap_err();
    assert!(e.to_string().contains("in executable_build_options"), "{e}");
}

#[test]
fn truncation_errors_name_the_place() {
    let full = input("01_cpu_defaults");
    // the last byte belongs to profile_version's ten-byte varint (-1)
    assert_eq!(
        normalize(&full[..full.len() - 1], &GPU)
            .unwrap_err()
            .to_string(),
        "truncated varint at byte 1140 in profile_version"
    );
    // a key cut short inside debug_options (0xf8 needs a second byte)
    assert_eq!(
        normalize(&lf(3, &lf(3, &[0xf8])), &GPU)
            .unwrap_err()
            .to_string(),
        "truncated key at byte 4 in executable_build_options.debug_options"
    );
}

/// xorshift64*: a fixed, dependency-free stream of test bytes.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..3000 {
        let len = (rng.next() % 200) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        exercise(&bytes);
    }
}

#[test]
fn mutated_real_files_never_panic() {
    let mut rng = Rng(42);
    for (name, _) in VECTORS {
        let original = input(name);
        for _ in 0..300 {
            let mut bytes = original.clone();
            for _ in 0..1 + rng.next() % 4 {
                let i = (rng.next() % bytes.len() as u64) as usize;
                bytes[i] = rng.next() as u8;
            }
            exercise(&bytes);
        }
    }
}

#[test]
fn a_length_of_two_to_the_sixty_is_refused_before_allocating() {
    let mut bytes = vec![0x1a];
    bytes.extend(varint_bytes(1 << 60));
    bytes.extend_from_slice(b"tiny");
    let e = normalize(&bytes, &GPU).unwrap_err();
    assert_eq!(
        e,
        OptionsError::LengthPastEnd {
            length: 1 << 60,
            remaining: 4,
            offset: 1,
            path: "executable_build_options".into(),
        }
    );
    // the same deep inside debug_options, in an unknown field
    let mut inner = varint_bytes(9999 << 3 | 2);
    inner.extend(varint_bytes(1 << 60));
    let e = normalize(&lf(3, &lf(3, &inner)), &GPU).unwrap_err();
    assert_eq!(
        e.to_string(),
        "length 1152921504606846976 at byte 7 in executable_build_options.debug_options.#9999 runs past the end of the message (0 bytes remain)"
    );
}

#[test]
fn deeply_nested_groups_are_refused() {
    // field 9999 as a group, nested 10 000 deep, inside debug_options
    let start = varint_bytes(9999 << 3 | 3);
    let end = varint_bytes(9999 << 3 | 4);
    let depth = 10_000;
    let mut nested = start.repeat(depth);
    nested.extend(end.repeat(depth));
    let e = normalize(&lf(3, &lf(3, &nested)), &GPU).unwrap_err();
    assert!(
        matches!(
            e,
            OptionsError::TooDeep {
                limit: MAX_GROUP_DEPTH,
                ..
            }
        ),
        "{e}"
    );
    // within the limit the group survives untouched
    let mut ok = start.repeat(3);
    ok.extend(end.repeat(3));
    let got = normalize(&lf(3, &lf(3, &ok)), &GPU).unwrap();
    assert!(got.bytes.windows(ok.len()).any(|w| w == ok.as_slice()));
}

#[test]
fn deeply_nested_messages_in_unknown_fields_are_not_opened() {
    // 10 000 levels of field 1 inside an unknown top-level field: kept as opaque bytes.
    let mut nested = Vec::new();
    for _ in 0..10_000 {
        nested = lf(1, &nested);
    }
    let input = lf(100, &nested);
    let got = normalize(&input, &GPU).unwrap();
    assert!(got.bytes.ends_with(&input));
    assert!(to_text(&got.bytes).unwrap().contains("#100: <"));
}

#[test]
fn other_malformed_keys() {
    // field number 0
    assert!(matches!(
        normalize(&[0x00], &GPU),
        Err(OptionsError::InvalidFieldNumber {
            number: 0,
            offset: 0,
            ..
        })
    ));
    // wire type 6
    assert!(matches!(
        normalize(&[0x0e], &GPU),
        Err(OptionsError::InvalidWireType { wire_type: 6, .. })
    ));
    // eleven-byte varint
    let mut long = vec![0x28];
    long.extend([0xff; 10]);
    long.push(0x01);
    assert!(matches!(
        normalize(&long, &GPU),
        Err(OptionsError::BadVarint { offset: 1, .. })
    ));
    // a stray end-group key
    assert!(matches!(
        to_text(&[0x0c]),
        Err(OptionsError::UnmatchedEndGroup { .. })
    ));
}
