//! Compile lock files made ahead of need. Creating a file's inode is most of what a fresh
//! compile lock costs on the compiling thread (~0.25 ms on ext4, against ~20 µs to link a made
//! one into place), and a miss takes one per key. So an embedder's worker makes unnamed lock
//! files (`O_TMPFILE` in `locks/`), each already locked (`flock`) and holding our pid, and a
//! compile links one in under its key's name: the same file, lock and holder line that
//! [`acquire`](super::lock::acquire) makes, with its inode made earlier. `linkat` never
//! replaces a name: where one exists (a holder's, or a killed holder's file), the spare is kept
//! and `acquire` takes over. A spare is unnamed until linked, so a killed process leaves none.
//!
//! A fresh cache's lock shards are made ahead likewise ([`ShardsAhead`]): a few each time the
//! worker makes spares, so that its first misses do not each make their shard directory
//! (`mkdir`, `chmod`, `lstat`) on the compiling thread.
//!
//! A forked child shares its parent's spares (their locks with them): the child never links
//! one (spares are the process's that made them), and an embedder that forks drops its spares
//! first (`drop_all`), or a child holding a copy would keep a lock its parent released.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rustix::fs::{AtFlags, CWD, Mode, OFlags};
use rustix::io::Errno;
use tracing::debug;

use super::fsutil::EnsuredDirs;
use super::key::shard_name;
use super::lock::{CompileGuard, note_holder};

/// Spares kept ready: one a miss, and one for a second thread's.
const SPARES: usize = 2;

#[derive(Debug, Default)]
pub struct SpareLocks {
    /// The process that made them, and the spares.
    spares: Mutex<(u32, Vec<File>)>,
}

impl SpareLocks {
    fn lock(&self) -> MutexGuard<'_, (u32, Vec<File>)> {
        let mut spares = self.spares.lock().unwrap_or_else(PoisonError::into_inner);
        let pid = std::process::id();
        if spares.0 != pid {
            // Made by the parent of this forked process: theirs, never linked here.
            spares.1.clear();
            spares.0 = pid;
        }
        spares
    }

    /// Makes spares in `dir` (the locks directory) until [`SPARES`] are ready. Stops at the
    /// first that cannot be made (a filesystem without `O_TMPFILE`): locks are then made as
    /// they always were.
    pub fn fill(&self, dir: &Path, mode: u32) {
        let mut spares = self.lock();
        while spares.1.len() < SPARES {
            match make_spare(dir, mode) {
                Ok(file) => spares.1.push(file),
                Err(e) => {
                    debug!("no spare lock file in {}: {e}", dir.display());
                    return;
                }
            }
        }
    }

    /// Closes every spare (before a fork: see the module's comment).
    pub fn drop_all(&self) {
        self.lock().1.clear();
    }

    /// True when every spare is made: nothing for [`SpareLocks::fill`] to do.
    pub fn full(&self) -> bool {
        self.ready() == SPARES
    }

    fn ready(&self) -> usize {
        self.lock().1.len()
    }

    /// The lock at `path`, taken by linking a spare in, when one is ready and `path` names no
    /// file yet; None otherwise (then [`acquire`](super::lock::acquire) takes it).
    pub fn link(&self, path: &Path) -> Option<CompileGuard> {
        let file = self.lock().1.pop()?;
        let made = format!("/proc/self/fd/{}", file.as_raw_fd());
        match rustix::fs::linkat(CWD, made.as_str(), CWD, path, AtFlags::SYMLINK_FOLLOW) {
            Ok(()) => Some(CompileGuard::new(file, path.to_owned())),
            // A name that exists, or a directory removed since its caller checked it.
            Err(Errno::EXIST | Errno::NOENT) => {
                self.lock().1.push(file); // still unnamed: the next key's
                None
            }
            Err(e) => {
                // No /proc, or a directory that refuses links: this spare goes.
                debug!("cannot link a spare lock file at {}: {e}", path.display());
                None
            }
        }
    }
}

/// Lock shards made or checked a call of [`ShardsAhead::make`]: 256 after 64 misses.
const SHARDS_A_CALL: usize = 4;

