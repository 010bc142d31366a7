//! The commands that manage a cache — `cache …`, `runs …`, `config …`, `report` — and what they print
//! with. They read the store, the run records and the settings, never a module, so they need
//! no MLIR: the front binary serves them itself (`front.rs`), and the MLIR binary lists them
//! in its `--help` and runs them the same way when called directly.

pub mod addresses;
pub mod cache;
pub mod cache_args;
pub mod cache_text;
pub mod config;
pub mod output;
pub mod progress;
pub mod report;
pub mod run_status;
pub mod runs;
pub mod show_exec;
pub mod stored;

use clap::Subcommand;

use crate::error::CliError;
use crate::settings::CacheOptions;

/// The management commands, as both binaries list them (flattened into their subcommands).
#[derive(Debug, Subcommand)]
pub enum ManageCommand {
    /// Inspect and manage the persistent cache.
    Cache(Managed<cache::Command>),
    /// Run records: what each run used at each address; export and import.
    Runs(Managed<runs::Command>),
    /// The settings in force and their sources; the configuration file of the cache
    /// directory (mlir-cache-key.conf).
    Config(Managed<config::Command>),
    /// Why the cache recompiled over a time window: hit rate over time, compile time spent
    /// and saved, misses by cause, eviction churn, remote tiers (text, JSON or HTML).
    Report(report::Args),
}

impl ManageCommand {
    /// The cache options the command was given (the log level may come from its settings).
    pub fn cache(&self) -> &CacheOptions {
        match self {
            ManageCommand::Cache(m) => &m.cache,
            ManageCommand::Runs(m) => &m.cache,
            ManageCommand::Config(m) => &m.cache,
            ManageCommand::Report(args) => &args.cache,
        }
    }

    pub fn run(self) -> Result<(), CliError> {
        match self {
            ManageCommand::Cache(m) => cache::run(m.command, &m.cache),
            ManageCommand::Runs(m) => runs::run(m.command, &m.cache),
            ManageCommand::Config(m) => config::run(m.command, &m.cache),
            ManageCommand::Report(args) => report::run(args),
        }
    }
}

/// A management command with the cache options it applies to.
#[derive(Debug, clap::Args)]
pub struct Managed<C: Subcommand> {
    #[command(flatten)]
    pub cache: CacheOptions,
    #[command(subcommand)]
    pub command: C,
}
