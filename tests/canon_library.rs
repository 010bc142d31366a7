//! The canonicalizer through the library API, on the real JAX corpus.

use crate::common::{corpus, read};
use melior::Context;
use melior::ir::Module;
use mlir_cache_key::canon::{CanonicalModule, KernelAction, KernelMode, Options, canonicalize};
use mlir_cache_key::mlir::{new_context, parse_module};
use sha2::{Digest, Sha256};

fn digest_of(relative: &str, options: &Options) -> String {
    let context = new_context();
    let path = corpus(relative);
    let mut module =
        parse_module(&context, &read(&path), &path.display().to_string()).expect("parse");
    hex::encode(Sha256::digest(
        canonicalize(&mut module, options).expect("canonicalize"),
    ))
}

fn default_digest(relative: &str) -> String {
    digest_of(relative, &Options::default())
}

/// Asserts that corpus files `a` and `b` canonicalize apart under `options`.
fn assert_apart_under(options: &Options, a: &str, b: &str) {
    assert_ne!(digest_of(a, options), digest_of(b, options));
}

/// The corpus's Pallas TPU module, parsed in `context`.
fn tpu_module(context: &Context) -> Module<'_> {
    let path = corpus("tpu/tpu_pallas_add.a.generic.mlir");
    parse_module(context, &read(&path), "tpu").expect("parse")
}

#[test]
fn location_only_pairs_share_canonical_bytes() {
    for pair in [
        "cpu/mlp",
        "cpu/conv",
        "cpu/scan_loop",
        "gpu/cuda_mlp",
        "tpu/tpu_pallas_add",
    ] {
        assert_eq!(
            default_digest(&format!("{pair}.a.generic.mlir")),
            default_digest(&format!("{pair}.b.generic.mlir")),
            "{pair}: a and b differ only in locations"
        );
    }
}

#[test]
fn another_batch_size_is_another_program() {
    assert_ne!(
        default_digest("cpu/mlp.a.generic.mlir"),
        default_digest("cpu/mlp.a_batch5.generic.mlir")
    );
}

#[test]
fn other_argument_values_are_the_same_program() {
    assert_eq!(
        default_digest("cpu/mlp.a.generic.mlir"),
        default_digest("cpu/mlp.a_otherweights.generic.mlir")
    );
}

#[test]
fn keep_locations_keeps_the_pairs_apart() {
    let keep = Options {
        keep_locations: true,
        ..Options::default()
    };
    assert_apart_under(&keep, "cpu/mlp.a.generic.mlir", "cpu/mlp.b.generic.mlir");
}

#[test]
fn custom_partitioning_pointer_is_neutralized_only_on_request() {
    let a = "cpu/custom_partitioning.a.generic.mlir";
    let b = "cpu/custom_partitioning.a_otherpointer.generic.mlir";
    assert_ne!(default_digest(a), default_digest(b));
    let ignore = Options {
        ignore_custom_partitioning: true,
        ..Options::default()
    };
    assert_eq!(digest_of(a, &ignore), digest_of(b, &ignore));
    assert_ne!(digest_of(a, &ignore), default_digest(a));
}

#[test]
fn canonicalize_does_not_mutate_the_callers_module() {
    let context = new_context();
    let mut module = tpu_module(&context);
    let before = module.as_operation().to_string();
    let options = Options {
        ignore_custom_partitioning: true,
        ..Options::default()
    };
    let first = canonicalize(&mut module, &options).expect("canonicalize");
    assert_eq!(module.as_operation().to_string(), before);
    assert_eq!(canonicalize(&mut module, &options).expect("again"), first);
}

