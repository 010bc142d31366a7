//! Canonical JSON compile options, for compilers that take JSON instead of a protobuf
//! (IREE, Triton): the same options must hash the same whatever their key order or spacing.
//!
//! Canonical form: parsed with serde_json, ignored keys dropped, object keys sorted by their
//! UTF-8 bytes at every depth, minified (no spaces), strings and numbers as serde_json writes
//! them. Rules, chosen so that a canonical form never merges two different option sets:
//! - An ignored key is a path from the top-level object: `dump_dir` drops only the top-level
//!   `dump_dir`; `debug.dump_dir` drops `dump_dir` inside the top-level `debug` object. A plain
//!   name never matches deeper down, where the same name may mean something that matters.
//!   Arrays on the way are crossed element by element (`passes.verbose` drops `verbose` from
//!   every object in the `passes` array). `\.` is a literal dot and `\\` a backslash.
//! - Duplicate keys: the last one wins (as in Python's `json`).
//! - Integers keep their exact digits, however large (serde_json's `arbitrary_precision`):
//!   rounding could let two different values share a key.
//! - Other numbers go through f64 (`1e2` and `100.0` are the same option).

use serde_json::Value;

use super::OptionsError;

/// The canonical bytes of JSON compile options, without the `ignored_keys` paths.
pub fn canonical_json(input: &[u8], ignored_keys: &[String]) -> Result<Vec<u8>, OptionsError> {
    let mut value: Value = serde_json::from_slice(input).map_err(|e| {
        let text = e.to_string();
        let message = match text.rsplit_once(" at line ") {
            Some((m, _)) => m.to_string(),
            None => text,
        };
        OptionsError::Json {
            message,
            line: e.line(),
            column: e.column(),
        }
    })?;
    for key in ignored_keys {
        let path = split_path(key)?;
        remove_path(&mut value, &path);
    }
    canonicalize(&mut value);
    Ok(value.to_string().into_bytes())
}

/// Splits `a.b\.c` into `["a", "b.c"]`.
fn split_path(key: &str) -> Result<Vec<String>, OptionsError> {
    let bad = |reason| OptionsError::BadIgnoredKey {
        key: key.to_string(),
        reason,
    };
    let mut parts = vec![String::new()];
    let mut chars = key.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(next @ ('.' | '\\')) => push_char(&mut parts, next),
                Some(_) => return Err(bad("only \\. and \\\\ are escapes")),
                None => return Err(bad("ends with a backslash")),
            },
            '.' => parts.push(String::new()),
            c => push_char(&mut parts, c),
        }
    }
    if parts.iter().any(String::is_empty) {
        return Err(bad("empty path segment"));
    }
    Ok(parts)
}

fn push_char(parts: &mut [String], c: char) {
    if let Some(last) = parts.last_mut() {
        last.push(c);
    }
}

fn remove_path(value: &mut Value, path: &[String]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    match value {
        Value::Object(map) => {
            if rest.is_empty() {
                map.shift_remove(first);
            } else if let Some(child) = map.get_mut(first) {
                remove_path(child, rest);
            }
        }
        Value::Array(items) => {
            for item in items {
                remove_path(item, path);
            }
        }
        _ => {}
    }
}

/// Sorts object keys at every depth (serde_json's parser bounds the depth at 128) and spells
/// every non-integer number as its shortest f64 form.
fn canonicalize(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.sort_keys();
            for (_, v) in map.iter_mut() {
                canonicalize(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(canonicalize),
        Value::Number(n) => {
            let text = n.to_string();
            if text.contains(['.', 'e', 'E'])
                && let Some(f) = n.as_f64().and_then(serde_json::Number::from_f64)
            {
                *n = f;
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str, ignored: &[&str]) -> Result<String, OptionsError> {
        let ignored: Vec<String> = ignored.iter().map(|s| s.to_string()).collect();
        canonical_json(s.as_bytes(), &ignored).map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn keys_sorted_at_every_depth_and_minified() {
        assert_eq!(
            canon(
                r#"{ "b": 1, "a": { "z": [ {"y": 2, "x": 1} ], "c": "é" } }"#,
                &[]
            )
            .unwrap(),
            r#"{"a":{"c":"é","z":[{"x":1,"y":2}]},"b":1}"#
        );
    }

    #[test]
    fn ignored_keys_are_paths_from_the_top() {
        let input = r#"{"dump_dir":"/tmp/a","debug":{"dump_dir":"/tmp/b","level":3},
                       "passes":[{"name":"x","verbose":true},{"name":"y"}],"a.b":1}"#;
        assert_eq!(
            canon(input, &["dump_dir"]).unwrap(),
            r#"{"a.b":1,"debug":{"dump_dir":"/tmp/b","level":3},"passes":[{"name":"x","verbose":true},{"name":"y"}]}"#
        );
        assert_eq!(
            canon(
                input,
                &["debug.dump_dir", "passes.verbose", "a\\.b", "missing.key"]
            )
            .unwrap(),
            r#"{"debug":{"level":3},"dump_dir":"/tmp/a","passes":[{"name":"x"},{"name":"y"}]}"#
        );
    }

    #[test]
    fn same_options_same_bytes() {
        let a = canon("{\"x\": 1.0, \"y\": [1, 2]}", &[]).unwrap();
        let b = canon("{\"y\":[1,2],\n \"x\":1e0}", &[]).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, canon(r#"{"x": 1.0, "y": [2, 1]}"#, &[]).unwrap());
        assert_eq!(canon(r#"{"k": 1, "k": 2}"#, &[]).unwrap(), r#"{"k":2}"#);
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = canon("{\n  \"a\": 1,\n  \"b\": }", &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid json at line 3, column 8: expected value"
        );
        // Integers beyond 64 bits stay exact, so neighbours never merge.
        assert_eq!(
            canon("{\"a\":\n [1, 18446744073709551616]}", &[]).unwrap(),
            r#"{"a":[1,18446744073709551616]}"#
        );
        assert_ne!(
            canon("[18446744073709551616]", &[]).unwrap(),
            canon("[18446744073709551617]", &[]).unwrap()
        );
        assert!(
            canon(
                r#"{"s": "99999999999999999999", "n": -9223372036854775808}"#,
                &[]
            )
            .is_ok()
        );
        let e = canon("{}", &["a..b"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "bad ignored key \"a..b\": empty path segment"
        );
        assert!(canon("{}", &["a\\"]).is_err());
        let deep = "[".repeat(10_000);
        assert!(matches!(canon(&deep, &[]), Err(OptionsError::Json { .. })));
    }
}
