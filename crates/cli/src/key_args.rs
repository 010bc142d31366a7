//! Key inputs from the command line and the environment, shared by `key`,
//! `why` and `exec`. Parsing first (clap), then building [`KeyInputs`] and choosing the JAX
//! release's [`JaxRecipe`].

use crate::error::CliError;
use anyhow::anyhow;
use mck_key::flags::FlagSources;
use mck_key::{Accelerator, CompileOptionsInput, JaxRecipe, KeyInputs};
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Debug, Clone, clap::Args)]
pub struct KeyArgs {
    /// Compiler version string, hashed untrimmed (JAX: the jaxlib version).
    #[arg(long, value_name = "S", default_value = "")]
    pub compiler_version: String,
    /// Platform name, e.g. cpu, gpu, tpu ("gpu" rebuilds the device assignment).
    #[arg(long, value_name = "S", default_value = "")]
    pub platform: String,
    /// Platform version, e.g. "cuda 12080".
    #[arg(long, value_name = "S", default_value = "")]
    pub platform_version: String,
    /// The JAX release whose key recipe to follow (0.8.0 … 0.12.0.1): its flag exclusion list,
    /// reset debug options, backend and topology entries, and (before 0.11) Mosaic kernels kept
    /// as lowered. Default: the release of --compiler-version when that names a known jaxlib,
    /// else the newest.
    #[arg(long, value_name = "V")]
    pub jax_version: Option<String>,
    /// The backend's runtime_type, hashed by JAX 0.8.0 and 0.8.1 only.
    #[arg(long, value_name = "S", default_value = "")]
    pub runtime_type: String,
    /// A serialized xla.CompileOptionsProto (JAX's CompileOptions.SerializeAsString()).
    #[arg(long, value_name = "FILE", conflicts_with = "compile_options_json")]
    pub compile_options: Option<PathBuf>,
    /// Compile options as JSON, for compilers other than XLA.
    #[arg(long, value_name = "FILE")]
    pub compile_options_json: Option<PathBuf>,
    /// A dotted key path to leave out of JSON compile options (repeatable).
    #[arg(
        long = "ignore-option-key",
        value_name = "PATH",
        requires = "compile_options_json"
    )]
    pub ignore_option_keys: Vec<String>,
    /// The backend's topology fingerprint, decimal or 0x-hex.
    #[arg(long, value_name = "U64", value_parser = parse_u64, conflicts_with = "device_kinds")]
    pub topology_fingerprint: Option<u64>,
    /// The backend's serialized topology (JAX ≤ 0.9 hashes it instead of the fingerprint).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["device_kinds", "topology_fingerprint"])]
    pub topology_serialized: Option<PathBuf>,
    /// A device's device_kind, in device order (repeatable), when there is no topology.
    #[arg(long = "device-kind", value_name = "S")]
    pub device_kinds: Vec<String>,
    /// Compression of the stored executable: zstandard, or zlib.
    #[arg(long, value_name = "S", default_value = "zstandard")]
    pub compression: String,
    /// A user string hashed last (JAX's custom_hook).
    #[arg(long, value_name = "S", default_value = "")]
    pub custom_hook: String,
    /// An extra argument prefix that counts as an XLA flag (repeatable; JAX's
    /// add_flag_prefixes).
    #[arg(long = "flag-prefix", value_name = "P")]
    pub flag_prefixes: Vec<String>,
    /// The compiling program's own command line (JAX reads sys.argv): its
    /// arguments starting with --xla (or a --flag-prefix) are XLA flags.
    #[arg(last = true, value_name = "ARGV")]
    pub argv: Vec<OsString>,
}

fn parse_u64(text: &str) -> Result<u64, String> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse::<u64>(),
    };
    parsed.map_err(|e| format!("{text:?} is not an unsigned 64-bit integer ({e})"))
}

/// An environment variable as UTF-8; JAX would fail on anything else too.
fn env_text(name: &str) -> Result<Option<String>, CliError> {
    match std::env::var_os(name) {
        None => Ok(None),
        Some(value) => value.into_string().map(Some).map_err(|_| {
            CliError::input(anyhow!("environment variable {name} is not valid UTF-8"))
        }),
    }
}

impl KeyArgs {
    /// The recipe of --jax-version, else of the jaxlib --compiler-version names, else the newest.
    pub fn recipe(&self) -> Result<&'static JaxRecipe, CliError> {
        match &self.jax_version {
            Some(version) => JaxRecipe::for_version(version)
                .map_err(|e| CliError::input(anyhow!("--jax-version: {e}"))),
            None => Ok(JaxRecipe::for_version(&self.compiler_version)
                .unwrap_or_else(|_| JaxRecipe::newest())),
        }
    }

    /// Builds the key inputs: reads the options file and the flag variables.
    pub fn inputs(&self, module_name: String) -> Result<KeyInputs, CliError> {
        let argv = self
            .argv
            .iter()
            .enumerate()
            .map(|(i, arg)| {
                arg.clone().into_string().map_err(|_| {
                    CliError::input(anyhow!(
                        "argument {} after -- is not valid UTF-8: {arg:?}",
                        i + 1
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let read = |path: &PathBuf| crate::input::read_file(path);
        let compile_options = match (&self.compile_options, &self.compile_options_json) {
            (Some(path), _) => CompileOptionsInput::Proto {
                name: path.display().to_string(),
                bytes: read(path)?,
            },
            (None, Some(path)) => CompileOptionsInput::Json {
                name: path.display().to_string(),
                bytes: read(path)?,
                ignored_keys: self.ignore_option_keys.clone(),
            },
            (None, None) => CompileOptionsInput::None,
        };
        Ok(KeyInputs {
            module_name,
            compiler_version: self.compiler_version.clone(),
            platform: self.platform.clone(),
            platform_version: self.platform_version.clone(),
            runtime_type: self.runtime_type.clone(),
            flags: FlagSources {
                xla_flags: env_text("XLA_FLAGS")?,
                libtpu_init_args: env_text("LIBTPU_INIT_ARGS")?,
                argv,
                extra_prefixes: self.flag_prefixes.clone(),
            },
            compile_options,
            accelerator: match (self.topology_fingerprint, &self.topology_serialized) {
                (Some(fingerprint), _) => Accelerator::TopologyFingerprint(fingerprint),
                (None, Some(path)) => Accelerator::TopologySerialized(read(path)?),
                (None, None) => Accelerator::DeviceKinds(self.device_kinds.clone()),
            },
            compression: self.compression.clone(),
            custom_hook: self.custom_hook.clone(),
        })
    }
}
