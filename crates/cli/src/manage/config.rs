//! `mlir-cache-key config …`: the settings in force and where each came from; the persistent
//! configuration file `mlir-cache-key.conf` in the cache directory.

use super::output::{self, json_text, pad};
use crate::error::CliError;
use crate::settings::CacheOptions;
use mck_settings::{SETTINGS, set_config};
use std::fmt::Write as _;

/// Version of the `config show --json` shape.
pub const CONFIG_SCHEMA: &str = "mlir-cache-key.config.v1";

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Every setting, its value and its source: default, config file, MLIR_CACHE_KEY_FLAGS or
    /// command line (lowest to highest precedence).
    #[command(after_help = "Example:\n  mlir-cache-key config show --cache-dir /tmp/c --json")]
    Show {
        /// Print a JSON object (schema mlir-cache-key.config.v1) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Write NAME = VALUE to the configuration file of the cache directory (validated first).
    #[command(
        after_help = "Examples:\n  mlir-cache-key config set cache_size 10G\n  \
                            mlir-cache-key config set remote_read_only true"
    )]
    Set {
        #[arg(help = names_help())]
        name: String,
        /// Its value, as MLIR_CACHE_KEY_FLAGS takes it (switches: true or false).
        value: String,
    },
    /// Remove NAME from the configuration file (it falls back to its default).
    #[command(after_help = "Example:\n  mlir-cache-key config unset cache_size")]
    Unset {
        /// The setting's name, as for `config set`.
        name: String,
    },
}

/// `config set NAME`'s help: the names the file takes, from the settings table.
fn names_help() -> String {
    let names: Vec<&str> = SETTINGS
        .iter()
        .filter(|s| s.in_config_file)
        .map(|s| s.name)
        .collect();
    format!(
        "A setting's name as in MLIR_CACHE_KEY_FLAGS without the leading dashes: {}",
        names.join(", ")
    )
}

#[derive(serde::Serialize)]
struct Shown {
    schema: &'static str,
    config_file: String,
    settings: Vec<ShownSetting>,
}

#[derive(serde::Serialize)]
struct ShownSetting {
    name: &'static str,
    value: Option<String>,
    source: mck_settings::Source,
}

pub fn run(command: Command, cache: &CacheOptions) -> Result<(), CliError> {
    let text = match command {
        Command::Show { json } => {
            let r = cache.resolved()?;
            let shown = Shown {
                schema: CONFIG_SCHEMA,
                config_file: r.config_file.display().to_string(),
                settings: SETTINGS
                    .iter()
                    .map(|s| ShownSetting {
                        name: s.name,
                        value: (s.show)(&r.settings),
                        source: r.sources[s.name],
                    })
                    .collect(),
            };
            if json {
                json_text(&shown)?
            } else {
                let mut out = format!("config file: {}\n", shown.config_file);
                let _ = writeln!(out, "{}  {}  source", pad("setting", 24), pad("value", 28));
                for s in &shown.settings {
                    let _ = writeln!(
                        out,
                        "{}  {}  {}",
                        pad(s.name, 24),
                        pad(s.value.as_deref().unwrap_or("(none)"), 28),
                        s.source.label()
                    );
                }
                out
            }
        }
        Command::Set { name, value } => {
            let s = cache.settings()?;
            let path = set_config(&s.cache_dir, &name, Some(&value), s.dir_mode)?;
            // A remote URL may carry a password: never echo it.
            let shown = match mck_settings::find(&name) {
                Some(setting) => setting.shown_value(value.trim()),
                None => value.trim().to_owned(),
            };
            format!("{name} = {shown} in {}\n", path.display())
        }
        Command::Unset { name } => {
            let s = cache.settings()?;
            let path = set_config(&s.cache_dir, &name, None, s.dir_mode)?;
            format!("{name} removed from {}\n", path.display())
        }
    };
    output::stdout(text.as_bytes())?;
    Ok(())
}
