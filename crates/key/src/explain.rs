//! Why two keys differ: the first entry that moved (where JAX's two traces
//! first disagree), then exactly what moved in it — the flag, the option
//! field, the device, or the first differing operation of the module.

use super::compile_options;
use super::recipe::JaxRecipe;
use super::record::{KeyRecord, Readable};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// Lines of context shown around the first differing operation.
const CONTEXT_LINES: usize = 3;
/// Changed lines shown per side before eliding the rest.
const MAX_CHANGED_LINES: usize = 6;

/// One entry whose bytes differ, with what moved in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryDifference {
    /// 1-based position in hash order.
    pub position: usize,
    pub name: String,
    pub details: Vec<String>,
}

/// The comparison of two key records, `a` being the old one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    pub key_a: String,
    pub key_b: String,
    /// Entries whose own bytes differ, in hash order; the first one is where
    /// the traces first disagree, and every later running digest follows.
    pub differences: Vec<EntryDifference>,
    /// Only the human prefix (module name) differs.
    pub name_only: bool,
    /// The XLA builds of the two records' entries, when both are known and differ: the same
    /// key compiled by another binary of the same jaxlib version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xla_build: Option<(String, String)>,
}

impl Explanation {
    pub fn same_key(&self) -> bool {
        self.differences.is_empty()
    }

    /// "XLA build changed: a → b", when it did.
    pub fn xla_build_line(&self) -> Option<String> {
        let (a, b) = self.xla_build.as_ref()?;
        Some(format!("XLA build changed: {a} → {b}"))
    }
}

/// Compares two key records entry by entry.
pub fn explain(a: &KeyRecord, b: &KeyRecord) -> Explanation {
    let differences: Vec<EntryDifference> = a
        .entries
        .iter()
        .zip(&b.entries)
        .enumerate()
        .filter(|(_, (x, y))| x.entry_sha256 != y.entry_sha256)
        .map(|(i, (x, y))| EntryDifference {
            position: i + 1,
            name: x.name.clone(),
            details: details(&x.readable, &y.readable),
        })
        .collect();
    let differences = note_recipes(a, b, differences);
    let xla_build = match (&a.xla_build, &b.xla_build) {
        (Some(x), Some(y)) if x != y => Some((x.clone(), y.clone())),
        _ => None,
    };
    Explanation {
        key_a: a.key.clone(),
        key_b: b.key.clone(),
        name_only: differences.is_empty() && a.key != b.key,
        differences,
        xla_build,
    }
}

/// Puts first in `differences` that `a` and `b` followed different JAX recipes, and what
/// differs between them; a difference of recipe explains a miss before any entry does.
fn note_recipes(
    a: &KeyRecord,
    b: &KeyRecord,
    mut differences: Vec<EntryDifference>,
) -> Vec<EntryDifference> {
    // Equal entries make equal keys, whatever the recipes.
    if a.recipe == b.recipe || differences.is_empty() {
        return differences;
    }
    let mut lines = vec![format!(
        "made with different JAX recipes: {} → {}",
        a.recipe, b.recipe
    )];
    if let (Some(ra), Some(rb)) = (JaxRecipe::named(&a.recipe), JaxRecipe::named(&b.recipe)) {
        lines.extend(ra.differences(rb).into_iter().map(|l| format!("  {l}")));
    }
    let first = &mut differences[0];
    lines.append(&mut first.details);
    first.details = lines;
    differences
}

fn details(a: &Readable, b: &Readable) -> Vec<String> {
    match (a, b) {
        (
            Readable::Computation {
                bytes: na,
                text: ta,
            },
            Readable::Computation {
                bytes: nb,
                text: tb,
            },
        ) => computation(*na, ta.as_deref(), *nb, tb.as_deref()),
        (Readable::CompilerVersion { version: x }, Readable::CompilerVersion { version: y }) => {
            vec![format!("compiler version: {x:?} → {y:?}")]
        }
        (
            Readable::Backend {
                platform: pa,
                platform_version: va,
                ..
            },
            Readable::Backend {
                platform: pb,
                platform_version: vb,
                ..
            },
        ) => {
            let mut out = Vec::new();
            if pa != pb {
                out.push(format!("platform: {pa:?} → {pb:?}"));
            }
            if va != vb {
                out.push(format!("platform version: {va:?} → {vb:?}"));
            }
            if out.is_empty() {
                out.push(format!(
                    "platform and version split differently: {pa:?}+{va:?} → {pb:?}+{vb:?}"
                ));
            }
            out
        }
        (Readable::Flags { included: fa, .. }, Readable::Flags { included: fb, .. }) => {
            flags(fa, fb)
        }
        (
            Readable::CompileOptions {
                format: fa,
                hashed: ha,
                ..
            },
            Readable::CompileOptions {
                format: fb,
                hashed: hb,
                ..
            },
        ) => options(fa, ha, fb, hb),
        (
            Readable::Accelerator {
                topology_fingerprint: ta,
                device_kinds: da,
                ..
            },
            Readable::Accelerator {
                topology_fingerprint: tb,
                device_kinds: db,
                ..
            },
        ) => accelerator(*ta, da, *tb, db),
        (Readable::Compression { name: x }, Readable::Compression { name: y }) => {
            vec![format!("compression: {x:?} → {y:?}")]
        }
        (Readable::CustomHook { value: x }, Readable::CustomHook { value: y }) => {
            vec![format!("custom hook: {x:?} → {y:?}")]
        }
        _ => {
            vec!["the records describe this entry differently (different record versions?)".into()]
        }
    }
}

