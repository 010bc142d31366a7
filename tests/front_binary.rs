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
    let module = corpus("cpu/mlp.a.generic.mlir");
    let out = run_copy(Command::new(&alone).arg("key").arg(&module));
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

/// What needs no MLIR is the front binary's own — the commands that manage a cache, `why` of
/// stored keys, help, completions, the man page, `--version`, usage errors: a copy of it with no
/// MLIR binary beside it runs them, with the MLIR binary's output and exit codes (side by side
/// on the same cache, errors included).
#[test]
fn what_needs_no_mlir_runs_without_the_mlir_binary_and_answers_alike() {
    let dir = tempfile::tempdir().expect("tempdir");
    let front = dir.path().join("mlir-cache-key");
    std::fs::copy(env!("CARGO_BIN_EXE_mlir-cache-key"), &front).expect("copy");
    let cache = dir.path().join("cache");
    for name in ["mlp.a", "mlp.a_batch5"] {
        let module = corpus(&format!("cpu/{name}.generic.mlir"));
        let out = dir.path().join(format!("{name}.out"));
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
    }
    let cache_dir = cache.display().to_string();
    let keys = stored_keys(&cache, "jit_mlp-");
    assert_eq!(keys.len(), 2, "{keys:?}");
    for args in [
        vec!["why", &keys[0], &keys[1]],
        vec!["why", &keys[0], &keys[1], "--json"],
        vec!["why", &keys[0], "jit_mlp-no-such-key"],
        vec!["--help"],
        vec!["why", "--help"],
        vec!["exec", "--help"],
        vec!["cache", "stats", "--help"],
        vec!["completions", "bash"],
        vec!["completions", "zsh"],
        vec!["man"],
        vec!["no-such-command"],
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
        // The commands that read a cache are pointed at this one.
        let cache_args = match args[0] {
            "cache" | "runs" | "config" | "why" => vec!["--cache-dir", &cache_dir],
            _ => vec![],
        };
        let run = |program: &mut Command| run_copy(program.args(&args).args(&cache_args));
        let alone = run(&mut Command::new(&front));
        let full = run(&mut mlir_binary());
        assert_eq!(
            alone.status.code(),
            full.status.code(),
            "{args:?}: {alone:?}"
        );
        // Run directly, the MLIR binary names itself in usage lines.
        assert_eq!(
            String::from_utf8_lossy(&alone.stdout),
            String::from_utf8_lossy(&full.stdout).replace("mlir-cache-key-mlir", "mlir-cache-key"),
            "{args:?}"
        );
        assert!(
            !alone.stdout.is_empty() || !alone.stderr.is_empty(),
            "{args:?}"
        );
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

/// The keys stored in `cache` that start with `prefix`, as `cache entries --json` lists them.
fn stored_keys(cache: &std::path::Path, prefix: &str) -> Vec<String> {
    let out = bin()
        .args(["cache", "entries", "--json", "--cache-dir"])
        .arg(cache)
        .output()
        .expect("cache entries");
    assert!(out.status.success(), "{out:?}");
    let entries: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("json");
    let mut keys: Vec<String> = entries
        .iter()
        .filter_map(|e| e["key"].as_str())
        .filter(|k| k.starts_with(prefix))
        .map(str::to_owned)
        .collect();
    keys.sort();
    keys
}

/// One definition of the command line serves both binaries: every command's help comes from a
/// copy of the front binary alone, as the MLIR binary prints it.
#[test]
fn every_commands_help_is_the_front_binarys_own() {
    use clap::CommandFactory as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let front = dir.path().join("mlir-cache-key");
    std::fs::copy(env!("CARGO_BIN_EXE_mlir-cache-key"), &front).expect("copy");
    let commands = mck_cli::command_line::Cli::command();
    let names: Vec<&str> = commands
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name())
        .collect();
    assert!(names.len() >= 9, "{names:?}");
    for name in names {
        let alone = run_copy(Command::new(&front).args([name, "--help"]));
        let full = mlir_binary().args([name, "--help"]).output().expect("help");
        assert!(alone.status.success(), "{name}: {alone:?}");
        assert_eq!(
            String::from_utf8_lossy(&alone.stdout),
            String::from_utf8_lossy(&full.stdout).replace("mlir-cache-key-mlir", "mlir-cache-key"),
            "{name}"
        );
    }
}