#[test]
fn mosaic_default_mode_drops_debug_locations_and_minifies_in_key_order() {
    let context = new_context();
    let mut module = tpu_module(&context);
    let canonical = CanonicalModule::of(&mut module, &Options::default()).expect("canonicalize");
    let report = canonical.report();
    assert_eq!(report.kernels.len(), 1);
    assert_eq!(
        report.kernels[0].action,
        KernelAction::DroppedDebugLocations
    );
    let text = canonical.text();
    assert!(
        !text.contains("debug_locations"),
        "debug_locations must be gone"
    );
    // Minified, producer's key order: body, serialization_format, needs_layout_passes.
    let start = text.find("backend_config = \"").expect("backend_config") + 18;
    let json = &text[start..start + text[start..].find("\", ").expect("end")];
    let json = json.replace("\\22", "\"");
    assert!(
        json.starts_with("{\"custom_call_config\":{\"body\":\""),
        "{json}"
    );
    assert!(
        json.ends_with("\",\"serialization_format\":1,\"needs_layout_passes\":true}}"),
        "{json}"
    );
    assert!(
        !json.contains(": ") && !json.contains(", "),
        "not minified: {json}"
    );
}

#[test]
fn kernels_keep_mode_leaves_kernels_alone() {
    let keep = Options {
        kernels: KernelMode::Keep,
        ..Options::default()
    };
    // Default-mode Mosaic pair differs only in the debug_locations blob.
    assert_apart_under(
        &keep,
        "tpu/tpu_pallas_add.a.generic.mlir",
        "tpu/tpu_pallas_add.b.generic.mlir",
    );
}

#[test]
fn twenty_runs_give_the_same_bytes() {
    let context = new_context();
    let mut module = tpu_module(&context);
    let first = canonicalize(&mut module, &Options::default()).expect("canonicalize");
    for _ in 0..20 {
        assert_eq!(
            canonicalize(&mut module, &Options::default()).expect("canonicalize"),
            first
        );
    }
}

#[test]
fn text_and_bytecode_inputs_give_the_same_bytes() {
    let context = new_context();
    let path = corpus("cpu/scan_loop.a.generic.mlir");
    let mut module = parse_module(&context, &read(&path), "text").expect("parse");
    let from_text = canonicalize(&mut module, &Options::default()).expect("canonicalize");
    // Bytecode with locations, as a tool would write it.
    let with_locations = {
        let mut bytes = Vec::new();
        mlir_cache_key::mlir::write_bytecode_with(
            module.as_operation().to_raw(),
            6,
            "some-other-producer",
            &mut |c| bytes.extend_from_slice(c),
        )
        .expect("write");
        bytes
    };
    let mut reparsed = parse_module(&context, &with_locations, "bytecode").expect("parse bytecode");
    assert_eq!(
        canonicalize(&mut reparsed, &Options::default()).expect("canonicalize"),
        from_text
    );
    // Canonical bytes are a fixed point.
    let mut again = parse_module(&context, &from_text, "canonical").expect("parse canonical");
    assert_eq!(
        canonicalize(&mut again, &Options::default()).expect("canonicalize"),
        from_text
    );
}

#[test]
fn threads_give_the_same_bytes() {
    let expected = default_digest("cpu/conv.a.generic.mlir");
    let handles: Vec<_> = (0..4)
        .map(|_| std::thread::spawn(|| default_digest("cpu/conv.a.generic.mlir")))
        .collect();
    for handle in handles {
        assert_eq!(handle.join().expect("thread"), expected);
    }
}

#[test]
fn canonical_bytes_carry_the_pinned_version_and_fixed_producer() {
    let context = new_context();
    let mut module =
        parse_module(&context, &read(&corpus("cpu/mlp.a.generic.mlir")), "mlp").expect("parse");
    let bytes = canonicalize(&mut module, &Options::default()).expect("canonicalize");
    let mut header = b"ML\xefR".to_vec();
    header.push(0x0d); // varint 6
    header.extend_from_slice(mlir_cache_key::mlir::PRODUCER.as_bytes());
    header.push(0);
    assert!(bytes.starts_with(&header), "header: {:?}", &bytes[..24]);
}
