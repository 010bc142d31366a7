//! The circuit breaker, one per tier: after a tier's failure, stop paying its timeout. A failure
//! marks the tier down for `retry_after`; meanwhile every operation on it is skipped at once
//! (the other tiers and the local cache go on). The mark is kept in memory and in a small file
//! in the cache directory, `v1/remote-down-<hash of the tier's URL>.json` ([`state_file_name`]),
//! so that each short-lived `exec` process of a build does not pay the timeout again, and a
//! chain's tiers never share a mark. When the time has passed the next operation tries the tier
//! (half-open): a success removes the mark, a failure renews it. A warning (one line, naming the
//! tier, the operation and the cause) is printed once per process and tier.
//!
//! The file names the remote it is about (passwords redacted), so changing `--remote` does not
//! inherit another server's mark; a malformed or foreign file is ignored.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use tracing::{debug, warn};

use crate::error::{RemoteError, show_ms};
use mck_store::fsutil;
use mck_store::{Clock, UnixMillis};

/// The mark file of the tier shown as `remote` (its URL, password redacted), inside the
/// layout's version directory: named by a hash, as a URL is no file name.
pub fn state_file_name(remote: &str) -> String {
    let hash = Sha256::digest(remote.as_bytes());
    format!("remote-down-{}.json", hex::encode(&hash[..8]))
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Mark {
    remote: String,
    until_ms: UnixMillis,
    reason: String,
}

/// One remote's breaker, for one process.
#[derive(Debug)]
pub struct Breaker {
    remote: String,
    path: PathBuf,
    retry_after: Duration,
    file_mode: u32,
    clock: Arc<dyn Clock>,
    mark: Mutex<Option<Mark>>,
    warned: AtomicBool,
    /// Failures in this process: a lease taken before one is not released after it (the
    /// release would pay a second timeout on a stalled server; the lease expires by itself).
    trips: AtomicU64,
}

impl Breaker {
    /// A breaker for `remote` (its redacted form) keeping its mark at `path`; picks up a mark
    /// left by an earlier process.
    pub fn new(
        remote: String,
        path: PathBuf,
        retry_after: Duration,
        file_mode: u32,
        clock: Arc<dyn Clock>,
    ) -> Breaker {
        let mark = read_mark(&path).filter(|m| m.remote == remote);
        Breaker {
            remote,
            path,
            retry_after,
            file_mode,
            clock,
            mark: Mutex::new(mark),
            warned: AtomicBool::new(false),
            trips: AtomicU64::new(0),
        }
    }

    /// `Err(Down)` naming `op` while the remote is marked down; `Ok` when it may be tried.
    pub fn check(&self, op: &'static str) -> Result<(), RemoteError> {
        let now = self.clock.now_ms();
        match &*self.lock() {
            Some(m) if now < m.until_ms => Err(RemoteError::Down {
                op,
                remote: self.remote.clone(),
                until_ms: m.until_ms,
                reason: m.reason.clone(),
            }),
            _ => Ok(()),
        }
    }

    /// Marks the remote down for `retry_after` (in memory and in the file); returns until when.
    pub fn trip(&self, reason: &str) -> UnixMillis {
        self.trips.fetch_add(1, Ordering::SeqCst);
        let until_ms = self
            .clock
            .now_ms()
            .saturating_add(i64::try_from(self.retry_after.as_millis()).unwrap_or(i64::MAX));
        let mark = Mark {
            remote: self.remote.clone(),
            until_ms,
            reason: reason.to_owned(),
        };
        if let Err(e) = write_mark(&self.path, &mark, self.file_mode) {
            debug!(
                "cannot record the remote as down in {}: {e}",
                self.path.display()
            );
        }
        *self.lock() = Some(mark);
        until_ms
    }

    /// How many failures this process has seen.
    pub fn trips(&self) -> u64 {
        self.trips.load(Ordering::SeqCst)
    }

    /// The remote answered: clear a mark (ours or an earlier process's).
    pub fn succeeded(&self) {
        let mut mark = self.lock();
        if mark.take().is_some() {
            // Only remove the file if it is still about this remote.
            if read_mark(&self.path).is_some_and(|m| m.remote == self.remote)
                && let Err(e) = fs::remove_file(&self.path)
                && e.kind() != io::ErrorKind::NotFound
            {
                debug!("cannot remove {}: {e}", self.path.display());
            }
            debug!("remote cache {} is reachable again", self.remote);
        }
    }

    /// Warns about `err` the first time this process goes on without this tier; `others`:
    /// other tiers of the chain go on serving (else only the local cache does).
    pub fn warn_once(&self, err: &RemoteError, others: bool) {
        if !self.warned.swap(true, Ordering::SeqCst) {
            let until = match err {
                RemoteError::Down { .. } => String::new(),
                _ => match &*self.lock() {
                    Some(m) => format!(" (retried after {})", show_ms(m.until_ms)),
                    None => String::new(),
                },
            };
            let without = if others {
                "going on with the other tiers"
            } else {
                "using the local cache only"
            };
            warn!("remote cache unavailable, {without}{until}: {err}");
        } else {
            debug!("remote cache fallback: {err}");
        }
    }

    /// Until when the remote is marked down, if it is.
    pub fn down_until(&self) -> Option<UnixMillis> {
        let now = self.clock.now_ms();
        self.lock()
            .as_ref()
            .map(|m| m.until_ms)
            .filter(|&t| now < t)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Mark>> {
        self.mark.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Until when the mark file at `path` says `remote` is down (for `cache stats`).
pub fn marked_down_until(path: &Path, remote: &str, now: UnixMillis) -> Option<UnixMillis> {
    read_mark(path)
        .filter(|m| m.remote == remote && now < m.until_ms)
        .map(|m| m.until_ms)
}

fn read_mark(path: &Path) -> Option<Mark> {
    let mut file = fsutil::open_regular_nofollow(path).ok()?;
    let mut text = String::new();
    Read::by_ref(&mut file)
        .take(64 << 10)
        .read_to_string(&mut text)
        .ok()?;
    serde_json::from_str(&text).ok()
}

fn write_mark(path: &Path, mark: &Mark, file_mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".remote-down-")
        .permissions(fs::Permissions::from_mode(file_mode))
        .tempfile_in(dir)?;
    let json = serde_json::to_vec(mark).map_err(io::Error::other)?;
    tmp.write_all(&json)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mck_store::ManualClock;

    /// A breaker for `remote` with a 30 s `retry_after`, its mark at `path`.
    fn breaker(remote: &str, path: &Path, clock: Arc<dyn Clock>) -> Breaker {
        Breaker::new(
            remote.into(),
            path.to_owned(),
            Duration::from_secs(30),
            0o600,
            clock,
        )
    }

    #[test]
    fn trips_skips_then_half_opens_and_a_new_process_sees_the_mark() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(state_file_name("r"));
        let clock = Arc::new(ManualClock::new(1_000));
        let b = breaker("r", &path, clock.clone());
        assert!(b.check("get").is_ok());
        b.trip("connection refused");
        assert!(b.check("get").unwrap_err().is_skip());
        // Another process sharing the directory skips at once.
        let other = breaker("r", &path, clock.clone());
        assert!(other.check("get").is_err());
        // Another remote does not inherit the mark.
        let foreign = breaker("s", &path, clock.clone());
        assert!(foreign.check("get").is_ok());
        clock.advance(Duration::from_secs(31));
        assert!(b.check("get").is_ok(), "half-open after retry_after");
        b.succeeded();
        assert!(!path.exists());
        assert_eq!(b.down_until(), None);
    }

    #[test]
    fn each_tier_has_its_own_mark_file() {
        let a = state_file_name("redis://127.0.0.1:1/0");
        let b = state_file_name("redis://127.0.0.1:2/0");
        assert_ne!(a, b);
        assert!(a.starts_with("remote-down-") && a.ends_with(".json"), "{a}");
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(1_000));
        let first = breaker("r1", &dir.path().join(state_file_name("r1")), clock.clone());
        let second = breaker("r2", &dir.path().join(state_file_name("r2")), clock.clone());
        first.trip("connection refused");
        assert!(first.check("get").is_err());
        assert!(
            second.check("get").is_ok(),
            "a down tier does not stop the next"
        );
        let again = breaker("r1", &dir.path().join(state_file_name("r1")), clock);
        let e = again.check("put").unwrap_err().to_string();
        assert!(e.starts_with("skipped put: r1 is marked down until"), "{e}");
    }

    #[test]
    fn a_malformed_mark_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(state_file_name("r"));
        fs::write(&path, b"{not json").unwrap();
        let b = breaker("r", &path, Arc::new(ManualClock::new(0)));
        assert!(b.check("get").is_ok());
    }
}
