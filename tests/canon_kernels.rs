//! Embedded kernels through the whole canonicalizer: relocated kernel pairs
//! share canonical bytes, kernels that differ in code never do.

use crate::common::{self, corpus, read};
use crate::kernel_helpers::{canonical, edit_mosaic_body};
use mlir_cache_key::canon::KernelAction;
use mlir_cache_key::canon::kernels::StripMethod;
use mlir_cache_key::mlir::{new_context, parse_module};

fn file(relative: &str) -> Vec<u8> {
    read(&corpus(relative))
}

/// Asserts that corpus files `a` and `b` (one module, its kernel relocated) share canonical
/// bytes, the kernel stripped through its container.
fn assert_relocated_pair_shares_bytes(a: &str, b: &str, message: &str) {
    let (a, actions, _) = canonical(&file(a));
    let (b, _, _) = canonical(&file(b));
    assert_eq!(a, b, "{message}");
    assert_eq!(
        actions,
        [KernelAction::Stripped {
            method: StripMethod::Container
        }]
    );
}

#[test]
fn relocated_mosaic_in_body_kernels_share_bytes() {
    assert_relocated_pair_shares_bytes(
        "tpu/tpu_pallas_add.nounzip.a.generic.mlir",
        "tpu/tpu_pallas_add.nounzip.b.generic.mlir",
        "",
    );
}

#[test]
fn relocated_triton_kernels_share_bytes() {
    assert_relocated_pair_shares_bytes(
        "gpu/cuda_pallas_triton_add.a.generic.mlir",
        "gpu/cuda_pallas_triton_add.b.generic.mlir",
        "JAX misses this pair; we must not",
    );
}

fn replace_once(bytes: &mut [u8], from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let at = bytes
        .windows(from.len())
        .position(|w| w == from)
        .expect("pattern present");
    bytes[at..at + from.len()].copy_from_slice(to);
}

/// Asserts that each `(from, to)` replacement, made in corpus file `relative` by `edit`,
/// changes its canonical bytes.
fn assert_each_edit_changes_bytes(
    relative: &str,
    edits: [(&[u8], &[u8]); 2],
    edit: impl Fn(&[u8], &[u8], &[u8]) -> Vec<u8>,
) {
    let original = file(relative);
    let (base, _, _) = canonical(&original);
    for (from, to) in edits {
        let (digest, _, _) = canonical(&edit(&original, from, to));
        assert_ne!(
            digest,
            base,
            "{} → {}",
            String::from_utf8_lossy(from),
            String::from_utf8_lossy(to)
        );
    }
}

#[test]
fn mosaic_kernels_that_differ_in_code_never_share_bytes() {
    // Another operation (addf → subf), and another kernel name.
    assert_each_edit_changes_bytes(
        "tpu/tpu_pallas_add.nounzip.a.generic.mlir",
        [
            (b"arith.addf", b"arith.subf"),
            (b"add_kernel", b"sub_kernel"),
        ],
        |original, from, to| edit_mosaic_body(original, |body| replace_once(body, from, to)),
    );
}

#[test]
fn triton_kernels_that_differ_in_code_never_share_bytes() {
    assert_each_edit_changes_bytes(
        "gpu/cuda_pallas_triton_add.a.generic.mlir",
        [
            (b"mulf\\00", b"addf\\00"),
            (b"num_warps = 4", b"num_warps = 8"),
        ],
        |original, from, to| {
            let mut edited = original.to_vec();
            replace_once(&mut edited, from, to);
            edited
        },
    );
}

#[test]
fn mosaic_kernel_location_edits_never_matter() {
    let original = file("tpu/tpu_pallas_add.nounzip.a.generic.mlir");
    let (base, _, _) = canonical(&original);
    // Rename the kernel's source file (a location-only string) in place.
    let edited = edit_mosaic_body(&original, |body| {
        replace_once(body, b"kernels_a/pk.py", b"kernels_z/qq.py")
    });
    assert_eq!(canonical(&edited).0, base);
}

#[test]
fn truncated_kernel_is_left_as_is_with_a_reason() {
    let original = file("tpu/tpu_pallas_add.nounzip.a.generic.mlir");
    let edited = edit_mosaic_body(&original, |body| body.truncate(body.len() / 2));
    let (digest, actions, _) = canonical(&edited);
    assert_ne!(digest, canonical(&original).0);
    let [KernelAction::LeftAsIs { reason }] = actions.as_slice() else {
        panic!("expected left as is: {actions:?}")
    };
    assert!(reason.contains("malformed bytecode"), "{reason}");
}

#[test]
fn jax_bytecode_with_registered_stablehlo_is_refused_not_misread() {
    let context = new_context();
    let bytes = read(&common::data("parity/01_cpu_defaults/computation.mlirbc"));
    let error = parse_module(&context, &bytes, "jax.mlirbc").expect_err("must refuse");
    let text = error.to_string();
    assert!(
        text.contains("registered") && text.contains("stablehlo"),
        "{text}"
    );
    assert!(text.contains("generic MLIR text"), "{text}");
}
