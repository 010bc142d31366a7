//! Misses explained off the compile's path (`explain_miss(..., wait=False)`): one worker
//! thread per cache, started on the first such miss and fed through a bounded queue, so a
//! miss pays a send, not a thread's start. `settle` waits until every queued miss is
//! explained. A process forked from one with a worker starts its own (the worker is not
//! copied by `fork`).

use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex};

type Job = Box<dyn FnOnce() + Send>;

/// Queued misses wait here; a full queue makes the next miss wait for a free slot.
const QUEUED: usize = 256;

#[derive(Default)]
pub struct Explainer {
    /// The worker's queue and the process that started it.
    queue: Mutex<Option<(u32, SyncSender<Job>)>>,
    /// Jobs submitted and not yet finished.
    pending: Arc<(Mutex<usize>, Condvar)>,
}

impl Explainer {
    /// Runs `job` on the worker. A worker that cannot be started runs it here instead.
    pub fn submit(&self, job: impl FnOnce() + Send + 'static) {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let pid = std::process::id();
        if queue
            .as_ref()
            .is_none_or(|(started_by, _)| *started_by != pid)
        {
            *self.pending.0.lock().unwrap_or_else(|e| e.into_inner()) = 0;
            *queue = self.start().map(|sender| (pid, sender));
        }
        let job: Job = Box::new(job);
        let Some((_, sender)) = queue.as_ref() else {
            drop(queue);
            return job();
        };
        *self.pending.0.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        if let Err(refused) = sender.send(job) {
            // The worker is gone: explained here, and a new worker for the next miss.
            *queue = None;
            drop(queue);
            finished(&self.pending);
            (refused.0)();
        }
    }

    /// Waits until every job this process submitted has finished.
    pub fn settle(&self) {
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if queue
            .as_ref()
            .is_some_and(|(started_by, _)| *started_by != std::process::id())
        {
            // Forked: the parent's jobs are not ours to wait for.
            return;
        }
        drop(queue);
        let (count, changed) = &*self.pending;
        let mut pending = count.lock().unwrap_or_else(|e| e.into_inner());
        while *pending > 0 {
            pending = changed.wait(pending).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn start(&self) -> Option<SyncSender<Job>> {
        let (sender, jobs) = sync_channel::<Job>(QUEUED);
        let pending = Arc::clone(&self.pending);
        std::thread::Builder::new()
            .name("mck-explain".into())
            .spawn(move || {
                for job in jobs {
                    // An explanation that panics is one lost explanation, not a lost worker.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    finished(&pending);
                }
            })
            .ok()
            .map(|_| sender)
    }
}

/// One job fewer pending; wakes `settle`.
fn finished(pending: &(Mutex<usize>, Condvar)) {
    let (count, changed) = pending;
    let mut count = count.lock().unwrap_or_else(|e| e.into_inner());
    *count = count.saturating_sub(1);
    changed.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn settle_waits_for_every_job_and_a_panicking_one_loses_only_itself() {
        let explainer = Explainer::default();
        let done = Arc::new(AtomicUsize::new(0));
        for i in 0..50 {
            let done = Arc::clone(&done);
            explainer.submit(move || {
                std::thread::sleep(Duration::from_millis(1));
                assert!(i != 7, "a job that panics");
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
        explainer.settle();
        assert_eq!(done.load(Ordering::SeqCst), 49);
        let thread = std::thread::current().id();
        let (tx, rx) = std::sync::mpsc::channel();
        explainer.submit(move || tx.send(std::thread::current().id()).unwrap());
        explainer.settle();
        assert_ne!(
            rx.recv().unwrap(),
            thread,
            "jobs run on the worker, not the caller"
        );
    }
}
