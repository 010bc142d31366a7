//! Command-line interface: the command line is mck-cli's (`mck_cli::command_line`, MLIR-free,
//! shared with the front binary); this runs each command, those that read a module with MLIR.
//! Errors print once, prefixed with the program name; exit codes are documented in
//! docs/exit-codes.md and [`error::Failure`].

mod canon;
mod exec;
mod kernels;
mod key;
mod limits;
mod module;
mod why;
mod why_kernel;
mod wrap;

use mck_cli::command_line::{self, Cli, Command};
use mck_cli::manage::{output, progress, stored};
use mck_cli::{compilers, error, help, input, logging, settings};

use std::process::ExitCode;

pub use error::Failure;

/// `-V` and `--version`: the front binary's words, with the MLIR this build links.
pub fn long_version() -> String {
    mck_cli::front::long_version(env!("MCK_MLIR_VERSION"))
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
    let cli = match command_line::parse(&long_version(), std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => return ExitCode::from(mck_cli::front::clap_says(&e)),
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
        Command::Exec(args) => exec::run(*args),
        Command::Wrap(args) => wrap::run(args),
        Command::Manage(m) => m.run().map(|()| ExitCode::SUCCESS),
        Command::Completions(args) => {
            help::completions(args, command_line::command(&long_version()))
        }
        Command::Man => help::man(),
        Command::ReadBytecodeIsolated { name } => Ok(ExitCode::from(limits::read_bytecode(&name))),
    }
}
