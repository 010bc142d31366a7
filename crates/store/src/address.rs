//! Addresses: readable names for cache entries, such as
//! `train-v1/jit_step` or `train-v1/answer[model:"small",prompt:"math"]` —
//! a path of local names, then mapped keys with quoted values, sorted by key.
//!
//! Addresses are rows in the registry, never file paths, and every local name
//! is validated (no `/`, `[`, `]`, no empty name, `.` or `..`, no control
//! characters), so no address can reach outside the cache.

use std::fmt;

/// Longest local name or mapped key accepted.
const MAX_NAME_LEN: usize = 255;
/// Longest mapped value accepted (bytes).
pub const MAX_VALUE_LEN: usize = 1024;
/// Longest address or pattern accepted (bytes, as written): addresses come from command lines,
/// environment variables and imported archives, and are printed in tables.
pub const MAX_ADDRESS_LEN: usize = 4096;
/// How much of a rejected address an error message repeats.
const SHOWN_LEN: usize = 100;

/// `text` (in an error message) is at most [`SHOWN_LEN`] bytes of the input, then its length.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid address {text:?}: {reason}")]
pub struct AddressError {
    pub text: String,
    pub reason: String,
}

impl AddressError {
    fn new(text: &str, reason: String) -> AddressError {
        AddressError {
            text: shorten(text),
            reason,
        }
    }
}

/// The start of a long input, with its length: never echo 100 kB back at a user.
pub fn shorten(text: &str) -> String {
    if text.len() <= SHOWN_LEN {
        return text.to_owned();
    }
    let mut end = SHOWN_LEN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len())
}

fn check_len(text: &str) -> Result<(), String> {
    if text.len() > MAX_ADDRESS_LEN {
        return Err(format!(
            "it is {} bytes long; an address may have at most {MAX_ADDRESS_LEN}",
            text.len()
        ));
    }
    Ok(())
}

/// A parsed, validated address.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Address {
    path: Vec<String>,
    mapped: Vec<(String, String)>,
}

/// Checks one local name (a path segment) or mapped key.
pub fn check_name(name: &str, what: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!("empty {what}"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!("{what} is longer than {MAX_NAME_LEN} bytes"));
    }
    if name == "." || name == ".." {
        return Err(format!("{what} {name:?} is not allowed"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| matches!(c, '/' | '[' | ']' | '"' | '\\') || c.is_control())
    {
        return Err(format!(
            "{what} {name:?} contains {c:?}, which is not allowed in a name"
        ));
    }
    Ok(())
}

/// Checks a run id: a local name, and no wildcards or spaces.
pub fn check_run_id(id: &str) -> Result<(), String> {
    check_name(id, "run id")?;
    match id.chars().find(|c| matches!(c, '*' | '?' | ' ')) {
        Some(c) => Err(format!("contains {c:?}")),
        None => Ok(()),
    }
}

fn check_key(key: &str) -> Result<(), String> {
    check_name(key, "mapped key")?;
    match key
        .chars()
        .find(|c| matches!(c, ':' | ',' | '=' | '*' | ' '))
    {
        Some(c) => Err(format!("mapped key {key:?} contains {c:?}")),
        None => Ok(()),
    }
}

fn check_value(value: &str) -> Result<(), String> {
    if value.len() > MAX_VALUE_LEN {
        return Err(format!(
            "a mapped value is {} bytes long; at most {MAX_VALUE_LEN} are allowed",
            value.len()
        ));
    }
    match value.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!(
            "mapped value {value:?} contains the control character {c:?}"
        )),
        None => Ok(()),
    }
}

