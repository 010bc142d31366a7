//! Normalization on inputs built here, one rule per test.

use super::common;

use common::{RESET_NUMBERS, cat, f32f, lf, vf, zero};
use mck_key::compile_options::{Msg, NormalizeOptions, OptionsError, lookup, normalize, to_text};

const CPU: NormalizeOptions<'static> = NormalizeOptions { platform: "cpu" };
const GPU: NormalizeOptions<'static> = NormalizeOptions { platform: "gpu" };

/// The 20 reset fields at zero, plus `extra` fields, in field-number order.
fn debug_with(extra: &[(u32, Vec<u8>)]) -> Vec<u8> {
    let mut fields: Vec<(u32, Vec<u8>)> = RESET_NUMBERS
        .iter()
        .map(|&(n, s)| (n, zero(n, s)))
        .collect();
    fields.extend(extra.iter().cloned());
    fields.sort_by_key(|(n, _)| *n);
    fields.into_iter().flat_map(|(_, b)| b).collect()
}

#[test]
fn absent_reset_fields_become_present_with_zero_values() {
    let input = lf(3, &lf(3, &vf(99, 1)));
    let got = normalize(&input, &CPU).unwrap();
    assert_eq!(got.bytes, lf(3, &lf(3, &debug_with(&[(99, vf(99, 1))]))));
    // The normalized message is longer than the input: 20 fields were added.
    assert!(got.bytes.len() > input.len());
    assert_eq!(got.changes.len(), 20);
    assert_eq!(
        got.changes[1].to_string(),
        "executable_build_options.debug_options.xla_dump_to: (absent) → \"\""
    );
}

#[test]
fn empty_input_gets_build_and_debug_options_and_says_so() {
    let got = normalize(&[], &CPU).unwrap();
    assert_eq!(got.bytes, lf(3, &lf(3, &debug_with(&[]))));
    let notes = common::first_notes(&got.changes, 2);
    assert!(notes[0].starts_with("executable_build_options: (absent) → {} (absent in the input;"));
    assert!(notes[1].starts_with("executable_build_options.debug_options: (absent) → {} ("));
}

