//! Kernel stripping tests that count what they compared, and the MLIR
//! fallback strip path.
//!
//! The "differs or refuses" tests on edited kernel payloads pass when an
//! edited payload strips to other bytes *or* is refused (left as is: a
//! possible miss, never a false hit). A stripper that refused everything would
//! therefore pass them all. These versions count the edits actually compared
//! (stripped, then checked to differ) and require a minimum, so a refusing
//! stripper fails. The minimums sit below the counts measured on the corpus
//! (printed by each test with `--nocapture`).
//!
//! The MLIR fallback: when the dialect-free container rewriter cannot strip a
//! payload losslessly (here: regions nested deeper than it reads), MLIR 22 may
//! strip it after a byte-exact round trip proves it reads the payload fully
//! (`canon::kernels` payload.rs; docs/bytecode-stripper.md). Nothing in the
//! corpus takes that path, so the payloads are built here with this MLIR.

use crate::common::{corpus, data, read};
use crate::kernel_helpers::{canonical, edit_mosaic_body};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mlir_cache_key::bytecode::{self, BytecodeError, strip_locations};
use mlir_cache_key::canon::KernelAction;
use mlir_cache_key::canon::kernels::StripMethod;
use mlir_cache_key::mlir::{new_context, parse_module, write_bytecode_with};
use rand::{Rng, SeedableRng};

// ---------------------------------------------------------------------------------------------
// Payload level: edits outside debug info, counted.

/// The bytecode payloads of the corpus that carry locations or were already
/// stripped by their producer (as in the bytecode crate's tests).
const PAYLOADS: [&str; 6] = [
    "corpus/tpu/tpu_pallas_add.nounzip.a.kernel0.body.mlirbc",
    "corpus/tpu/tpu_pallas_add.nounzip.b.kernel0.body.mlirbc",
    "corpus/tpu/tpu_pallas_add.a.kernel0.body.mlirbc",
    "corpus/tpu/tpu_pallas_add.b.kernel0.body.mlirbc",
    "kernels/triton_add.a.mlirbc",
    "kernels/triton_add.b.mlirbc",
];

/// The stripped output, or `None` when the stripper refuses (Unchanged or Err).
fn output(payload: &[u8]) -> Option<Vec<u8>> {
    strip_locations(payload).ok()?.output.stripped()
}

/// Payload `name` of [`PAYLOADS`], its offsets outside debug info, and what it strips to.
fn outside_debug_info(name: &str) -> (Vec<u8>, Vec<usize>, Vec<u8>) {
    let payload = read(&data(name));
    let report = strip_locations(&payload).expect("corpus payload parses");
    let offsets = (0..payload.len())
        .filter(|&o| !report.debug.contains(o))
        .collect();
    let base = report
        .output
        .stripped()
        .unwrap_or_else(|| panic!("{name}: the corpus payload itself is refused"));
    (payload, offsets, base)
}

#[derive(Debug, Default)]
struct Tally {
    compared: usize,
    refused: usize,
}

impl Tally {
    /// Records one edited payload: compared (and asserted different from
    /// `base`) or refused.
    fn edit(&mut self, base: &[u8], edited: &[u8], what: impl FnOnce() -> String) {
        match output(edited) {
            Some(out) => {
                assert_ne!(out, base, "{}: strips to the same bytes", what());
                self.compared += 1;
            }
            None => self.refused += 1,
        }
    }

    fn total(&self) -> usize {
        self.compared + self.refused
    }
}

/// Every byte outside the debug map, +1 and +0x80, of every payload: each
/// edited payload strips to other bytes or is refused, and at least `minimum`
/// edits of each payload are compared.
#[test]
fn every_byte_outside_debug_info_is_compared_not_just_refused() {
    // (payload, minimum edits compared); measured: 1065 of 1682 (Mosaic in-body
    // a/b), 1093 of 1580 (Mosaic already stripped a/b), 669 of 1694 (Triton a),
    // 669 of 1694 (Triton b); 592 of 1694 for Triton once the reader checked value numbering
    // too (more single-byte edits are then malformed bytecode, refused with a reason).
    let minimums = [950, 950, 980, 980, 540, 540];
    let mut short = Vec::new();
    for (name, minimum) in PAYLOADS.into_iter().zip(minimums) {
        let (payload, offsets, base) = outside_debug_info(name);
        let mut tally = Tally::default();
        for offset in offsets {
            for delta in [1u8, 0x80] {
                let mut edited = payload.clone();
                edited[offset] = edited[offset].wrapping_add(delta);
                tally.edit(&base, &edited, || {
                    format!("{name}: byte {offset:#x} + {delta:#x}")
                });
            }
        }
        eprintln!(
            "{name}: {} edits outside debug info, {} compared, {} refused",
            tally.total(),
            tally.compared,
            tally.refused
        );
        assert!(
            tally.total() >= 1000,
            "{name}: only {} edits",
            tally.total()
        );
        if tally.compared < minimum {
            short.push(format!(
                "{name}: only {} of {} edits compared (minimum {minimum}); {} refused",
                tally.compared,
                tally.total(),
                tally.refused
            ));
        }
    }
    assert!(short.is_empty(), "{}", short.join("\n"));
}

