//! `config show|set|unset` and the precedence of the settings: default < config file <
//! MLIR_CACHE_KEY_FLAGS < command line.

use crate::common::{self, EX_USAGE, bin, failure, success, text};
use std::path::{Path, PathBuf};
use std::process::Command;

fn show(dir: &Path, flags: Option<&str>, extra: &[&str]) -> serde_json::Value {
    let mut c = bin();
    c.args(["config", "show", "--json", "--cache-dir"])
        .arg(dir)
        .args(extra);
    if let Some(f) = flags {
        c.env("MLIR_CACHE_KEY_FLAGS", f);
    }
    serde_json::from_slice(&success(&mut c)).expect("JSON")
}

fn setting<'a>(shown: &'a serde_json::Value, name: &str) -> (&'a str, &'a str) {
    let s = shown["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {shown}"));
    (
        s["value"].as_str().unwrap_or("(none)"),
        s["source"].as_str().unwrap(),
    )
}

/// A cache directory `c` inside a fresh temporary directory.
fn cache_dir() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("c");
    (tmp, dir)
}

/// `mlir-cache-key ARGS… --cache-dir DIR`.
fn mck(args: &[&str], dir: &Path) -> Command {
    let mut c = bin();
    c.args(args).arg("--cache-dir").arg(dir);
    c
}

fn set(dir: &Path, name: &str, value: &str) {
    success(&mut mck(&["config", "set", name, value], dir));
}

#[test]
fn precedence_default_file_variable_command_line() {
    let (_tmp, dir) = cache_dir();
    let shown = show(&dir, None, &[]);
    assert_eq!(shown["schema"], "mlir-cache-key.config.v1");
    assert_eq!(setting(&shown, "cache_size"), ("100000000000", "default"));

    set(&dir, "cache_size", "100K");
    set(&dir, "cache_ttl", "2");
    set(&dir, "log_level", "info");
    let shown = show(
        &dir,
        Some("--cache_ttl=3 --log_level=error"),
        &["--cache-ttl", "4"],
    );
    assert_eq!(setting(&shown, "cache_size"), ("100000", "config_file"));
    assert_eq!(setting(&shown, "log_level"), ("ERROR", "environment"));
    assert_eq!(setting(&shown, "cache_ttl"), ("4", "command_line"));
    assert_eq!(setting(&shown, "cache_dir").1, "command_line");
    assert_eq!(setting(&shown, "remote_timeout"), ("2", "default"));

    let shown = show(&dir, Some("--cache_ttl=3"), &[]);
    assert_eq!(setting(&shown, "cache_ttl"), ("3", "environment"));

    let human = text(success(&mut mck(&["config", "show"], &dir)));
    assert!(
        human.lines().any(|l| l.starts_with("cache_size")
            && l.contains("100000")
            && l.ends_with("config file")),
        "{human}"
    );
}

#[test]
fn the_persisted_size_cap_is_used_by_stats_and_gc() {
    let (_tmp, dir) = cache_dir();
    set(&dir, "cache_size", "100K");
    let stats: serde_json::Value =
        serde_json::from_slice(&success(&mut mck(&["cache", "stats", "--json"], &dir))).unwrap();
    assert_eq!(stats["max_size"], 100_000, "{stats}");
    let stats: serde_json::Value = serde_json::from_slice(&success(&mut mck(
        &["cache", "stats", "--json", "--cache-size", "1M"],
        &dir,
    )))
    .unwrap();
    assert_eq!(
        stats["max_size"], 1_000_000,
        "the command line wins: {stats}"
    );
}

#[test]
fn set_unset_write_a_private_file_and_reject_bad_names_and_values() {
    let (_tmp, dir) = cache_dir();
    set(&dir, "cache_size", "5M");
    set(&dir, "remote_read_only", "true");
    let file = dir.join("mlir-cache-key.conf");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "cache_size = 5M\nremote_read_only = true\n"
    );
    assert_eq!(common::mode(&file), 0o600);
    success(&mut mck(&["config", "unset", "cache_size"], &dir));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "remote_read_only = true\n"
    );
    let e = failure(
        &mut mck(&["config", "set", "frobnicate", "1"], &dir),
        EX_USAGE,
    );
    assert!(e.contains("frobnicate"), "{e}");
    let e = failure(
        &mut mck(&["config", "set", "cache_size", "lots"], &dir),
        EX_USAGE,
    );
    assert!(e.contains("lots"), "{e}");
    failure(
        &mut mck(&["config", "set", "cache_dir", "/x"], &dir),
        EX_USAGE,
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "remote_read_only = true\n",
        "a refused value leaves the file alone"
    );
}

#[test]
fn a_bad_line_in_the_file_names_the_file_and_line() {
    let (_tmp, dir) = cache_dir();
    set(&dir, "cache_ttl", "1");
    let file = dir.join("mlir-cache-key.conf");
    std::fs::write(&file, "cache_ttl = 1\n# note\nfrob = 2\n").unwrap();
    let e = failure(&mut mck(&["cache", "stats"], &dir), EX_USAGE);
    assert!(e.contains("mlir-cache-key.conf:3"), "{e}");
    assert!(e.contains("frob"), "{e}");
    std::fs::write(&file, "x".repeat(70_000)).unwrap();
    let e = failure(&mut mck(&["config", "show"], &dir), EX_USAGE);
    assert!(e.contains("larger than"), "{e}");
}

#[test]
fn cache_dir_mode_from_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("shared");
    success(&mut mck(
        &["cache", "stats", "--cache-dir-mode", "0750"],
        &dir,
    ));
    assert_eq!(common::mode(&dir), 0o750);
    failure(
        &mut mck(&["cache", "stats", "--cache-dir-mode", "0777"], &dir),
        EX_USAGE,
    );
}

#[test]
fn log_level_from_the_config_file() {
    let tmp = tempfile::tempdir().unwrap();
    let quiet = tmp.path().join("quiet");
    let loud = tmp.path().join("loud");
    set(&loud, "log_level", "info");
    let stderr = |dir: &Path| {
        let out = common::run(&mut mck(&["cache", "stats"], dir));
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(!stderr(&quiet).contains("Built the cache index"));
    assert!(
        stderr(&loud).contains("Built the cache index"),
        "log_level = info in the file is used"
    );
}
