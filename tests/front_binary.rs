//! The front binary users run does not load MLIR: a direct hit pays neither libMLIR/libLLVM's
//! start-up nor their resident memory; every other command is handed to the MLIR binary beside
//! it, with the same arguments and the same results.

use crate::common::{EX_SOFTWARE, EX_USAGE, bin, corpus};
use std::process::Command;

fn mlir_binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mlir-cache-key-mlir"))
}

#[test]
fn the_front_binary_links_no_mlir_and_the_other_does() {
    let libraries = |path: &str| {
        let out = Command::new("ldd").arg(path).output().expect("ldd");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let front = libraries(env!("CARGO_BIN_EXE_mlir-cache-key"));
    assert!(front.contains("libc.so"), "ldd said: {front}");
    assert!(
        !front.contains("libMLIR") && !front.contains("libLLVM"),
        "the front binary links MLIR:\n{front}"
    );
    let full = libraries(env!("CARGO_BIN_EXE_mlir-cache-key-mlir"));
    assert!(full.contains("libMLIR"), "ldd said: {full}");
}

#[test]
fn other_commands_are_handed_over_unchanged() {
    let module = corpus("cpu/mlp.a.generic.mlir");
    for args in [
        vec!["key".into(), module.display().to_string()],
        vec!["--version".into()],
        vec![
            "canon".into(),
            "--digest".into(),
            module.display().to_string(),
        ],
        vec!["exec".into(), "--no-such-flag".into()],
        vec!["no-such-command".into()],
    ] {
        let front = bin().args(&args).output().expect("front");
        let full = mlir_binary().args(&args).output().expect("mlir binary");
        assert_eq!(front.status.code(), full.status.code(), "{args:?}");
        assert_eq!(front.stdout, full.stdout, "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&front.stderr).replace("mlir-cache-key-mlir", "mlir-cache-key"),
            String::from_utf8_lossy(&full.stderr).replace("mlir-cache-key-mlir", "mlir-cache-key"),
            "{args:?}"
        );
    }
    let usage = bin().arg("no-such-command").output().expect("front");
    assert_eq!(usage.status.code(), Some(EX_USAGE));
}

#[test]
fn a_missing_mlir_binary_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let alone = dir.path().join("mlir-cache-key");
    std::fs::copy(env!("CARGO_BIN_EXE_mlir-cache-key"), &alone).expect("copy");
    let out = run_copy(Command::new(&alone).arg("--help"));
    assert_eq!(out.status.code(), Some(EX_SOFTWARE));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot run") && stderr.contains("mlir-cache-key-mlir"),
        "{stderr}"
    );
}

/// A direct hit is the front binary's alone: with a copy of it and no MLIR binary beside it,
/// `exec` and a symlink named after a compiler are served, and only a miss needs the other.
#[test]
fn a_direct_hit_runs_without_the_mlir_binary() {
    let dir = tempfile::tempdir().expect("tempdir");
    let alone = dir.path().join("alone");
    std::fs::create_dir(&alone).expect("mkdir");
    let front = alone.join("mlir-cache-key");
    std::fs::copy(env!("CARGO_BIN_EXE_mlir-cache-key"), &front).expect("copy");
    // One fake compiler for both shapes: `exec -- mlir-opt IN OUT` and `mlir-opt IN -o OUT`.
    let compiler = dir.path().join("mlir-opt");
    std::fs::write(
        &compiler,
        "#!/bin/sh\necho run >> \"$RUNS\"\nout=$2; [ \"$2\" = -o ] && out=$3\ncat \"$1\" > \"$out\"\n",
    )
    .expect("write compiler");
    std::fs::set_permissions(
        &compiler,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    std::os::unix::fs::symlink(&front, alone.join("mlir-opt")).expect("symlink");
    let module = dir.path().join("m.mlir");
    std::fs::copy(corpus("cpu/mlp.a.generic.mlir"), &module).expect("copy module");
    let cache = dir.path().join("cache");
    let exec = |program: &std::path::Path, output: &str| {
        let mut command = Command::new(program);
        command
            .env("RUNS", dir.path().join("runs"))
            .env(
                "MLIR_CACHE_KEY_FLAGS",
                format!("--cache_dir={}", cache.display()),
            )
            .current_dir(dir.path())
            .args(["exec", "--input", "m.mlir", "--output", output, "--"])
            .arg(&compiler)
            .args(["m.mlir", output]);
        run_copy(&mut command)
    };
    let wrapped = |program: &std::path::Path, output: &str| {
        let mut path = std::ffi::OsString::from(dir.path());
        path.push(":");
        path.push(std::env::var_os("PATH").unwrap_or_default());
        run_copy(
            Command::new(program)
                .env("RUNS", dir.path().join("runs"))
                .env(
                    "MLIR_CACHE_KEY_FLAGS",
                    format!("--cache_dir={}", cache.display()),
                )
                .env("PATH", path)
                .current_dir(dir.path())
                .args(["m.mlir", "-o", output]),
        )
    };
    // Misses, through the installed pair: they store the entries and their manifests.
    assert!(
        exec(
            std::path::Path::new(env!("CARGO_BIN_EXE_mlir-cache-key")),
            "a"
        )
        .status
        .success()
    );
    let installed = dir.path().join("installed");
    std::fs::create_dir(&installed).expect("mkdir");
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_mlir-cache-key"),
        installed.join("mlir-opt"),
    )
    .expect("symlink");
    let miss = wrapped(&installed.join("mlir-opt"), "w1");
    assert!(
        miss.status.success(),
        "{}",
        String::from_utf8_lossy(&miss.stderr)
    );
    // Hits, through the front binary alone.
    let hit = exec(&front, "b");
    assert!(
        hit.status.success(),
        "{}",
        String::from_utf8_lossy(&hit.stderr)
    );
    let hit = wrapped(&alone.join("mlir-opt"), "w2");
    assert!(
        hit.status.success(),
        "{}",
        String::from_utf8_lossy(&hit.stderr)
    );
    assert_eq!(
        std::fs::read(dir.path().join("a")).unwrap(),
        std::fs::read(dir.path().join("b")).unwrap()
    );
    assert_eq!(
        std::fs::read(dir.path().join("w1")).unwrap(),
        std::fs::read(dir.path().join("w2")).unwrap()
    );
    let runs = std::fs::read_to_string(dir.path().join("runs")).unwrap();
    assert_eq!(runs.lines().count(), 2, "the compiler ran on a hit");
    // A miss needs the MLIR binary, and says so.
    std::fs::write(&module, b"// changed\n").expect("write");
    let miss = exec(&front, "c");
    assert_eq!(miss.status.code(), Some(EX_SOFTWARE));
    assert!(String::from_utf8_lossy(&miss.stderr).contains("mlir-cache-key-mlir"));
}

