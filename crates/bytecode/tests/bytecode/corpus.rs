//! Stripping the corpus kernels: location-only pairs become identical, the
//! already-stripped kernel stays as it is, and stripping is deterministic and
//! idempotent.

use super::common;

use common::*;
use mck_bytecode::{StripOptions, StripOutput, inspect, strip_locations, strip_locations_with};

fn stripped(name: &str) -> Vec<u8> {
    stripped_bytes(&data(name), name)
}

fn stripped_bytes(payload: &[u8], name: &str) -> Vec<u8> {
    let report = strip_locations(payload).unwrap_or_else(|e| panic!("{name}: {e}"));
    match report.output {
        StripOutput::Stripped(bytes) => bytes,
        StripOutput::Unchanged { reason } => {
            panic!("{name} unchanged: {reason}\nnotes: {:#?}", report.notes)
        }
    }
}

#[test]
fn triton_test_data_matches_the_ir_attribute() {
    for v in ["a", "b"] {
        let text =
            std::fs::read_to_string(data_path(&format!("triton_add.{v}.ir_attr.txt"))).unwrap();
        assert_eq!(
            extract_ir_attr(&text),
            data(&format!("triton_add.{v}.mlirbc"))
        );
    }
}

#[test]
fn mosaic_pair_is_identical_after_stripping() {
    let a = stripped("tpu_pallas_add.nounzip.a.kernel0.body.mlirbc");
    let b = stripped("tpu_pallas_add.nounzip.b.kernel0.body.mlirbc");
    assert_eq!(a, b);
    assert_ne!(a, data("tpu_pallas_add.nounzip.a.kernel0.body.mlirbc"));
}

#[test]
fn triton_pair_is_identical_after_stripping() {
    let a = stripped("triton_add.a.mlirbc");
    let b = stripped("triton_add.b.mlirbc");
    assert_eq!(a, b);
    assert_ne!(a, data("triton_add.a.mlirbc"));
}

#[test]
fn already_stripped_kernel_is_left_as_it_is() {
    for name in [
        "tpu_pallas_add.a.kernel0.body.mlirbc",
        "tpu_pallas_add.b.kernel0.body.mlirbc",
    ] {
        let report = strip_locations(&data(name)).unwrap();
        assert_eq!(report.output, StripOutput::Stripped(data(name)), "{name}");
        assert_eq!(report.locations_replaced, 0);
        assert_eq!(report.strings_emptied, 0);
    }
}

#[test]
fn stripping_is_idempotent_and_deterministic() {
    for name in PAYLOADS {
        let once = stripped(name);
        assert_eq!(stripped(name), once, "{name}: not deterministic");
        let twice = stripped_bytes(&once, name);
        assert_eq!(twice, once, "{name}: not idempotent");
    }
}

#[test]
fn stripped_kernels_keep_no_location_data() {
    for name in [
        "tpu_pallas_add.nounzip.a.kernel0.body.mlirbc",
        "triton_add.a.mlirbc",
    ] {
        let out = stripped(name);
        for needle in [
            &b"/opt/ml/jaxproj"[..],
            b"pk.py",
            b"get:",
            b"swap:",
            b"mul:",
        ] {
            assert!(
                find(&out, needle).is_none(),
                "{name} still holds {}",
                String::from_utf8_lossy(needle)
            );
        }
        // Semantic names stay.
        assert!(find(&out, b"add_kernel").is_some());
    }
}

