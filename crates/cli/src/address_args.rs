//! Addresses and runs on the command line.

use crate::error::CliError;
use anyhow::anyhow;
use mck_runs::Address;
use mck_runs::address::MappedValue;

/// Environment variable naming the run all processes of a job belong to.
pub const RUN_VAR: &str = "MLIR_CACHE_KEY_RUN";

#[derive(Debug, Clone, Default, clap::Args)]
pub struct AddressArgs {
    /// The address to store the result at, e.g. 'train-v1/answer[model:"small"]'
    /// (instead of the derived NAMESPACE/STEP[MAPPED]).
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["namespace", "step", "override_address_prefix"])]
    pub address: Option<String>,
    /// Root namespace of the derived address [default: root].
    #[arg(long, value_name = "NAME")]
    pub namespace: Option<String>,
    /// The step's local name [default: the module's sym_name].
    #[arg(long, value_name = "NAME")]
    pub step: Option<String>,
    /// A mapped key of the address, KEY=VALUE (repeatable).
    #[arg(long = "map", value_name = "KEY=VALUE")]
    pub mapped: Vec<String>,
    /// Replaces the derived NAMESPACE/STEP prefix (mapped keys are still appended).
    #[arg(long, value_name = "PREFIX")]
    pub override_address_prefix: Option<String>,
    /// The run this compilation belongs to [default: $MLIR_CACHE_KEY_RUN, else a fresh id].
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// Replace the fingerprint at a conflicting address, for this run.
    #[arg(long)]
    pub overwrite_cache_conflicts: bool,
}

impl AddressArgs {
    fn wanted(&self) -> bool {
        self.address.is_some()
            || self.namespace.is_some()
            || self.step.is_some()
            || !self.mapped.is_empty()
            || self.override_address_prefix.is_some()
    }

    /// The address, when any address option was given.
    pub fn address(&self, module_name: &str) -> Result<Option<Address>, CliError> {
        if !self.wanted() {
            return Ok(None);
        }
        if let Some(text) = &self.address {
            let address = Address::parse(text).map_err(CliError::usage)?;
            return address
                .with_mapped(self.mapped_pairs()?)
                .map(Some)
                .map_err(CliError::usage);
        }
        let path: Vec<String> = match &self.override_address_prefix {
            Some(prefix) => prefix.split('/').map(str::to_string).collect(),
            None => vec![
                self.namespace.clone().unwrap_or_else(|| "root".into()),
                self.step.clone().unwrap_or_else(|| module_name.to_string()),
            ],
        };
        Address::from_names(path, self.mapped_pairs()?)
            .map(Some)
            .map_err(CliError::usage)
    }

    /// `--map KEY=VALUE` pairs in the order given; a value that reads as an integer is one.
    fn mapped_pairs(&self) -> Result<Vec<(String, MappedValue)>, CliError> {
        self.mapped
            .iter()
            .map(|pair| {
                pair.split_once('=')
                    .map(|(k, v)| (k.to_string(), MappedValue::from_text(v)))
                    .ok_or_else(|| CliError::usage(anyhow!("--map {pair:?}: expected KEY=VALUE")))
            })
            .collect()
    }

    /// The run id: `--run`, else the environment, else a fresh one.
    pub fn run_id(&self) -> Result<String, CliError> {
        let id = match (&self.run, std::env::var(RUN_VAR)) {
            (Some(id), _) => id.clone(),
            (None, Ok(id)) if !id.is_empty() => id,
            _ => fresh_run_id(),
        };
        mck_runs::address::check_run_id(&id).map_err(|reason| {
            let id = mck_runs::address::shorten(&id);
            CliError::usage(anyhow!("run id {id:?}: {reason}"))
        })?;
        Ok(id)
    }
}

/// `run-<UTC time>-<pid>`: unique per process, sortable by time.
fn fresh_run_id() -> String {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    format!(
        "run-{}-{}",
        now.replace([':', '-'], "").trim_end_matches('Z'),
        std::process::id()
    )
}
