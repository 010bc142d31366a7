//! Command-line interface: argument parsing (clap), then calls into the
//! library. Errors print once, prefixed with the program name; exit codes are
//! documented in README.md and [`error::Failure`].

mod address_args;
mod addresses;
mod cache;
mod cache_text;
mod canon;
mod error;
mod exec;
mod input;
mod kernels;
mod key;
mod key_args;
mod limits;
mod logging;
mod output;
mod runs;
mod settings;
mod why;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub use error::Failure;

#[derive(Debug, Parser)]
#[command(
    name = "mlir-cache-key",
    version,
    about = "Stable, explainable compilation-cache keys for MLIR programs",
    long_about = None
)]
pub struct Cli {
    /// Log level: error, warning, info or debug [default: warning, or
    /// --log_level in MLIR_CACHE_KEY_FLAGS].
    #[arg(long, global = true, value_name = "LEVEL")]
    log_level: Option<logging::Level>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Canonicalize a module: strip debug info and kernels, emit stable bytecode.
    Canon(canon::Args),
    /// List the kernels embedded in a module and how each is stripped.
    Kernels(kernels::Args),
    /// Compute a module's JAX-compatible cache key.
    Key(key::Args),
    /// Explain why two keys differ: the ingredient that moved, and how.
    Why(why::Args),
    /// Run a compiler through the cache (like ccache): reuse its output for
    /// the same module, compiler binary, arguments and environment.
    Exec(exec::Args),
    /// Inspect and manage the persistent cache.
    Cache(Managed<cache::Command>),
    /// Run records: what each run used at each address; export and import.
    Runs(Managed<runs::Command>),
    /// Internal: reads bytecode from stdin with MLIR, for a parent process
    /// that must survive MLIR crashing on it (see `limits`).
    #[command(name = limits::READ_BYTECODE_COMMAND, hide = true)]
    ReadBytecodeIsolated {
        /// The input's name, for diagnostics.
        name: String,
    },
}

/// A management command with the cache options it applies to.
#[derive(Debug, clap::Args)]
struct Managed<C: Subcommand> {
    #[command(flatten)]
    cache: settings::CacheOptions,
    #[command(subcommand)]
    command: C,
}

/// Parses the process arguments and runs the command.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                Failure::Usage.code()
            } else {
                0
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    // The command line wins; else --log_level of MLIR_CACHE_KEY_FLAGS (a bad
    // variable is reported when the cache is opened).
    let level = cli.log_level.or_else(|| {
        let settings = settings::CacheOptions::default().settings().ok()?;
        std::env::var_os(crate::store::FLAGS_VAR)?;
        Some(logging::Level::from(settings.log_level))
    });
    logging::init(level);
    match run(cli) {
        Ok(code) => code,
        Err(e) => e.report(),
    }
}

fn run(cli: Cli) -> Result<ExitCode, error::CliError> {
    match cli.command {
        Command::Canon(args) => canon::run(args),
        Command::Kernels(args) => kernels::run(args),
        Command::Key(args) => key::run(args),
        Command::Why(args) => why::run(args),
        Command::Exec(args) => exec::run(args),
        Command::Cache(m) => cache::run(m.command, &m.cache),
        Command::Runs(m) => runs::run(m.command, &m.cache),
        Command::ReadBytecodeIsolated { name } => Ok(ExitCode::from(limits::read_bytecode(&name))),
    }
}
