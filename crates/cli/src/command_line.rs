//! The whole `mlir-cache-key` command line, defined once and MLIR-free: both binaries and the
//! Python package's command line parse it, so help, usage errors, completions and the man
//! page read the same from each. Each runs what it can: the MLIR binary everything; the front
//! binary what needs no MLIR (handing the rest over); the Python package's command line what
//! needs no MLIR (refusing the rest, exit 64).

pub mod canon;
pub mod kernels;
pub mod key;

use crate::manage::ManageCommand;
use crate::settings::ProgramOptions;
use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use std::ffi::OsString;

/// The hidden command by which the MLIR binary reads bytecode in a child process.
pub const READ_BYTECODE_COMMAND: &str = "read-bytecode-isolated";

#[derive(Debug, Parser)]
#[command(
    name = "mlir-cache-key",
    about = "Stable, explainable compilation-cache keys for MLIR programs",
    long_about = None,
    after_help = crate::error::exit_codes_help()
)]
pub struct Cli {
    /// The program's options from the settings table (`--log-level`).
    #[command(flatten)]
    pub program: ProgramOptions,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Canonicalize a module: strip debug info and kernels, emit stable bytecode.
    Canon(canon::Args),
    /// List the kernels embedded in a module and how each is stripped.
    Kernels(kernels::Args),
    /// Compute a module's JAX-compatible cache key.
    Key(key::Args),
    /// Explain why two keys differ: the ingredient that moved, and how.
    Why(crate::why::Args),
    /// Run a compiler through the cache (like ccache): reuse its output for
    /// the same module, compiler binary, arguments and environment.
    Exec(Box<crate::exec::Args>),
    /// Run a known compiler through the cache, finding its input and output
    /// in its own arguments (a drop-in wrapper; also used when this binary is
    /// invoked through a symlink named mlir-opt, iree-compile or neuronx-cc).
    Wrap(crate::wrap::Args),
    /// `cache`, `runs`, `config`, `report`: the cache's management commands.
    #[command(flatten)]
    Manage(ManageCommand),
    /// Print shell completions (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(CompletionsArgs),
    /// Print the man page (roff) to stdout: `mlir-cache-key man | man -l -`.
    Man,
    /// Internal: reads bytecode from stdin with MLIR, for a parent process
    /// that must survive MLIR crashing on it (see `limits`).
    #[command(name = READ_BYTECODE_COMMAND, hide = true)]
    ReadBytecodeIsolated {
        /// The input's name, for diagnostics.
        name: String,
    },
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  mlir-cache-key completions bash > /etc/bash_completion.d/mlir-cache-key\n  \
                        mlir-cache-key completions zsh > ~/.zfunc/_mlir-cache-key\n  \
                        mlir-cache-key completions fish > ~/.config/fish/completions/mlir-cache-key.fish"
)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

impl Command {
    /// What the command is called on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Canon(_) => "canon",
            Command::Kernels(_) => "kernels",
            Command::Key(_) => "key",
            Command::Why(_) => "why",
            Command::Exec(_) => "exec",
            Command::Wrap(_) => "wrap",
            Command::Manage(ManageCommand::Cache(_)) => "cache",
            Command::Manage(ManageCommand::Runs(_)) => "runs",
            Command::Manage(ManageCommand::Config(_)) => "config",
            Command::Manage(ManageCommand::Report(_)) => "report",
            Command::Completions(_) => "completions",
            Command::Man => "man",
            Command::ReadBytecodeIsolated { .. } => READ_BYTECODE_COMMAND,
        }
    }
}

/// The command line's definition, `--version` answering `version` (see `front::long_version`).
pub fn command(version: &str) -> clap::Command {
    Cli::command().version(version.to_owned())
}

/// `args` (with the program's name first) parsed; help, the version and usage errors are
/// clap's `Err`.
pub fn parse(version: &str, args: impl IntoIterator<Item = OsString>) -> Result<Cli, clap::Error> {
    command(version)
        .try_get_matches_from(args)
        .and_then(|m| Cli::from_arg_matches(&m))
}
