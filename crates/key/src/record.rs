//! The record of one key: each entry's digest, the running digest after it
//! (JAX's trace) and its readable form. Saved as JSON (`key --json`, cache
//! entries) and compared by [`super::explain`].

use serde::{Deserialize, Serialize};

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
