//! The remote tier as an attacker or a stalled server would meet it, with real processes and a
//! real Redis: a poisoned value with recomputed checksums (refused with a shared secret, served
//! without one, as the README says), a value MACed with another secret, bad secret files, a
//! server that stops answering mid-compile, an extreme `--lock-timeout`.

use crate::common::{bin, failure, success, success_stderr};
use crate::team::Team;
use crate::{common, redis, team};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A team of hosts (`remote/team.rs`) that may hold a shared secret; they compile a.mlir.
struct Host {
    team: Team,
}

impl Host {
    fn new(remote: String) -> Host {
        Host {
            team: Team::new(remote),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.team.path(name)
    }

    fn runs(&self) -> usize {
        self.team.runs()
    }

    /// A file holding a secret, mode 0600.
    fn secret(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, text).expect("write secret");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        path
    }

    /// `mlir-cache-key SUBCOMMAND… --cache-dir cache-HOST --remote URL [--remote-secret-file F]`.
    fn mck(&self, host: &str, secret: Option<&Path>, args: &[&str]) -> Command {
        let mut c = self.team.mck(host, args);
        c.args(secret_options(secret));
        c
    }

    fn exec(&self, host: &str, secret: Option<&Path>) -> Command {
        self.exec_with(host, secret, &[])
    }

    /// As `exec`, with more options of `exec`.
    fn exec_with(&self, host: &str, secret: Option<&Path>, options: &[&str]) -> Command {
        let mut all = secret_options(secret);
        all.extend_from_slice(options);
        self.team.exec_with(host, "a.mlir", &all)
    }

    fn out(&self, host: &str) -> PathBuf {
        self.team.out(host, "a.mlir")
    }

    fn stats(&self, host: &str, secret: Option<&Path>) -> Value {
        self.team.stats_with(host, &secret_options(secret))
    }
}

fn secret_options(secret: Option<&Path>) -> Vec<&str> {
    match secret {
        Some(s) => vec!["--remote-secret-file", s.to_str().expect("a UTF-8 path")],
        None => Vec::new(),
    }
}

#[test]
fn a_poisoned_value_with_recomputed_checksums_is_refused_with_a_secret() {
    let target = redis_or_skip!(redis::shared("poisoned_value"));
    let h = Host::new(target.url());
    let secret = h.secret("team.secret", "correct horse battery staple\n");
    success_stderr(&mut h.exec("a", Some(&secret)));
    let good = common::read(&h.out("a"));
    let entries = target.entry_keys();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let entry = &entries[0];
    assert_eq!(target.cli(&["getrange", entry, "0", "3"]), "MCKA", "sealed");
    let list = success(&mut h.mck("a", None, &["cache", "entries", "--json"]));
    let list: Value = serde_json::from_slice(&list).expect("json");
    let key = list[0]["key"].as_str().expect("key").to_owned();

    // An attacker with write access and no secret stores a self-consistent entry (every
    // checksum recomputed by the tool itself) under the same key.
    std::fs::write(h.path("evil.bin"), b"evil artefact\n").expect("write");
    let evil = h.path("evil.bin").to_string_lossy().into_owned();
    success_stderr(&mut h.mck("attacker", None, &["cache", "put", &key, &evil]));
    assert_ne!(target.cli(&["getrange", entry, "0", "3"]), "MCKA");

    // Without a secret the remote is trusted: the poisoned value is served (README).
    success_stderr(&mut h.exec("trusting", None));
    assert_eq!(common::read(&h.out("trusting")), b"evil artefact\n");

    // With the secret: a miss, counted and logged, never served nor copied locally.
    let miss = failure(
        &mut h.mck("c", Some(&secret), &["cache", "get", &key]),
        common::EX_SOFTWARE,
    );
    assert!(miss.contains("not authenticated"), "{miss}");
    assert!(miss.contains("is not in the cache"), "{miss}");
    let c = h.stats("c", Some(&secret));
    assert_eq!(c["entries"], 0, "copied into the local cache: {c}");
    assert_eq!(c["remote_hits"], 0, "{c}");
    assert!(c["remote_unauthenticated"].as_u64() >= Some(1), "{c}");
    assert_eq!(c["remote_authenticated"], true);
    let runs = h.runs();
    let stderr = success_stderr(&mut h.exec("b", Some(&secret)));
    assert!(stderr.contains("not authenticated"), "{stderr}");
    assert_eq!(h.runs(), runs + 1, "host b compiled instead of using it");
    assert_eq!(common::read(&h.out("b")), good);
    assert_eq!(h.stats("b", Some(&secret))["remote_unauthenticated"], 1);

    // A value sealed with another secret is no better.
    let wrong = h.secret("wrong.secret", "another secret, 16+ bytes");
    success_stderr(&mut h.mck("attacker", Some(&wrong), &["cache", "put", &key, &evil]));
    assert_eq!(target.cli(&["getrange", entry, "0", "3"]), "MCKA");
    let stderr = success_stderr(&mut h.exec("d", Some(&secret)));
    assert!(stderr.contains("tag does not match"), "{stderr}");
    assert_eq!(common::read(&h.out("d")), good);
    assert_eq!(h.runs(), runs + 2);
    // The text stats say how values are trusted, and never show the secret.
    let text = String::from_utf8(success(&mut h.mck("d", Some(&secret), &["cache", "stats"])))
        .expect("utf-8");
    assert!(text.contains("remote values       authenticated"), "{text}");
    assert!(text.contains("remote bad MAC      1"), "{text}");
    assert!(!text.contains("horse"), "{text}");
    // The fresh good value was sealed again: a host with the secret hits it.
    success_stderr(&mut h.exec("e", Some(&secret)));
    assert_eq!(h.runs(), runs + 2);
    assert_eq!(common::read(&h.out("e")), good);
}

