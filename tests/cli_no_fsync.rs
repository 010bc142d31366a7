//! A hit performs no fsync: `cache get` and an `exec` hit (direct mode and canonical), and a
//! remote hit with its back-fill into the local cache, run under
//! `strace -f -e trace=fsync,fdatasync,sync_file_range,syncfs` and make none of those calls,
//! while the put before them makes some (so the trace would see one). The hits still count:
//! `cache stats` folds the use log in.
//!
//! strace is Debian's `strace` package (scripts/setup.sh installs it); without it these tests
//! skip, except under CI, where they fail.

use crate::common::{Site, compile};
use crate::{common, redis};
use std::path::{Path, PathBuf};
use std::process::Command;

const SYNC_CALLS: [&str; 4] = ["fsync", "fdatasync", "sync_file_range", "syncfs"];

/// Whether strace can run here; under CI its absence is a failure, not a skip.
fn strace_available(test: &str) -> bool {
    let found = Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
    assert!(
        found || !ci,
        "{test}: strace is missing under CI (scripts/setup.sh installs it)"
    );
    if !found {
        eprintln!("{test}: skipped: strace is not installed");
    }
    found
}

/// A site and its cache directory for `test`, or none when strace is missing outside CI.
fn traced_site(test: &str) -> Option<(Site, PathBuf)> {
    if !strace_available(test) {
        return None;
    }
    let site = Site::new("compiled");
    let cache = site.path("cache");
    Some((site, cache))
}

/// Runs `command` under strace (following children) and returns its stdout, its stderr and
/// the sync calls it made, one traced line each.
fn traced(site: &Site, command: &mut Command) -> (Vec<u8>, String, Vec<String>) {
    let trace = site.path("trace");
    let mut strace = Command::new("strace");
    strace
        .arg("-f")
        .arg("-y")
        .arg(format!("--trace={}", SYNC_CALLS.join(",")))
        .arg("-o")
        .arg(&trace);
    let output = common::under(strace, command).output().expect("run strace");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{command:?} failed: {stderr}");
    let lines = std::fs::read_to_string(&trace).expect("read the trace");
    let calls = lines
        .lines()
        .filter(|line| {
            SYNC_CALLS
                .iter()
                .any(|call| line.contains(&format!(" {call}(")))
        })
        .map(str::to_owned)
        .collect();
    (output.stdout, stderr, calls)
}

fn cache_command(site: &Site, cache: &Path, args: &[&str]) -> Command {
    let mut command = site.bin();
    command
        .arg("cache")
        .args(args)
        .arg("--cache-dir")
        .arg(cache);
    command
}

fn hits(site: &Site, cache: &Path) -> (u64, u64) {
    let out = common::success(&mut cache_command(site, cache, &["stats", "--json"]));
    let stats: serde_json::Value = serde_json::from_slice(&out).expect("stats JSON");
    let count = |name: &str| {
        stats[name]
            .as_u64()
            .unwrap_or_else(|| panic!("{name}: {stats}"))
    };
    (count("hits"), count("direct_hits"))
}

#[test]
fn a_cache_get_hit_performs_no_fsync() {
    let Some((site, cache)) = traced_site("a_cache_get_hit_performs_no_fsync") else {
        return;
    };
    let artefact = site.path("artefact");
    std::fs::write(&artefact, b"artefact bytes").unwrap();
    let key = format!("jit_f-{}", "7".repeat(64));
    let (_, _, put_syncs) = traced(
        &site,
        &mut cache_command(&site, &cache, &["put", &key, artefact.to_str().unwrap()]),
    );
    assert!(
        !put_syncs.is_empty(),
        "the put is durable: the trace sees its fsyncs"
    );
    for _ in 0..2 {
        let (out, log, syncs) = traced(&site, &mut cache_command(&site, &cache, &["get", &key]));
        assert_eq!(out, b"artefact bytes", "{log}");
        assert_eq!(syncs, Vec::<String>::new(), "a hit synced: {log}");
    }
    assert_eq!(hits(&site, &cache), (2, 0));
}

#[test]
fn an_exec_hit_performs_no_fsync() {
    let Some((site, cache)) = traced_site("an_exec_hit_performs_no_fsync") else {
        return;
    };
    let module = site.module("cpu/mlp.a.generic.mlir", "m.mlir");
    let out = site.path("out.bin");
    let exec = |site: &Site| {
        let mut command = site.bin();
        command.arg("exec").arg("--cache-dir").arg(&cache);
        compile(&mut command, &site.compiler(), &module, &out);
        command
    };
    let (_, log, miss_syncs) = traced(&site, &mut exec(&site));
    assert_eq!(site.runs(), 1, "{log}");
    assert!(
        !miss_syncs.is_empty(),
        "the stored result is durable: {log}"
    );
    let compiled = std::fs::read(&out).unwrap();
    for _ in 0..2 {
        std::fs::remove_file(&out).unwrap();
        let (_, log, syncs) = traced(&site, &mut exec(&site));
        assert_eq!(site.runs(), 1, "a hit compiled: {log}");
        assert_eq!(std::fs::read(&out).unwrap(), compiled);
        assert_eq!(syncs, Vec::<String>::new(), "a hit synced: {log}");
    }
    assert_eq!(hits(&site, &cache), (2, 2), "direct hits, counted");
}

/// A remote hit (Redis) writes the output and back-fills the local cache: neither is synced
/// (the output as any hit's; the back-fill is a copy of a durable remote entry, verified on
/// every read). The back-fill has landed when the command returns. What does sync is SQLite's:
/// the hit is counted and the copy indexed, and a process's first write creates the WAL and
/// its close checkpoints it (index.sqlite, counters.sqlite and their directory, `v1`).
#[test]
fn a_remote_hit_and_its_backfill_perform_no_fsync() {
    let Some((site, cache)) = traced_site("a_remote_hit_and_its_backfill_perform_no_fsync") else {
        return;
    };
    let target = redis_or_skip!(redis::shared("remote_hit_no_fsync"));
    let remote = |command: &mut Command| {
        command.arg("--remote").arg(target.url());
    };
    let artefact = site.path("artefact");
    let bytes: Vec<u8> = (0..(2 << 20) + 3).map(|i: u32| (i % 253) as u8).collect();
    std::fs::write(&artefact, &bytes).unwrap();
    let key = format!("jit_f-{}", "8".repeat(64));
    let mut put = cache_command(&site, &cache, &["put", &key, artefact.to_str().unwrap()]);
    remote(&mut put);
    common::success(&mut put);
    let reader = site.path("reader");
    common::success(&mut cache_command(&site, &reader, &["stats"]));
    let out = site.path("out.bin");
    let mut get = cache_command(&site, &reader, &["get", &key, "-o", out.to_str().unwrap()]);
    remote(&mut get);
    let (_, log, syncs) = traced(&site, &mut get);
    assert!(std::fs::read(&out).unwrap() == bytes, "{log}");
    let v1 = format!("{}>)", reader.join("v1").display());
    let ours: Vec<&String> = syncs
        .iter()
        .filter(|call| !call.contains(".sqlite") && !call.ends_with(&format!("{v1} = 0")))
        .collect();
    assert_eq!(
        ours,
        Vec::<&String>::new(),
        "a remote hit synced its bytes: {log}"
    );
    let stats = common::success(&mut cache_command(&site, &reader, &["stats", "--json"]));
    let stats: serde_json::Value = serde_json::from_slice(&stats).expect("stats JSON");
    common::assert_counters(&stats, ["remote_hits", "entries"], [1, 1]);
}
