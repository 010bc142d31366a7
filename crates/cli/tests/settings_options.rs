//! The command line's options that mirror settings come from the settings table alone: which
//! commands take each (`exec --no-direct`, `exec --lock-timeout`), the program's `--log-level`
//! with the one log-level parser, and their precedence over the variable.

use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use mck_cli::settings::{CacheOptions, ProgramOptions};
use mck_settings::LogLevel;
use std::time::Duration;

#[derive(Parser)]
struct Program {
    #[command(flatten)]
    program: ProgramOptions,
    #[command(subcommand)]
    command: Commands,
}

#[derive(Subcommand)]
enum Commands {
    Exec(Box<mck_cli::exec::Args>),
    Wrap(mck_cli::wrap::Args),
}

fn parse(args: &[&str]) -> Result<Program, clap::Error> {
    Program::try_parse_from(std::iter::once("mlir-cache-key").chain(args.iter().copied()))
}

const EXEC: &[&str] = &[
    "exec",
    "--input",
    "m.mlir",
    "--output",
    "o",
    "--cache-dir",
    "/nonexistent",
];

fn exec(extra: &[&str], tail: &[&str]) -> Program {
    let args: Vec<&str> = EXEC
        .iter()
        .chain(extra)
        .chain(["--", "cc"].iter())
        .chain(tail)
        .copied()
        .collect();
    parse(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn cache(program: &Program) -> &CacheOptions {
    match &program.command {
        Commands::Exec(args) => &args.cache,
        Commands::Wrap(args) => &args.cache,
    }
}

#[test]
fn exec_takes_no_direct_and_lock_timeout_from_the_table() {
    let plain = exec(&[], &[]);
    assert!(!cache(&plain).given("no_direct"));
    for spelling in ["--no-direct", "--no_direct"] {
        let given = exec(&[spelling], &[]);
        assert!(cache(&given).given("no_direct"), "{spelling}");
        let layer = cache(&given).overrides().unwrap();
        assert!(layer.names().any(|n| n == "no_direct"));
    }
    let max = u64::MAX.to_string();
    let waiting = exec(&["--lock-timeout", &max], &[]);
    let mut settings = mck_settings::Settings::default();
    cache(&waiting).overrides().unwrap().apply_to(&mut settings);
    assert_eq!(settings.lock_timeout, Duration::from_secs(u64::MAX));
    let e = parse(&[EXEC, &["--lock-timeout", "soon", "--", "cc"]].concat())
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("expected a number of seconds"),
        "{e}"
    );
}

#[test]
fn only_the_commands_the_table_names_take_an_option() {
    let program = Program::command();
    let exec = program.find_subcommand("exec").unwrap();
    let wrap = program.find_subcommand("wrap").unwrap();
    let has = |c: &clap::Command, long: &str| c.get_arguments().any(|a| a.get_long() == Some(long));
    assert!(has(exec, "no-direct") && has(exec, "lock-timeout") && has(exec, "verify-hits"));
    assert!(!has(wrap, "no-direct") && !has(wrap, "lock-timeout") && has(wrap, "verify-hits"));
    assert!(parse(&["wrap", "--no-direct", "--", "cc"]).is_err());
    assert!(parse(&["wrap", "--verify-hits", "1", "--", "cc"]).is_ok());
    let matches = Program::command()
        .try_get_matches_from(["mlir-cache-key", "wrap", "--", "cc"])
        .unwrap();
    let (_, wrap_matches) = matches.subcommand().unwrap();
    assert!(
        !CacheOptions::from_arg_matches(wrap_matches)
            .unwrap()
            .given("no_direct")
    );
}

#[test]
fn log_level_is_the_programs_option_with_the_one_parser() {
    assert_eq!(exec(&[], &[]).program.log_level(), None);
    for (word, level) in [
        ("error", LogLevel::Error),
        ("WARNING", LogLevel::Warning),
        ("warn", LogLevel::Warning),
        ("Info", LogLevel::Info),
        ("DEBUG", LogLevel::Debug),
    ] {
        assert_eq!(mck_settings::parse_log_level(word), Ok(level));
        // Before the command, or after it (a global option), in both spellings.
        let before = parse(&[&["--log-level", word][..], EXEC, &["--", "cc"]].concat()).unwrap();
        assert_eq!(before.program.log_level(), Some(level), "{word}");
        let after = exec(&["--log_level", word], &[]);
        assert_eq!(after.program.log_level(), Some(level), "{word}");
    }
    let e = parse(&[&["--log-level", "loud"][..], EXEC, &["--", "cc"]].concat())
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("expected ERROR, WARNING, INFO or DEBUG"),
        "{e}"
    );
}
