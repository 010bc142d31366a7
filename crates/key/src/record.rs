//! The record of one key: each entry's digest, the running digest after it
//! (JAX's trace) and its readable form. Saved as JSON (`key --json`, cache
//! entries) and compared by [`super::explain`].

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
    /// The XLA build (`sha256:…` of the runtime libraries) that compiled the entry this record
    /// is stored with, when the caller knows it (the Python package does). Not hashed: JAX's key
    /// is the same for two builds of one jaxlib version; the store keeps their entries apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xla_build: Option<String>,
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

#[cfg(test)]
pub(crate) mod tests {
    use crate::flags::FlagSources;
    use crate::{Computation, JaxRecipe, KeyInputs, compute};

    /// The record of a small module keyed under release `version` with `xla_flags` (for this
    /// file's tests and `explain.rs`'s).
    pub(crate) fn record(version: &str, xla_flags: &str) -> super::KeyRecord {
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
    fn records_without_a_recipe_are_the_newest_ones() {
        let mut json = serde_json::to_value(record("0.12.0.1", "")).unwrap();
        json.as_object_mut().unwrap().remove("recipe");
        let parsed: super::KeyRecord = serde_json::from_value(json).unwrap();
        assert_eq!(parsed.recipe, JaxRecipe::newest().name);
    }
}
