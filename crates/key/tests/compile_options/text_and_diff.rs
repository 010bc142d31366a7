//! The text view and the field diff on parity data, as snapshot assertions.

use super::common;

use common::{data_path, expected, input};
use mck_key::compile_options::{NormalizeOptions, diff, normalize, to_text};

/// Compares with a stored snapshot; `UPDATE_SNAPSHOTS=1 cargo test` rewrites it.
fn assert_snapshot(file: &str, actual: &str) {
    let path = data_path(file);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    if stored != actual {
        panic!("snapshot {file} differs; got:\n{actual}");
    }
}

fn lines(diffs: &[mck_key::compile_options::FieldDiff]) -> Vec<String> {
    diffs.iter().map(ToString::to_string).collect()
}

#[test]
fn text_of_the_normalized_cpu_defaults() {
    let text = to_text(&expected("01_cpu_defaults")).unwrap();
    assert_snapshot("snapshots/01_cpu_defaults.normalized.txt", &text);
    assert_eq!(text.lines().count(), 321);
    assert!(
        !text.contains('#'),
        "every field of jaxlib 0.12.0.1 has a name"
    );
    for line in [
        "executable_build_options.debug_options.xla_dump_to: \"\"",
        "executable_build_options.debug_options.xla_gpu_cuda_data_dir: \"\"",
        "executable_build_options.device_assignment.computation_devices[0].replica_device_ids[0]: 0",
        "executable_build_options.debug_options.xla_gpu_analytical_latency_estimator_options[\"rtt_us\"]: \"-1\"",
        "profile_version: -1",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line}");
    }
}

#[test]
fn text_is_the_same_whatever_the_field_order() {
    // two top-level fields swapped: same options, same text
    let bytes = input("01_cpu_defaults");
    let split = bytes.len() - 11; // profile_version is the last 11 bytes
    let swapped = [&bytes[split..], &bytes[..split]].concat();
    assert_ne!(swapped, bytes);
    assert_eq!(to_text(&swapped).unwrap(), to_text(&bytes).unwrap());
}

#[test]
fn diff_cpu_defaults_against_all_reset_fields_set() {
    let d = diff(
        &input("01_cpu_defaults"),
        &input("05_debug_options_all_reset_fields"),
    )
    .unwrap();
    let p = "executable_build_options.debug_options";
    let expected: Vec<String> = [
        "xla_gpu_cuda_data_dir: \"./cuda_sdk_lib\" → \"/usr/local/cuda-12.8\"",
        "xla_force_host_platform_device_count: 1 → 8",
        "xla_dump_to: (absent) → \"/tmp/dumpdir\"",
        "xla_dump_hlo_module_re: (absent) → \"jit_.*\"",
        "xla_dump_hlo_pass_re: (absent) → \".*\"",
        "xla_dump_hlo_as_text: (absent) → true",
        "xla_dump_hlo_as_proto: (absent) → true",
        "xla_dump_hlo_as_dot: (absent) → true",
        "xla_dump_hlo_as_url: (absent) → true",
        "xla_dump_hlo_as_html: false → true",
        "xla_dump_hlo_snapshots: (absent) → true",
        "xla_dump_max_hlo_modules: -1 → 5",
        "xla_dump_module_metadata: false → true",
        "xla_dump_fusion_visualization: false → true",
        "xla_dump_compress_protos: (absent) → true",
        "xla_dump_disable_metadata: (absent) → true",
        "xla_dump_hlo_pipeline_re: (absent) → \"cpu.*\"",
        "xla_gpu_per_fusion_autotune_cache_dir: \"\" → \"/cache/xla_gpu_per_fusion_autotune_cache_dir\"",
        "xla_gpu_experimental_autotune_cache_mode: 1 → 2",
    ]
    .iter()
    .map(|l| format!("{p}.{l}"))
    .collect();
    assert_eq!(lines(&d), expected);
    // after normalization nothing is left to explain
    let cpu = NormalizeOptions { platform: "cpu" };
    let a = normalize(&input("01_cpu_defaults"), &cpu).unwrap().bytes;
    let b = normalize(&input("05_debug_options_all_reset_fields"), &cpu)
        .unwrap()
        .bytes;
    assert!(diff(&a, &b).unwrap().is_empty());
}

#[test]
fn diff_gpu_assignments_before_and_after_normalization() {
    let a = input("07a_gpu_assign_1");
    let b = input("07b_gpu_assign_0");
    assert_eq!(
        lines(&diff(&a, &b).unwrap()),
        [
            "executable_build_options.device_assignment.computation_devices[0].replica_device_ids[0]: 1 → 0"
        ]
    );
    let gpu = NormalizeOptions { platform: "gpu" };
    let na = normalize(&a, &gpu).unwrap().bytes;
    let nb = normalize(&b, &gpu).unwrap().bytes;
    assert!(diff(&na, &nb).unwrap().is_empty());
}

#[test]
fn diff_one_partition_against_two() {
    let d = diff(
        &expected("01_cpu_defaults"),
        &expected("09_fallback_device_kinds"),
    )
    .unwrap();
    assert_eq!(
        lines(&d),
        [
            "executable_build_options.num_partitions: 1 → 2",
            "executable_build_options.device_assignment.computation_count: 1 → 2",
            "executable_build_options.device_assignment.computation_devices[1].replica_device_ids[0]: (absent) → 1",
        ]
    );
}
