//! Addresses: readable names for cache entries, such as `train-v1/jit_step`,
//! `train-v1/answer[model:"small",prompt:"math"]`, `eval/sample[seed:2]` or
//! `qa-v1/summarize[model:"small"]/mean` — a path of segments, each a local
//! name with optional mapped keys (string values quoted, integer values bare),
//! kept in the order given.
//!
//! Addresses are rows in the registry, never file paths, and every local name
//! is validated (no `/`, `[`, `]`, no empty name, `.` or `..`, no control
//! characters), so no address can reach outside the cache. Every length is
//! bounded.

use std::fmt;

/// Longest local name or mapped key accepted.
const MAX_NAME_LEN: usize = 255;
/// Longest mapped string value accepted (bytes).
pub const MAX_VALUE_LEN: usize = 1024;
/// Most segments, and most mapped keys in one segment.
const MAX_PARTS: usize = 64;
/// Longest address or pattern accepted (bytes, as written): addresses come from command lines,
/// environment variables and imported archives, and are printed in tables.
pub const MAX_ADDRESS_LEN: usize = 4096;
/// How much of a rejected input an error message repeats.
const SHOWN_LEN: usize = 100;

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

/// A mapped key's value: a string (`model:"small"`) or an integer (`sample:2`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MappedValue {
    Str(String),
    Int(i64),
}

impl MappedValue {
    /// A value given on a command line (`--map sample=2`): an integer when it reads as one.
    pub fn from_text(text: &str) -> MappedValue {
        match text.parse::<i64>() {
            Ok(n) if n.to_string() == text => MappedValue::Int(n),
            _ => MappedValue::Str(text.to_string()),
        }
    }
}

impl fmt::Display for MappedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MappedValue::Int(n) => write!(f, "{n}"),
            MappedValue::Str(s) => {
                write!(f, "\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
            }
        }
    }
}

/// One segment: a local name and its mapped keys, in the order given.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Segment {
    pub name: String,
    pub mapped: Vec<(String, MappedValue)>,
}

impl Segment {
    pub fn named(name: impl Into<String>) -> Segment {
        Segment {
            name: name.into(),
            mapped: Vec::new(),
        }
    }
}

/// A parsed, validated address.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Address {
    segments: Vec<Segment>,
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

fn check_value(key: &str, value: &MappedValue) -> Result<(), String> {
    let MappedValue::Str(value) = value else {
        return Ok(());
    };
    if value.len() > MAX_VALUE_LEN {
        return Err(format!(
            "the value of mapped key {key:?} is longer than {MAX_VALUE_LEN} bytes"
        ));
    }
    match value.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!(
            "the value of mapped key {key:?} contains the control character {c:?}"
        )),
        None => Ok(()),
    }
}

fn check_segment(segment: &Segment) -> Result<(), String> {
    check_name(&segment.name, "local name")?;
    if segment.mapped.len() > MAX_PARTS {
        return Err(format!("more than {MAX_PARTS} mapped keys in one segment"));
    }
    for (i, (key, value)) in segment.mapped.iter().enumerate() {
        check_key(key)?;
        check_value(key, value)?;
        if segment.mapped[..i].iter().any(|(k, _)| k == key) {
            return Err(format!("mapped key {key:?} appears twice"));
        }
    }
    Ok(())
}

impl Address {
    /// Builds an address from its segments (mapped keys kept in the order given; a key given
    /// twice in one segment is an error).
    pub fn new(segments: Vec<Segment>) -> Result<Address, AddressError> {
        let address = Address { segments };
        let text = address.to_string();
        let fail = |reason: String| AddressError::new(&text, reason);
        if address.segments.is_empty() {
            return Err(fail("an address needs at least one name".into()));
        }
        if address.segments.len() > MAX_PARTS {
            return Err(fail(format!("more than {MAX_PARTS} segments")));
        }
        for segment in &address.segments {
            check_segment(segment).map_err(fail)?;
        }
        if text.len() > MAX_ADDRESS_LEN {
            return Err(fail(format!("longer than {MAX_ADDRESS_LEN} bytes")));
        }
        Ok(address)
    }

    /// An address of plain local names, with `mapped` on the last one.
    pub fn from_names(
        names: impl IntoIterator<Item = String>,
        mapped: Vec<(String, MappedValue)>,
    ) -> Result<Address, AddressError> {
        let mut segments: Vec<Segment> = names.into_iter().map(Segment::named).collect();
        if let Some(last) = segments.last_mut() {
            last.mapped = mapped;
        }
        Address::new(segments)
    }

    /// This address with `mapped` appended to its last segment's keys.
    pub fn with_mapped(
        mut self,
        mapped: Vec<(String, MappedValue)>,
    ) -> Result<Address, AddressError> {
        if let Some(last) = self.segments.last_mut() {
            last.mapped.extend(mapped);
        }
        Address::new(self.segments)
    }

