//! Command-line interface: argument parsing (clap), then calls into the
//! library. Errors print once, prefixed with the program name; exit codes are
//! documented in docs/exit-codes.md and [`error::Failure`].

mod canon;
mod exec;
mod help;
mod kernels;
mod key;
mod key_args;
mod limits;
mod module;
mod why;
mod why_kernel;
mod wrap;

// The MLIR-free half of the command line (mck-cli), shared with the front binary; the cache's
// management commands live there whole.
use mck_cli::manage::{ManageCommand, output, progress, stored};
use mck_cli::{compilers, error, input, logging, settings};

use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub use error::Failure;

#[derive(Debug, Parser)]
#[command(
    name = "mlir-cache-key",
    version = help::long_version(),
    about = "Stable, explainable compilation-cache keys for MLIR programs",
    long_about = None,
    after_help = error::exit_codes_help()
)]
pub struct Cli {
    /// The program's options from the settings table (`--log-level`).
    #[command(flatten)]
    program: settings::ProgramOptions,

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
    /// Run a known compiler through the cache, finding its input and output
    /// in its own arguments (a drop-in wrapper; also used when this binary is
    /// invoked through a symlink named mlir-opt, iree-compile or neuronx-cc).
    Wrap(wrap::Args),
    /// `cache`, `runs`, `config`: the MLIR-free commands (mck-cli), which the front binary
    /// serves itself.
    #[command(flatten)]
    Manage(ManageCommand),
    /// Print shell completions (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(help::CompletionsArgs),
    /// Print the man page (roff) to stdout: `mlir-cache-key man | man -l -`.
    Man,
    /// Internal: reads bytecode from stdin with MLIR, for a parent process
    /// that must survive MLIR crashing on it (see `limits`).
    #[command(name = limits::READ_BYTECODE_COMMAND, hide = true)]
    ReadBytecodeIsolated {
        /// The input's name, for diagnostics.
        name: String,
    },
}

/// Parses the process arguments and runs the command; invoked through a
/// symlink named after a known compiler, wraps that compiler.
pub fn main() -> ExitCode {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    let invoked_as = std::path::Path::new(&argv0)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    if compilers::known(&invoked_as).is_some() {
        logging::init(logging::flags_level(None));
        return wrap::masquerade(&invoked_as);
    }
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
    // The command line wins; else --log_level of MLIR_CACHE_KEY_FLAGS, else log_level of the
    // configuration file (of the cache directory the command names).
    let cache = match &cli.command {
        Command::Manage(m) => Some(m.cache()),
        _ => None,
    };
    logging::init(
        cli.program
            .log_level()
            .or_else(|| logging::flags_level(cache)),
    );
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
        Command::Wrap(args) => wrap::run(args),
        Command::Manage(m) => m.run().map(|()| ExitCode::SUCCESS),
        Command::Completions(args) => help::completions(args),
        Command::Man => help::man(),
        Command::ReadBytecodeIsolated { name } => Ok(ExitCode::from(limits::read_bytecode(&name))),
    }
}
