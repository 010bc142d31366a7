//! The local store against what comes from outside or is left behind, with real processes and
//! real files: 100,000-character addresses (refused with a short message, and never a panic
//! when an older version stored one), a damaged, symlinked or shared registry, and temporary
//! files left by killed writers in the cache and next to outputs.

use crate::common::{self, failure, success, text};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

/// A `common::Site` with a.mlir and its cache in `cache/`.
struct Site {
    site: common::Site,
}

impl Site {
    fn new() -> Site {
        let site = common::Site::new("compiled");
        site.module("cpu/mlp.a.generic.mlir", "a.mlir");
        Site { site }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.site.path(name)
    }

    fn cache(&self) -> PathBuf {
        self.path("cache")
    }

    fn runs(&self) -> usize {
        self.site.runs()
    }

    fn mck(&self, args: &[&str]) -> Command {
        let mut c = self.site.bin();
        c.args(args).arg("--cache-dir").arg(self.cache());
        c
    }

    /// `exec` of a.mlir writing `out`, with `options` (address options…).
    fn exec(&self, out: &Path, options: &[&str]) -> Command {
        let mut c = self.mck(&["exec"]);
        c.args(options);
        common::compile(&mut c, &self.site.compiler(), &self.path("a.mlir"), out);
        c
    }

    fn registry(&self) -> PathBuf {
        self.cache().join("v1/registry.sqlite")
    }
}

/// Sets the mtime of `path` to `age` ago.
fn age(path: &Path, age: Duration) {
    let file = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open");
    file.set_modified(SystemTime::now() - age).expect("mtime");
}

#[test]
fn a_100000_character_address_is_refused_briefly() {
    let s = Site::new();
    let long = "x".repeat(100_000);
    let out = s.path("out.bin");
    for options in [
        vec!["--address".to_owned(), format!("ns/step[k:\"{long}\"]")],
        vec!["--address".to_owned(), vec!["n"; 50_000].join("/")],
        vec!["--namespace".to_owned(), long.clone()],
        vec!["--map".to_owned(), format!("k={long}")],
        vec![
            "--run".to_owned(),
            long.clone(),
            "--step".to_owned(),
            "s".to_owned(),
        ],
    ] {
        let args: Vec<&str> = options.iter().map(String::as_str).collect();
        let e = failure(&mut s.exec(&out, &args), common::EX_USAGE);
        assert!(e.len() < 600, "{} bytes of error: {}…", e.len(), &e[..200]);
        assert!(e.contains("bytes"), "{e}");
    }
    assert_eq!(s.runs(), 0);
    let e = failure(&mut s.mck(&["cache", "list", &long]), common::EX_USAGE);
    assert!(e.len() < 600, "{e}");
    let e = failure(&mut s.mck(&["runs", "show", &long]), common::EX_USAGE);
    assert!(e.len() < 600, "{e}");
}

#[test]
fn listings_of_an_address_stored_by_an_older_version_do_not_panic() {
    let s = Site::new();
    let out = s.path("out.bin");
    success(&mut s.exec(&out, &["--namespace", "ns", "--run", "r1"]));
    // An older version stored (e.g. imported) a 100,000-character address.
    let long = format!("ns/jit_mlp[k:\"{}\"]", "v".repeat(100_000));
    let db = rusqlite::Connection::open(s.registry()).expect("open registry");
    db.execute("UPDATE addresses SET address = ?1", [&long])
        .expect("update");
    db.execute("UPDATE run_lines SET address = ?1", [&long])
        .expect("update");
    drop(db);
    let listed = text(success(&mut s.mck(&["cache", "list"])));
    assert!(listed.contains("(1 address)"), "{}", &listed[..200]);
    let shown = text(success(&mut s.mck(&["runs", "show", "r1"])));
    assert!(shown.contains("fingerprint"), "{}", &shown[..200]);
    assert!(shown.contains("jit_mlp-"), "the key is shown");
    let cleared = text(success(&mut s.mck(&["cache", "clear", "--all"])));
    assert!(cleared.starts_with("removed 1 addresses"), "{cleared}");
}