    /// Parses `a/b[k:"v",n:2]/c`.
    pub fn parse(text: &str) -> Result<Address, AddressError> {
        let fail = |reason: String| AddressError::new(text, reason);
        let segments = split_bounded(text)?
            .into_iter()
            .map(|raw| {
                let mapped = raw
                    .mapped
                    .into_iter()
                    .map(|(k, v)| match v {
                        Some(v) => Ok((k, v)),
                        None => Err(fail(format!(
                            "mapped key {k:?} has the wildcard * (only patterns may)"
                        ))),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Segment {
                    name: raw.name.to_string(),
                    mapped,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Address::new(segments).map_err(|e| fail(e.reason))
    }

    /// The last local name (the step).
    pub fn local_name(&self) -> &str {
        self.segments.last().map_or("", |s| s.name.as_str())
    }

    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.segments.iter().enumerate() {
            if i > 0 {
                f.write_str("/")?;
            }
            f.write_str(&segment.name)?;
            write_mapped(f, segment.mapped.iter().map(|(k, v)| (k, Some(v))))?;
        }
        Ok(())
    }
}

fn write_mapped<'a>(
    f: &mut fmt::Formatter<'_>,
    mapped: impl ExactSizeIterator<Item = (&'a String, Option<&'a MappedValue>)>,
) -> fmt::Result {
    if mapped.len() == 0 {
        return Ok(());
    }
    f.write_str("[")?;
    for (i, (key, value)) in mapped.enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        match value {
            Some(v) => write!(f, "{key}:{v}")?,
            None => write!(f, "{key}:*")?,
        }
    }
    f.write_str("]")
}

/// One segment before validation; `None` values are `*`.
struct RawSegment<'a> {
    name: &'a str,
    mapped: PatternPairs,
    /// Whether the segment had brackets at all (a pattern without them matches any keys).
    bracketed: bool,
}

/// Splits `a/b[k:"v",n:2,m:*]/c` into segments (names are validated by the caller).
/// [`split`] of a text no longer than [`MAX_ADDRESS_LEN`], with the error naming it.
fn split_bounded(text: &str) -> Result<Vec<RawSegment<'_>>, AddressError> {
    if text.len() > MAX_ADDRESS_LEN {
        let reason = format!("longer than {MAX_ADDRESS_LEN} bytes");
        return Err(AddressError::new(text, reason));
    }
    split(text).map_err(|reason| AddressError::new(text, reason))
}

fn split(text: &str) -> Result<Vec<RawSegment<'_>>, String> {
    let mut segments = Vec::new();
    let mut rest = text;
    loop {
        let end = rest.find(['/', '[']).unwrap_or(rest.len());
        let name = &rest[..end];
        rest = &rest[end..];
        let (mapped, bracketed) = if let Some(body) = rest.strip_prefix('[') {
            let (mapped, after) = split_mapped(body)?;
            rest = after;
            (mapped, true)
        } else {
            (Vec::new(), false)
        };
        segments.push(RawSegment {
            name,
            mapped,
            bracketed,
        });
        if segments.len() > MAX_PARTS {
            return Err(format!("more than {MAX_PARTS} segments"));
        }
        match rest.strip_prefix('/') {
            Some(after) => rest = after,
            None if rest.is_empty() => return Ok(segments),
            None => return Err(format!("expected '/' after ']', found {rest:?}")),
        }
    }
}

/// Mapped pairs of a pattern segment; `None` values are `*`.
type PatternPairs = Vec<(String, Option<MappedValue>)>;

