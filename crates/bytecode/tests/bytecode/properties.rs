//! Property tests: edits of debug info never change the stripped output; edits
//! of anything else always do (or the payload is left alone / rejected); no
//! input makes the stripper panic.

use super::common;

use common::*;
use mck_bytecode::{StripOutput, inspect, strip_locations, varint};
use proptest::prelude::*;

const WITH_LOCATIONS: [&str; 4] = [
    "tpu_pallas_add.nounzip.a.kernel0.body.mlirbc",
    "tpu_pallas_add.nounzip.b.kernel0.body.mlirbc",
    "triton_add.a.mlirbc",
    "triton_add.b.mlirbc",
];

fn output(payload: &[u8]) -> Option<Vec<u8>> {
    strip_locations(payload).ok()?.output.stripped()
}

/// A value whose shortest varint encoding is `len` bytes long, from `seed`.
fn value_of_len(len: usize, seed: u64) -> u64 {
    let bits = 7 * len as u32;
    let low = if len == 1 { 0 } else { 1u64 << (bits - 7) };
    let span = (1u64 << bits) - low;
    low + seed % span
}

/// Replaces string `index` of the string section by `content`.
fn rename_string(payload: &[u8], index: usize, content: &[u8]) -> Vec<u8> {
    let h = inspect(payload).unwrap();
    let s = h.sections.iter().find(|s| s.id == 0).unwrap();
    let data = &payload[s.range()];
    let (count, mut pos) = varint::decode(data).unwrap();
    let mut sizes = Vec::new();
    for _ in 0..count {
        let (size, len) = varint::decode(&data[pos..]).unwrap();
        sizes.push(size as usize);
        pos += len;
    }
    sizes.reverse();
    let mut strings = Vec::new();
    for size in sizes {
        strings.push(data[pos..pos + size].to_vec());
        pos += size;
    }
    strings[index] = content.iter().copied().chain([0]).collect();
    let mut new = v(count);
    for st in strings.iter().rev() {
        new.extend(v(st.len() as u64));
    }
    for st in &strings {
        new.extend_from_slice(st);
    }
    let mut out = payload[..s.header_offset].to_vec();
    out.push(0);
    out.extend(v(new.len() as u64));
    out.extend(new);
    out.extend_from_slice(&payload[s.range().end..]);
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn editing_line_and_column_never_changes_the_output(which in 0usize..4, pick in any::<usize>(), seed in any::<u64>()) {
        let payload = data(WITH_LOCATIONS[which]);
        let report = strip_locations(&payload).unwrap();
        let StripOutput::Stripped(base) = report.output else { panic!("unchanged") };
        let scalars = &report.debug.location_scalars;
        let r = scalars[pick % scalars.len()].clone();
        let new = varint::encoded(value_of_len(r.len(), seed));
        prop_assert_eq!(new.len(), r.len());
        let mut edited = payload.clone();
        edited[r.clone()].copy_from_slice(&new);
        prop_assert_eq!(output(&edited), Some(base));
    }

    #[test]
    fn renaming_a_location_only_string_never_changes_the_output(
        which in 0usize..4,
        pick in any::<usize>(),
        content in proptest::collection::vec(1u8..=255, 0..80),
    ) {
        let payload = data(WITH_LOCATIONS[which]);
        let report = strip_locations(&payload).unwrap();
        let StripOutput::Stripped(base) = report.output else { panic!("unchanged") };
        let emptied = &report.debug.strings_emptied;
        let (index, _) = emptied[pick % emptied.len()].clone();
        let edited = rename_string(&payload, index, &content);
        prop_assert_eq!(output(&edited), Some(base));
    }

    #[test]
    fn editing_anything_else_changes_the_output_or_refuses(which in 0usize..6, pick in any::<usize>(), byte in any::<u8>()) {
        let payload = data(PAYLOADS[which]);
        let report = strip_locations(&payload).unwrap();
        let StripOutput::Stripped(base) = report.output else { panic!("unchanged") };
        let offsets: Vec<usize> = (0..payload.len()).filter(|&o| !report.debug.contains(o)).collect();
        let offset = offsets[pick % offsets.len()];
        prop_assume!(payload[offset] != byte);
        let mut edited = payload.clone();
        edited[offset] = byte;
        if let Some(out) = output(&edited) {
            prop_assert_ne!(out, base, "byte {:#x} set to {:#04x}", offset, byte);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..200), version in 0u8..8) {
        let mut payload = b"ML\xefR".to_vec();
        payload.push(version << 1 | 1);
        payload.extend_from_slice(b"p\0");
        payload.extend(tail);
        let _ = strip_locations(&payload);
    }

    #[test]
    fn corrupting_a_corpus_payload_never_panics(which in 0usize..6, edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let mut payload = data(PAYLOADS[which]);
        let n = payload.len();
        for (at, b) in edits {
            payload[at % n] = b;
        }
        let stripped = strip_locations(&payload).ok().map(|r| r.output);
        if let Some(StripOutput::Stripped(out)) = stripped {
            prop_assert_eq!(output(&out), Some(out.clone()), "not idempotent");
        }
    }
}
