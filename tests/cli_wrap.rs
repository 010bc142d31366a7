//! `mlir-cache-key wrap -- COMPILER ARGS…` and the symlink form, with the real
//! /usr/lib/llvm-22/bin/mlir-opt behind a PATH shim that counts its runs: a repeated invocation
//! is a hit that does not run the compiler, a changed flag misses, an argument shape the table
//! cannot read runs uncached; `neuronx-cc compile` with JAX's HloModuleProtos.

use crate::common::{bin, corpus, data};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MLIR_OPT: &str = "/usr/lib/llvm-22/bin/mlir-opt";

struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    /// `shim/` holds counting `mlir-opt` and `neuronx-cc` scripts; `bin/` holds symlinks to this
    /// binary under those names; the inputs are in the directory itself.
    fn new() -> Setup {
        let dir = tempfile::tempdir().expect("tempdir");
        let (shim, links) = (dir.path().join("shim"), dir.path().join("bin"));
        std::fs::create_dir(&shim).unwrap();
        std::fs::create_dir(&links).unwrap();
        script(&shim.join("mlir-opt"), &format!("exec {MLIR_OPT} \"$@\""));
        // A stand-in for the Neuron compiler: copies INPUT (after `compile --framework X`) to
        // the file after --output.
        script(
            &shim.join("neuronx-cc"),
            "in=$4; while [ \"$1\" != --output ]; do shift; done; cp \"$in\" \"$2\"",
        );
        for name in ["mlir-opt", "neuronx-cc"] {
            symlink(env!("CARGO_BIN_EXE_mlir-cache-key"), links.join(name)).unwrap();
        }
        for (from, to) in [
            ("cpu/mlp.a.generic.mlir", "a.mlir"),
            ("cpu/mlp.b.generic.mlir", "b.mlir"),
        ] {
            std::fs::copy(corpus(from), dir.path().join(to)).unwrap();
        }
        for name in ["mlp.a", "mlp.b", "mlp.op"] {
            std::fs::copy(
                data(&format!("hlo/{name}.pb")),
                dir.path().join(format!("{name}.pb")),
            )
            .unwrap();
        }
        Setup { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// How many times the shimmed compilers ran.
    fn runs(&self) -> usize {
        std::fs::read_to_string(self.path("runs")).map_or(0, |s| s.lines().count())
    }

    /// Sets the environment every invocation shares: the cache, info logs, PATH.
    fn env(&self, command: &mut Command, path_first: &[&str]) {
        let mut path: Vec<PathBuf> = path_first.iter().map(|d| self.path(d)).collect();
        path.push(self.path("shim"));
        path.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        let flags = format!(
            "--cache_dir={} --log_level=INFO",
            self.path("cache").display()
        );
        command
            .current_dir(self.dir.path())
            .env("RUNS", self.path("runs"))
            .env("MLIR_CACHE_KEY_FLAGS", flags)
            .env("PATH", std::env::join_paths(path).unwrap());
    }

    /// `mlir-cache-key wrap -- ARGS…`, in the directory, with relative paths.
    fn wrap(&self, args: &[&str]) -> Output {
        let mut command = bin();
        self.env(&mut command, &[]);
        command.arg("wrap").arg("--").args(args).output().unwrap()
    }

    /// `bin/NAME ARGS…` (this binary through a symlink), with `bin/` first on PATH.
    fn masquerade(&self, name: &str, args: &[&str]) -> Output {
        let mut command = Command::new(self.path("bin").join(name));
        self.env(&mut command, &["bin"]);
        command.env_remove("XLA_FLAGS").args(args).output().unwrap()
    }
}

fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\necho run >> \"$RUNS\"\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn ok(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{:?}\n{stderr}", output.status);
    stderr
}

const OPT: [&str; 4] = ["mlir-opt", "--allow-unregistered-dialect", "a.mlir", "-o"];

#[test]
fn a_repeated_invocation_is_a_hit_that_does_not_run_the_compiler() {
    let s = Setup::new();
    let first = ok(&s.wrap(&[&OPT[..], &["out1.mlir"]].concat()));
    assert!(first.contains("No candidate found under"), "{first}");
    assert!(first.contains("Compiler status PASS"), "{first}");
    assert!(first.contains("Stored the artefact at"), "{first}");
    assert_eq!(s.runs(), 1);
    assert_eq!(entries(&s), 2, "the artefact and its direct-mode manifest");
    let again = ok(&s.wrap(&[&OPT[..], &["out2.mlir"]].concat()));
    assert!(again.contains("Using a cached artefact at"), "{again}");
    assert!(again.contains("direct hit"), "{again}");
    assert!(!again.contains("Compiler status"), "{again}");
    assert_eq!(s.runs(), 1, "the compiler ran on a hit");
    let (out1, out2) = (s.path("out1.mlir"), s.path("out2.mlir"));
    assert_eq!(std::fs::read(out1).unwrap(), std::fs::read(out2).unwrap());
    // The same module from another checkout (other locations) is a hit too.
    let twin = ok(&s.wrap(&[
        "mlir-opt",
        "--allow-unregistered-dialect",
        "b.mlir",
        "-o",
        "o3",
    ]));
    assert!(twin.contains("Using a cached artefact at"), "{twin}");
    assert_eq!(s.runs(), 1);
}

