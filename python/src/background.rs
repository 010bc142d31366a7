//! The work a lookup leaves behind, done off the compile's path: explaining a miss
//! (`explain_miss(..., wait=False)`), storing what a compile produced (`compile_once`), counting
//! a miss (`Store::count_misses_later`) or a prefetched hit (`count_hit`). One worker thread per
//! cache, started on first need and fed through a bounded queue in order, so a miss pays a send,
//! not a thread's start, and a miss is explained against every entry stored before it. The
//! worker runs at a lower priority than its callers (`mck_store::lower_current_thread`). `settle`
//! waits until everything queued is done; `settle_store(key)` until the store of one key is (a
//! lookup of that key in this process must see it). A process forked from one with a worker
//! starts its own (the worker is not copied by `fork`), and does not wait for what its parent
//! queued.
//!
//! A job that needs the interpreter (serializing an executable holds the GIL for ~0.8 ms) waits
//! at the `Gate` for a moment the caller's thread does not need it: while a compile runs there
//! (the GIL is free for tens of milliseconds), while someone settles, or after its patience.

use std::collections::HashMap;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

type Job = Box<dyn FnOnce() + Send>;

/// Queued jobs wait here; a full queue makes the next submitter wait for a free slot.
const QUEUED: usize = 256;

#[derive(Default)]
pub struct Background {
    /// The worker's queue and the process that started it.
    queue: Mutex<Option<(u32, SyncSender<Job>)>>,
    pending: Arc<Pending>,
    gate: Arc<Gate>,
}

/// Compiles running on callers' threads and callers settling: while either is above zero, a job
/// that needs the interpreter takes it from nobody who is waiting for it.
#[derive(Default)]
pub struct Gate {
    open: Mutex<Openers>,
    changed: Condvar,
}

#[derive(Default)]
struct Openers {
    compiling: usize,
    settling: usize,
}