fn computation(bytes_a: u64, a: Option<&str>, bytes_b: u64, b: Option<&str>) -> Vec<String> {
    let (Some(a), Some(b)) = (a, b) else {
        return vec![format!(
            "canonical modules differ ({bytes_a} → {bytes_b} bytes); their text was not recorded, \
             so rerun `key --json` on both modules to see the first differing operation"
        )];
    };
    if a == b {
        return vec![
            "canonical text is identical; the bytecode differs (different MLIR versions?)".into(),
        ];
    }
    let diff = similar::TextDiff::from_lines(a, b);
    let ops = diff.ops();
    let Some(first) = ops
        .iter()
        .position(|op| op.tag() != similar::DiffTag::Equal)
    else {
        return vec![
            "canonical text is identical; the bytecode differs (different MLIR versions?)".into(),
        ];
    };
    let (old_lines, new_lines): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let changed = ops[first];
    let start = changed.old_range().start;
    let function = old_lines[..(start + 1).min(old_lines.len())]
        .iter()
        .rev()
        .find_map(|line| function_name(line));
    let regions = ops
        .iter()
        .filter(|op| op.tag() != similar::DiffTag::Equal)
        .count();
    let mut out = Vec::new();
    // Texts printed with locations (keep-locations): say when nothing but
    // locations moved, and which one moved first.
    if without_locations(a) == without_locations(b) {
        let moved = old_lines
            .iter()
            .zip(&new_lines)
            .filter(|(x, y)| x != y)
            .count();
        out.push(format!(
            "only debug locations differ ({moved} line{} of canonical text); the code is the same",
            if moved == 1 { "" } else { "s" }
        ));
    }
    out.push(format!(
        "first differing operation at canonical line {}{} ({} differing region{} in all):",
        start + 1,
        function
            .map(|f| format!(", in function @{f}"))
            .unwrap_or_default(),
        regions,
        if regions == 1 { "" } else { "s" },
    ));
    if let (Some(old), Some(new)) = (
        old_lines.get(start),
        new_lines.get(changed.new_range().start),
    ) && changed.tag() == similar::DiffTag::Replace
    {
        match moved_location(old, new) {
            Some((x, y)) => {
                let (fx, fy) = file_refs(x)
                    .into_iter()
                    .zip(file_refs(y))
                    .find(|(p, q)| p != q)
                    .unwrap_or((x, y));
                out.push(format!("location moved: {fx} → {fy}"));
                if (fx, fy) != (x, y) {
                    out.push(format!(
                        "  in full: {} → {}",
                        shorten(x, 200),
                        shorten(y, 200)
                    ));
                }
            }
            None => out.push(pinpoint(old, new)),
        }
    }
    let line = |sign: &str, text: &str| format!("{sign} {}", shorten(text.trim_end(), 240));
    for text in &old_lines[start.saturating_sub(CONTEXT_LINES)..start] {
        out.push(line(" ", text));
    }
    for (sign, range, lines) in [
        ("-", changed.old_range(), &old_lines),
        ("+", changed.new_range(), &new_lines),
    ] {
        for text in lines[range.clone()].iter().take(MAX_CHANGED_LINES) {
            out.push(line(sign, text));
        }
        if range.len() > MAX_CHANGED_LINES {
            out.push(format!(
                "{sign} … {} more lines",
                range.len() - MAX_CHANGED_LINES
            ));
        }
    }
    let end = changed.old_range().end;
    for text in old_lines.iter().skip(end).take(CONTEXT_LINES) {
        out.push(line(" ", text));
    }
    out
}

