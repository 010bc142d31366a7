//! Helpers shared by the store's integration tests.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mck_store::{CacheKey, ManualClock, Settings, Store};
use sha2::{Digest as _, Sha256};

/// Settings for a cache in `dir` with a huge cap, 30-day TTL, no fsync (speed).
pub fn settings(dir: &Path) -> Settings {
    Settings {
        cache_dir: dir.to_owned(),
        fsync: false,
        ..Settings::default()
    }
}

pub const T0: i64 = 1_700_000_000_000;

pub fn open_at(dir: &Path, clock: &Arc<ManualClock>, tweak: impl FnOnce(&mut Settings)) -> Store {
    let mut s = settings(dir);
    tweak(&mut s);
    Store::open_with_clock(&s, clock.clone()).expect("open store")
}

/// A store with default settings in a fresh temporary directory, on a manual clock.
pub fn fresh() -> (tempfile::TempDir, Arc<ManualClock>, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = clock();
    let store = open_at(dir.path(), &c, |_| {});
    (dir, c, store)
}

pub fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(T0))
}

/// A key named `name` whose digest is derived from `seed`.
pub fn key(name: &str, seed: &str) -> CacheKey {
    let hex = hex::encode(Sha256::digest(seed.as_bytes()));
    CacheKey::parse(&format!("{name}-{hex}")).expect("valid key")
}

/// Deterministic payload for `seed` of `len` bytes (xorshift; cheap even in debug builds).
pub fn payload(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

pub fn days(n: u64) -> Duration {
    Duration::from_secs(n * 86_400)
}

/// Every regular file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Skips a test that cannot run on this machine, except under CI (`CI` set), where it must
/// run: there a skip is a failure.
pub fn skip_unless_ci(test: &str, why: &str) {
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false") {
        panic!("{test}: {why}; under CI this test must run, not skip");
    }
    eprintln!("skipped {test}: {why}");
}

/// Runs `test` on a fresh tmpfs of `size` (e.g. `256k`): a real filesystem that fills up.
/// Needs root and mount(2): skipped elsewhere (see [`skip_unless_ci`]); unmounted afterwards,
/// whether `test` passed or not.
pub fn on_small_tmpfs(test_name: &str, size: &str, test: impl FnOnce(&Path)) {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(&mnt)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        skip_unless_ci(test_name, "cannot mount a tmpfs here (needs root)");
        return;
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(&mnt)));
    let _ = std::process::Command::new("umount").arg(&mnt).status();
    if let Err(p) = result {
        std::panic::resume_unwind(p);
    }
}
