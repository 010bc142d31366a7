//! The dialect-free operation listing on real kernels: it agrees with what
//! jaxlib's own MLIR reads (the Triton sweep's `ops.tsv`), relocated twins
//! list the same, and a changed constant is named with its value.

use std::collections::BTreeMap;
use std::path::PathBuf;

use mck_bytecode::{OpView, StripOutput, first_difference, ops, strip_locations};

use super::common::kernel_manifest;

fn sweep_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/kernels/triton-sweep")
}

/// `op(properties)` → count, for the operations whose properties decode to fields.
fn ops_with_properties(listing: &[OpView]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for op in listing {
        let mut fields: Vec<&str> = op.properties.iter().map(|(f, _)| f.as_str()).collect();
        if fields.is_empty() {
            continue;
        }
        fields.sort_unstable();
        *out.entry(format!("{}({})", op.name, fields.join(",")))
            .or_default() += 1;
    }
    out
}

#[test]
fn the_listing_of_sweep_kernels_names_the_ops_jaxlib_reads() {
    let oracle = std::fs::read_to_string(sweep_dir().join("ops.tsv")).expect("ops.tsv");
    let mut kernels = 0;
    for line in oracle.lines() {
        let (file, expected) = line.split_once('\t').expect("two columns");
        // Segment sizes are not attributes: the listing shows the operands instead.
        let expected: BTreeMap<String, usize> = expected
            .split(' ')
            .map(|op| match op.rsplit_once(")*") {
                Some((op, n)) => (format!("{op})"), n.parse().expect("count")),
                None => (op.to_string(), 1),
            })
            .map(|(op, n)| (op.replace(",operandSegmentSizes", ""), n))
            .collect();
        let payload = std::fs::read(sweep_dir().join(file)).expect(file);
        let listing = ops(&payload).expect(file);
        assert_eq!(ops_with_properties(&listing), expected, "{file}");
        let validated = mck_bytecode::validate(&payload).expect(file);
        assert_eq!(listing.len(), validated.operations, "{file}");
        assert!(
            listing.iter().enumerate().all(|(i, op)| op.position == i),
            "{file}: positions in pre-order"
        );
        kernels += 1;
    }
    assert!(kernels >= 20, "{kernels} kernels checked");
}

fn stripped(payload: &[u8]) -> Vec<u8> {
    match strip_locations(payload).expect("strip").output {
        StripOutput::Stripped(bytes) => bytes,
        StripOutput::Unchanged { reason } => panic!("not stripped: {reason}"),
    }
}

/// The relocation kernel of `backend` and `variant` at `site`, as written.
fn original(backend: &str, variant: &str, site: &str) -> Vec<u8> {
    let (_, payload) = kernel_manifest("relocations")
        .into_iter()
        .find(|(cols, _)| cols[1] == backend && cols[2] == variant && cols[3] == site)
        .unwrap_or_else(|| panic!("{backend} {variant} {site} in the manifest"));
    payload
}

/// The relocation kernel of `backend` and `variant` at `site`, stripped.
fn relocated(backend: &str, variant: &str, site: &str) -> Vec<u8> {
    stripped(&original(backend, variant, site))
}

#[test]
fn relocated_twins_list_the_same_even_with_their_locations() {
    for backend in ["triton", "mosaic"] {
        for site in ["b", "c", "f"] {
            let a = ops(&original(backend, "affine-c2", "a")).expect("a");
            let b = ops(&original(backend, "affine-c2", site)).expect(site);
            assert_eq!(first_difference(&a, &b), None, "{backend} a vs {site}");
        }
    }
}

/// The first difference between the affine kernels with constant 2 and 3.
fn constant_change(backend: &str) -> (String, Vec<(String, String, String)>) {
    let a = ops(&relocated(backend, "affine-c2", "a")).expect("c2");
    let b = ops(&relocated(backend, "affine-c3", "a")).expect("c3");
    let d = first_difference(&a, &b).expect("a difference");
    let old = d.old.expect("an old operation");
    let changes = d
        .changes
        .into_iter()
        .map(|c| (c.aspect, c.old, c.new))
        .collect();
    (format!("{} #{}", old.name, d.position), changes)
}

#[test]
fn a_changed_constant_is_named_with_its_values() {
    let value = |aspect: &str| vec![(aspect.to_string(), "2.0 : f32".into(), "3.0 : f32".into())];
    // Triton's arith.constant holds its value as a property (bytecode v6).
    assert_eq!(
        constant_change("triton"),
        ("arith.constant #35".into(), value("property value"))
    );
    // Mosaic's serialization (v0, no properties) keeps it in the attribute dictionary,
    // under its own dialect names.
    assert_eq!(
        constant_change("mosaic"),
        (
            "stable_mosaic.arith.constant #8".into(),
            value("attribute value")
        )
    );
}