/// Parses `k:"v",n:2,m:*]…` up to and including the `]`; returns the pairs and what follows.
fn split_mapped(body: &str) -> Result<(PatternPairs, &str), String> {
    let mut mapped = Vec::new();
    let mut chars = body.char_indices().peekable();
    loop {
        let key: String = chars
            .by_ref()
            .map(|(_, c)| c)
            .take_while(|&c| c != ':')
            .collect();
        let value = match chars.peek().map(|&(_, c)| c) {
            Some('*') => {
                chars.next();
                None
            }
            Some('"') => {
                chars.next();
                let mut value = String::new();
                loop {
                    match chars.next().map(|(_, c)| c) {
                        Some('\\') => value.push(
                            chars
                                .next()
                                .map(|(_, c)| c)
                                .ok_or("dangling escape in a value")?,
                        ),
                        Some('"') => break,
                        Some(c) => value.push(c),
                        None => return Err(format!("unterminated value of mapped key {key:?}")),
                    }
                    if value.len() > MAX_VALUE_LEN {
                        return Err(format!(
                            "the value of mapped key {key:?} is longer than {MAX_VALUE_LEN} bytes"
                        ));
                    }
                }
                Some(MappedValue::Str(value))
            }
            Some(c) if c == '-' || c.is_ascii_digit() => {
                let mut digits = String::new();
                while let Some(&(_, c)) = chars.peek() {
                    if c == '-' || c.is_ascii_digit() {
                        digits.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                let n = digits
                    .parse::<i64>()
                    .ok()
                    .filter(|n| n.to_string() == digits)
                    .ok_or_else(|| format!("mapped key {key:?}: {digits:?} is not an integer"))?;
                Some(MappedValue::Int(n))
            }
            _ => {
                return Err(format!(
                    "mapped key {key:?} needs a quoted string or an integer value (key:\"value\", key:2)"
                ));
            }
        };
        mapped.push((key, value));
        if mapped.len() > MAX_PARTS {
            return Err(format!("more than {MAX_PARTS} mapped keys in one segment"));
        }
        match chars.next() {
            Some((i, ']')) => return Ok((mapped, &body[i + 1..])),
            Some((_, ',')) => {}
            Some((_, c)) => {
                return Err(format!(
                    "expected ',' or ']' after a mapped value, found {c:?}"
                ));
            }
            None => return Err("mapped keys must end with ']'".into()),
        }
    }
}

/// An address pattern: names may be `*` (any one name), mapped values may be `*`; a pattern
/// matches every address below its path, and a segment without brackets matches any mapped keys.
#[derive(Debug, Clone)]
pub struct AddressPattern {
    segments: Vec<PatternSegment>,
}

#[derive(Debug, Clone)]
struct PatternSegment {
    /// `None`: any name.
    name: Option<String>,
    /// `None`: any mapped keys; else these keys in this order, `None` values matching any value.
    mapped: Option<PatternPairs>,
}

impl AddressPattern {
    pub fn parse(text: &str) -> Result<AddressPattern, AddressError> {
        let fail = |reason: String| AddressError::new(text, reason);
        let segments = split_bounded(text)?
            .into_iter()
            .map(|raw| {
                let name = if raw.name == "*" {
                    None
                } else {
                    check_name(raw.name, "local name").map_err(fail)?;
                    Some(raw.name.to_string())
                };
                for (key, value) in &raw.mapped {
                    check_key(key).map_err(fail)?;
                    if let Some(v) = value {
                        check_value(key, v).map_err(fail)?;
                    }
                }
                Ok(PatternSegment {
                    name,
                    mapped: raw.bracketed.then_some(raw.mapped),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AddressPattern { segments })
    }

    pub fn matches(&self, address: &Address) -> bool {
        self.segments.len() <= address.segments.len()
            && self
                .segments
                .iter()
                .zip(&address.segments)
                .all(|(p, s)| p.matches(s))
    }
}

impl PatternSegment {
    fn matches(&self, segment: &Segment) -> bool {
        self.name.as_ref().is_none_or(|n| *n == segment.name)
            && self.mapped.as_ref().is_none_or(|pairs| {
                pairs.len() == segment.mapped.len()
                    && pairs
                        .iter()
                        .zip(&segment.mapped)
                        .all(|((pk, pv), (k, v))| pk == k && pv.as_ref().is_none_or(|pv| pv == v))
            })
    }
}

impl fmt::Display for AddressPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.segments.iter().enumerate() {
            if i > 0 {
                f.write_str("/")?;
            }
            f.write_str(segment.name.as_deref().unwrap_or("*"))?;
            if let Some(mapped) = &segment.mapped {
                write_mapped(f, mapped.iter().map(|(k, v)| (k, v.as_ref())))?;
            }
        }
        Ok(())
    }
}

/// The narrowest pattern that matches every address of `addresses` (all of one shape: the same
/// names' count and the same mapped keys per segment): names and values that differ become `*`.
/// `None` when the addresses differ in shape.
pub fn common_pattern(addresses: &[Address]) -> Option<AddressPattern> {
    let first = addresses.first()?;
    let same_shape = addresses.iter().all(|a| {
        a.segments.len() == first.segments.len()
            && a.segments.iter().zip(&first.segments).all(|(s, t)| {
                s.mapped.len() == t.mapped.len()
                    && s.mapped
                        .iter()
                        .zip(&t.mapped)
                        .all(|((k, _), (l, _))| k == l)
            })
    });
    if !same_shape {
        return None;
    }
    let segments = first
        .segments
        .iter()
        .enumerate()
        .map(|(i, seg)| {
            let all_names_equal = addresses.iter().all(|a| a.segments[i].name == seg.name);
            PatternSegment {
                name: all_names_equal.then(|| seg.name.clone()),
                mapped: Some(
                    seg.mapped
                        .iter()
                        .enumerate()
                        .map(|(j, (key, value))| {
                            let same = addresses
                                .iter()
                                .all(|a| a.segments[i].mapped[j].1 == *value);
                            (key.clone(), same.then(|| value.clone()))
                        })
                        .collect(),
                ),
            }
        })
        .collect();
    Some(AddressPattern { segments })
}

/// The key that groups addresses into patterns: names of segments whose values may vary
/// and the mapped keys, in order.
pub fn shape_of(address: &Address) -> String {
    address
        .segments
        .iter()
        .map(|s| {
            let keys: Vec<&str> = s.mapped.iter().map(|(k, _)| k.as_str()).collect();
            format!("{}[{}]", s.name, keys.join(","))
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print_round_trip_keeping_the_order_given() {
        let a = Address::parse(r#"train-v1/answer[prompt:"math",model:"small"]"#).unwrap();
        assert_eq!(
            a.to_string(),
            r#"train-v1/answer[prompt:"math",model:"small"]"#
        );
        assert_eq!(a.local_name(), "answer");
        let quoted = Address::from_names(
            ["r".to_string()],
            vec![("k".into(), MappedValue::Str("a \"b\" \\c".into()))],
        )
        .unwrap();
        assert_eq!(Address::parse(&quoted.to_string()).unwrap(), quoted);
    }

    #[test]
    fn nested_paths_under_mapped_parents_and_integer_values() {
        let text = r#"qa-v1/summarize[model:"small"]/mean"#;
        let a = Address::parse(text).unwrap();
        assert_eq!(a.to_string(), text);
        assert_eq!(a.local_name(), "mean");
        assert_eq!(a.segments().len(), 3);
        let s = Address::parse("eval/sample[sample:2,seed:-7]").unwrap();
        assert_eq!(
            s.segments()[1].mapped,
            vec![
                ("sample".into(), MappedValue::Int(2)),
                ("seed".into(), MappedValue::Int(-7))
            ]
        );
        assert_eq!(s.to_string(), "eval/sample[sample:2,seed:-7]");
        // An integer and the string of its digits are different values.
        assert_ne!(
            s,
            Address::parse(r#"eval/sample[sample:"2",seed:-7]"#).unwrap()
        );
        assert_eq!(MappedValue::from_text("2"), MappedValue::Int(2));
        assert_eq!(MappedValue::from_text("02"), MappedValue::Str("02".into()));
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
            "a[k:1x]",
            "a[k:99999999999999999999]",
            r#"a[k:"v"]b"#,
        ] {
            assert!(Address::parse(bad).is_err(), "{bad:?} must be refused");
        }
        let e = Address::from_names(["a/b".to_string()], vec![]).unwrap_err();
        assert!(e.reason.contains("'/'"), "{e}");
    }

    #[test]
    fn huge_addresses_are_refused_with_a_short_message() {
        let long = format!("a[k:\"{}\"]", "x".repeat(100_000));
        let e = Address::parse(&long).unwrap_err();
        assert!(e.to_string().len() < 400, "{e}");
        let deep = vec!["a"; 1000].join("/");
        assert!(Address::parse(&deep).is_err());
        assert!(AddressPattern::parse(&long).is_err());
    }

    #[test]
    fn patterns_match_below_their_path_and_wildcard_values() {
        let a = Address::parse(r#"t/answer[model:"small",prompt:"math"]"#).unwrap();
        let yes = [
            r#"t/answer[model:"small",prompt:*]"#,
            "t/answer",
            "t",
            "*/answer",
            r#"t/answer[model:*,prompt:*]"#,
        ];
        let no = [
            r#"t/answer[model:"big",prompt:*]"#,
            r#"t/answer[model:*]"#,
            r#"t/answer[prompt:*,model:*]"#,
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
        let nested = Address::parse(r#"qa/sum[model:"small"]/mean"#).unwrap();
        assert!(
            AddressPattern::parse("qa/sum[model:*]/mean")
                .unwrap()
                .matches(&nested)
        );
        assert!(
            AddressPattern::parse("qa/sum/mean")
                .unwrap()
                .matches(&nested)
        );
        assert!(
            !AddressPattern::parse(r#"qa/sum[model:"big"]"#)
                .unwrap()
                .matches(&nested)
        );
    }

    #[test]
    fn common_patterns_star_what_varies() {
        let addresses: Vec<Address> = [
            r#"t/answer[model:"small",prompt:1]"#,
            r#"t/answer[model:"small",prompt:2]"#,
        ]
        .iter()
        .map(|t| Address::parse(t).unwrap())
        .collect();
        let p = common_pattern(&addresses).unwrap();
        assert_eq!(p.to_string(), r#"t/answer[model:"small",prompt:*]"#);
        assert!(addresses.iter().all(|a| p.matches(a)));
        assert_eq!(shape_of(&addresses[0]), shape_of(&addresses[1]));
        let other = Address::parse("t/answer").unwrap();
        assert!(common_pattern(&[addresses[0].clone(), other]).is_none());
    }
}