/// Random byte values at random offsets outside debug info (what the
/// property test samples), with a fixed seed so the counts are reproducible.
#[test]
fn random_edits_outside_debug_info_are_mostly_compared() {
    // (payload, minimum of 1000 edits compared); measured with this seed: 631,
    // 635 (Mosaic in-body a/b), 673, 692 (Mosaic already stripped a/b), 359
    // (Triton a), 386 (Triton b).
    let minimums = [560, 560, 600, 600, 320, 320];
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x6d63_6b18);
    let mut short = Vec::new();
    for (name, minimum) in PAYLOADS.into_iter().zip(minimums) {
        let (payload, offsets, base) = outside_debug_info(name);
        let mut tally = Tally::default();
        while tally.total() < 1000 {
            let offset = offsets[rng.gen_range(0..offsets.len())];
            let byte: u8 = rng.r#gen();
            if payload[offset] == byte {
                continue;
            }
            let mut edited = payload.clone();
            edited[offset] = byte;
            tally.edit(&base, &edited, || {
                format!("{name}: byte {offset:#x} = {byte:#04x}")
            });
        }
        eprintln!(
            "{name}: 1000 random edits, {} compared, {} refused",
            tally.compared, tally.refused
        );
        if tally.compared < minimum {
            short.push(format!(
                "{name}: only {} of 1000 random edits compared (minimum {minimum})",
                tally.compared
            ));
        }
    }
    assert!(short.is_empty(), "{}", short.join("\n"));
}

/// Every byte of the Triton kernel's property blobs (where a refusal is most
/// tempting: the stripper cannot decode them), flipped.
#[test]
fn property_blob_edits_are_compared() {
    for name in ["kernels/triton_add.a.mlirbc", "kernels/triton_add.b.mlirbc"] {
        let payload = read(&data(name));
        let base = output(&payload).expect("strips");
        let header = bytecode::inspect(&payload).unwrap();
        let props = header
            .sections
            .iter()
            .find(|s| s.id == 8)
            .expect("properties");
        let mut tally = Tally::default();
        for offset in props.range() {
            let mut edited = payload.clone();
            edited[offset] ^= 0x02;
            tally.edit(&base, &edited, || {
                format!("{name}: property byte {offset:#x}")
            });
        }
        eprintln!(
            "{name}: {} property-blob edits, {} compared, {} refused",
            tally.total(),
            tally.compared,
            tally.refused
        );
        // Measured: 14 of 35 (Triton a), 14 of 35 (Triton b).
        assert!(tally.total() >= 30, "{name}: {} edits", tally.total());
        assert!(
            tally.compared >= 12,
            "{name}: only {} of {} property-blob edits compared (minimum 12)",
            tally.compared,
            tally.total()
        );
    }
}

/// Replaces the first occurrence of `from` by `to` (same length).
fn replaced(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let at = bytes
        .windows(from.len())
        .position(|w| w == from)
        .unwrap_or_else(|| panic!("{:?} not found", String::from_utf8_lossy(from)));
    let mut out = bytes.to_vec();
    out[at..at + to.len()].copy_from_slice(to);
    out
}

/// The named edits of code (a constant, an op name, attribute strings): every
/// one must be stripped and compared, none refused.
#[test]
fn every_named_code_edit_is_stripped_and_differs() {
    let mosaic = read(&data(
        "corpus/tpu/tpu_pallas_add.nounzip.a.kernel0.body.mlirbc",
    ));
    let triton = read(&data("kernels/triton_add.a.mlirbc"));
    let dense = [0x23, 0x0b, 0x09, 0x21, 0x01, 0x00, 0x00, 0x00, 0x01];
    let mut dense_flipped = dense;
    dense_flipped[8] = 0x05;
    let float = [0x13, 0x09, 0x10, 0x00, 0x00, 0x00, 0x10];
    let mut float_flipped = float;
    float_flipped[6] = 0x20;
    // (what, payload, from, to)
    type Edit<'a> = (&'a str, &'a [u8], &'a [u8], &'a [u8]);
    let edits: [Edit; 9] = [
        ("mosaic dense array", &mosaic, &dense, &dense_flipped),
        ("mosaic op name", &mosaic, b"arith.addf\0", b"arith.subf\0"),
        ("mosaic sym_name", &mosaic, b"add_kernel\0", b"add_kernex\0"),
        (
            "mosaic attr name",
            &mosaic,
            b"dimension_semantics",
            b"dimension_semantict",
        ),
        ("triton float constant", &triton, &float, &float_flipped),
        ("triton op name", &triton, b"addf\0", b"subf\0"),
        ("triton sym_name", &triton, b"add_kernel\0", b"add_kernex\0"),
        (
            "triton attr name",
            &triton,
            b"tt.divisibility",
            b"tt.divisibilitx",
        ),
        ("triton visibility", &triton, b"public", b"privat"),
    ];
    let mut compared = 0;
    for (what, payload, from, to) in edits {
        let base = output(payload).expect("original strips");
        let edited = replaced(payload, from, to);
        let out = output(&edited).unwrap_or_else(|| panic!("{what}: refused, not compared"));
        assert_ne!(out, base, "{what}: strips to the same bytes");
        compared += 1;
    }
    assert_eq!(compared, 9);
}