/// The byte ranges of the `loc(...)` locations in `text` (outside string
/// literals, with balanced parentheses).
fn location_spans(text: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if c == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        let starts_word = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if starts_word && bytes[i..].starts_with(b"loc(") {
            let start = i;
            let mut depth = 0usize;
            let mut quoted = false;
            while i < bytes.len() {
                match (quoted, bytes[i]) {
                    (true, b'\\') => i += 1,
                    (true, b'"') | (false, b'"') => quoted = !quoted,
                    (false, b'(') => depth += 1,
                    (false, b')') => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            let end = (i + 1).min(bytes.len());
            spans.push(start..end);
            i = end;
            continue;
        }
        i += 1;
    }
    spans
}

/// `text` with every location replaced by `loc(…)`.
fn without_locations(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for span in location_spans(text) {
        out.push_str(&text[last..span.start]);
        out.push_str("loc(…)");
        last = span.end;
    }
    out.push_str(&text[last..]);
    out
}

/// When two lines differ only in their locations, the first pair that differs.
fn moved_location<'t>(old: &'t str, new: &'t str) -> Option<(&'t str, &'t str)> {
    if without_locations(old) != without_locations(new) {
        return None;
    }
    location_spans(old)
        .into_iter()
        .zip(location_spans(new))
        .map(|(x, y)| (&old[x], &new[y]))
        .find(|(x, y)| x != y)
}

/// The file positions in a location: `"file":line:col`, with the range
/// suffix ` to [line]:col` when there is one.
fn file_refs(location: &str) -> Vec<&str> {
    let bytes = location.as_bytes();
    let mut refs = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'"' {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        while i < bytes.len() && bytes[i] != b'"' {
            i += if bytes[i] == b'\\' { 2 } else { 1 };
        }
        i += 1;
        // `:line:col`, then an optional ` to [line]:col`.
        let digits = |mut j: usize| {
            let from = j;
            while j < bytes.len() && bytes[j].is_ascii_digit() {
                j += 1;
            }
            (j > from).then_some(j)
        };
        // `:digits` starting at `j`, returning where it ends.
        let colon_digits = |j: usize| {
            (bytes.get(j) == Some(&b':'))
                .then_some(j + 1)
                .and_then(digits)
        };
        let position = |j: usize| colon_digits(j).and_then(colon_digits);
        let Some(mut end) = position(i) else {
            continue;
        };
        if bytes[end..].starts_with(b" to ") {
            let j = end + 4;
            if let Some(k) = colon_digits(digits(j).unwrap_or(j)) {
                end = k;
            }
        }
        refs.push(&location[start..end]);
        i = end;
    }
    refs
}

/// Where two changed lines first differ, as two short excerpts (also for `why` inside a
/// kernel, whose text the caller reads).
pub fn pinpoint(old: &str, new: &str) -> String {
    let prefix = old
        .char_indices()
        .zip(new.chars())
        .find(|((_, a), b)| a != b)
        .map_or(old.len().min(new.len()), |((i, _), _)| i);
    let excerpt = |text: &str| {
        let from = text[..prefix.min(text.len())]
            .char_indices()
            .rev()
            .nth(30)
            .map_or(0, |(i, _)| i);
        let rest = &text[from..];
        let cut = rest.char_indices().nth(70).map_or(rest.len(), |(i, _)| i);
        format!(
            "{}{}{}",
            if from > 0 { "…" } else { "" },
            &rest[..cut],
            if cut < rest.len() { "…" } else { "" }
        )
    };
    format!(
        "at column {}: {:?} → {:?}",
        old[..prefix.min(old.len())].chars().count() + 1,
        excerpt(old),
        excerpt(new)
    )
}

/// The symbol name of a `func.func`-like line of generic canonical text.
fn function_name(line: &str) -> Option<&str> {
    if !line.contains("func\"()") && !line.contains(".func\"") {
        return None;
    }
    let start = line.find("sym_name = \"")? + "sym_name = \"".len();
    Some(&line[start..start + line[start..].find('"')?])
}

fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Groups flags by name (the text before the first `=`).
fn by_name(flags: &[String]) -> BTreeMap<&str, Vec<&str>> {
    let mut map: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for flag in flags {
        map.entry(flag.split('=').next().unwrap_or_default())
            .or_default()
            .push(flag);
    }
    map
}

