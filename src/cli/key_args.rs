//! Key inputs from the command line and the environment, shared by `key`,
//! `why` and `exec`. Parsing first (clap), then building [`KeyInputs`].

use super::error::CliError;
use crate::key::flags::FlagSources;
use crate::key::{Accelerator, CompileOptionsInput, KeyInputs};
use anyhow::anyhow;
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
        let read = |path: &PathBuf| super::input::read_file(path);
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
            flags: FlagSources {
                xla_flags: env_text("XLA_FLAGS")?,
                libtpu_init_args: env_text("LIBTPU_INIT_ARGS")?,
                argv,
                extra_prefixes: self.flag_prefixes.clone(),
            },
            compile_options,
            accelerator: match self.topology_fingerprint {
                Some(fingerprint) => Accelerator::TopologyFingerprint(fingerprint),
                None => Accelerator::DeviceKinds(self.device_kinds.clone()),
            },
            compression: self.compression.clone(),
            custom_hook: self.custom_hook.clone(),
        })
    }
}
