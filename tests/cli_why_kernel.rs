//! `why` on two modules that differ only inside an embedded kernel names the call and the
//! first differing operation inside the kernel, not an escaped byte run of its attribute.

use crate::common::{assert_contains, bin, corpus, data, success, text};
use crate::kernel_helpers::edit_mosaic_body;
use mlir_cache_key::mlir::{new_context, parse_module, write_bytecode_with};
use std::path::{Path, PathBuf};

/// `bytes` as the body of an MLIR string literal.
fn escaped(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| match b {
            b'"' | b'\\' => format!("\\{b:02X}"),
            0x20..0x7f => char::from(b).to_string(),
            _ => format!("\\{b:02X}"),
        })
        .collect()
}

/// The corpus's Pallas Triton module with its kernel replaced by `kernel`, written as `name`.
fn with_triton_kernel(dir: &Path, name: &str, kernel: &[u8]) -> PathBuf {
    let module = std::fs::read_to_string(corpus("gpu/cuda_pallas_triton_add.a.generic.mlir"))
        .expect("module");
    let start = module.find("ir = \"").expect("an ir entry") + "ir = \"".len();
    let mut end = start;
    let bytes = module.as_bytes();
    while bytes[end] != b'"' {
        end += if bytes[end] == b'\\' { 2 } else { 1 };
    }
    let path = dir.join(format!("{name}.mlir"));
    let text = format!("{}{}{}", &module[..start], escaped(kernel), &module[end..]);
    std::fs::write(&path, text).expect("write");
    path
}

/// A kernel of the Triton sweep (tests/data/kernels/triton-sweep).
fn sweep_kernel(name: &str) -> Vec<u8> {
    std::fs::read(data(&format!("kernels/triton-sweep/{name}.mlirbc"))).expect("kernel")
}

/// A kernel of upstream dialects only, which this MLIR reads exactly, with `value` as its
/// constant.
fn upstream_kernel(value: &str) -> Vec<u8> {
    let text = format!(
        "module {{\n  func.func @k(%x: f32) -> f32 {{\n    %c = arith.constant {value} : f32\n    \
         %y = arith.mulf %x, %c : f32\n    return %y : f32\n  }}\n}}\n"
    );
    let context = new_context();
    let module = parse_module(&context, text.as_bytes(), "kernel").expect("parse");
    let mut bytes = Vec::new();
    write_bytecode_with(module.as_operation().to_raw(), 6, "MLIR22", &mut |c| {
        bytes.extend_from_slice(c)
    })
    .expect("write");
    bytes
}

fn why(a: &Path, b: &Path, json: bool) -> String {
    let mut command = bin();
    command.arg("why").arg(a).arg(b);
    if json {
        command.arg("--json");
    }
    text(success(&mut command))
}

/// `why` (text, then JSON) between the corpus Triton module holding kernel `a` and holding
/// kernel `b`; the text points inside the kernel of the module's first custom call, says each
/// of `more`, and has no escaped kernel bytes.
fn why_inside_the_triton_kernel(a: &[u8], b: &[u8], more: &[&str]) -> (String, serde_json::Value) {
    let tmp = tempfile::tempdir().unwrap();
    let a = with_triton_kernel(tmp.path(), "a", a);
    let b = with_triton_kernel(tmp.path(), "b", b);
    let shown = why(&a, &b, false);
    assert!(!shown.contains("\\EF"), "escaped kernel bytes in:\n{shown}");
    assert_contains(
        &shown,
        &["inside the Triton kernel of stablehlo.custom_call #0"],
    );
    assert_contains(&shown, more);
    (shown, serde_json::from_str(&why(&a, &b, true)).unwrap())
}

#[test]
fn why_names_the_kernel_and_the_operation_that_differ_inside_it() {
    // One constant changed (2.0 → 3.0) in a kernel this MLIR reads.
    let (shown, json) = why_inside_the_triton_kernel(
        &upstream_kernel("2.0"),
        &upstream_kernel("3.0"),
        &[
            "call_target_name \"__gpu$xla.gpu.triton\"",
            "operation #2 in pre-order",
            "in the kernel (5 → 5 operations): first differing operation #2 in pre-order, \
             \"arith.constant\"",
            "- %0 = \"arith.constant\"() <{value = 2.000000e+00 : f32}>",
            "+ %0 = \"arith.constant\"() <{value = 3.000000e+00 : f32}>",
        ],
    );
    assert!(!shown.contains("may read wrongly"), "{shown}");
    let details = json["differences"][0]["details"].as_array().unwrap();
    assert!(
        details[0].as_str().unwrap().contains("Triton kernel"),
        "{json}"
    );
}