fn flags(a: &[String], b: &[String]) -> Vec<String> {
    let (ma, mb) = (by_name(a), by_name(b));
    let mut out = Vec::new();
    for (name, va) in &ma {
        match mb.get(name) {
            None => va
                .iter()
                .for_each(|f| out.push(format!("- {f} (only in A)"))),
            Some(vb) if va != vb => {
                out.push(format!("~ {name}: {} → {}", va.join(" "), vb.join(" ")))
            }
            Some(_) => {}
        }
    }
    for (name, vb) in &mb {
        if !ma.contains_key(name) {
            vb.iter()
                .for_each(|f| out.push(format!("+ {f} (only in B)")));
        }
    }
    if out.is_empty() {
        out.push("the same flags in another form (whitespace around a flag?)".into());
    }
    out
}

fn options(format_a: &str, hashed_a: &str, format_b: &str, hashed_b: &str) -> Vec<String> {
    if format_a != format_b {
        return vec![format!("compile options given as {format_a} → {format_b}")];
    }
    match format_a {
        "proto" => {
            let (Ok(a), Ok(b)) = (STANDARD.decode(hashed_a), STANDARD.decode(hashed_b)) else {
                return vec!["the recorded options are not valid base64".into()];
            };
            match compile_options::diff(&a, &b) {
                Ok(diffs) if !diffs.is_empty() => diffs.iter().map(|d| d.to_string()).collect(),
                Ok(_) => {
                    vec!["the same fields in another encoding (field order or packing)".into()]
                }
                Err(e) => vec![format!("cannot decode the recorded options: {e}")],
            }
        }
        "json" => json_diff(hashed_a, hashed_b),
        _ => vec![],
    }
}

fn json_diff(a: &str, b: &str) -> Vec<String> {
    let (Ok(a), Ok(b)) = (serde_json::from_str(a), serde_json::from_str(b)) else {
        return vec![format!("{a} → {b}")];
    };
    let mut out = Vec::new();
    json_walk("", &a, &b, &mut out);
    out
}

fn json_walk(path: &str, a: &serde_json::Value, b: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value;
    let child = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                match y.get(k) {
                    Some(vb) => json_walk(&child(k), va, vb, out),
                    None => out.push(format!("{}: {va} → (absent)", child(k))),
                }
            }
            for (k, vb) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                out.push(format!("{}: (absent) → {vb}", child(k)));
            }
        }
        _ if a != b => out.push(format!(
            "{}: {a} → {b}",
            if path.is_empty() { "(root)" } else { path }
        )),
        _ => {}
    }
}

