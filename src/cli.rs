//! Command-line interface: argument parsing (clap), then calls into the
//! library. Errors print once, prefixed with the program name; exit codes are
//! documented in README.md and [`error::Failure`].

mod canon;
mod error;
mod input;
mod kernels;
mod key;
mod key_args;
mod logging;
mod output;
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
    /// Canonicalise a module: strip debug info and kernels, emit stable bytecode.
    Canon(canon::Args),
    /// List the kernels embedded in a module and how each is stripped.
    Kernels(kernels::Args),
    /// Compute a module's JAX-compatible cache key.
    Key(key::Args),
    /// Explain why two keys differ: the ingredient that moved, and how.
    Why(why::Args),
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
    logging::init(cli.log_level);
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
    }
}
