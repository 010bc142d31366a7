//! Refusing JSON that two readers could read differently: with a key twice
//! in one object, serde_json keeps the last value and another parser may
//! keep the first, so two configs a compiler may read differently would
//! share a key.

use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use std::collections::HashSet;
use std::fmt;

/// Fails on the first key that appears twice in one object, naming it and
/// its path (`custom_call_config.body`).
pub(super) fn reject_duplicate_keys(text: &str) -> Result<(), serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    Unique { path: "" }.deserialize(&mut deserializer)
}

/// Visits a value, checking every object in it; `path` names the value.
struct Unique<'p> {
    path: &'p str,
}

impl<'de> DeserializeSeed<'de> for Unique<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Unique<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(Unique {
                path: &format!("{}[{i}]", self.path),
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    // Numbers arrive here too, as a one-entry map (serde_json's
    // arbitrary_precision): no duplicates there.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.path)
            };
            if !seen.insert(key) {
                return Err(A::Error::custom(format!("duplicate key {path:?}")));
            }
            map.next_value_seed(Unique { path: &path })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::reject_duplicate_keys;

    #[test]
    fn names_the_duplicate_and_where() {
        let err = reject_duplicate_keys(r#"{"a": {"body": "x", "n": 1.50, "body": "y"}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(r#"duplicate key "a.body""#), "{err}");
        assert!(reject_duplicate_keys(r#"[{"a": 1}, {"a": 2}, {"b": [1e400]}]"#).is_ok());
        let err = reject_duplicate_keys(r#"[{"a": 1, "a": 2}]"#).unwrap_err();
        assert!(err.to_string().contains(r#""[0].a""#), "{err}");
    }
}
