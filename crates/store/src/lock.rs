//! Advisory file locks: one compiler per key, and one process at a time repairing the index.
//!
//! The lock is `flock(2)` on a lock file (std's `File::try_lock`), so the kernel releases it when
//! the holder dies, however it dies: that is the lease against killed holders. A waiter says
//! "Blocking waiting for …" once (cargo's `flock.rs`), then polls with exponential backoff and
//! gives up after its timeout, so a hung holder never blocks anyone forever.
//!
//! Lock files are removed by the holder on release, which keeps `locks/` small. That is only
//! safe with the inode check below: after acquiring, a waiter confirms that the path still names
//! the inode it locked; if the holder unlinked it meanwhile, the waiter retries on the new file.

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use tracing::{debug, warn};

use super::error::StoreError;
use super::fsutil;

const FIRST_BACKOFF: Duration = Duration::from_millis(5);
const MAX_BACKOFF: Duration = Duration::from_millis(200);

/// The result of asking for the compile lock.
#[derive(Debug)]
pub enum CompileLock {
    /// We hold the lock until the guard drops. Re-check the cache first: another process may
    /// have stored the result while we waited.
    Acquired(CompileGuard),
    /// Another process held the lock for the whole timeout; compile anyway (without the lock).
    TimedOut { waited: Duration },
}

/// An exclusive lock on a lock file, released (and the file removed) on drop.
#[derive(Debug)]
pub struct CompileGuard {
    file: File,
    path: PathBuf,
}

impl CompileGuard {
    /// The guard of `file`, locked by us and named `path`.
    pub(super) fn new(file: File, path: PathBuf) -> Self {
        CompileGuard { file, path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for CompileGuard {
    fn drop(&mut self) {
        // Unlink while still holding the lock, and only if the path is still our inode.
        // Waiters holding the old inode notice (inode check) and retry on a fresh file.
        if let (Ok(ours), Ok(now)) = (self.file.metadata(), fs::symlink_metadata(&self.path))
            && fsutil::same_inode(&ours, &now)
            && let Err(e) = fs::remove_file(&self.path)
        {
            debug!("cannot remove lock file {}: {e}", self.path.display());
        }
        // Closing `file` releases the flock.
    }
}

/// Acquires an exclusive lock on `path` (created with `mode` if missing), waiting up to
/// `timeout`. `what` names the lock in the "Blocking waiting for" message.
/// Returns `Ok(None)` on timeout.
pub fn acquire(
    path: &Path,
    what: &str,
    mode: u32,
    timeout: Duration,
) -> Result<Option<CompileGuard>, StoreError> {
    let start = Instant::now();
    let mut backoff = FIRST_BACKOFF;
    let mut announced = false;
    loop {
        let mut file = fsutil::open_lock_file(path, mode)
            .map_err(|e| StoreError::io("open lock file", path, e))?;
        match file.try_lock() {
            Ok(()) => {
                let ours = file
                    .metadata()
                    .map_err(|e| StoreError::io("inspect lock file", path, e))?;
                match fs::symlink_metadata(path) {
                    Ok(now) if fsutil::same_inode(&ours, &now) => {
                        note_holder(&file, ours.len());
                        if announced {
                            debug!("acquired {what} after {:?}", start.elapsed());
                        }
                        return Ok(Some(CompileGuard {
                            file,
                            path: path.to_owned(),
                        }));
                    }
                    // The previous holder removed this file as we locked it: start over.
                    Ok(_) => continue,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(StoreError::io("inspect lock file", path, e)),
                }
            }
            Err(fs::TryLockError::WouldBlock) => {}
            Err(fs::TryLockError::Error(e)) => {
                return Err(StoreError::io("lock", path, e));
            }
        }
        if !announced && !timeout.is_zero() {
            announced = true;
            let holder = read_holder(&mut file)
                .map(|pid| format!(" (held by pid {pid})"))
                .unwrap_or_default();
            warn!(
                "Blocking waiting for {what}{holder} at {} (up to {:?})",
                path.display(),
                timeout
            );
        }
        drop(file);
        let elapsed = start.elapsed();
        if elapsed >= timeout {
            if timeout.is_zero() {
                return Ok(None);
            }
            warn!(
                "Gave up waiting for {what} at {} after {:?}",
                path.display(),
                elapsed
            );
            return Ok(None);
        }
        thread::sleep(backoff.min(timeout - elapsed));
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Writes our pid into the lock file we hold, for the "held by" of waiters' messages. The file
/// is usually fresh (holders remove theirs): it is written in place and cut only when an
/// earlier holder left it longer. Never truncated to zero first: ext4 flushes a file truncated
/// to zero to disk when it is closed (its replace-by-truncate heuristic), which costs more than
/// the rest of a lock.
pub(super) fn note_holder(file: &File, len: u64) {
    let line = format!("{}\n", std::process::id());
    let written = line.len() as u64;
    let _ = file
        .write_all_at(line.as_bytes(), 0)
        .and_then(|()| match len > written {
            true => file.set_len(written),
            false => Ok(()),
        });
}

fn read_holder(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(32).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

/// Removes `path` if no one holds it (used by `gc` for lock files left by killed holders).
/// Returns true when removed.
pub fn remove_if_unlocked(path: &Path, mode: u32) -> Result<bool, StoreError> {
    match acquire(path, "a stale lock", mode, Duration::ZERO) {
        Ok(Some(guard)) => {
            drop(guard); // unlinks under the lock
            Ok(true)
        }
        Ok(None) => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test lock at `path`, when taken within `timeout`.
    fn take(path: &Path, timeout: Duration) -> Option<CompileGuard> {
        acquire(path, "test lock", 0o600, timeout).unwrap()
    }

    /// A directory holding the test lock `k.lock`, its path, and its guard.
    fn held() -> (tempfile::TempDir, PathBuf, CompileGuard) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.lock");
        let guard = take(&path, Duration::ZERO).expect("the lock is free");
        (dir, path, guard)
    }

    #[test]
    fn second_acquirer_times_out_then_succeeds_after_release() {
        let (_dir, path, g) = held();
        let t = Instant::now();
        assert!(take(&path, Duration::from_millis(100)).is_none());
        assert!(t.elapsed() >= Duration::from_millis(100));
        drop(g);
        assert!(!path.exists(), "released lock file is removed");
        assert!(take(&path, Duration::ZERO).is_some());
    }

    #[test]
    fn waiter_gets_the_lock_when_the_holder_releases() {
        let (_dir, path, g) = held();
        let waiter = thread::spawn(move || take(&path, Duration::from_secs(10)).is_some());
        thread::sleep(Duration::from_millis(50));
        drop(g);
        assert!(waiter.join().unwrap());
    }

    #[test]
    fn the_holder_is_named_in_a_fresh_lock_file_and_in_one_left_longer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.lock");
        let holder = |path: &Path| fs::read_to_string(path).unwrap();
        let ours = format!("{}\n", std::process::id());
        let fresh = take(&path, Duration::ZERO).unwrap();
        assert_eq!(holder(&path), ours);
        drop(fresh);
        // A killed holder's file (not removed), longer than our line.
        fs::write(&path, "4294967295 and more left by a killed holder\n").unwrap();
        let _left = take(&path, Duration::ZERO).unwrap();
        assert_eq!(holder(&path), ours);
        let mut file = File::open(&path).unwrap();
        assert_eq!(read_holder(&mut file), Some(std::process::id()));
    }

    #[test]
    fn symlinked_lock_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        fs::write(&target, b"").unwrap();
        let path = dir.path().join("k.lock");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        assert!(acquire(&path, "test lock", 0o600, Duration::ZERO).is_err());
    }
}
