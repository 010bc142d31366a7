//! Addresses, conflicts, run records and sharing results, with
//! real processes: two runs sharing by address, conflicts that name what
//! moved, clear-then-resume, overwrite, adopt, export → import, hostile names.

use crate::common::{self, bin, corpus, failure, success, text};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const CONFLICT: i32 = common::EX_CONFLICT;

struct Team {
    dir: tempfile::TempDir,
}

impl Team {
    fn new() -> Team {
        let dir = tempfile::tempdir().expect("tempdir");
        let compiler = dir.path().join("cc.sh");
        common::write_compiler(&compiler, "compiled");
        Team { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A team and its copy of the MLP module.
    fn with_mlp() -> (Team, PathBuf) {
        let t = Team::new();
        let m = t.module("cpu/mlp.a.generic.mlir");
        (t, m)
    }

    fn module(&self, corpus_file: &str) -> PathBuf {
        let path = self.path(&corpus_file.replace('/', "_"));
        std::fs::copy(corpus(corpus_file), &path).unwrap();
        path
    }

    fn runs(&self) -> usize {
        std::fs::read_to_string(self.path("runs")).map_or(0, |s| s.lines().count())
    }

    fn mck(&self, cache: &str) -> Command {
        let mut c = bin();
        // The cache directory through the variable: the cache options belong to the subcommand.
        let flags = format!("--cache_dir={}", self.path(cache).display());
        c.env("RUNS", self.path("runs"))
            .env("MLIR_CACHE_KEY_FLAGS", flags);
        c
    }

    /// exec of `module` in `run` at the derived address train-v1/<step>[model:"small"].
    fn exec(&self, cache: &str, module: &Path, run: &str, extra: &[&str]) -> Command {
        let out = self.path("out.bin");
        let mut c = self.mck(cache);
        c.args(["exec", "--input"])
            .arg(module)
            .arg("--output")
            .arg(&out)
            .args([
                "--namespace",
                "train-v1",
                "--map",
                "model=small",
                "--run",
                run,
            ])
            .args(extra)
            .arg("--")
            .arg(self.path("cc.sh"))
            .arg(module)
            .arg(&out);
        c
    }

    fn json(&self, cache: &str, args: &[&str]) -> Value {
        serde_json::from_slice(&success(self.mck(cache).args(args))).expect("json")
    }
}

const ADDRESS: &str = "train-v1/jit_mlp[model:\"small\"]";

#[test]
fn two_runs_share_results_by_address() {
    let (t, m) = Team::with_mlp();
    success(&mut t.exec("c", &m, "r1", &[]));
    success(&mut t.exec("c", &m, "r2", &[]));
    assert_eq!(t.runs(), 1);
    let r1 = t.json("c", &["runs", "show", "r1", "--json"]);
    let r2 = t.json("c", &["runs", "show", "r2", "--json"]);
    assert_eq!(r1[0]["address"], ADDRESS);
    assert_eq!(r1[0]["key"], r2[0]["key"]);
    assert_eq!(r1[0]["state"], "ok");
    let list = text(success(t.mck("c").args(["cache", "list"])));
    assert!(list.contains("train-v1/jit_mlp  (1 address)"), "{list}");
}

#[test]
fn a_changed_module_stops_with_a_conflict_naming_what_moved() {
    let t = Team::new();
    success(&mut t.exec("c", &t.module("cpu/mlp.a.generic.mlir"), "r1", &[]));
    let before = t.json("c", &["cache", "list", "--json"]);
    let out = t
        .exec("c", &t.module("cpu/mlp.a_batch5.generic.mlir"), "r2", &[])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(CONFLICT));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cache conflict at {ADDRESS}")),
        "{stderr}"
    );
    assert!(
        stderr.contains("cached fingerprint: jit_mlp-")
            && stderr.contains("new fingerprint:    jit_mlp-"),
        "{stderr}"
    );
    assert!(
        stderr.contains("first difference: entry 1 \"computation\""),
        "{stderr}"
    );
    assert!(stderr.contains("tensor<5x16xf32>"), "{stderr}");
    assert!(
        stderr.contains("--overwrite-cache-conflicts") && stderr.contains("cache clear"),
        "{stderr}"
    );
    assert_eq!(t.runs(), 1, "a conflict does not compile");
    assert_eq!(
        t.json("c", &["cache", "list", "--json"]),
        before,
        "nothing was overwritten"
    );
    let conflicts = t.json("c", &["cache", "list", "--json", "--conflicts-in", "r2"]);
    assert_eq!(conflicts[0]["address"], ADDRESS);
    assert_ne!(conflicts[0]["conflicting_key"], conflicts[0]["key"]);
    let runs = t.json("c", &["runs", "list", "--json"]);
    assert_eq!(runs[1]["conflicts"], 1);
}

