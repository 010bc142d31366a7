//! Eviction: least recently USED first (the index's `last_used`, updated on every hit), until
//! the total is at or under the cap — but never an entry used within the TTL, even if the cache
//! then stays above its cap. Each step is one index transaction over at most `BATCH` rows taken
//! from the `last_used` index, so the cost per evicted entry is O(log n), never a scan.
//!
//! Entries that run records reference are never evicted: the store asks its [`Pins`](crate::Pins) source
//! (`pins.rs`) which candidates are pinned and skips them.
//!
//! Races: a concurrent hit cannot slip between choosing and deleting a victim (the step holds
//! the index's write lock). A concurrent `put` of the same key may have its fresh file unlinked;
//! its row then points at nothing and the next lookup drops it: a lost entry (a miss), never a
//! wrong one.

use std::collections::HashSet;
use std::time::Duration;

use serde::Serialize;
use tracing::{debug, info, warn};

use super::cache::{Store, remove_file_if_exists};
use super::error::Result;
use super::history::What;
use super::index::EvictWindow;
use super::key::Digest;

const BATCH: usize = 64;

/// What an eviction did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EvictReport {
    pub evicted: u64,
    pub freed_bytes: u64,
    /// Total entry bytes afterwards.
    pub total_after: u64,
    /// The cache is still above its cap because every remaining entry is within the TTL.
    pub over_cap_protected: bool,
}

impl Store {
    /// Evicts now (what `put` does when the cache is over its cap). `exclude`: an entry that
    /// must stay (the one just written).
    pub(super) fn evict_now(&self, exclude: Option<&Digest>) -> Result<EvictReport> {
        let cap = self.settings().max_size;
        let ttl_ms = i64::try_from(self.settings().ttl.as_millis()).unwrap_or(i64::MAX);
        let protect_from = self.now().saturating_sub(ttl_ms);
        let mut report = EvictReport::default();
        let mut after = None;
        loop {
            let step = self.with_index("evict entries", |ix| {
                let window = EvictWindow {
                    cap,
                    protect_from,
                    exclude: exclude.map(Digest::as_str),
                    after: after.as_ref(),
                    batch: BATCH,
                };
                ix.evict_step(
                    &window,
                    |candidates| self.pinned_among(candidates),
                    |digest| self.unlink_victim(digest),
                )
            })?;
            for (digest, size) in step.victims {
                self.record_event(What::Evicted { digest, size });
            }
            report.evicted += step.evicted;
            report.freed_bytes += step.freed;
            report.total_after = step.total_after;
            if step.total_after <= cap || step.blocked {
                break;
            }
            if step.exhausted || step.next.is_none() {
                report.over_cap_protected = true;
                info!(
                    "Cache {} holds {} bytes, above its {cap}-byte limit, but every remaining \
                     entry was used within the last {:?}; keeping them",
                    self.layout().root().display(),
                    step.total_after,
                    Duration::from_millis(u64::try_from(ttl_ms).unwrap_or(0)),
                );
                break;
            }
            after = step.next;
        }
        if report.evicted > 0 {
            info!(
                "Evicted {} entries ({} bytes) from {}",
                report.evicted,
                report.freed_bytes,
                self.layout().root().display()
            );
        }
        Ok(report)
    }

    /// Which of `candidates` must stay; `None` when that cannot be told (nothing is evicted).
    /// Without a [`Pins`] source, a cache that has run records keeps everything.
    fn pinned_among(&self, candidates: &[String]) -> Option<HashSet<String>> {
        match self.pins() {
            Some(pins) => match pins.pinned(candidates) {
                Ok(pinned) => Some(pinned),
                Err(e) => {
                    warn!("cannot tell which entries run records reference ({e}); not evicting");
                    None
                }
            },
            None if std::fs::symlink_metadata(self.layout().registry_path()).is_ok() => {
                warn!(
                    "{} holds run records, but this cache was opened without them; not evicting",
                    self.layout().root().display()
                );
                None
            }
            None => Some(HashSet::new()),
        }
    }

    fn unlink_victim(&self, digest: &str) {
        // Only a validated digest builds a path, even one read from the index.
        match Digest::parse(digest) {
            Ok(d) => {
                let path = self.layout().entry_path(&d);
                match remove_file_if_exists(&path) {
                    Ok(_) => debug!("Evicted {}", path.display()),
                    Err(e) => info!("{e}"),
                }
            }
            Err(e) => info!("dropping an index row with a bad digest: {e}"),
        }
    }
}
