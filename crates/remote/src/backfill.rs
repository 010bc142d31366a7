//! Back-fills running beside the caller. A remote hit hands its verified artefact back at once;
//! copying the entry into the local store and the faster tiers (and refreshing its expiry) runs
//! on a thread of its own, so the caller's next step (writing the output, deserializing) overlaps
//! the copy instead of waiting for it. On this project's 2-core VMs, writing 16 MiB into fresh
//! page-cache pages costs more than the GET that fetched them.
//!
//! Nothing is lost by the overlap: a back-fill is joined before the same key is looked up again
//! in this process, before a new one starts once [`MAX_PENDING`] are running (bounding the
//! memory they hold), and when the [`Backfills`] (the `Tiered` owning it) is dropped or
//! [`Backfills::settle`]d. A process killed mid-copy leaves a temporary file, never a damaged
//! entry (`atomic.rs`).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};

use tracing::warn;

use mck_store::Digest;

/// Back-fills that may run at once; each holds one entry in memory.
pub const MAX_PENDING: usize = 2;

/// The back-fills this process started and has not joined yet.
#[derive(Debug, Default)]
pub struct Backfills {
    pending: Mutex<Vec<(Digest, JoinHandle<()>)>>,
}

impl Backfills {
    /// Runs `job`, the back-fill of `digest`, on its own thread (inline if no thread can be
    /// started), after joining the oldest back-fills beyond [`MAX_PENDING`] - 1.
    pub fn start(&self, digest: &Digest, job: impl FnOnce() + Send + 'static) {
        let mut pending = self.lock();
        while pending.len() >= MAX_PENDING {
            let (_, oldest) = pending.remove(0);
            join(oldest);
        }
        // Shared so that the job is still here to run inline when no thread can start.
        let slot = Arc::new(Mutex::new(Some(job)));
        let theirs = slot.clone();
        let spawned = thread::Builder::new()
            .name("mck-backfill".to_owned())
            .spawn(move || {
                // The lookup that found the remote hit goes on meanwhile.
                mck_store::lower_current_thread();
                if let Some(job) = take(&theirs) {
                    job()
                }
            });
        match spawned {
            Ok(handle) => pending.push((digest.clone(), handle)),
            Err(e) => {
                warn!("cannot start a back-fill thread ({e}); copying in this thread");
                drop(pending);
                if let Some(job) = take(&slot) {
                    job()
                }
            }
        }
    }

    /// Waits for the back-fills of `digest` (a lookup of the same key then finds the copy).
    pub fn settle_key(&self, digest: &Digest) {
        let mine: Vec<_> = {
            let mut pending = self.lock();
            let (mine, others) = pending.drain(..).partition(|(d, _)| d == digest);
            *pending = others;
            mine
        };
        mine.into_iter().for_each(|(_, h)| join(h));
    }

    /// Waits for every back-fill started so far.
    pub fn settle(&self) {
        let all = std::mem::take(&mut *self.lock());
        all.into_iter().for_each(|(_, h)| join(h));
    }

    /// How many back-fills have not been joined yet (finished ones included).
    #[cfg(test)]
    pub fn pending(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<(Digest, JoinHandle<()>)>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Backfills {
    fn drop(&mut self) {
        self.settle();
    }
}

fn take<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    slot.lock().unwrap_or_else(PoisonError::into_inner).take()
}

fn join(handle: JoinHandle<()>) {
    if handle.join().is_err() {
        warn!("a back-fill thread panicked; the entry stays remote only");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    fn digest(c: char) -> Digest {
        Digest::parse(&c.to_string().repeat(64)).unwrap()
    }

    #[test]
    fn every_backfill_is_done_once_settled_or_dropped_and_at_most_max_pending_run() {
        let done = Arc::new(AtomicUsize::new(0));
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let backfills = Backfills::default();
        for i in 0..7 {
            let (done, running, most) = (done.clone(), running.clone(), most.clone());
            let d = digest(if i % 2 == 0 { 'a' } else { 'b' });
            backfills.start(&d, move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                thread::sleep(Duration::from_millis(20));
                running.fetch_sub(1, Ordering::SeqCst);
                done.fetch_add(1, Ordering::SeqCst);
            });
            assert!(backfills.pending() <= MAX_PENDING);
        }
        backfills.settle_key(&digest('a'));
        assert!(backfills.pending() <= 1, "only b's may be left");
        drop(backfills);
        assert_eq!(done.load(Ordering::SeqCst), 7);
        assert!(most.load(Ordering::SeqCst) <= MAX_PENDING);
    }

    #[test]
    fn a_panicking_backfill_is_reported_not_propagated() {
        let backfills = Backfills::default();
        backfills.start(&digest('c'), || panic!("boom"));
        backfills.settle();
        assert_eq!(backfills.pending(), 0);
    }
}
