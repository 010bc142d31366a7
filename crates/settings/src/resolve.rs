//! Layering and provenance: defaults, then the configuration file of the cache directory, then
//! `MLIR_CACHE_KEY_FLAGS`, then the command line; with the source of every setting (for
//! `config show`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use super::config::{CONFIG_FILE, read_config};
use super::layer::Layer;
use super::user_dir;
use super::{ErrorKind, FLAGS_VAR, SETTINGS, Settings, SettingsError};

/// Where a setting's value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Default,
    ConfigFile,
    Environment,
    CommandLine,
}

impl Source {
    /// How `config show` names the source.
    pub fn label(self) -> &'static str {
        match self {
            Source::Default => "default",
            Source::ConfigFile => "config file",
            Source::Environment => FLAGS_VAR,
            Source::CommandLine => "command line",
        }
    }
}

/// Settings after layering, with the source of each.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub settings: Settings,
    /// The configuration file consulted (it may not exist).
    pub config_file: PathBuf,
    /// Source of every setting, by name.
    pub sources: BTreeMap<&'static str, Source>,
}

impl Settings {
    /// Defaults, then the configuration file of the cache directory ([`CONFIG_FILE`]), then
    /// `MLIR_CACHE_KEY_FLAGS` from the process environment, then `overrides`.
    pub fn from_env_and(overrides: &Layer) -> Result<Settings, SettingsError> {
        Ok(Settings::resolve_env(overrides)?.settings)
    }

    /// As [`Settings::from_env_and`], with the source of every setting (for `config show`).
    pub fn resolve_env(overrides: &Layer) -> Result<Resolved, SettingsError> {
        match std::env::var(FLAGS_VAR) {
            Ok(text) => Settings::resolve(Some(&text), overrides),
            Err(std::env::VarError::NotPresent) => Settings::resolve(None, overrides),
            Err(std::env::VarError::NotUnicode(_)) => Err(SettingsError {
                source_name: FLAGS_VAR.to_owned(),
                flag: FLAGS_VAR.to_owned(),
                message: "the variable is not valid UTF-8".to_owned(),
                kind: ErrorKind::Invalid,
            }),
        }
    }

    /// Defaults, then the variable's value given explicitly (`None`: unset), then `overrides`;
    /// no configuration file and no per-user directory (so it can be tested without touching the
    /// process environment or the file system): an unset `cache_dir` stays the store's own
    /// default.
    pub fn from_flags_and(
        env_value: Option<&str>,
        overrides: &Layer,
    ) -> Result<Settings, SettingsError> {
        let mut s = Settings::default();
        if let Some(text) = env_value {
            Layer::parse_flags(FLAGS_VAR, text)?.apply_to(&mut s);
        }
        overrides.apply_to(&mut s);
        Ok(s)
    }

    /// Defaults, then the configuration file of the cache directory (chosen by the variable and
    /// `cli`, else the user's own: [`user_cache_dir`](super::user_cache_dir) of `XDG_CACHE_HOME`
    /// and `HOME`), then the variable `env_value`, then `cli`; with the source of every setting.
    pub fn resolve(env_value: Option<&str>, cli: &Layer) -> Result<Resolved, SettingsError> {
        let env = match env_value {
            Some(text) => Layer::parse_flags(FLAGS_VAR, text)?,
            None => Layer::default(),
        };
        // The file cannot set the directory it lives in: the layers above choose it, else the
        // user's own cache directory is the default.
        let mut base = Settings::default();
        if !env
            .names()
            .chain(cli.names())
            .any(|name| name == "cache_dir")
        {
            base.store.cache_dir = user_dir::from_env().map_err(|message| SettingsError {
                source_name: "cache_dir".to_owned(),
                flag: "default".to_owned(),
                message,
                kind: ErrorKind::Unreadable,
            })?;
        }
        let mut above_file = base.clone();
        env.apply_to(&mut above_file);
        cli.apply_to(&mut above_file);
        let config_file = above_file.store.cache_dir.join(CONFIG_FILE);
        let file = read_config(&config_file)?;
        let mut settings = base;
        let mut sources: BTreeMap<&'static str, Source> =
            SETTINGS.iter().map(|s| (s.name, Source::Default)).collect();
        for (layer, source) in [
            (&file, Source::ConfigFile),
            (&env, Source::Environment),
            (cli, Source::CommandLine),
        ] {
            layer.apply_to(&mut settings);
            for name in layer.names() {
                sources.insert(name, source);
            }
        }
        Ok(Resolved {
            settings,
            config_file,
            sources,
        })
    }
}