/// Which lock shards are still to be made ahead, in name order.
#[derive(Debug, Default)]
pub struct ShardsAhead {
    next: AtomicUsize,
}

impl ShardsAhead {
    /// True once every lock shard was made or checked: nothing left for [`ShardsAhead::make`].
    pub fn done(&self) -> bool {
        self.next.load(Ordering::Relaxed) > usize::from(u8::MAX)
    }

    /// Makes (or checks) the next [`SHARDS_A_CALL`] lock shards in `dir` (the locks directory)
    /// that `ensured` does not hold yet, adding them to it; nothing once all 256 are.
    pub fn make(&self, dir: &Path, ensured: &EnsuredDirs, mode: u32) {
        let mut made = 0;
        while made < SHARDS_A_CALL {
            if self.done() {
                return;
            }
            // Each shard to one caller, however many threads call.
            let Ok(shard) = u8::try_from(self.next.fetch_add(1, Ordering::Relaxed)) else {
                return;
            };
            match ensured.ensure(&dir.join(shard_name(shard)), mode) {
                Ok(true) => {} // a claim made it first
                Ok(false) => made += 1,
                Err(e) => {
                    // Left to the claim that needs it, which reports what is wrong.
                    debug!("lock shard {} not made ahead: {e}", shard_name(shard));
                    return;
                }
            }
        }
    }
}

fn make_spare(dir: &Path, mode: u32) -> std::io::Result<File> {
    let fd = rustix::fs::open(
        dir,
        OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )?;
    let file = File::from(fd);
    // Nobody else can open an unnamed file: this never waits.
    file.try_lock().map_err(std::io::Error::from)?;
    note_holder(&file, 0);
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::acquire;
    use std::fs;
    use std::time::Duration;

    #[test]
    fn a_spare_becomes_the_keys_lock_file_held_and_named_as_one_made_on_the_spot() {
        let dir = tempfile::tempdir().unwrap();
        let spares = SpareLocks::default();
        spares.fill(dir.path(), 0o600);
        assert_eq!(
            spares.ready(),
            SPARES,
            "spares made in a directory that allows them"
        );
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            0,
            "spares have no name"
        );

        let path = dir.path().join("k.lock");
        let guard = spares
            .link(&path)
            .expect("a spare links in under a free name");
        assert_eq!(spares.ready(), SPARES - 1);
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            format!("{}\n", std::process::id())
        );
        assert!(
            acquire(&path, "test lock", 0o600, Duration::from_millis(30))
                .unwrap()
                .is_none(),
            "a linked spare is held: another taker waits"
        );
        drop(guard);
        assert!(
            !path.exists(),
            "released as any compile lock: its file removed"
        );
        assert!(
            acquire(&path, "test lock", 0o600, Duration::ZERO)
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn shards_made_ahead_from_two_threads_are_all_256_none_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let (ahead, ensured) = (ShardsAhead::default(), EnsuredDirs::default());
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..256 {
                        ahead.make(dir.path(), &ensured, 0o700);
                    }
                });
            }
        });
        let mut made: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        made.sort();
        let all: Vec<String> = (0..=u8::MAX).map(shard_name).collect();
        assert_eq!(made, all);
        assert!(ahead.done());
        assert!(
            ahead.next.load(Ordering::Relaxed) <= 256 + 2,
            "past the last shard, a call only looks"
        );
    }

    #[test]
    fn a_name_that_exists_is_left_to_acquire_and_the_spare_kept() {
        let dir = tempfile::tempdir().unwrap();
        let spares = SpareLocks::default();
        spares.fill(dir.path(), 0o600);
        let path = dir.path().join("k.lock");
        fs::write(&path, "4242\n").unwrap(); // a killed holder's file
        assert!(spares.link(&path).is_none());
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            "4242\n",
            "never replaced"
        );
        assert_eq!(spares.ready(), SPARES, "the spare waits for the next key");
        let _held = acquire(&path, "test lock", 0o600, Duration::ZERO).unwrap();
        assert!(spares.link(&path).is_none(), "nor linked over a held one");
        spares.drop_all();
        assert_eq!(spares.ready(), 0);
        assert!(
            spares.link(&dir.path().join("j.lock")).is_none(),
            "none left to link"
        );
    }
}
