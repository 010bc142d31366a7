//! The `mlir-cache-key` binary users run. It parses the whole command line (one definition,
//! `command_line`) and serves itself, without MLIR, what needs none: a direct-mode hit of
//! `exec` or `wrap` (or of a symlink named after a compiler), the commands that manage a cache
//! (`cache`, `runs`, `config`), `why` of stored keys and reports, `completions`, `man`, help,
//! the version and usage errors. Linking libMLIR/libLLVM costs every process ~20 ms of symbol
//! resolution and ~85 MB of resident memory before it does anything. The rest — commands that
//! read a module, stdin input, `--no-direct`, a direct miss — it hands to the MLIR binary
//! installed beside it, which replaces this process with the same arguments (and `argv[0]`, so
//! a symlink named after a compiler still wraps that compiler); the names and the marker it
//! sets are in `handover`. The Python package's command line is the same without the MLIR
//! binary ([`without_mlir`]).

use crate::command_line::{self, Cli, Command};
use crate::error::{CliError, Failure};
use crate::exec::{Exec, Opened};
use crate::flags::CanonFlags;
use crate::handover::{self, FRONT_BINARY, MLIR_BINARY};
use crate::manage::ManageCommand;
use crate::settings::CacheOptions;
use crate::why::Mlir;
use crate::wrap::{Prepared, masquerade_command, masquerade_flags};
use crate::{bypass, compilers, help, input, logging};
use mck_settings::LogLevel;
use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use std::process::{Command as Process, ExitCode};

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
    let version = long_version(mlir_version);
    let outcome = match invoked_as {
        Some(name) => serve_wrap(
            None,
            &masquerade_command(&name),
            &masquerade_flags(),
            &CacheOptions::default(),
            Vec::new(),
        ),
        None => match command_line::parse(&version, std::env::args_os()) {
            Ok(cli) => serve_command(cli, &version, Mlir::Beside),
            Err(e) => Outcome::Done(ExitCode::from(clap_says(&e))),
        },
    };
    match outcome {
        Outcome::Done(code) => code,
        Outcome::HandOver { missed } => hand_over(missed),
    }
}

/// Runs `cli`'s command if it needs no MLIR (or is a direct hit); else what to hand over.
fn serve_command(cli: Cli, version: &str, mlir: Mlir<'_>) -> Outcome {
    let level = cli.program.log_level();
    let done =
        |result: Result<ExitCode, CliError>| Outcome::Done(result.unwrap_or_else(CliError::report));
    match cli.command {
        Command::Exec(args) => serve(level, &args),
        Command::Wrap(args) => serve_wrap(level, &args.command, &args.canon, &args.cache, args.env),
        Command::Manage(command) => Outcome::Done(ExitCode::from(manage(level, command))),
        Command::Why(args) => {
            logging::init(level.or_else(|| logging::flags_level(None)));
            let beside = matches!(mlir, Mlir::Beside);
            match crate::why::run(args, mlir) {
                Err(e) if beside && e.is_needs_mlir() => Outcome::HandOver { missed: false },
                result => done(result),
            }
        }
        Command::Completions(args) => done(help::completions(args, command_line::command(version))),
        Command::Man => done(help::man()),
        Command::Canon(_)
        | Command::Kernels(_)
        | Command::Key(_)
        | Command::ReadBytecodeIsolated { .. } => Outcome::HandOver { missed: false },
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
pub fn clap_says(e: &clap::Error) -> u8 {
    let _ = e.print();
    if e.use_stderr() {
        Failure::Usage.code()
    } else {
        0
    }
}

/// The command line of a process that has no MLIR binary beside it (the Python package's
/// `mlir-cache-key`): `args` as the process got them, without the program's name. It serves
/// what the front binary serves; a command that reads a module names the full build in one
/// line and exits 64; a compile it cannot serve from the cache (a miss, stdin, `--no-direct`)
/// runs the compiler without the cache, warned, as an unusable cache does (`cache_errors =
/// fail`: refused, exit 64). The exit code.
pub fn without_mlir(args: Vec<OsString>) -> u8 {
    let version = long_version(MLIR_OF_FULL_BUILD);
    let cli = match command_line::parse(
        &version,
        std::iter::once(OsString::from(FRONT_BINARY)).chain(args),
    ) {
        Ok(cli) => cli,
        Err(e) => return clap_says(&e),
    };
    let name = cli.command.name();
    let compile = match &cli.command {
        Command::Exec(args) => Some((args.command.clone(), args.cache.clone())),
        Command::Wrap(args) => Some((args.command.clone(), args.cache.clone())),
        _ => None,
    };
    match (serve_command(cli, &version, Mlir::Absent), compile) {
        (Outcome::Done(code), _) => crate::error::exit_number(code),
        (Outcome::HandOver { .. }, Some((command, cache))) => {
            let code = bypass::run_without_canonicalizer(&command, &cache, name)
                .unwrap_or_else(CliError::report);
            crate::error::exit_number(code)
        }
        (Outcome::HandOver { .. }, None) => CliError::needs_mlir(format!("`{name}`")).report_code(),
    }
}

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
    let mut command = Process::new(&binary);
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
