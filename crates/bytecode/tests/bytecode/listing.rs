//! The dialect-free operation listing on real kernels: relocated twins list
//! the same, and a changed constant is named with its value (its agreement
//! with what jaxlib's own MLIR reads is checked in `src/properties/oracle.rs`).

use mck_bytecode::{StripOutput, first_difference, ops, strip_locations};

use super::common::kernel_manifest;

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

/// The first difference between the `old` and `new` variants of a kernel.
fn first_change(backend: &str, old: &str, new: &str) -> (String, Vec<(String, String, String)>) {
    let a = ops(&relocated(backend, old, "a")).expect(old);
    let b = ops(&relocated(backend, new, "a")).expect(new);
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
        first_change("triton", "affine-c2", "affine-c3"),
        ("arith.constant #35".into(), value("property value"))
    );
    // Mosaic's serialization (v0, no properties) keeps it in the attribute dictionary,
    // under its own dialect names.
    assert_eq!(
        first_change("mosaic", "affine-c2", "affine-c3"),
        (
            "stable_mosaic.arith.constant #8".into(),
            value("attribute value")
        )
    );
}

#[test]
fn a_changed_block_size_is_named_with_its_integer_values() {
    assert_eq!(
        first_change("triton", "grid-b16", "grid-b32"),
        (
            "arith.constant #3".into(),
            vec![(
                "property value".into(),
                "16 : i32".into(),
                "32 : i32".into()
            )]
        )
    );
}