#[test]
fn secret_files_are_checked_and_never_echoed() {
    let h = Host::new("redis://127.0.0.1:1/0".to_owned());
    let stats = |flag: &str, file: &Path| {
        let mut c = bin();
        c.args(["cache", "stats", "--cache-dir"])
            .arg(h.path("cache"))
            .env(
                "MLIR_CACHE_KEY_FLAGS",
                format!("--remote=redis://127.0.0.1:1/0 {flag}={}", file.display()),
            );
        c
    };
    let shared = h.secret("shared", "a long enough team secret");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let short = h.secret("short", "hunter2");
    let empty = h.secret("empty", "\n");
    for (file, want) in [
        (&shared, "chmod 600"),
        (&short, "at least 16"),
        (&empty, "empty"),
        (&h.path("missing"), "cannot read"),
    ] {
        let e = failure(&mut stats("--remote_secret_file", file), common::EX_USAGE);
        assert!(e.contains("--remote_secret_file="), "{e}");
        assert!(e.contains(want), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        let mut cli = bin();
        cli.args(["cache", "stats", "--cache-dir"])
            .arg(h.path("cache"))
            .arg("--remote-secret-file")
            .arg(file);
        let e = failure(&mut cli, common::EX_USAGE);
        assert!(e.contains("command line: --remote_secret_file="), "{e}");
    }
    // No value flag for the secret itself.
    let e = failure(
        bin().args(["cache", "stats", "--remote-secret", "x"]),
        common::EX_USAGE,
    );
    assert!(e.contains("--remote-secret"), "{e}");
}

#[test]
fn a_server_that_stalls_mid_compile_costs_at_most_one_timeout() {
    let mut target = redis_or_skip!(redis::private("stalled_mid_compile"));
    let h = Host::new(target.url());
    // A short lease: its renewals run (and stall) during the compile; a 2-second compile.
    let flags = "--remote_timeout=3 --remote_lease=0.6";
    let t = Instant::now();
    let child = team::spawn_slow(h.exec("a", None).env("MLIR_CACHE_KEY_FLAGS", flags), "2");
    // The lease is taken well before the compile ends; then the server stops answering.
    std::thread::sleep(Duration::from_millis(700));
    target.server().pause();
    let out = child.wait_with_output().expect("wait");
    let took = t.elapsed();
    target.server().resume();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("remote cache unavailable"), "{stderr}");
    eprintln!("a 2 s compile with the server stopped after 0.7 s took {took:?}");
    // 2 s of compiling plus one 3 s timeout and overhead; a second timeout would pass 8 s.
    assert!(
        took < Duration::from_millis(7_000),
        "a stalled server cost more than one timeout: {took:?}\n{stderr}"
    );
    assert_eq!(h.runs(), 1);
}

#[test]
fn a_server_stalled_from_the_start_costs_one_timeout() {
    let mut target = redis_or_skip!(redis::private("stalled_from_start"));
    // The same miss against a refused port, measured in this run, is the cost without any wait.
    let baseline_host = Host::new("redis://127.0.0.1:1/0".to_owned());
    let t = Instant::now();
    success_stderr(&mut baseline_host.exec("a", None));
    let baseline = t.elapsed();

    let h = Host::new(target.url());
    target.server().pause();
    let t = Instant::now();
    let stderr = success_stderr(
        h.exec("a", None)
            .env("MLIR_CACHE_KEY_FLAGS", "--remote_timeout=2"),
    );
    let took = t.elapsed();
    target.server().resume();
    assert!(stderr.contains("remote cache unavailable"), "{stderr}");
    // One 2 s timeout, not two: the second would put it past baseline + 4 s.
    assert!(
        took < baseline + Duration::from_millis(3_500),
        "{took:?} against {baseline:?} without a wait\n{stderr}"
    );
}

#[test]
fn an_extreme_lock_timeout_saturates() {
    // Any remote (here a refused port) makes the claim compute its deadline.
    let h = Host::new("redis://127.0.0.1:1/0".to_owned());
    let max = u64::MAX.to_string();
    success_stderr(&mut h.exec_with("a", None, &["--lock-timeout", &max]));
    assert_eq!(h.runs(), 1);
    success_stderr(&mut h.exec_with("a", None, &["--lock-timeout", &max]));
    assert_eq!(h.runs(), 1, "a hit");
}
