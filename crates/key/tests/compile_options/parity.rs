//! Each parity vector's input normalizes to exactly the bytes JAX 0.12.0.1 hashed.

use super::common;

use common::{VECTORS, expected, input};
use mck_key::compile_options::{NormalizeOptions, normalize};

#[test]
fn every_vector_normalizes_to_the_bytes_jax_hashed() {
    for (name, platform) in VECTORS {
        let got = normalize(&input(name), &NormalizeOptions { platform }).unwrap();
        assert!(
            got.bytes == expected(name),
            "{name}: normalized bytes differ"
        );
    }
}

#[test]
fn normalizing_twice_changes_nothing_more() {
    for (name, platform) in VECTORS {
        let opts = NormalizeOptions { platform };
        let once = normalize(&input(name), &opts).unwrap();
        let twice = normalize(&once.bytes, &opts).unwrap();
        assert_eq!(twice.bytes, once.bytes, "{name}");
        assert!(twice.changes.is_empty(), "{name}: {:?}", twice.changes);
    }
}

#[test]
fn gpu_assignments_1_and_0_share_one_normal_form() {
    let gpu = NormalizeOptions { platform: "gpu" };
    let a = normalize(&input("07a_gpu_assign_1"), &gpu).unwrap();
    let b = normalize(&input("07b_gpu_assign_0"), &gpu).unwrap();
    assert_eq!(a.bytes, b.bytes);
    let rebuilt: Vec<String> = a.changes.iter().map(ToString::to_string).collect();
    assert!(
        rebuilt.contains(
            &"executable_build_options.device_assignment: [[1]] → [[0]] (rebuilt for platform gpu)"
                .to_string()
        )
    );
    // On cpu the same input keeps its assignment, so the keys differ.
    let cpu = NormalizeOptions { platform: "cpu" };
    let a_cpu = normalize(&input("07a_gpu_assign_1"), &cpu).unwrap();
    let b_cpu = normalize(&input("07b_gpu_assign_0"), &cpu).unwrap();
    assert_ne!(a_cpu.bytes, b_cpu.bytes);
}

#[test]
fn vector_05_reports_every_reset_field() {
    let got = normalize(
        &input("05_debug_options_all_reset_fields"),
        &NormalizeOptions { platform: "cpu" },
    )
    .unwrap();
    assert_eq!(got.changes.len(), 20);
    let first = common::first_notes(&got.changes, 3);
    assert_eq!(
        first,
        [
            "executable_build_options.debug_options.xla_force_host_platform_device_count: 8 → 0",
            "executable_build_options.debug_options.xla_dump_to: \"/tmp/dumpdir\" → \"\"",
            "executable_build_options.debug_options.xla_dump_hlo_module_re: \"jit_.*\" → \"\"",
        ]
    );
}