fn accelerator(ta: Option<u64>, da: &[String], tb: Option<u64>, db: &[String]) -> Vec<String> {
    match (ta, tb) {
        (Some(x), Some(y)) => vec![format!("topology fingerprint: {x:#018x} → {y:#018x}")],
        (Some(x), None) => vec![format!(
            "topology fingerprint {x:#018x} → no topology (device kinds {db:?})"
        )],
        (None, Some(y)) => vec![format!(
            "no topology (device kinds {da:?}) → topology fingerprint {y:#018x}"
        )],
        (None, None) => {
            let mut out = Vec::new();
            if da.len() != db.len() {
                out.push(format!("device count: {} → {}", da.len(), db.len()));
            }
            for (i, (x, y)) in da.iter().zip(db).enumerate().filter(|(_, (x, y))| x != y) {
                out.push(format!("device {i} kind: {x:?} → {y:?}"));
            }
            out
        }
    }
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.xla_build_line() {
            writeln!(f, "{line}")?;
        }
        if self.same_key() {
            if self.name_only {
                return writeln!(
                    f,
                    "same hash; only the module name differs: {} vs {}",
                    self.key_a, self.key_b
                );
            }
            return writeln!(f, "same key: {}", self.key_a);
        }
        writeln!(f, "A: {}\nB: {}", self.key_a, self.key_b)?;
        for (n, d) in self.differences.iter().enumerate() {
            if n == 0 {
                writeln!(f, "first difference: entry {} \"{}\"", d.position, d.name)?;
            } else {
                writeln!(f, "also differs: entry {} \"{}\"", d.position, d.name)?;
            }
            for line in &d.details {
                writeln!(f, "  {line}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::record::tests::record;

    #[test]
    fn another_xla_build_of_the_same_key_is_named_first() {
        let mut a = record("0.12.0", "");
        let mut b = a.clone();
        assert!(explain(&a, &b).xla_build.is_none());
        a.xla_build = Some("sha256:aa".into());
        assert!(
            explain(&a, &b).xla_build.is_none(),
            "an unknown build says nothing"
        );
        b.xla_build = Some("sha256:bb".into());
        let e = explain(&a, &b);
        assert!(e.same_key());
        let text = e.to_string();
        assert!(
            text.starts_with("XLA build changed: sha256:aa → sha256:bb\nsame key"),
            "{text}"
        );
    }

    #[test]
    fn locations_are_found_outside_strings_with_nested_parentheses() {
        let line = r#"%0 = "a.op"() {s = "loc(not one)"} : () -> () loc(callsite("f"("/x.py":1:2) at "g"("/y.py":3:4)))"#;
        let spans = location_spans(line);
        assert_eq!(spans.len(), 1);
        assert_eq!(
            &line[spans[0].clone()],
            r#"loc(callsite("f"("/x.py":1:2) at "g"("/y.py":3:4)))"#
        );
        assert_eq!(
            without_locations(line),
            r#"%0 = "a.op"() {s = "loc(not one)"} : () -> () loc(…)"#
        );
    }

    #[test]
    fn file_positions_in_a_location() {
        let loc = r#"loc("jit(f)/add"(callsite("f"("/a/m.py":12:24 to :29) at "<module>"("/a/g.py":1:0 to 2:5))))"#;
        assert_eq!(
            file_refs(loc),
            [r#""/a/m.py":12:24 to :29"#, r#""/a/g.py":1:0 to 2:5"#]
        );
        assert_eq!(file_refs(r#"loc("x")"#), Vec::<&str>::new());
    }

    #[test]
    fn a_moved_location_is_named_and_a_code_change_is_not_one() {
        let a = r#"^bb0(%arg0: tensor<4xf32> loc("x"), %arg1: tensor<4xf32> loc("/a/m.py":3:1)):"#;
        let b = r#"^bb0(%arg0: tensor<4xf32> loc("x"), %arg1: tensor<4xf32> loc("/b/m.py":9:1)):"#;
        assert_eq!(
            moved_location(a, b),
            Some((r#"loc("/a/m.py":3:1)"#, r#"loc("/b/m.py":9:1)"#))
        );
        let c = r#"^bb0(%arg0: tensor<5xf32> loc("x"), %arg1: tensor<4xf32> loc("/a/m.py":3:1)):"#;
        assert_eq!(moved_location(a, c), None);
    }

    #[test]
    fn why_says_when_only_locations_differ_and_which_moved_first() {
        let a = "\"func.func\"() <{sym_name = \"main\"}> ({\n  \"a.op\"() : () -> () loc(\"/a/m.py\":3:1)\n}) : () -> () loc(unknown)\n";
        let b = "\"func.func\"() <{sym_name = \"main\"}> ({\n  \"a.op\"() : () -> () loc(\"/b/m.py\":9:1)\n}) : () -> () loc(unknown)\n";
        let details = computation(10, Some(a), 10, Some(b));
        assert!(
            details[0].starts_with("only debug locations differ (1 line"),
            "{details:?}"
        );
        assert!(
            details[1].contains("canonical line 2, in function @main"),
            "{details:?}"
        );
        assert_eq!(
            details[2],
            r#"location moved: "/a/m.py":3:1 → "/b/m.py":9:1"#
        );
        assert_eq!(
            details[3],
            r#"  in full: loc("/a/m.py":3:1) → loc("/b/m.py":9:1)"#
        );
        let code = computation(10, Some(a), 10, Some(&a.replace("a.op", "b.op")));
        assert!(!code.iter().any(|d| d.contains("location")), "{code:?}");
    }

    #[test]
    fn why_says_first_that_the_recipes_differ() {
        // Excluded from 0.11.1 on: the flags entry differs between the two releases.
        let flags = "--xla_tpu_compiler_variant=a";
        let old = record("0.9.2", flags);
        let new = record("0.12.0.1", flags);
        assert_eq!(
            (old.recipe.as_str(), new.recipe.as_str()),
            ("jax-0.8.2", "jax-0.12.0")
        );
        let why = explain(&old, &new);
        let details = &why.differences[0].details;
        assert_eq!(
            details[0],
            "made with different JAX recipes: jax-0.8.2 → jax-0.12.0"
        );
        assert!(
            details
                .iter()
                .any(|l| l.contains("--xla_tpu_compiler_variant added"))
        );
        assert!(why.to_string().contains("different JAX recipes"), "{why}");

        let same = explain(&new, &record("0.12.0", "--xla_other=1"));
        assert!(!same.to_string().contains("recipes"), "{same}");
        // Entries equal under both recipes: the same key, whatever the recipes.
        // The variant is excluded by 0.12: its entries equal 0.9.2's without flags.
        assert!(explain(&record("0.9.2", ""), &new).same_key());
    }
}