#[test]
fn clear_then_resume_and_finished_runs_keep_their_record() {
    let t = Team::new();
    success(&mut t.exec("c", &t.module("cpu/mlp.a.generic.mlir"), "r1", &[]));
    let r1_before = t.json("c", &["runs", "show", "r1", "--json"]);
    let batch5 = t.module("cpu/mlp.a_batch5.generic.mlir");
    assert_eq!(
        t.exec("c", &batch5, "r2", &[]).status().unwrap().code(),
        Some(CONFLICT)
    );
    let cleared = text(success(t.mck("c").args([
        "cache",
        "clear",
        "--conflicts-in",
        "r2",
    ])));
    assert!(cleared.starts_with("removed 1 addresses"), "{cleared}");
    success(&mut t.exec("c", &batch5, "r2", &[]));
    assert_eq!(t.runs(), 2);
    assert_eq!(t.json("c", &["runs", "show", "r1", "--json"]), r1_before);
    // The record is append-only: the conflict line stays, the resumed result follows it.
    let r2 = t.json("c", &["runs", "show", "r2", "--json"]);
    assert_eq!(r2[0]["state"], "conflict", "{r2}");
    assert_eq!(r2[1]["state"], "ok", "the run resumed after clearing: {r2}");
}

#[test]
fn overwrite_replaces_for_that_run() {
    let t = Team::new();
    success(&mut t.exec("c", &t.module("cpu/mlp.a.generic.mlir"), "r1", &[]));
    let batch5 = t.module("cpu/mlp.a_batch5.generic.mlir");
    let out = t
        .exec("c", &batch5, "r2", &["--overwrite-cache-conflicts"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("overwrote the cache conflict"));
    let now = t.json("c", &["cache", "list", "--json"]);
    let r2 = t.json("c", &["runs", "show", "r2", "--json"]);
    assert_eq!(now[0]["key"], r2[0]["key"]);
    assert_eq!(now[0]["run"], "r2");
}

#[test]
fn one_address_two_fingerprints_in_one_run_is_an_error() {
    let t = Team::new();
    success(&mut t.exec("c", &t.module("cpu/mlp.a.generic.mlir"), "r1", &[]));
    let batch5 = t.module("cpu/mlp.a_batch5.generic.mlir");
    let stderr = failure(
        &mut t.exec("c", &batch5, "r1", &["--overwrite-cache-conflicts"]),
        CONFLICT,
    );
    assert!(stderr.contains("run r1 reached address"), "{stderr}");
    assert_eq!(
        stderr.matches("jit_mlp-").count(),
        2,
        "names both fingerprints: {stderr}"
    );
}

#[test]
fn adopt_after_clear_puts_a_run_back() {
    let (t, m) = Team::with_mlp();
    success(&mut t.exec("c", &m, "r1", &[]));
    let cleared = text(success(t.mck("c").args(["cache", "clear", "--all"])));
    // The one entry removed is the direct-mode manifest; the run pins its artefact.
    assert!(
        cleared.contains("removed 1 addresses and 1 entries")
            && cleared.contains("kept 1 entries still referenced"),
        "the run pins its artefact: {cleared}"
    );
    assert_eq!(
        t.json("c", &["cache", "list", "--json"]),
        Value::Array(vec![])
    );
    let adopted = text(success(t.mck("c").args(["cache", "adopt", "r1"])));
    assert!(
        adopted.starts_with("adopted 1 addresses from run r1"),
        "{adopted}"
    );
    assert_eq!(
        t.json("c", &["cache", "list", "--json"])[0]["address"],
        ADDRESS
    );
    success(&mut t.exec("c", &m, "r3", &[]));
    assert_eq!(t.runs(), 1, "the adopted entry is reused");
    // Pruning the run lets its artefact go.
    success(t.mck("c").args(["runs", "prune", "r1", "r3"]));
    let cleared = text(success(t.mck("c").args(["cache", "clear", "--all"])));
    // The artefact and the direct-mode manifest the last exec wrote.
    assert!(cleared.contains("and 2 entries"), "{cleared}");
}

#[test]
fn export_import_into_a_fresh_cache_hits_without_compiling() {
    let (t, m) = Team::with_mlp();
    success(&mut t.exec("alice", &m, "r1", &[]));
    let file = t.path("r1.tar");
    success(t.mck("alice").args(["runs", "export", "r1"]).arg(&file));
    let imported = text(success(
        t.mck("bob")
            .args(["runs", "import", "--adopt-cache"])
            .arg(&file),
    ));
    common::assert_contains(
        &imported,
        &[
            "imported run r1: 1 lines, 1 artefacts",
            "adopted 1 addresses",
        ],
    );
    success(&mut t.exec("bob", &m, "r2", &[]));
    assert_eq!(t.runs(), 1, "bob reused alice's result");
    // Importing twice is harmless; a tampered file is refused whole.
    success(t.mck("bob").args(["runs", "import"]).arg(&file));
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.windows(7).position(|w| w == b"jit_mlp").unwrap();
    let payload = bytes.len() - 2048; // inside the last member's data
    bytes[payload.max(at + 600)] ^= 0xff;
    let tampered = t.path("tampered.tar");
    std::fs::write(&tampered, bytes).unwrap();
    let stderr = failure(
        t.mck("carol").args(["runs", "import"]).arg(&tampered),
        common::EX_DATAERR,
    );
    assert!(stderr.contains("tampered.tar"), "{stderr}");
    assert_eq!(
        t.json("carol", &["runs", "list", "--json"]),
        Value::Array(vec![])
    );
}

#[test]
fn hostile_addresses_are_refused() {
    let (t, m) = Team::with_mlp();
    for extra in [
        &["--address", "../etc"][..],
        &["--address", "a//b"],
        &["--address", "a/[b]"],
        &["--step", "a/b"],
        &["--step", ".."],
        &["--namespace", ""],
        &["--map", "k]=v"],
        &["--map", "novalue"],
        &["--override-address-prefix", "x/../y"],
    ] {
        let mut c = t.mck("c");
        c.args(["exec", "--input"])
            .arg(&m)
            .args(["--output", "o"])
            .args(extra)
            .args(["--", "true"]);
        let stderr = failure(&mut c, common::EX_USAGE);
        assert!(
            stderr.contains("address") || stderr.contains("--map"),
            "{extra:?}: {stderr}"
        );
    }
    assert_eq!(t.runs(), 0);
    assert!(
        !t.path("c/v1/registry.sqlite").exists()
            || t.json("c", &["cache", "list", "--json"]) == Value::Array(vec![])
    );
}

#[test]
fn list_patterns_steps_and_states() {
    let (t, m) = Team::with_mlp();
    for (step, model) in [("answer", "small"), ("answer", "big"), ("score", "small")] {
        let out = t.path("o");
        let mut c = t.mck("c");
        c.args(["exec", "--input"])
            .arg(&m)
            .arg("--output")
            .arg(&out)
            .args([
                "--override-address-prefix",
                &format!("t/{step}"),
                "--map",
                &format!("model={model}"),
                "--map",
                "prompt=math",
            ])
            .arg("--")
            .arg(t.path("cc.sh"))
            .arg(&m)
            .arg(&out);
        success(&mut c);
    }
    let count = |args: &[&str]| {
        t.json("c", &[&["cache", "list", "--json"], args].concat())
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(count(&[]), 3);
    assert_eq!(count(&["t/answer"]), 2);
    assert_eq!(count(&["t/answer[model:*,prompt:\"math\"]"]), 2);
    assert_eq!(count(&["t/*[model:\"small\",prompt:*]"]), 2);
    assert_eq!(count(&["--step", "score"]), 1);
    assert_eq!(count(&["--state", "failed"]), 0);
    let table = text(success(t.mck("c").args(["cache", "list", "t"])));
    assert!(
        table.contains("t/answer  (2 addresses)") && table.contains("t/score  (1 address)"),
        "{table}"
    );
    let stderr = failure(
        t.mck("c").args(["cache", "list", "t/[x]"]),
        common::EX_USAGE,
    );
    assert!(stderr.contains("invalid address"), "{stderr}");
}

#[test]
fn run_records_pin_artefacts_against_eviction() {
    let (t, m) = Team::with_mlp();
    success(&mut t.exec("c", &m, "r1", &[]));
    let tiny = ["--cache-size", "1", "--cache-ttl", "0"];
    success(t.mck("c").args(["cache", "gc"]).args(tiny));
    assert_eq!(
        t.json("c", &["cache", "stats", "--json"])["entries"],
        1,
        "pinned by run r1"
    );
    success(t.mck("c").args(["runs", "prune", "r1"]));
    success(t.mck("c").args(["cache", "gc"]).args(tiny));
    assert_eq!(t.json("c", &["cache", "stats", "--json"])["entries"], 0);
}
