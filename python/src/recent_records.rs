//! The records of the misses this process explained lately, by the digest they are stored
//! under. A miss is explained against its module's newest entry, which is usually the one this
//! process stored moments before; recalled here, its record is neither read from the entry's
//! file nor parsed again, on the worker beside the compile. A stored digest names one record:
//! the key's ingredients, and the XLA build, which has its own place (`xla_build.rs`); so the
//! entry's file holds what is recalled.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use mck_key::KeyRecord;

/// Records kept: a run of misses of one module needs only the last.
const KEPT: usize = 8;

#[derive(Default)]
pub struct RecentRecords(Mutex<VecDeque<(String, Arc<KeyRecord>)>>);

impl RecentRecords {
    /// Keeps `record` as the one stored under `digest`, the oldest kept one going.
    pub fn remember(&self, digest: &str, record: Arc<KeyRecord>) {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        kept.retain(|(d, _)| d != digest);
        if kept.len() == KEPT {
            kept.pop_front();
        }
        kept.push_back((digest.to_owned(), record));
    }

    /// The record kept for `digest`, if any.
    pub fn recall(&self, digest: &str) -> Option<Arc<KeyRecord>> {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        kept.iter()
            .rev()
            .find(|(d, _)| d == digest)
            .map(|(_, r)| Arc::clone(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: usize) -> Arc<KeyRecord> {
        Arc::new(KeyRecord {
            format: 1,
            key: format!("jit_f-{n:064x}"),
            module_name: "jit_f".into(),
            sha256: format!("{n:064x}"),
            recipe: "r".into(),
            entries: Vec::new(),
            xla_build: None,
        })
    }

    #[test]
    fn the_newest_records_are_kept_and_the_oldest_go() {
        let recent = RecentRecords::default();
        for n in 0..KEPT + 2 {
            recent.remember(&n.to_string(), record(n));
        }
        assert!(recent.recall("0").is_none());
        assert!(recent.recall("1").is_none());
        for n in 2..KEPT + 2 {
            assert_eq!(
                recent.recall(&n.to_string()).unwrap().sha256,
                record(n).sha256
            );
        }
        // Remembered again: replaced, not kept twice.
        recent.remember("5", record(50));
        assert_eq!(recent.recall("5").unwrap().sha256, record(50).sha256);
        assert_eq!(recent.0.lock().unwrap().len(), KEPT);
    }
}
