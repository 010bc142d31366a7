//! Canonical private symbols (opt-in): JAX traces whose private functions got
//! other numeric suffixes (JAX issue 38828, `tests/data/symbols`, written by
//! `scripts/gen-triton-sweep.py`) share canonical bytes, a program calling a
//! different private function does not, and every reference follows.

use crate::common::{data, read};
use mlir_cache_key::canon::{CanonicalModule, Options, Renaming};
use mlir_cache_key::mlir::{new_context, parse_module};

const CANONICAL: Options = Options {
    keep_locations: false,
    ignore_custom_partitioning: false,
    kernels: mlir_cache_key::canon::KernelMode::Strip,
    canonical_symbols: true,
};

/// Canonical text and report of `source` under `options`.
fn canonical(source: &[u8], options: &Options) -> (String, Option<Renaming>) {
    let context = new_context();
    let mut module = parse_module(&context, source, "test").expect("parse");
    let canonical = CanonicalModule::of(&mut module, options).expect("canonicalize");
    (canonical.text(), canonical.report().private_symbols)
}

fn bytes(source: &[u8], options: &Options) -> Vec<u8> {
    let context = new_context();
    let mut module = parse_module(&context, source, "test").expect("parse");
    CanonicalModule::of(&mut module, options)
        .expect("canonicalize")
        .to_bytes()
        .expect("bytes")
}

fn clip(tag: &str) -> Vec<u8> {
    read(&data(&format!("symbols/clip.{tag}.mlir")))
}

#[test]
fn renumbered_traces_share_bytes_only_with_canonical_symbols() {
    let (a, b) = (clip("a"), clip("b"));
    assert!(String::from_utf8_lossy(&a).contains("@clip_fn_0"));
    assert!(String::from_utf8_lossy(&b).contains("@clip_fn_1"));
    assert_ne!(
        bytes(&a, &Options::default()),
        bytes(&b, &Options::default())
    );
    assert_eq!(bytes(&a, &CANONICAL), bytes(&b, &CANONICAL));
}

#[test]
fn a_different_private_function_keeps_its_own_bytes() {
    assert_ne!(bytes(&clip("a"), &CANONICAL), bytes(&clip("c"), &CANONICAL));
}

#[test]
fn names_follow_first_reference_and_public_symbols_stay() {
    let (text, report) = canonical(&clip("b"), &CANONICAL);
    assert_eq!(report, Some(Renaming::Renamed(2)));
    assert!(text.contains("sym_name = \"main\""), "{text}");
    assert!(!text.contains("clip_fn"), "{text}");
    // main calls the (4xf32) clip first, then the (3xf32) one.
    let first = text.find("callee = @private_0").expect("private_0 called");
    let second = text.find("callee = @private_1").expect("private_1 called");
    assert!(first < second);
    let def = text
        .find("sym_name = \"private_1\"")
        .expect("private_1 defined");
    assert!(text[def - 200..def].contains("tensor<3xf32>"), "{text}");
}

#[test]
fn default_mode_keeps_the_names() {
    let (text, report) = canonical(&clip("b"), &Options::default());
    assert_eq!(report, None);
    assert!(text.contains("@clip_fn_1"));
}

/// `main` references private `@a` first (its own attribute, nested in a
/// dictionary in an array; then from the properties of an op this MLIR does
/// not register), then `@b` (the same array, then a call); `@a_unused` is
/// never referenced.
const NESTED: &str = r#"
"builtin.module"() ({
  "func.func"() <{function_type = () -> (), sym_name = "main", sym_visibility = "public"}> ({
    "func.call"() <{callee = @b}> : () -> ()
    "stablehlo.custom_call"() <{called_computations = [@a], call_target_name = "x"}> : () -> ()
    "func.return"() : () -> ()
  }) {refs = [{inner = @a}, @b]} : () -> ()
  "func.func"() <{function_type = () -> (), sym_name = "a_unused", sym_visibility = "private"}> ({
    "func.return"() : () -> ()
  }) : () -> ()
  "func.func"() <{function_type = () -> (), sym_name = "a", sym_visibility = "private"}> ({
    "func.return"() : () -> ()
  }) : () -> ()
  "func.func"() <{function_type = () -> (), sym_name = "b", sym_visibility = "private"}> ({
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()
"#;

#[test]
fn every_reference_follows_the_rename() {
    let (text, report) = canonical(NESTED.as_bytes(), &CANONICAL);
    assert_eq!(report, Some(Renaming::Renamed(3)));
    // The op's own attributes come before its body: a, then b; a_unused last.
    assert!(text.contains("callee = @private_1"), "{text}");
    assert!(
        text.contains("called_computations = [@private_0]"),
        "{text}"
    );
    assert!(
        text.contains("refs = [{inner = @private_0}, @private_1]"),
        "{text}"
    );
    assert!(text.contains("sym_name = \"private_2\""), "{text}");
    for old in ["@a", "@b", "\"a\"", "\"b\"", "a_unused"] {
        assert!(!text.contains(old), "{old} left in {text}");
    }
}

#[test]
fn a_private_name_used_as_a_string_is_left_alone() {
    let source = NESTED.replace("call_target_name = \"x\"", "call_target_name = \"b\"");
    let (text, report) = canonical(source.as_bytes(), &CANONICAL);
    assert_eq!(report, Some(Renaming::NamesUsedAsText));
    assert!(text.contains("callee = @b"), "{text}");
}

#[test]
fn a_public_name_is_never_taken() {
    let source = NESTED.replace("sym_name = \"main\"", "sym_name = \"private_0\"");
    let (text, _) = canonical(source.as_bytes(), &CANONICAL);
    assert!(text.contains("inner = @private_0_}"), "{text}");
    assert_eq!(
        text.matches("sym_name = \"private_0\"").count(),
        1,
        "{text}"
    );
}
