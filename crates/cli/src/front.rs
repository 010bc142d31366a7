//! The `mlir-cache-key` binary users run. It serves a direct-mode hit of `exec` or `wrap` (or
//! of a symlink named after a compiler) and the commands that manage a cache (`cache`, `runs`,
//! `config`: `manage`) itself, without MLIR: linking libMLIR/libLLVM costs
//! every process ~20 ms of symbol resolution and ~85 MB of resident memory before it does
//! anything. Everything else — other commands, stdin input, `--no-direct`, a direct miss — it
//! hands to the MLIR binary installed beside it, which
//! replaces this process with the same arguments (and `argv[0]`, so a symlink named after a
//! compiler still wraps that compiler); the names and the marker it sets are in `handover`.

use crate::error::{CliError, Failure};
use crate::exec::{Exec, Opened};
use crate::flags::CanonFlags;
use crate::handover::{self, FRONT_BINARY, MLIR_BINARY};
use crate::manage::{self, ManageCommand};
use crate::settings::{CacheOptions, ProgramOptions};
use crate::wrap::{Prepared, masquerade_command, masquerade_flags};
use crate::{compilers, input, logging};
use clap::error::ErrorKind;
use clap::{CommandFactory as _, FromArgMatches as _, Parser};
use mck_settings::LogLevel;
use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, ExitCode};

/// What the front binary recognizes: `exec`, `wrap` and the management commands, with the
/// global option they share, and `--version`. Help and any error go to the MLIR binary, which
/// words them for the whole command line.
#[derive(Parser)]
#[command(name = "mlir-cache-key")]
struct Front {
    #[command(flatten)]
    program: ProgramOptions,
    #[command(subcommand)]
    command: FrontCommand,
}

#[derive(clap::Subcommand)]
enum FrontCommand {
    Exec(Box<crate::exec::Args>),
    Wrap(crate::wrap::Args),
    #[command(flatten)]
    Manage(ManageCommand),
}

enum Outcome {
    Done(ExitCode),
    HandOver { missed: bool },
}

/// `--version`: the package's version, the MLIR it is built against (`mlir_version`, which the
/// root package's build script finds), the canonical producer.
pub fn long_version(mlir_version: &str) -> String {
    format!(
        "{} (MLIR {mlir_version}, canonical producer {})",
        env!("CARGO_PKG_VERSION"),
        mck_key::CANONICAL_PRODUCER
    )
}

/// The front binary's `main`; `mlir_version` is the MLIR the MLIR binary is built against.
pub fn main(mlir_version: &str) -> ExitCode {
    let invoked_as = std::env::args_os().next().and_then(|argv0| {
        let name = std::path::Path::new(&argv0)
            .file_name()?
            .to_str()?
            .to_string();
        compilers::known(&name).map(|_| name)
    });
    // Anything it does not recognize (help, errors included) is the MLIR binary's to handle.
    let outcome = match invoked_as {
        Some(name) => serve_wrap(
            None,
            &masquerade_command(&name),
            &masquerade_flags(),
            &CacheOptions::default(),
            Vec::new(),
        ),
        None => match Front::command()
            .version(long_version(mlir_version))
            .try_get_matches()
            .and_then(|m| Front::from_arg_matches(&m))
        {
            Ok(Front {
                program,
                command: FrontCommand::Exec(args),
            }) => serve(program.log_level(), &args),
            Ok(Front {
                program,
                command: FrontCommand::Wrap(args),
            }) => serve_wrap(
                program.log_level(),
                &args.command,
                &args.canon,
                &args.cache,
                args.env,
            ),
            Ok(Front {
                program,
                command: FrontCommand::Manage(command),
            }) => Outcome::Done(ExitCode::from(manage(program.log_level(), command))),
            // The version, and a management command's own help and usage errors, read the
            // same from either binary (one definition); the rest is the whole command line's.
            Err(e)
                if e.kind() == ErrorKind::DisplayVersion
                    || first_word(std::env::args_os().skip(1))
                        .is_some_and(|w| manage::COMMANDS.contains(&w.as_str())) =>
            {
                Outcome::Done(ExitCode::from(clap_says(&e)))
            }
            Err(_) => Outcome::HandOver { missed: false },
        },
    };
    match outcome {
        Outcome::Done(code) => code,
        Outcome::HandOver { missed } => hand_over(missed),
    }
}

/// A management command, run here as the MLIR binary would (the log level from the command
/// line, else from the settings of the cache it names): its exit code, 0 or its error's,
/// reported.
fn manage(log_level: Option<LogLevel>, command: ManageCommand) -> u8 {
    logging::init(log_level.or_else(|| logging::flags_level(Some(command.cache()))));
    command.run().map_or_else(CliError::report_code, |()| 0)
}

/// Prints what clap has to say (help, the version, a usage error): its exit code.
fn clap_says(e: &clap::Error) -> u8 {
    let _ = e.print();
    if e.use_stderr() {
        Failure::Usage.code()
    } else {
        0
    }
}

/// The first argument that is not an option: the command, when there is one.
fn first_word(args: impl IntoIterator<Item = OsString>) -> Option<String> {
    args.into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .find(|a| !a.starts_with('-'))
}

