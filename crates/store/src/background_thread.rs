//! Threads that do work a caller handed off (storing an entry, explaining a miss, copying a
//! remote hit) give way to that caller. Without it, on a machine with few cores, waking the
//! worker makes the kernel preempt the waker in its favour (wake-up preemption), and the caller
//! waits for the very work it handed off: measured inside JAX, 0.4-0.8 ms a miss.

/// How much lower a background thread's nice value is set than its spawner's.
const NICER_BY: i32 = 10;

/// Lowers the calling thread's scheduling priority: `SCHED_BATCH` (never preempts on wake-up)
/// and a nice value [`NICER_BY`] higher (a smaller share while the caller's thread is busy,
/// though never none). Linux keeps both per thread. Best effort: a refusal leaves the thread
/// as it was.
pub fn lower_current_thread() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: plain system calls about the calling thread (pid 0), with a valid parameter.
        unsafe {
            libc::sched_setscheduler(0, libc::SCHED_BATCH, &param);
            // nice(3) adds to this thread's value and stops at the lowest priority (19).
            libc::nice(NICER_BY);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The calling thread's scheduling policy and nice value.
    fn policy_and_nice() -> (i32, i32) {
        // SAFETY: queries about the calling thread only. getpriority may return -1 as a value,
        // but nice values here are never -1 (the tests run unniced and only raise them).
        unsafe {
            (
                libc::sched_getscheduler(0),
                libc::getpriority(libc::PRIO_PROCESS, 0),
            )
        }
    }

    #[test]
    fn only_the_calling_thread_is_lowered() {
        let before = policy_and_nice();
        let lowered = std::thread::spawn(|| {
            let spawned = policy_and_nice();
            lower_current_thread();
            (spawned, policy_and_nice())
        })
        .join()
        .unwrap();
        let (spawned, after) = lowered;
        assert_eq!(spawned, before, "a new thread starts as its spawner");
        assert_eq!(after.0, libc::SCHED_BATCH);
        assert_eq!(after.1, (spawned.1 + NICER_BY).min(19));
        assert_eq!(
            policy_and_nice(),
            before,
            "the caller's thread is unchanged"
        );
    }
}