#[test]
fn unknown_fields_survive_byte_for_byte_in_number_order() {
    assert!(lookup(Msg::DebugOptions, 458).is_none());
    assert!(lookup(Msg::ExecutableBuildOptions, 26).is_none());
    assert!(lookup(Msg::CompileOptions, 100).is_none());
    let debug_in = cat(&[vf(99, 1), lf(458, b"\x08\x01"), vf(9999, 7)]);
    let build = |debug: &[u8]| {
        cat(&[
            vf(1, u64::MAX),
            lf(3, debug),
            vf(4, 1),
            vf(26, 4),
            f32f(99, 0xdead_beef),
        ])
    };
    let top = |build: &[u8]| cat(&[lf(3, build), vf(5, 7), lf(100, b"newer xla")]);
    let got = normalize(&top(&build(&debug_in)), &CPU).unwrap();
    let debug_out = debug_with(&[
        (99, vf(99, 1)),
        (458, lf(458, b"\x08\x01")),
        (9999, vf(9999, 7)),
    ]);
    assert_eq!(got.bytes, top(&build(&debug_out)));

    let text = to_text(&got.bytes).unwrap();
    for line in [
        "executable_build_options.debug_options.#458: <2 bytes: 0801>\n",
        "executable_build_options.debug_options.#9999: 7\n",
        "executable_build_options.#26: 4\n",
        "executable_build_options.#99: 0xdeadbeef\n",
        "#100: <9 bytes: 6e6577657220786c61>\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

fn entry(key: &str, value: &[u8]) -> Vec<u8> {
    lf(7, &cat(&[lf(1, key.as_bytes()), lf(2, value)]))
}

#[test]
fn env_overrides_drop_excluded_keys_and_sort_the_rest() {
    let input = cat(&[
        lf(3, &lf(3, b"")),
        entry("xla_gpu_enable_x", &vf(2, 1)),
        entry("xla_dump_to", &lf(1, b"/tmp")),
        entry("a_flag", &vf(3, 3)),
        entry("xla_tpu_compiler_variant", &lf(1, b"x")),
        entry("--xla_dump_to", &vf(2, 1)),
        entry("a_flag", &vf(3, 4)),
    ]);
    let got = normalize(&input, &CPU).unwrap();
    assert_eq!(
        got.bytes,
        cat(&[
            lf(3, &lf(3, &debug_with(&[]))),
            entry("--xla_dump_to", &vf(2, 1)),
            entry("a_flag", &vf(3, 4)),
            entry("xla_gpu_enable_x", &vf(2, 1)),
        ])
    );
    let env: Vec<String> = got
        .changes
        .iter()
        .filter(|c| c.path.starts_with("env_option_overrides"))
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        env,
        [
            "env_option_overrides[\"xla_dump_to\"]: {string_field: \"/tmp\"} → (absent) (excluded flag)",
            "env_option_overrides[\"xla_tpu_compiler_variant\"]: {string_field: \"x\"} → (absent) (excluded flag)",
            "env_option_overrides: (absent) → (absent) (entries reordered by key)",
        ]
    );
    let text = to_text(&got.bytes).unwrap();
    assert!(text.ends_with(
        "env_option_overrides[\"--xla_dump_to\"].bool_field: true\n\
         env_option_overrides[\"a_flag\"].int_field: 4\n\
         env_option_overrides[\"xla_gpu_enable_x\"].bool_field: true\n"
    ));
}

fn packed(ids: &[u64]) -> Vec<u8> {
    ids.iter().flat_map(|&i| common::varint_bytes(i)).collect()
}

/// R=2, C=3 with ids [[5, 3, 1], [4, 2, 0]] (rows are replicas); the middle computation is
/// written unpacked to show that non-gpu platforms keep the bytes as they are.
fn assignment_2x3() -> Vec<u8> {
    cat(&[
        vf(1, 2),
        vf(2, 3),
        lf(3, &lf(1, &packed(&[5, 4]))),
        lf(3, &cat(&[vf(1, 3), vf(1, 2)])),
        lf(3, &lf(1, &packed(&[1, 0]))),
    ])
}

fn with_assignment(da: &[u8]) -> Vec<u8> {
    lf(
        3,
        &cat(&[lf(3, &debug_with(&[])), vf(4, 2), vf(5, 3), lf(9, da)]),
    )
}

#[test]
fn gpu_rebuilds_the_assignment_replica_major() {
    let got = normalize(&with_assignment(&assignment_2x3()), &GPU).unwrap();
    let rebuilt = cat(&[
        vf(1, 2),
        vf(2, 3),
        lf(3, &lf(1, &packed(&[0, 3]))),
        lf(3, &lf(1, &packed(&[1, 4]))),
        lf(3, &lf(1, &packed(&[2, 5]))),
    ]);
    assert_eq!(got.bytes, with_assignment(&rebuilt));
    assert_eq!(got.changes.len(), 1);
    assert_eq!(
        got.changes[0].to_string(),
        "executable_build_options.device_assignment: [[5, 3, 1], [4, 2, 0]] → [[0, 1, 2], [3, 4, 5]] (rebuilt for platform gpu)"
    );
}

#[test]
fn only_the_exact_platform_gpu_rebuilds() {
    let input = with_assignment(&assignment_2x3());
    for platform in ["cpu", "tpu", " gpu", "gpu ", "GPU", "gpu\n", "cuda", "rocm"] {
        let got = normalize(&input, &NormalizeOptions { platform }).unwrap();
        assert_eq!(
            got.bytes, input,
            "platform {platform:?} must keep the assignment"
        );
    }
}

#[test]
fn gpu_without_an_assignment_adds_none() {
    let input = lf(3, &cat(&[lf(3, &debug_with(&[])), vf(4, 1)]));
    assert_eq!(normalize(&input, &GPU).unwrap().bytes, input);
}

#[test]
fn gpu_refuses_an_assignment_xla_would_refuse() {
    // computation_count 2 but one computation_devices entry
    let bad = cat(&[vf(1, 1), vf(2, 2), lf(3, &lf(1, &packed(&[0])))]);
    let e = normalize(&with_assignment(&bad), &GPU).unwrap_err();
    assert!(matches!(e, OptionsError::BadDeviceAssignment { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("1 computation_devices for computation_count 2"),
        "{e}"
    );
    // other platforms never open it
    assert!(normalize(&with_assignment(&bad), &CPU).is_ok());
    let zero = cat(&[vf(1, 0), vf(2, 1)]);
    assert!(normalize(&with_assignment(&zero), &GPU).is_err());
}

#[test]
fn fields_are_written_in_number_order_stably() {
    let debug = lf(3, &debug_with(&[]));
    let input = cat(&[
        vf(5, 7),
        lf(3, &debug),
        lf(1, b"layout a"),
        vf(4, 1),
        lf(1, b"layout b"),
    ]);
    let got = normalize(&input, &CPU).unwrap();
    assert_eq!(
        got.bytes,
        cat(&[
            lf(1, b"layout a"),
            lf(1, b"layout b"),
            lf(3, &debug),
            vf(4, 1),
            vf(5, 7),
        ])
    );
}

#[test]
fn wrong_wire_type_on_a_reset_field_is_rejected() {
    // xla_dump_to (109) as a varint
    let input = lf(3, &lf(3, &vf(109, 1)));
    let e = normalize(&input, &CPU).unwrap_err();
    assert_eq!(
        e.to_string(),
        "not a CompileOptionsProto: wire type 0 where 2 is expected at byte 4 in executable_build_options.debug_options.xla_dump_to"
    );
}
