//! Cache settings on the command line: the options that mirror settings, built from the
//! settings table (`mck_settings::SETTINGS`) with its names, docs and parsers, and applied as
//! the top layer over the configuration file and `MLIR_CACHE_KEY_FLAGS`.

use crate::error::CliError;
use clap::{Arg, ArgAction, ArgMatches, Command};
use mck_settings::{Assignment, CommandLine, Layer, Resolved, SETTINGS, Setter, Settings};

/// Cache options of the commands that use the cache (`exec`, `cache`, `runs`, `config`); they
/// override the variable.
#[derive(Debug, Clone, Default)]
pub struct CacheOptions {
    /// Parsed by clap with the setting's own parser (and switches given).
    parsed: Layer,
    /// Values parsed after clap (see [`CommandLine::ParsedLater`]), by setting name.
    later: Vec<(&'static str, String)>,
    /// The cache directory as given, for commands printed to paste.
    cache_dir: Option<String>,
}

fn mirrored() -> impl Iterator<Item = &'static mck_settings::Setting> {
    SETTINGS
        .iter()
        .filter(|s| s.command_line != CommandLine::Absent)
}

impl clap::Args for CacheOptions {
    fn augment_args(command: Command) -> Command {
        mirrored().fold(command, |command, s| {
            let mut arg = Arg::new(s.name).long(s.dashed()).global(true);
            if s.dashed() != s.name {
                arg = arg.alias(s.name);
            }
            // Help lines end without a period, as clap writes the others.
            let help = s.doc.trim_end_matches('.');
            arg = match s.kind.value_name() {
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
                    if s.command_line == CommandLine::Option {
                        arg.value_parser(move |text: &str| s.parse(text))
                    } else {
                        arg
                    }
                }
            };
            command.arg(arg)
        })
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}

impl clap::FromArgMatches for CacheOptions {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut options = CacheOptions::default();
        for s in mirrored() {
            match (s.is_switch(), s.command_line) {
                (true, _) => {
                    if matches.get_flag(s.name) {
                        let on = Assignment::parse(s, "true").map_err(|message| {
                            clap::Error::raw(clap::error::ErrorKind::ValueValidation, message)
                        })?;
                        options.parsed.push(on);
                    }
                }
                (false, CommandLine::Option) => {
                    if let Some(setter) = matches.get_one::<Setter>(s.name) {
                        options.parsed.push(Assignment::typed(s, setter.clone()));
                    }
                }
                (false, _) => {
                    for text in matches.get_many::<String>(s.name).into_iter().flatten() {
                        options.later.push((s.name, text.clone()));
                    }
                }
            }
        }
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