#[test]
fn a_damaged_registry_is_quarantined_and_never_blocks_unaddressed_exec() {
    let s = Site::new();
    let out = s.path("out.bin");
    success(&mut s.exec(&out, &["--namespace", "ns", "--run", "r1"]));
    assert_eq!(s.runs(), 1);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", s.registry().display()));
    }
    std::fs::write(s.registry(), vec![0x5a; 8192]).expect("damage");
    // Unaddressed exec: a hit, then a compile of a new module, both cached.
    std::fs::remove_file(&out).expect("rm");
    let stderr =
        String::from_utf8_lossy(&s.exec(&out, &[]).output().expect("run").stderr).into_owned();
    assert!(out.exists(), "{stderr}");
    assert!(
        stderr.contains("registry"),
        "the damage is reported: {stderr}"
    );
    assert_eq!(s.runs(), 1, "a hit");
    let quarantined: Vec<_> = std::fs::read_dir(s.cache().join("v1/quarantine"))
        .expect("quarantine")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        quarantined
            .iter()
            .any(|n| n.starts_with("registry.sqlite.")),
        "{quarantined:?}"
    );
    // A fresh registry: addressed work goes on.
    success(&mut s.exec(&out, &["--namespace", "ns", "--run", "r2"]));
    assert_eq!(s.runs(), 1);
    let shown = text(success(&mut s.mck(&["runs", "show", "r2"])));
    assert!(shown.contains("ns/jit_mlp"), "{shown}");
    let mode = std::fs::metadata(s.registry()).expect("stat").mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn a_symlinked_registry_is_never_followed() {
    let s = Site::new();
    let out = s.path("out.bin");
    success(&mut s.exec(&out, &[]));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", s.registry().display()));
    }
    let elsewhere = s.path("elsewhere.sqlite");
    std::fs::write(&elsewhere, b"outside the cache").expect("write");
    std::os::unix::fs::symlink(&elsewhere, s.registry()).expect("symlink");
    success(&mut s.exec(&out, &["--namespace", "ns", "--run", "r1"]));
    assert_eq!(
        std::fs::read(&elsewhere).expect("read"),
        b"outside the cache",
        "the symlink's target was written"
    );
    let meta = std::fs::symlink_metadata(s.registry()).expect("stat");
    assert!(meta.file_type().is_file(), "a real file replaced the link");
    assert_eq!(meta.mode() & 0o777, 0o600);
}

#[test]
fn a_new_registry_is_private() {
    let s = Site::new();
    success(&mut s.mck(&["cache", "stats"]));
    assert!(
        !s.registry().exists(),
        "a cache without run records got a registry"
    );
    success(&mut s.mck(&["runs", "list"]));
    let mode = std::fs::metadata(s.registry()).expect("stat").mode() & 0o777;
    assert_eq!(mode, 0o600, "registry.sqlite mode {mode:o}");
    // A registry made world-readable by hand is made private again.
    std::fs::set_permissions(s.registry(), std::fs::Permissions::from_mode(0o644)).expect("chmod");
    success(&mut s.mck(&["runs", "list"]));
    let mode = std::fs::metadata(s.registry()).expect("stat").mode() & 0o777;
    assert_eq!(mode, 0o600, "registry.sqlite mode {mode:o}");
}

#[test]
fn stale_temporary_files_are_removed_by_the_next_operation() {
    let s = Site::new();
    let out_dir = s.path("outputs");
    std::fs::create_dir(&out_dir).expect("mkdir");
    let out = out_dir.join("a.bin");
    success(&mut s.exec(&out, &[]));
    let tmp = s.cache().join("v1/tmp");
    let plant = |dir: &Path, name: &str, old: bool| {
        let p = dir.join(name);
        std::fs::write(&p, b"partial").expect("write");
        if old {
            age(&p, Duration::from_secs(2 * 3600));
        }
        p
    };
    let stale_entry = plant(&tmp, ".entry-killed", true);
    let fresh_entry = plant(&tmp, ".entry-writing", false);
    let stale_output = plant(&out_dir, ".mlir-cache-key-tmp-killed", true);
    let fresh_output = plant(&out_dir, ".mlir-cache-key-tmp-writing", false);
    let unrelated = plant(&out_dir, ".tmp-someone-elses", true);
    // The next operation on the cache sweeps v1/tmp; a restore sweeps next to its output.
    success(&mut s.mck(&["cache", "stats"]));
    assert!(!stale_entry.exists());
    assert!(fresh_entry.exists(), "a live writer's file");
    std::fs::remove_file(&out).expect("rm");
    success(&mut s.exec(&out, &[]));
    assert_eq!(s.runs(), 1, "a hit restores the output");
    assert!(!stale_output.exists());
    assert!(fresh_output.exists(), "a live restore's file");
    assert!(unrelated.exists(), "not ours");
    // `cache gc` sweeps the cache's temporary files too.
    age(&fresh_entry, Duration::from_secs(2 * 3600));
    let gc = text(success(&mut s.mck(&["cache", "gc"])));
    assert!(!fresh_entry.exists(), "{gc}");
}
