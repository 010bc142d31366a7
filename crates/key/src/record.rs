//! The record of one key: each entry's digest, the running digest after it
//! (JAX's trace) and its readable form. Saved as JSON (`key --json`, cache
//! entries) and compared by [`super::explain`], which asks [`note_recipes`] whether the two
//! keys followed different JAX recipes.

use super::explain::EntryDifference;
use super::recipe::JaxRecipe;
use serde::{Deserialize, Serialize};

fn newest_recipe_name() -> String {
    JaxRecipe::newest().name.to_string()
}

/// Entry names as JAX logs them, in hash order.
pub const ENTRY_NAMES: [&str; 8] = [
    "computation",
    "jax_lib version",
    "backend version",
    "XLA flags",
    "compile_options",
    "accelerator_config",
    "compression",
    "custom_hook",
];

/// Bumped when the record's shape changes incompatibly.
pub const RECORD_FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    pub format: u32,
    /// `<module name>-<64 hex>`.
    pub key: String,
    pub module_name: String,
    /// The key's SHA-256, hex.
    pub sha256: String,
    /// The JAX recipe the key follows ([`JaxRecipe::name`]); records older than recipes
    /// followed the newest one's (then the only one).
    #[serde(default = "newest_recipe_name")]
    pub recipe: String,
    pub entries: Vec<EntryRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryRecord {
    pub name: String,
    /// SHA-256 of this entry's bytes alone.
    pub entry_sha256: String,
    /// SHA-256 of everything hashed up to and including this entry.
    pub running_sha256: String,
    pub readable: Readable,
}

/// What an entry's bytes mean, for people and for `why`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Readable {
    Computation {
        bytes: u64,
        /// Canonical module text, when recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    CompilerVersion {
        version: String,
    },
    Backend {
        platform: String,
        platform_version: String,
        /// Hashed only by recipes with `hashes_runtime_type`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        runtime_type: Option<String>,
    },
    Flags {
        included: Vec<String>,
        excluded: Vec<String>,
    },
    CompileOptions {
        /// `proto`, `json` or `none`.
        format: String,
        /// The hashed bytes, base64 (protobuf) or the canonical JSON text.
        hashed: String,
        /// One `path: value` line per field of the hashed options.
        text: Vec<String>,
        /// What normalization changed (`path: old → new`).
        changes: Vec<String>,
    },
    Accelerator {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        topology_fingerprint: Option<u64>,
        /// The serialized topology (JAX ≤ 0.9), base64.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        topology_serialized: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        device_kinds: Vec<String>,
    },
    Compression {
        name: String,
    },
    CustomHook {
        value: String,
    },
}

impl KeyRecord {
    /// JAX's 16 debug lines: two per entry, in order.
    pub fn trace_lines(&self) -> Vec<String> {
        self.entries
            .iter()
            .flat_map(|e| {
                [
                    format!(
                        "get_cache_key hash of serialized {}: {}",
                        e.name, e.entry_sha256
                    ),
                    format!(
                        "get_cache_key hash after serializing {}: {}",
                        e.name, e.running_sha256
                    ),
                ]
            })
            .collect()
    }

    pub fn entry(&self, name: &str) -> Option<&EntryRecord> {
        self.entries.iter().find(|e| e.name == name)
    }
}

/// Puts first in `differences` that `a` and `b` followed different JAX recipes, and what
/// differs between them; a difference of recipe explains a miss before any entry does.
pub fn note_recipes(
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

#[cfg(test)]
mod tests {
    use crate::flags::FlagSources;
    use crate::{Computation, JaxRecipe, KeyInputs, compute, explain::explain};

    fn record(version: &str, xla_flags: &str) -> super::KeyRecord {
        let inputs = KeyInputs {
            module_name: "jit_f".into(),
            flags: FlagSources {
                xla_flags: Some(xla_flags.into()),
                ..FlagSources::default()
            },
            ..KeyInputs::default()
        };
        let recipe = JaxRecipe::for_version(version).unwrap();
        compute(Computation::Bytes(b"module"), &inputs, recipe).unwrap()
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

    #[test]
    fn records_without_a_recipe_are_the_newest_ones() {
        let mut json = serde_json::to_value(record("0.12.0.1", "")).unwrap();
        json.as_object_mut().unwrap().remove("recipe");
        let parsed: super::KeyRecord = serde_json::from_value(json).unwrap();
        assert_eq!(parsed.recipe, JaxRecipe::newest().name);
    }
}