/// The commands that manage a cache, and `--version`, are the front binary's own: a copy of it with no MLIR
/// binary beside it runs them, with the MLIR binary's output and exit codes (side by side on the
/// same cache, errors included).
#[test]
fn management_commands_run_without_the_mlir_binary_and_answer_alike() {
    let dir = tempfile::tempdir().expect("tempdir");
    let front = dir.path().join("mlir-cache-key");
    std::fs::copy(env!("CARGO_BIN_EXE_mlir-cache-key"), &front).expect("copy");
    let cache = dir.path().join("cache");
    let module = corpus("cpu/mlp.a.generic.mlir");
    let out = dir.path().join("m.out");
    let stored = bin()
        .args(["exec", "--cache-dir"])
        .arg(&cache)
        .args(["--input"])
        .arg(&module)
        .arg("--output")
        .arg(&out)
        .args(["--", "cp"])
        .arg(&module)
        .arg(&out)
        .output()
        .expect("exec");
    assert!(stored.status.success(), "{stored:?}");
    let cache_dir = cache.display().to_string();
    for args in [
        vec!["cache", "stats", "--json"],
        vec!["cache", "stats"],
        vec!["cache", "list"],
        vec!["cache", "verify"],
        vec!["cache", "show", "jit_mlp"],
        vec!["cache", "show", "no-such-entry"],
        vec!["runs", "list"],
        vec!["config", "show"],
        vec!["cache", "stats", "--ttl", "banana"],
    ] {
        let run =
            |program: &mut Command| run_copy(program.args(&args).args(["--cache-dir", &cache_dir]));
        let alone = run(&mut Command::new(&front));
        let full = run(&mut mlir_binary());
        assert_eq!(
            alone.status.code(),
            full.status.code(),
            "{args:?}: {alone:?}"
        );
        assert_eq!(alone.stdout, full.stdout, "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&alone.stderr),
            String::from_utf8_lossy(&full.stderr).replace("mlir-cache-key-mlir", "mlir-cache-key"),
            "{args:?}"
        );
        let stderr = String::from_utf8_lossy(&alone.stderr);
        assert!(
            !stderr.contains("cannot run"),
            "{args:?} was handed over: {stderr}"
        );
    }
    for version in ["--version", "-V"] {
        let alone = run_copy(Command::new(&front).arg(version));
        let full = mlir_binary().arg(version).output().expect("run");
        assert!(alone.status.success(), "{alone:?}");
        assert_eq!(alone.stdout, full.stdout);
    }
}

/// Runs a command whose program this test just copied: another thread's child may still hold
/// the copy open for writing between its fork and exec (ETXTBSY), briefly.
fn run_copy(command: &mut Command) -> std::process::Output {
    for _ in 0..200 {
        match command.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            result => return result.expect("run"),
        }
    }
    panic!("{command:?}: the copied program stayed busy");
}

/// The Python package's command line runs the management commands and names the full build for
/// the others: its two lists together are the MLIR binary's commands, as `--help` lists them.
#[test]
fn the_python_command_line_knows_every_command() {
    let help = mlir_binary().arg("--help").output().expect("help");
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let mut listed: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    let mut known: Vec<&str> = mck_cli::front::NEEDS_MLIR.to_vec();
    known.extend(mck_cli::manage::COMMANDS);
    listed.sort_unstable();
    known.sort_unstable();
    assert_eq!(listed, known, "{help}");
}