impl Gate {
    fn lock(&self) -> MutexGuard<'_, Openers> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` with the gate held open (counted down again if `f` panics).
    fn opened_while<T>(&self, count: fn(&mut Openers) -> &mut usize, f: impl FnOnce() -> T) -> T {
        struct Close<'a>(&'a Gate, fn(&mut Openers) -> &mut usize);
        impl Drop for Close<'_> {
            fn drop(&mut self) {
                *(self.1)(&mut self.0.lock()) -= 1;
            }
        }
        *count(&mut self.lock()) += 1;
        self.changed.notify_all();
        let _close = Close(self, count);
        f()
    }

    /// Waits until a compile runs or someone settles, or `patience` has passed.
    pub fn wait(&self, patience: Duration) {
        let deadline = Instant::now() + patience;
        let mut open = self.lock();
        while open.compiling == 0 && open.settling == 0 {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return;
            };
            open = self
                .changed
                .wait_timeout(open, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// Jobs submitted and not yet finished, and among them the stores, by key.
#[derive(Default)]
struct Pending {
    counts: Mutex<Counts>,
    changed: Condvar,
}

#[derive(Default)]
struct Counts {
    jobs: usize,
    stores: HashMap<String, usize>,
}

impl Pending {
    fn lock(&self) -> MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One job fewer (and one store of `key` fewer); wakes those settling.
    fn finished(&self, key: Option<&str>) {
        let mut counts = self.lock();
        counts.jobs = counts.jobs.saturating_sub(1);
        if let Some(key) = key
            && let Some(n) = counts.stores.get_mut(key)
        {
            *n -= 1;
            if *n == 0 {
                counts.stores.remove(key);
            }
        }
        self.changed.notify_all();
    }

    fn wait_until(&self, done: impl Fn(&Counts) -> bool) {
        let mut counts = self.lock();
        while !done(&counts) {
            counts = self.changed.wait(counts).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Background {
    /// Runs `job` on the worker. A worker that cannot be started runs it here instead.
    pub fn submit(&self, job: impl FnOnce() + Send + 'static) {
        self.send(None, Box::new(job));
    }

    /// Runs `store` (which stores `key`'s entry) on the worker; until it has run,
    /// `settle_store(key)` waits.
    pub fn submit_store(&self, key: String, store: impl FnOnce() + Send + 'static) {
        self.send(Some(key), Box::new(store));
    }

    fn send(&self, key: Option<String>, job: Job) {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let pid = std::process::id();
        if queue
            .as_ref()
            .is_none_or(|(started_by, _)| *started_by != pid)
        {
            // None yet, or a forked child's: what the parent queued is the parent's to finish.
            *self.pending.lock() = Counts::default();
            *queue = self.start().map(|sender| (pid, sender));
        }
        let Some((_, sender)) = queue.as_ref() else {
            drop(queue);
            return job();
        };
        {
            let mut counts = self.pending.lock();
            counts.jobs += 1;
            if let Some(key) = &key {
                *counts.stores.entry(key.clone()).or_default() += 1;
            }
        }
        let pending = Arc::clone(&self.pending);
        let job: Job = Box::new(move || {
            // A job that panics is one lost explanation or entry, not a lost worker.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            pending.finished(key.as_deref());
        });
        if let Err(refused) = sender.send(job) {
            // The worker is gone: done here, and a new worker for the next job.
            *queue = None;
            drop(queue);
            (refused.0)();
        }
    }

    /// Waits until every job this process submitted has finished.
    pub fn settle(&self) {
        if self.forked() {
            return;
        }
        self.gate.opened_while(
            |o| &mut o.settling,
            || self.pending.wait_until(|counts| counts.jobs == 0),
        );
    }

    /// Waits until every store of `key` this process submitted has finished.
    pub fn settle_store(&self, key: &str) {
        if self.forked() {
            return;
        }
        self.gate.opened_while(
            |o| &mut o.settling,
            || {
                self.pending
                    .wait_until(|counts| !counts.stores.contains_key(key))
            },
        );
    }

    /// Runs `compile` (which releases the interpreter while it compiles) with the gate open.
    pub fn while_compiling<T>(&self, compile: impl FnOnce() -> T) -> T {
        self.gate.opened_while(|o| &mut o.compiling, compile)
    }

    /// The gate a job that needs the interpreter waits at.
    pub fn gate(&self) -> Arc<Gate> {
        Arc::clone(&self.gate)
    }

    /// True in a process forked from the one that started the worker: the jobs counted are
    /// the parent's, not ours to wait for.
    fn forked(&self) -> bool {
        let queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        queue
            .as_ref()
            .is_some_and(|(started_by, _)| *started_by != std::process::id())
    }

    fn start(&self) -> Option<SyncSender<Job>> {
        let (sender, jobs) = sync_channel::<Job>(QUEUED);
        std::thread::Builder::new()
            .name("mck-background".into())
            .spawn(move || {
                // Its jobs were handed off so that the caller goes on: it must not preempt it.
                mck_store::lower_current_thread();
                for job in jobs {
                    job();
                }
            })
            .ok()
            .map(|_| sender)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn settle_waits_for_every_job_and_a_panicking_one_loses_only_itself() {
        let background = Background::default();
        let done = Arc::new(AtomicUsize::new(0));
        for i in 0..50 {
            let done = Arc::clone(&done);
            background.submit(move || {
                std::thread::sleep(Duration::from_millis(1));
                assert!(i != 7, "a job that panics");
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
        background.settle();
        assert_eq!(done.load(Ordering::SeqCst), 49);
        let thread = std::thread::current().id();
        let (tx, rx) = std::sync::mpsc::channel();
        background.submit(move || tx.send(std::thread::current().id()).unwrap());
        background.settle();
        assert_ne!(
            rx.recv().unwrap(),
            thread,
            "jobs run on the worker, not the caller"
        );
    }

    /// The calling thread's nice value and scheduling policy, from /proc.
    fn nice_and_policy() -> (i64, i64) {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        // After the command name: fields 3 onwards; nice is field 19, the policy field 41.
        let fields: Vec<i64> = stat[stat.rfind(')').unwrap() + 2..]
            .split(' ')
            .map(|f| f.trim().parse().unwrap_or(-1))
            .collect();
        (fields[19 - 3], fields[41 - 3])
    }

    #[test]
    fn the_worker_gives_way_to_the_callers_thread() {
        const SCHED_BATCH: i64 = 3;
        let background = Background::default();
        let (tx, rx) = std::sync::mpsc::channel();
        background.submit(move || tx.send(nice_and_policy()).unwrap());
        background.settle();
        let (caller_nice, caller_policy) = nice_and_policy();
        let (worker_nice, worker_policy) = rx.recv().unwrap();
        assert_eq!(
            worker_policy, SCHED_BATCH,
            "the caller's is {caller_policy}"
        );
        assert!(
            worker_nice > caller_nice,
            "worker nice {worker_nice}, caller's {caller_nice}"
        );
    }

    /// A job that waits at the gate, and reports when it passed it.
    fn gated_job(background: &Background, patience: Duration) -> std::sync::mpsc::Receiver<()> {
        let (passed, rx) = std::sync::mpsc::channel();
        let gate = background.gate();
        background.submit_store("k".into(), move || {
            gate.wait(patience);
            passed.send(()).unwrap();
        });
        rx
    }

    #[test]
    fn a_gated_job_waits_for_a_compile_a_settle_or_its_patience() {
        let background = Arc::new(Background::default());
        let long = Duration::from_secs(600);
        let gated = gated_job(&background, long);
        assert!(
            gated.recv_timeout(Duration::from_millis(100)).is_err(),
            "nothing opened it"
        );
        background.while_compiling(|| gated.recv_timeout(Duration::from_secs(10)).unwrap());

        // Closed again once the compile is over; a settle opens it.
        let gated = gated_job(&background, long);
        assert!(
            gated.recv_timeout(Duration::from_millis(100)).is_err(),
            "closed after the compile"
        );
        background.settle_store("k");
        gated.recv_timeout(Duration::ZERO).expect("settled");

        // Its patience runs out.
        let started = Instant::now();
        let gated = gated_job(&background, Duration::from_millis(50));
        gated.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(started.elapsed() >= Duration::from_millis(50));

        // A compile that panics still closes it.
        let compiling = Arc::clone(&background);
        let _ =
            std::thread::spawn(move || compiling.while_compiling(|| panic!("a failed compile")))
                .join();
        let gated = gated_job(&background, long);
        assert!(
            gated.recv_timeout(Duration::from_millis(100)).is_err(),
            "closed after a panic"
        );
        background.settle();
    }

    #[test]
    fn settling_a_store_waits_for_that_key_only_and_jobs_run_in_order() {
        let background = Background::default();
        let (release_a, a_may_finish) = std::sync::mpsc::channel::<()>();
        let order = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&order);
        background.submit_store("a".into(), move || {
            a_may_finish.recv().unwrap();
            seen.lock().unwrap().push("a");
        });
        let seen = Arc::clone(&order);
        background.submit(move || seen.lock().unwrap().push("explain"));
        // Nothing of "b" is queued: no wait, though "a" is stuck.
        background.settle_store("b");
        let waiter = {
            let order = Arc::clone(&order);
            let background = Arc::new(background);
            let settling = Arc::clone(&background);
            let handle = std::thread::spawn(move || {
                settling.settle_store("a");
                order.lock().unwrap().clone()
            });
            std::thread::sleep(Duration::from_millis(50));
            assert!(!handle.is_finished(), "settle_store(a) waits for a's store");
            release_a.send(()).unwrap();
            let seen_by_waiter = handle.join().unwrap();
            background.settle();
            seen_by_waiter
        };
        assert_eq!(waiter.first(), Some(&"a"), "a's store had run");
        assert_eq!(
            *order.lock().unwrap(),
            vec!["a", "explain"],
            "in submission order"
        );
    }
}