// ---------------------------------------------------------------------------------------------
// Canonical level: kernels that differ in code are stripped, not left as is.

const CONTAINER: KernelAction = KernelAction::Stripped {
    method: StripMethod::Container,
};
const MLIR: KernelAction = KernelAction::Stripped {
    method: StripMethod::Mlir,
};

#[test]
fn corpus_kernels_edited_in_code_are_stripped_and_compared() {
    let mosaic = read(&corpus("tpu/tpu_pallas_add.nounzip.a.generic.mlir"));
    let triton = read(&corpus("gpu/cuda_pallas_triton_add.a.generic.mlir"));
    let (mosaic_base, actions, _) = canonical(&mosaic);
    assert_eq!(actions, [CONTAINER]);
    let (triton_base, actions, _) = canonical(&triton);
    assert_eq!(actions, [CONTAINER]);
    let mut compared = 0;
    for (from, to) in [
        (&b"arith.addf"[..], &b"arith.subf"[..]),
        (b"add_kernel", b"sub_kernel"),
    ] {
        let edited = edit_mosaic_body(&mosaic, |body| *body = replaced(body, from, to));
        let (digest, actions, _) = canonical(&edited);
        assert_eq!(
            actions,
            [CONTAINER],
            "{}: not stripped",
            String::from_utf8_lossy(to)
        );
        assert_ne!(digest, mosaic_base);
        compared += 1;
    }
    // Another Triton operation (mulf -> addf).
    let edited = replaced(&triton, b"mulf\\00", b"addf\\00");
    let (digest, actions, _) = canonical(&edited);
    assert_eq!(actions, [CONTAINER], "addf: not stripped");
    assert_ne!(digest, triton_base);
    compared += 1;
    // num_warps is outside the kernel: a different key, the kernel still stripped.
    let edited = replaced(&triton, b"num_warps = 4", b"num_warps = 8");
    let (digest, actions, _) = canonical(&edited);
    assert_eq!(actions, [CONTAINER]);
    assert_ne!(digest, triton_base);
    compared += 1;
    assert_eq!(compared, 4);
}

// ---------------------------------------------------------------------------------------------
// The MLIR fallback strip path.

/// Nesting deeper than the container rewriter reads (it refuses with TooDeep).
const DEPTH: usize = bytecode::encoding::MAX_REGION_NESTING + 8;
const PRODUCER: &str = "MLIR22.fallback-test";

/// A kernel module of unregistered ops nested `DEPTH` regions deep, every op
/// located in `file`, with `op` innermost; as MLIR text.
fn nested_kernel_text(file: &str, op: &str) -> String {
    let mut text = String::from("\"builtin.module\"() ({\n");
    for _ in 0..DEPTH {
        text += "\"kernel.region\"() ({\n";
    }
    text += &format!("\"kernel.{op}\"() : () -> () loc(\"{file}\":7:3)\n");
    for depth in 0..DEPTH {
        text += &format!(
            "}}) : () -> () loc(callsite(\"k\"(\"{file}\":{}:1) at \"{file}\":1:1))\n",
            depth + 10
        );
    }
    text += "}) : () -> ()\n";
    text
}

/// That module as bytecode written by this MLIR (version 6, our producer):
/// a payload MLIR 22 reads back byte for byte.
fn nested_kernel(file: &str, op: &str) -> Vec<u8> {
    let context = new_context();
    let module = parse_module(&context, nested_kernel_text(file, op).as_bytes(), "kernel")
        .expect("the kernel text parses");
    let mut bytes = Vec::new();
    write_bytecode_with(module.as_operation().to_raw(), 6, PRODUCER, &mut |chunk| {
        bytes.extend_from_slice(chunk)
    })
    .expect("write kernel bytecode");
    bytes
}

