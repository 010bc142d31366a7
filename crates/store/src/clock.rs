//! Time, injectable. Last use, TTL protection and stale-file sweeping all compare against "now";
//! tests move a [`ManualClock`] instead of sleeping for days.

use std::fmt::Debug;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, the store's one unit of time (index columns, metadata).
pub type UnixMillis = i64;

/// A source of "now".
pub trait Clock: Send + Sync + Debug {
    fn now_ms(&self) -> UnixMillis;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> UnixMillis {
        system_time_to_ms(SystemTime::now())
    }
}

/// A clock that only moves when told to.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(now_ms: UnixMillis) -> Self {
        ManualClock(AtomicI64::new(now_ms))
    }
    pub fn set(&self, now_ms: UnixMillis) {
        self.0.store(now_ms, Ordering::SeqCst);
    }
    pub fn advance(&self, by: Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> UnixMillis {
        self.0.load(Ordering::SeqCst)
    }
}

/// Converts a file time to [`UnixMillis`] (times before the epoch clamp to 0).
pub fn system_time_to_ms(t: SystemTime) -> UnixMillis {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(_) => 0,
    }
}

/// Converts [`UnixMillis`] to a file time (negative clamps to the epoch).
pub fn ms_to_system_time(ms: UnixMillis) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}