#[test]
fn why_names_the_operation_and_value_that_differ_inside_a_real_triton_kernel() {
    // Real Triton kernels, the same but for one constant (2.0 → 3.0): MLIR 22 lacks the tt
    // dialect and cannot read them stripped, so the operations are listed dialect-free.
    let (shown, _) = why_inside_the_triton_kernel(
        &sweep_kernel("affine-c2.a"),
        &sweep_kernel("affine-c3.a"),
        &[
            "in the kernel (read without its dialects, 53 → 53 operations): first differing \
             operation #23 in pre-order, \"arith.constant\" (nesting depth 2)",
            "  property value: 2.0 : f32 → 3.0 : f32",
        ],
    );
    assert!(!shown.contains("first differing byte"), "{shown}");
}

/// The relocation generator's kernel of `backend` and `variant` (tests/data/kernels/relocations).
fn relocation_kernel(backend: &str, variant: &str) -> Vec<u8> {
    std::fs::read(data(&format!(
        "kernels/relocations/{backend}.{variant}.a.mlirbc"
    )))
    .expect("kernel")
}

#[test]
fn why_names_the_operation_and_value_that_differ_inside_relocation_kernels() {
    // Triton: the generator's semantic variants with constant 2 and 3.
    why_inside_the_triton_kernel(
        &relocation_kernel("triton", "affine-c2"),
        &relocation_kernel("triton", "affine-c3"),
        &[
            "operation #35 in pre-order, \"arith.constant\"",
            "  property value: 2.0 : f32 → 3.0 : f32",
        ],
    );
    // Mosaic: the same variants, each as the body of the corpus's Pallas TPU module.
    let tmp = tempfile::tempdir().unwrap();
    let module = std::fs::read(corpus("tpu/tpu_pallas_add.nounzip.a.generic.mlir")).unwrap();
    let with_body = |name: &str, variant: &str| {
        let kernel = relocation_kernel("mosaic", variant);
        let path = tmp.path().join(name);
        std::fs::write(&path, edit_mosaic_body(&module, |body| *body = kernel)).unwrap();
        path
    };
    let shown = why(
        &with_body("a.mlir", "affine-c2"),
        &with_body("b.mlir", "affine-c3"),
        false,
    );
    assert_contains(
        &shown,
        &[
            "inside the Mosaic kernel of stablehlo.custom_call #0",
            "operation #8 in pre-order, \"stable_mosaic.arith.constant\"",
            "  attribute value: 2.0 : f32 → 3.0 : f32",
        ],
    );
}

#[test]
fn a_difference_outside_kernels_is_explained_as_before() {
    let a = corpus("cpu/mlp.a.generic.mlir");
    let b = corpus("cpu/mlp.a_batch5.generic.mlir");
    let shown = why(&a, &b, false);
    assert!(
        shown.contains("first differing operation at canonical line"),
        "{shown}"
    );
    assert!(!shown.contains("kernel of"), "{shown}");
}

#[test]
fn why_names_a_mosaic_kernel_and_the_operation_that_changed_in_it() {
    let tmp = tempfile::tempdir().unwrap();
    let original = std::fs::read(corpus("tpu/tpu_pallas_add.nounzip.a.generic.mlir")).unwrap();
    // Another operation in the kernel body (addf → subf); this MLIR cannot read Mosaic
    // kernels, so the difference is read without their dialects.
    let edited = edit_mosaic_body(&original, |body| {
        let at = body
            .windows(10)
            .position(|w| w == b"arith.addf")
            .expect("addf in the body");
        body[at..at + 10].copy_from_slice(b"arith.subf");
    });
    let (a, b) = (tmp.path().join("a.mlir"), tmp.path().join("b.mlir"));
    std::fs::write(&a, &original).unwrap();
    std::fs::write(&b, &edited).unwrap();
    let shown = why(&a, &b, false);
    assert_contains(
        &shown,
        &[
            "inside the Mosaic kernel of stablehlo.custom_call #0",
            "call_target_name \"tpu_custom_call\"",
            "in the kernel (read without its dialects, 17 → 17 operations): first differing \
             operation #11 in pre-order, \"stable_mosaic.arith.addf\"",
            "  name: stable_mosaic.arith.addf → stable_mosaic.arith.subf",
        ],
    );
}
