//! Field-level differences between two CompileOptionsProtos, to explain a cache miss.
//!
//! Two keys that differ only in `compile_options` differ in some leaf of the text view;
//! `diff` lists exactly those leaves (`executable_build_options.num_partitions: 1 → 8`), in
//! field-number order, with `(absent)` for a leaf that one side lacks.

use std::collections::BTreeMap;
use std::fmt;

use super::OptionsError;
use super::normalize::write_change;
use super::text::{KeyPart, leaves};

/// One leaf that differs: changed (both sides), added (`old` is `None`) or removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDiff {
    pub path: String,
    pub old: Option<String>,
    pub new: Option<String>,
}

impl fmt::Display for FieldDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_change(f, &self.path, self.old.as_deref(), self.new.as_deref())
    }
}

/// The leaves that differ between two serialized CompileOptionsProtos, `a` being the old one.
pub fn diff(a: &[u8], b: &[u8]) -> Result<Vec<FieldDiff>, OptionsError> {
    let mut both: BTreeMap<Vec<KeyPart>, (String, Option<String>, Option<String>)> =
        BTreeMap::new();
    for leaf in leaves(a)? {
        both.insert(leaf.key, (leaf.path, Some(leaf.value), None));
    }
    for leaf in leaves(b)? {
        let slot = both.entry(leaf.key).or_insert((leaf.path, None, None));
        slot.2 = Some(leaf.value);
    }
    Ok(both
        .into_values()
        .filter(|(_, old, new)| old != new)
        .map(|(path, old, new)| FieldDiff { path, old, new })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_added_and_removed_leaves() {
        // a: executable_build_options { num_partitions: 1 }, profile_version: 3
        // b: executable_build_options { num_partitions: 8, num_replicas: 2 }
        let a = [0x1a, 0x02, 0x28, 0x01, 0x28, 0x03];
        let b = [0x1a, 0x04, 0x20, 0x02, 0x28, 0x08];
        let lines: Vec<String> = diff(&a, &b)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            lines,
            [
                "executable_build_options.num_replicas: (absent) → 2",
                "executable_build_options.num_partitions: 1 → 8",
                "profile_version: 3 → (absent)",
            ]
        );
        assert!(diff(&a, &a).unwrap().is_empty());
    }
}
