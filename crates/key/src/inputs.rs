//! Everything a key depends on, passed explicitly.

use super::flags::FlagSources;
use serde::{Deserialize, Serialize};

/// The error a [`CanonicalSource`] may fail with.
pub type SourceError = Box<dyn std::error::Error + Send + Sync>;

/// A canonical module that streams its bytes into the hash, so a large module
/// is never held twice (the MLIR canonicalizer implements it; this crate needs
/// no MLIR).
pub trait CanonicalSource {
    /// Writes the canonical bytes, in chunks, into `sink`.
    fn write_to(&self, sink: &mut dyn FnMut(&[u8])) -> Result<(), SourceError>;
    /// The canonical text, kept in the record to explain misses.
    fn text(&self) -> String;
}

/// Entry 1: a canonical module, or bytes someone else canonicalized.
pub enum Computation<'a> {
    /// Streams the module's canonical bytes into the hash; with
    /// `record_text`, its canonical text is kept to explain misses.
    Module {
        module: &'a dyn CanonicalSource,
        record_text: bool,
    },
    /// Bytes used as they are (`--computation-bytes`).
    Bytes(&'a [u8]),
}

/// Entry 5 as given by the caller.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "format", rename_all = "snake_case")]
pub enum CompileOptionsInput {
    /// No compile options: the entry contributes zero bytes.
    #[default]
    None,
    /// A serialized `xla.CompileOptionsProto` (JAX's `SerializeAsString()`).
    Proto { name: String, bytes: Vec<u8> },
    /// JSON options of another compiler; `ignored_keys` are dotted paths.
    Json {
        name: String,
        bytes: Vec<u8>,
        ignored_keys: Vec<String>,
    },
}

/// Entry 6: the accelerator topology.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Accelerator {
    /// The backend's topology fingerprint (hashed as 8 bytes, big-endian; JAX ≥ 0.10).
    TopologyFingerprint(u64),
    /// The serialized topology description, hashed as it is (JAX ≤ 0.9).
    TopologySerialized(Vec<u8>),
    /// No topology: each device's `device_kind`, in device order.
    DeviceKinds(Vec<String>),
}

impl Default for Accelerator {
    fn default() -> Self {
        Accelerator::DeviceKinds(Vec::new())
    }
}

/// Entries 2–8 and the key's human prefix.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyInputs {
    /// The module's `sym_name` (`jit_mlp`): the key's prefix, not hashed.
    pub module_name: String,
    /// Entry 2: the compiler's version string (JAX: the jaxlib version).
    pub compiler_version: String,
    /// Entry 3: platform name (raw; `gpu` triggers the device-assignment
    /// rebuild) and platform version.
    pub platform: String,
    pub platform_version: String,
    /// Entry 3 as well, only for recipes that hash it (JAX 0.8.0 and 0.8.1):
    /// `backend.runtime_type`.
    #[serde(default)]
    pub runtime_type: String,
    /// Entry 4.
    pub flags: FlagSources,
    /// Entry 5.
    pub compile_options: CompileOptionsInput,
    /// Entry 6.
    pub accelerator: Accelerator,
    /// Entry 7: `zstandard`, or `zlib` where zstandard is unavailable.
    pub compression: String,
    /// Entry 8: a user string; empty contributes zero bytes.
    pub custom_hook: String,
}