fn mosaic_module(payload: &[u8]) -> Vec<u8> {
    format!(
        r#""builtin.module"() ({{
  "func.func"() <{{function_type = () -> (), sym_name = "main"}}> ({{
    "stablehlo.custom_call"() <{{backend_config = "{{\22custom_call_config\22: {{\22body\22: \22{}\22}}}}", call_target_name = "tpu_custom_call"}}> : () -> ()
    "func.return"() : () -> ()
  }}) : () -> ()
}}) : () -> ()
"#,
        STANDARD.encode(payload)
    )
    .into_bytes()
}

fn triton_module(payload: &[u8]) -> Vec<u8> {
    let escaped: String = payload.iter().map(|b| format!("\\{b:02X}")).collect();
    format!(
        r#""builtin.module"() ({{
  "func.func"() <{{function_type = () -> (), sym_name = "main"}}> ({{
    "stablehlo.custom_call"() <{{backend_config = "", call_target_name = "__gpu$xla.gpu.triton"}}> {{mhlo.backend_config = {{ir = "{escaped}", name = "k"}}}} : () -> ()
    "func.return"() : () -> ()
  }}) : () -> ()
}}) : () -> ()
"#
    )
    .into_bytes()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn the_fallback_payload_is_one_the_container_rewriter_refuses() {
    let payload = nested_kernel("/src/a/kernel.py", "add");
    assert!(contains(&payload, b"/src/a/kernel.py"));
    match strip_locations(&payload) {
        Err(BytecodeError::TooDeep { .. }) => {}
        other => panic!("expected TooDeep from the container rewriter, got {other:?}"),
    }
}

/// The kernel body after canonicalisation, from the canonical text.
fn canonical_mosaic_body(text: &str) -> Vec<u8> {
    let start = text.find("\\22body\\22:\\22").expect("body") + "\\22body\\22:\\22".len();
    let end = start + text[start..].find("\\22").expect("end of body");
    STANDARD.decode(&text[start..end]).expect("base64")
}

#[test]
fn mlir_strips_a_mosaic_kernel_the_container_rewriter_refuses() {
    let a = nested_kernel("/src/a/kernel.py", "add");
    let b = nested_kernel("/home/someone/elsewhere/kernel_b.py", "add");
    let other_code = nested_kernel("/src/a/kernel.py", "sub");

    let (digest_a, actions, text) = canonical(&mosaic_module(&a));
    assert_eq!(actions, [MLIR], "the MLIR fallback must strip this kernel");
    let body = canonical_mosaic_body(&text);
    assert_ne!(body, a, "the body was not rewritten");
    assert!(!contains(&body, b"kernel.py"), "a file name survived");
    assert!(contains(&body, b"add\0"), "the code is gone");
    assert!(
        contains(&body, PRODUCER.as_bytes()),
        "the payload's producer is kept"
    );

    // Relocated: the same digest; other code: another digest, also via MLIR.
    let (digest_b, actions, _) = canonical(&mosaic_module(&b));
    assert_eq!(actions, [MLIR]);
    assert_eq!(digest_a, digest_b, "a relocated kernel must share the key");
    let (digest_other, actions, _) = canonical(&mosaic_module(&other_code));
    assert_eq!(actions, [MLIR]);
    assert_ne!(
        digest_a, digest_other,
        "kernels that differ in code must not"
    );
}

#[test]
fn mlir_strips_a_triton_kernel_the_container_rewriter_refuses() {
    let a = nested_kernel("/src/a/kernel.py", "add");
    let b = nested_kernel("/elsewhere/kernel_b.py", "add");
    let (digest_a, actions, text) = canonical(&triton_module(&a));
    assert_eq!(actions, [MLIR]);
    assert!(
        !text.contains("kernel.py"),
        "a file name survived in the ir string"
    );
    let (digest_b, actions, _) = canonical(&triton_module(&b));
    assert_eq!(actions, [MLIR]);
    assert_eq!(digest_a, digest_b);
    let (digest_other, _, _) = canonical(&triton_module(&nested_kernel("/src/a/kernel.py", "sub")));
    assert_ne!(digest_a, digest_other);
}

#[test]
fn a_payload_neither_path_can_strip_is_left_as_is_naming_both_reasons() {
    // Deep (the container rewriter refuses) and cut short (MLIR cannot read it).
    let mut payload = nested_kernel("/src/a/kernel.py", "add");
    payload.truncate(payload.len() - 3);
    let (_, actions, _) = canonical(&mosaic_module(&payload));
    let [KernelAction::LeftAsIs { reason }] = actions.as_slice() else {
        panic!("expected left as is: {actions:?}")
    };
    assert!(reason.contains("container rewrite:"), "{reason}");
    assert!(reason.contains("MLIR 22:"), "{reason}");
}
