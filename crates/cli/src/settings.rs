//! Settings on the command line: the options that mirror settings, built from the settings
//! table (`mck_settings::SETTINGS`) with its names, docs and parsers. The table says which
//! commands take each ([`CommandLine`]): the cache options of the commands that use the cache
//! ([`CacheOptions`], applied as the top layer over the configuration file and
//! `MLIR_CACHE_KEY_FLAGS`; some, like `--no-direct`, of `exec` only) and the program's own
//! ([`ProgramOptions`]: `--log-level`).

use crate::error::CliError;
use clap::{Arg, ArgAction, ArgMatches, Command};
use mck_settings::{
    Assignment, CommandLine, Layer, LogLevel, Resolved, SETTINGS, Setter, Setting, Settings,
};

/// Cache options of the commands that use the cache (`exec`, `wrap`, `why`, `cache`, `runs`,
/// `config`); they override the variable.
#[derive(Debug, Clone, Default)]
pub struct CacheOptions {
    /// Parsed by clap with the setting's own parser (and switches given).
    parsed: Layer,
    /// Values parsed after clap (see [`CommandLine::ParsedLater`]), by setting name.
    later: Vec<(&'static str, String)>,
    /// The cache directory as given, for commands printed to paste.
    cache_dir: Option<String>,
}

/// The option that mirrors setting `s`: its name in both spellings, its doc and default as
/// help, its parser when clap parses it.
fn option(s: &'static Setting) -> Arg {
    let mut arg = Arg::new(s.name).long(s.dashed()).global(true);
    if s.dashed() != s.name {
        arg = arg.alias(s.name);
    }
    // Help lines end without a period, as clap writes the others.
    let help = s.doc.trim_end_matches('.');
    match s.kind.value_name() {
        None => arg.action(ArgAction::SetTrue).help(help),
        Some(value_name) => {
            let help = match s.default {
                "none" => help.to_owned(),
                default => format!("{help} [default: {default}]"),
            };
            let mut arg = arg.value_name(value_name).help(help);
            if s.kind.is_list() {
                arg = arg.action(ArgAction::Append); // `--remote` once per tier
            }
            if s.command_line.parsed_by_clap() {
                arg.value_parser(move |text: &str| s.parse(text))
            } else {
                arg
            }
        }
    }
}

/// What the command line gave the options of `settings` that `matches` knows (a command has
/// the options the table gives it); values parsed after clap go to `later`.
fn given(
    matches: &ArgMatches,
    settings: impl Iterator<Item = &'static Setting>,
    layer: &mut Layer,
    mut later: impl FnMut(&'static str, String),
) -> Result<(), clap::Error> {
    for s in settings {
        // Not an option of this command, or one not given (a switch always has a value, its
        // default). Not `try_contains_id`: only debug builds of clap check that an id exists,
        // and a release build then panicked reading a switch the command lacks.
        if !matches.ids().any(|id| id.as_str() == s.name) {
            continue;
        }
        if s.is_switch() {
            if matches.get_flag(s.name) {
                let on = Assignment::parse(s, "true").map_err(|message| {
                    clap::Error::raw(clap::error::ErrorKind::ValueValidation, message)
                })?;
                layer.push(on);
            }
        } else if s.command_line.parsed_by_clap() {
            if let Some(setter) = matches.get_one::<Setter>(s.name) {
                layer.push(Assignment::typed(s, setter.clone()));
            }
        } else {
            for text in matches.get_many::<String>(s.name).into_iter().flatten() {
                later(s.name, text.clone());
            }
        }
    }
    Ok(())
}

/// Every setting that is an option of some command (not the program's).
fn mirrored() -> impl Iterator<Item = &'static Setting> {
    SETTINGS
        .iter()
        .filter(|s| !matches!(s.command_line, CommandLine::Absent | CommandLine::Program))
}

impl clap::Args for CacheOptions {
    /// The options of the command being built (its name picks the table's `OptionOf` ones).
    fn augment_args(command: Command) -> Command {
        let name = command.get_name().to_owned();
        SETTINGS
            .iter()
            .filter(|s| s.command_line.of_command(&name))
            .fold(command, |command, s| command.arg(option(s)))
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}

impl clap::FromArgMatches for CacheOptions {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut options = CacheOptions::default();
        let mut later = Vec::new();
        given(matches, mirrored(), &mut options.parsed, |name, text| {
            later.push((name, text))
        })?;
        options.later = later;
        options.cache_dir = matches
            .get_raw("cache_dir")
            .and_then(|mut raw| raw.next().and_then(|v| v.to_str()).map(ToOwned::to_owned));
        Ok(options)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl CacheOptions {
    /// True when the command line gave setting `name` (e.g. `exec --no-direct`).
    pub fn given(&self, name: &str) -> bool {
        self.parsed
            .names()
            .chain(self.later.iter().map(|(n, _)| *n))
            .any(|n| n == name)
    }

    /// What the store is opened with: defaults, then the configuration file, then the
    /// environment variable, then these options.
    pub fn settings(&self) -> Result<mck_store::Settings, CliError> {
        Ok(self.resolved()?.settings.store)
    }

    /// The cache these settings describe, opened to inspect or manage it (even with caching
    /// off), the one way every caller opens it (`mck_runs::open_cache`).
    pub fn open_to_manage(&self) -> Result<mck_remote::Tiered, CliError> {
        let settings = self.resolved()?.settings;
        let opened = mck_runs::open_cache(&settings, mck_runs::Purpose::Manage)?;
        Ok(opened.expect("a cache opened to manage it is always opened"))
    }

    /// Where addresses and run records live (`registry`, with its password and lease).
    pub fn registry_settings(&self) -> Result<mck_settings::RegistrySettings, CliError> {
        Ok(self.resolved()?.settings.registry)
    }

    /// The registry of the cache `store` (opened to manage it) that these settings name.
    pub fn open_registry(&self, store: &mck_store::Store) -> Result<mck_runs::Registry, CliError> {
        Ok(mck_runs::Registry::open(store, &self.registry_settings()?)?)
    }

    /// Every setting (the store's and the commands' own), with the source of each.
    pub fn resolved(&self) -> Result<Resolved, CliError> {
        Ok(Settings::resolve_env(&self.overrides()?)?)
    }

    /// These options as the top layer of the settings.
    pub fn overrides(&self) -> Result<Layer, CliError> {
        let mut layer = self.parsed.clone();
        for (name, text) in &self.later {
            layer
                .set("command line", name, text)
                .map_err(CliError::usage)?;
        }
        Ok(layer)
    }

    /// The options given, as command-line words (for commands printed to paste).
    pub fn as_args(&self) -> String {
        // Never the remote: its URL may hold a password, and conflicts live in the local cache.
        match &self.cache_dir {
            Some(dir) => format!("--cache-dir {}", quote(dir)),
            None => String::new(),
        }
    }
}

/// `text` single-quoted for a shell (a quote inside ends, escapes, reopens).
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The program's own options from the settings table ([`CommandLine::Program`]: `--log-level`),
/// before or after any command. Read before the settings are, they outrank the variable and
/// the configuration file.
#[derive(Debug, Clone, Default)]
pub struct ProgramOptions {
    parsed: Layer,
}

fn program_settings() -> impl Iterator<Item = &'static Setting> {
    SETTINGS
        .iter()
        .filter(|s| s.command_line == CommandLine::Program)
}

impl clap::Args for ProgramOptions {
    fn augment_args(command: Command) -> Command {
        program_settings().fold(command, |command, s| command.arg(option(s)))
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}

impl clap::FromArgMatches for ProgramOptions {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut options = ProgramOptions::default();
        given(matches, program_settings(), &mut options.parsed, |_, _| {})?;
        Ok(options)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl ProgramOptions {
    /// The log level the command line gives (`--log-level`), if it gives one.
    pub fn log_level(&self) -> Option<LogLevel> {
        self.parsed.names().any(|n| n == "log_level").then(|| {
            let mut settings = Settings::default();
            self.parsed.apply_to(&mut settings);
            settings.log_level
        })
    }
}