#[test]
fn report_describes_the_payload() {
    let report = strip_locations(&data("triton_add.a.mlirbc")).unwrap();
    assert_eq!(report.version, 6);
    assert_eq!(report.producer, "MLIR24.0.0git");
    assert!(report.locations_replaced > 0);
    assert!(report.strings_emptied > 0);
    // Every property blob is decoded by the table: no undecodable bytes left.
    assert_eq!(report.blobs_decoded, 11);
    assert!(
        report.blobs_undecoded.is_empty(),
        "{:?}",
        report.blobs_undecoded
    );
    assert!(
        !report.notes.iter().any(|n| n.contains("writer invariant")),
        "{:#?}",
        report.notes
    );
    // Without the table, the writer invariant proves the same.
    let options = StripOptions {
        use_property_table: false,
        ..StripOptions::default()
    };
    let weak = strip_locations_with(&data("triton_add.a.mlirbc"), &options).unwrap();
    assert_eq!(weak.blobs_decoded, 0);
    assert_eq!(weak.blobs_undecoded.len(), 11);
    assert!(
        weak.notes.iter().any(|n| n.contains("writer invariant")),
        "{:#?}",
        weak.notes
    );
    // Undecodable blobs may hold indices, so that result keeps them in place
    // (the table's result is renumbered canonically): stripped, but other bytes.
    assert!(
        weak.notes
            .iter()
            .any(|n| n.starts_with("indices kept in place")),
        "{:#?}",
        weak.notes
    );
    assert!(
        matches!(weak.output, StripOutput::Stripped(ref w) if StripOutput::Stripped(w.clone()) != report.output)
    );
    let path = find(&data("triton_add.a.mlirbc"), b"/opt/ml").unwrap();
    assert!(report.debug.contains(path));
    let mosaic = strip_locations(&data("tpu_pallas_add.nounzip.a.kernel0.body.mlirbc")).unwrap();
    assert_eq!(mosaic.version, 0);
    assert!(!mosaic.debug.location_scalars.is_empty());
}

#[test]
fn inspect_reads_the_section_table() {
    let h = inspect(&data("triton_add.a.mlirbc")).unwrap();
    assert_eq!(h.version, 6);
    assert_eq!(h.producer, "MLIR24.0.0git");
    let ids: Vec<u8> = h.sections.iter().map(|s| s.id).collect();
    assert_eq!(ids, [1, 3, 2, 4, 6, 5, 0, 8]);
    assert!(h.sections.iter().all(|s| !s.aligned));
    let last = h.sections.last().unwrap();
    assert_eq!(last.offset + last.len, data("triton_add.a.mlirbc").len());
    let m = inspect(&data("tpu_pallas_add.nounzip.a.kernel0.body.mlirbc")).unwrap();
    assert_eq!(m.version, 0);
}

/// Writes the stripped corpus to `$STRIP_OUT_DIR` when set (to inspect them by hand).
#[test]
#[ignore = "a data writer, not a check: STRIP_OUT_DIR=DIR cargo test -- --ignored"]
fn write_outputs_when_asked() {
    let Ok(dir) = std::env::var("STRIP_OUT_DIR") else {
        return;
    };
    std::fs::create_dir_all(&dir).unwrap();
    for name in PAYLOADS {
        std::fs::write(std::path::Path::new(&dir).join(name), stripped(name)).unwrap();
    }
}

#[test]
fn without_table_and_writer_invariant_triton_is_refused_with_a_reason() {
    let options = StripOptions {
        use_writer_invariant: false,
        use_property_table: false,
    };
    let report = strip_locations_with(&data("triton_add.a.mlirbc"), &options).unwrap();
    match report.output {
        StripOutput::Unchanged { reason } => {
            assert!(reason.contains("file name"), "{reason}");
            assert!(reason.contains("property blob"), "{reason}");
        }
        StripOutput::Stripped(_) => panic!("expected a refusal"),
    }
    // With the table, the writer invariant is not needed.
    let table_only = StripOptions {
        use_writer_invariant: false,
        ..StripOptions::default()
    };
    let report = strip_locations_with(&data("triton_add.a.mlirbc"), &table_only).unwrap();
    assert_eq!(
        report.output,
        strip_locations(&data("triton_add.a.mlirbc"))
            .unwrap()
            .output
    );
    // Mosaic has no undecodable bytes: the options change nothing.
    let m = data("tpu_pallas_add.nounzip.a.kernel0.body.mlirbc");
    let weak = strip_locations_with(&m, &options).unwrap().output;
    assert_eq!(weak, strip_locations(&m).unwrap().output);
}