impl Address {
    /// Builds an address from local names and mapped keys (sorted by key;
    /// a key given twice is an error).
    pub fn new(
        path: Vec<String>,
        mut mapped: Vec<(String, String)>,
    ) -> Result<Address, AddressError> {
        let address = Address {
            path: path.clone(),
            mapped: mapped.clone(),
        };
        let text = address.to_string();
        let fail = |reason: String| AddressError::new(&text, reason);
        check_len(&text).map_err(fail)?;
        if path.is_empty() {
            return Err(fail("an address needs at least one name".into()));
        }
        for name in &path {
            check_name(name, "local name").map_err(fail)?;
        }
        for (key, value) in &mapped {
            check_key(key).map_err(fail)?;
            check_value(value).map_err(fail)?;
        }
        mapped.sort();
        if let Some(pair) = mapped.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(fail(format!("mapped key {:?} appears twice", pair[0].0)));
        }
        Ok(Address { path, mapped })
    }

    /// Parses `a/b/c[key:"value",…]`.
    pub fn parse(text: &str) -> Result<Address, AddressError> {
        let fail = |reason: String| AddressError::new(text, reason);
        check_len(text).map_err(fail)?;
        let (path, mapped) = split(text).map_err(fail)?;
        let mapped = mapped
            .into_iter()
            .map(|(k, v)| match v {
                Value::Exact(v) => Ok((k, v)),
                Value::Any => Err(fail(format!(
                    "mapped key {k:?} has the wildcard * (only patterns may)"
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Address::new(path.into_iter().map(|s| s.to_string()).collect(), mapped)
            .map_err(|e| fail(e.reason))
    }

    /// The last local name (the step).
    pub fn local_name(&self) -> &str {
        self.path.last().map_or("", String::as_str)
    }

    pub fn path(&self) -> &[String] {
        &self.path
    }

    pub fn mapped(&self) -> &[(String, String)] {
        &self.mapped
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path.join("/"))?;
        if !self.mapped.is_empty() {
            f.write_str("[")?;
            for (i, (key, value)) in self.mapped.iter().enumerate() {
                if i > 0 {
                    f.write_str(",")?;
                }
                write!(
                    f,
                    "{key}:\"{}\"",
                    value.replace('\\', "\\\\").replace('"', "\\\"")
                )?;
            }
            f.write_str("]")?;
        }
        Ok(())
    }
}

enum Value {
    Exact(String),
    Any,
}

/// Local names and mapped pairs of an address or pattern, before validation.
type Parts<'a> = (Vec<&'a str>, Vec<(String, Value)>);

/// Splits `a/b[k:"v",k2:*]` into names and mapped pairs (no validation of names).
fn split(text: &str) -> Result<Parts<'_>, String> {
    let (path, rest) = match text.find('[') {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    let names: Vec<&str> = path.split('/').collect();
    let mut mapped = Vec::new();
    if let Some(rest) = rest {
        let body = rest
            .strip_suffix(']')
            .ok_or_else(|| "mapped keys must end with ']'".to_string())?;
        let mut chars = body.chars().peekable();
        while chars.peek().is_some() {
            let key: String = chars.by_ref().take_while(|&c| c != ':').collect();
            let value = match chars.peek() {
                Some('*') => {
                    chars.next();
                    Value::Any
                }
                Some('"') => {
                    chars.next();
                    let mut value = String::new();
                    loop {
                        match chars.next() {
                            Some('\\') => {
                                value.push(chars.next().ok_or("dangling escape in a value")?)
                            }
                            Some('"') => break,
                            Some(c) => value.push(c),
                            None => {
                                return Err(format!("unterminated value of mapped key {key:?}"));
                            }
                        }
                    }
                    Value::Exact(value)
                }
                _ => {
                    return Err(format!(
                        "mapped key {key:?} needs a quoted value (key:\"value\")"
                    ));
                }
            };
            mapped.push((key, value));
            match chars.next() {
                None => break,
                Some(',') if chars.peek().is_some() => {}
                Some(c) => {
                    return Err(format!(
                        "expected ',' or ']' after a mapped value, found {c:?}"
                    ));
                }
            }
        }
    }
    Ok((names, mapped))
}

/// An address pattern: names may be `*` (any one name), mapped values may be
/// `*`; a pattern matches every address below its path, and, without mapped
/// keys, any mapped keys.
#[derive(Debug, Clone)]
pub struct AddressPattern {
    path: Vec<Option<String>>,
    mapped: Option<Vec<(String, Option<String>)>>,
}

impl AddressPattern {
    pub fn parse(text: &str) -> Result<AddressPattern, AddressError> {
        let fail = |reason: String| AddressError::new(text, reason);
        check_len(text).map_err(fail)?;
        let (names, mapped) = split(text).map_err(fail)?;
        let path = names
            .into_iter()
            .map(|n| {
                if n == "*" {
                    Ok(None)
                } else {
                    check_name(n, "local name")
                        .map(|()| Some(n.to_string()))
                        .map_err(fail)
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mapped = if text.contains('[') {
            let mut pairs = mapped
                .into_iter()
                .map(|(k, v)| {
                    check_key(&k).map_err(fail)?;
                    Ok((
                        k,
                        match v {
                            Value::Exact(v) => Some(v),
                            Value::Any => None,
                        },
                    ))
                })
                .collect::<Result<Vec<_>, _>>()?;
            pairs.sort();
            Some(pairs)
        } else {
            None
        };
        Ok(AddressPattern { path, mapped })
    }

    pub fn matches(&self, address: &Address) -> bool {
        if self.path.len() > address.path.len() {
            return false;
        }
        let names_match = self
            .path
            .iter()
            .zip(&address.path)
            .all(|(p, n)| p.as_ref().is_none_or(|p| p == n));
        let keyed = self.path.len() == address.path.len();
        names_match
            && match &self.mapped {
                None => true,
                Some(pairs) => {
                    keyed
                        && pairs.len() == address.mapped.len()
                        && pairs.iter().zip(&address.mapped).all(|((pk, pv), (k, v))| {
                            pk == k && pv.as_ref().is_none_or(|pv| pv == v)
                        })
                }
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print_round_trip_with_sorted_keys() {
        let a = Address::parse(r#"train-v1/answer[prompt:"math",model:"small"]"#).unwrap();
        assert_eq!(
            a.to_string(),
            r#"train-v1/answer[model:"small",prompt:"math"]"#
        );
        assert_eq!(a.local_name(), "answer");
        let quoted =
            Address::new(vec!["r".into()], vec![("k".into(), "a \"b\" \\c".into())]).unwrap();
        assert_eq!(Address::parse(&quoted.to_string()).unwrap(), quoted);
    }

    #[test]
    fn hostile_names_are_refused() {
        for bad in [
            "",
            "a//b",
            "a/./b",
            "a/../b",
            "..",
            "a/b]",
            "a[b/c",
            r#"a[k:"v""#,
            "a[k:v]",
            "a\u{0}b",
            r#"a[k:"v",k:"w"]"#,
            "a[k:*]",
            r#"a[k y:"v"]"#,
        ] {
            assert!(Address::parse(bad).is_err(), "{bad:?} must be refused");
        }
        let e = Address::new(vec!["a/b".into()], vec![]).unwrap_err();
        assert!(e.reason.contains("'/'"), "{e}");
    }

    #[test]
    fn lengths_are_bounded_and_errors_stay_short() {
        let long = "a".repeat(100_000);
        for text in [
            long.clone(),
            format!("ns/step[k:\"{long}\"]"),
            vec!["n"; 3000].join("/"),
        ] {
            let e = Address::parse(&text).unwrap_err();
            assert!(e.to_string().len() < 400, "{e}");
            assert!(e.text.ends_with(&format!("({} bytes)", text.len())), "{e}");
            assert!(AddressPattern::parse(&text).is_err());
        }
        let e = Address::new(vec!["ns".into()], vec![("k".into(), "v".repeat(2000))]).unwrap_err();
        assert!(e.reason.contains("at most 1024"), "{e}");
        assert!(check_run_id(&format!("{long}/x")).unwrap_err().len() < 100);
        let fits = Address::new(vec!["ns".into()], vec![("k".into(), "v".repeat(1024))]);
        assert!(fits.is_ok());
    }

    #[test]
    fn patterns_match_below_their_path_and_wildcard_values() {
        let a = Address::parse(r#"t/answer[model:"small",prompt:"math"]"#).unwrap();
        let yes = [
            r#"t/answer[model:"small",prompt:*]"#,
            "t/answer",
            "t",
            "*/answer",
            r#"t/answer[prompt:*,model:*]"#,
        ];
        let no = [
            r#"t/answer[model:"big",prompt:*]"#,
            r#"t/answer[model:*]"#,
            "u",
            "t/answer/x",
            r#"t[model:*,prompt:*]"#,
        ];
        for p in yes {
            assert!(AddressPattern::parse(p).unwrap().matches(&a), "{p}");
        }
        for p in no {
            assert!(!AddressPattern::parse(p).unwrap().matches(&a), "{p}");
        }
    }
}