/// The command line of a process that has no MLIR binary beside it (the Python package's
/// `mlir-cache-key`): `args` as the process got them, without the program's name. It runs
/// the management commands and `--version` as the front binary does; a command that reads a
/// module (or a cached compile, which may have to) needs the full build: it says so in one
/// line and exits 64. The exit code.
pub fn without_mlir(args: Vec<OsString>) -> u8 {
    let first_word = first_word(args.iter().cloned());
    let parsed = Front::command()
        .version(long_version(MLIR_OF_FULL_BUILD))
        .try_get_matches_from(std::iter::once(OsString::from(FRONT_BINARY)).chain(args))
        .and_then(|m| Front::from_arg_matches(&m));
    let needs_mlir = first_word
        .as_deref()
        .is_some_and(|w| NEEDS_MLIR.contains(&w));
    match parsed {
        Ok(Front {
            program,
            command: FrontCommand::Manage(command),
        }) => manage(program.log_level(), command),
        // Help, the version, a usage error, an unknown command: clap's words.
        Err(e) if !needs_mlir => clap_says(&e),
        _ => {
            let what = first_word.map_or_else(|| "that".to_owned(), |w| format!("`{w}`"));
            eprintln!(
                "mlir-cache-key: error: {what} needs the full build: this command line (the \
                 Python package's) runs `cache`, `runs`, `config` and `--version`; build the \
                 full one from the repository (`cargo install --path .`, with LLVM/MLIR 22)"
            );
            Failure::Usage.code()
        }
    }
}

/// The commands of the full build that read a module or run a cached compile (which may
/// have to canonicalize one): the Python package's command line names the full build for them.
/// (`tests/front_binary.rs` checks this list against the MLIR binary's commands.)
pub const NEEDS_MLIR: [&str; 8] = [
    "canon",
    "kernels",
    "key",
    "why",
    "exec",
    "wrap",
    "completions",
    "man",
];

/// What `--version` names as the MLIR of a build without one.
const MLIR_OF_FULL_BUILD: &str = "none: the cache's commands only";

/// A direct hit (or an exec with caching off), served; else what to hand over.
fn serve(log_level: Option<LogLevel>, args: &crate::exec::Args) -> Outcome {
    if args.cache.given("no_direct") || input::is_stream(&args.input) {
        // Stdin or a pipe can be read only once, by the process that canonicalizes it.
        return Outcome::HandOver { missed: false };
    }
    let log = logging::init_buffered(log_level.or_else(|| logging::flags_level(None)));
    input::set_max_size(args.limits.max_input_size);
    let finished = |result: Result<ExitCode, CliError>| {
        log.print_from(0);
        Outcome::Done(result.unwrap_or_else(CliError::report))
    };
    let exec = match Exec::open(args) {
        // Direct mode is off in the settings: nothing to serve here.
        Ok(Opened::Cache(exec)) if !exec.cache.direct => {
            return Outcome::HandOver { missed: false };
        }
        Ok(Opened::Cache(exec)) => exec,
        Ok(Opened::Uncached(code)) => return finished(Ok(code)),
        Err(e) => return finished(Err(e)),
    };
    let opened = log.position();
    settle(&log, opened, exec.direct_hit(&mut None))
}

/// The outcome of a direct lookup, with what it logged: a hit (or an error) is finished here,
/// with everything logged; a miss is handed over with what the lookup logged (the MLIR binary
/// logs opening the cache again itself).
fn settle(
    log: &logging::Buffered,
    opened: usize,
    hit: Result<Option<ExitCode>, CliError>,
) -> Outcome {
    match hit {
        Ok(Some(code)) => {
            log.print_from(0);
            Outcome::Done(code)
        }
        Ok(None) => {
            log.print_from(opened);
            Outcome::HandOver { missed: true }
        }
        // An unusable cache: the MLIR binary tries again and, failing, runs the compiler.
        Err(e) if crate::bypass::tolerated(&e) => Outcome::HandOver { missed: false },
        Err(e) => {
            log.print_from(0);
            Outcome::Done(e.report())
        }
    }
}

/// A direct hit of a wrapped compiler, served; else what to hand over (an argument shape the
/// table cannot read, caching off, a missing compiler: the MLIR binary says so and runs it).
fn serve_wrap(
    log_level: Option<LogLevel>,
    command: &[OsString],
    canon: &CanonFlags,
    cache: &CacheOptions,
    env: Vec<String>,
) -> Outcome {
    let log = logging::init_buffered(log_level.or_else(|| logging::flags_level(None)));
    input::set_max_size(None);
    let wrap = match crate::wrap::prepare(command, cache, env) {
        Ok(Prepared::Cache(wrap))
            if wrap.cache.direct && !input::is_stream(&wrap.request.input) =>
        {
            wrap
        }
        _ => return Outcome::HandOver { missed: false },
    };
    let opened = log.position();
    settle(&log, opened, wrap.direct_hit(canon))
}

/// Replaces this process by the MLIR binary, with the same arguments.
fn hand_over(missed: bool) -> ExitCode {
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_else(|| FRONT_BINARY.into());
    let binary = match std::env::current_exe() {
        Ok(exe) => exe.with_file_name(MLIR_BINARY),
        Err(e) => {
            eprintln!("mlir-cache-key: error: cannot find this program's directory: {e}");
            return ExitCode::from(Failure::Other.code());
        }
    };
    let mut command = Command::new(&binary);
    command.arg0(argv0).args(args);
    if missed {
        handover::mark_direct_missed(&mut command);
    }
    let error = command.exec();
    eprintln!(
        "mlir-cache-key: error: cannot run {} (installed beside mlir-cache-key): {error}",
        binary.display()
    );
    ExitCode::from(Failure::Other.code())
}