#[test]
fn a_changed_flag_misses() {
    let s = Setup::new();
    ok(&s.wrap(&[&OPT[..], &["out.mlir"]].concat()));
    let changed = ok(&s.wrap(&[&OPT[..], &["out.mlir", "--mlir-print-op-generic"]].concat()));
    assert!(changed.contains("No candidate found under"), "{changed}");
    assert!(changed.contains("Compiler status PASS"), "{changed}");
    assert_eq!(s.runs(), 2);
    let generic = std::fs::read_to_string(s.path("out.mlir")).unwrap();
    assert!(
        generic.contains("\"func.func\""),
        "not the generic form: {generic}"
    );
}

#[test]
fn an_unknown_argument_shape_runs_uncached() {
    let s = Setup::new();
    for expected_runs in [1, 2] {
        let output = s.wrap(&["mlir-opt", "--allow-unregistered-dialect", "a.mlir"]);
        let stderr = ok(&output);
        let line = "info: running mlir-opt uncached: mlir-opt arguments: no -o OUT";
        assert_eq!(stderr.matches(line).count(), 1, "{stderr}");
        assert!(!stderr.contains("candidate"), "{stderr}");
        assert!(String::from_utf8_lossy(&output.stdout).contains("func.func"));
        assert_eq!(s.runs(), expected_runs);
    }
    // mlir-opt's own refusal passes through, uncached, with its status.
    let two_inputs = s.wrap(&["mlir-opt", "a.mlir", "b.mlir", "-o", "out"]);
    assert_eq!(two_inputs.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&two_inputs.stderr);
    assert!(
        stderr.contains("cannot tell which one is the input"),
        "{stderr}"
    );
    assert!(stderr.contains("Too many positional arguments"), "{stderr}");
    assert_eq!(s.runs(), 3);
    assert_eq!(entries(&s), 0, "an uncached run stored something");
}

/// Entry files in the cache (none when it was never opened).
fn entries(s: &Setup) -> usize {
    std::fs::read_dir(s.path("cache/v1/entries"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|d| std::fs::read_dir(d.path()).map_or(0, |e| e.count()))
        .sum()
}

#[test]
fn a_failure_is_stored_and_replayed_with_its_status() {
    let s = Setup::new();
    let args = [&OPT[..], &["out.mlir", "--pass-pipeline=no-such-pass"]].concat();
    let first = s.wrap(&args);
    assert_ne!(first.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(
        stderr.contains("Compiler status FAIL (exit status"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Stored the failed compilation at"),
        "{stderr}"
    );
    let again = s.wrap(&args);
    assert_eq!(again.status.code(), first.status.code());
    assert!(String::from_utf8_lossy(&again.stderr).contains("Got a cached failed compilation"));
    assert_eq!(s.runs(), 1);
}

#[test]
fn a_symlink_named_mlir_opt_wraps_the_next_mlir_opt_on_path() {
    let s = Setup::new();
    let first = ok(&s.masquerade("mlir-opt", &[&OPT[1..], &["out1.mlir"]].concat()));
    assert!(first.contains("No candidate found under"), "{first}");
    assert_eq!(s.runs(), 1, "the real mlir-opt did not run once");
    let again = ok(&s.masquerade("mlir-opt", &[&OPT[1..], &["out2.mlir"]].concat()));
    assert!(again.contains("Using a cached artefact at"), "{again}");
    assert!(again.contains("direct hit"), "{again}");
    assert_eq!(s.runs(), 1);
    // `wrap` itself skips the symlink on PATH too, and shares the entry (same real compiler).
    let mut command = bin();
    s.env(&mut command, &["bin"]);
    let via_wrap = command
        .args(["wrap", "--"])
        .args(OPT)
        .arg("o3")
        .output()
        .unwrap();
    assert!(ok(&via_wrap).contains("Using a cached artefact at"));
    assert_eq!(s.runs(), 1);
}

#[test]
fn neuronx_cc_compile_with_hlo_protos() {
    let s = Setup::new();
    let compile = |input: &str, out: &str| {
        let args = [
            "compile",
            "--framework",
            "XLA",
            input,
            "--target",
            "trn1",
            "--output",
            out,
        ];
        ok(&s.masquerade("neuronx-cc", &args))
    };
    let first = compile("mlp.a.pb", "a.neff");
    assert!(first.contains("No candidate found under"), "{first}");
    assert!(first.contains("Compiler status PASS"), "{first}");
    assert_eq!(
        std::fs::read(s.path("a.neff")).unwrap(),
        std::fs::read(s.path("mlp.a.pb")).unwrap()
    );
    // The location twin (another checkout) is a hit; a changed op is not.
    let twin = compile("mlp.b.pb", "b.neff");
    assert!(twin.contains("Using a cached artefact at"), "{twin}");
    assert_eq!(s.runs(), 1);
    compile("mlp.op.pb", "op.neff");
    assert_eq!(s.runs(), 2);
    // Not `compile`: run as it is.
    let other = s.masquerade("neuronx-cc", &["--version"]);
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert!(
        stderr.contains(
            "running neuronx-cc uncached: neuronx-cc arguments: the first argument is not `compile`"
        ),
        "{stderr}"
    );
    assert_eq!(s.runs(), 3);
}
