//! Canonical text shows locations exactly when they are part of the canonical
//! bytes (`--keep-locations`), and `why` then names the location that moved.

use crate::common::{bin, corpus, success};

fn text(extra: &[&str], module: &str) -> String {
    let out = success(
        bin()
            .args(["canon", "--emit", "text"])
            .args(extra)
            .arg(corpus(module)),
    );
    String::from_utf8(out).expect("utf-8")
}

/// `text` with every `loc(...)` (balanced, outside strings) removed.
fn without_locations(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(" loc(") {
        out.push_str(&rest[..at]);
        let mut depth = 0;
        let mut quoted = false;
        let mut end = at + 1;
        for (i, c) in rest[at + 1..].char_indices() {
            match (quoted, c) {
                (_, '"') => quoted = !quoted,
                (false, '(') => depth += 1,
                (false, ')') => {
                    depth -= 1;
                    if depth == 0 {
                        end = at + 1 + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[test]
fn default_text_has_no_location() {
    let t = text(&[], "cpu/mlp.a.generic.mlir");
    assert!(t.starts_with("\"builtin.module\"()"), "{t}");
    assert!(!t.contains("loc("), "{t}");
}

#[test]
fn kept_locations_are_printed_inline_and_only_they_differ_between_twins() {
    let a = text(&["--keep-locations"], "cpu/mlp.a.generic.mlir");
    let b = text(&["--keep-locations"], "cpu/mlp.b.generic.mlir");
    assert!(a.contains("loc(\"params[0][0]\")"), "{a}");
    assert!(a.contains("corpus_src/variant_a/models.py\":12:24"), "{a}");
    assert!(
        b.contains("corpus_src/variant_b/moved/deeper/models.py"),
        "{b}"
    );
    // Inline (local scope): no location aliases anywhere.
    assert!(!a.contains("#loc"), "{a}");
    assert_ne!(a, b);
    assert_eq!(without_locations(&a), without_locations(&b));
    // And without locations it is the default text.
    assert_eq!(
        without_locations(&a),
        text(&[], "cpu/mlp.a.generic.mlir"),
        "keep-locations must change nothing but the locations in the text"
    );
}

#[test]
fn why_names_the_location_that_moved() {
    let out = success(bin().args(["why", "--keep-locations", "--json"]).args([
        corpus("cpu/mlp.a.generic.mlir"),
        corpus("cpu/mlp.b.generic.mlir"),
    ]));
    let json: serde_json::Value = serde_json::from_slice(&out).expect("json");
    let first = &json["differences"][0];
    assert_eq!(first["name"], "computation");
    let details: Vec<&str> = first["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert!(
        details[0].starts_with("only debug locations differ"),
        "{details:#?}"
    );
    let moved = details
        .iter()
        .find(|d| d.starts_with("location moved: "))
        .unwrap_or_else(|| panic!("no moved location: {details:#?}"));
    assert!(
        moved.contains("variant_a/models.py\":12:24")
            && moved.contains("variant_b/moved/deeper/models.py\":50:24"),
        "{moved}"
    );
    assert!(
        !details.iter().any(|d| d.contains("bytecode differs")),
        "{details:#?}"
    );
}
