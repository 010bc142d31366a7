//! Each tier's counters, for `cache stats`: what the chain did on that tier ([`TierEvent`]),
//! kept as event counters named after the tier (`tier.<URL>.<event>`, the URL with its
//! password redacted) in `counters.sqlite` like every other counter, so they add up across the
//! short-lived processes of a build, survive a changed chain and are zeroed with the rest.

use std::collections::BTreeMap;

use serde::Serialize;

use super::super::clock::UnixMillis;

/// What happened on one tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TierEvent {
    /// A verified entry was used from this tier.
    Hits,
    /// This tier had no usable entry.
    Misses,
    /// Bytes of the entries used from this tier.
    BytesRead,
    /// Entries written to this tier (puts and backfills).
    Writes,
    /// Bytes of those entries.
    BytesWritten,
    /// Operations that failed or timed out.
    Errors,
    /// Operations skipped while this tier's breaker was open.
    Skipped,
    /// Entries written here because a slower tier had them.
    Backfills,
}

impl TierEvent {
    const ALL: [TierEvent; 8] = [
        TierEvent::Hits,
        TierEvent::Misses,
        TierEvent::BytesRead,
        TierEvent::Writes,
        TierEvent::BytesWritten,
        TierEvent::Errors,
        TierEvent::Skipped,
        TierEvent::Backfills,
    ];

    fn name(self) -> &'static str {
        match self {
            TierEvent::Hits => "hits",
            TierEvent::Misses => "misses",
            TierEvent::BytesRead => "bytes_read",
            TierEvent::Writes => "writes",
            TierEvent::BytesWritten => "bytes_written",
            TierEvent::Errors => "errors",
            TierEvent::Skipped => "skipped",
            TierEvent::Backfills => "backfills",
        }
    }

    /// The event counter of this event on the tier shown as `tier`.
    pub fn counter(self, tier: &str) -> String {
        format!("tier.{tier}.{}", self.name())
    }
}

/// One tier's row in `cache stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TierStats {
    /// The tier's URL, password redacted.
    pub url: String,
    /// This host reads it and never writes to it (its own mark or `--remote_read_only`).
    pub read_only: bool,
    /// Until when an earlier failure marked it down, if it is.
    pub down_until_ms: Option<UnixMillis>,
    pub hits: u64,
    pub misses: u64,
    pub bytes_read: u64,
    pub writes: u64,
    pub bytes_written: u64,
    pub errors: u64,
    pub skipped: u64,
    pub backfills: u64,
}

impl TierStats {
    /// The row of the tier shown as `url`, its counters read from `counters`.
    pub fn from_counters(url: String, read_only: bool, counters: &BTreeMap<String, i64>) -> Self {
        let mut row = TierStats {
            read_only,
            ..TierStats::default()
        };
        for event in TierEvent::ALL {
            let value = counters
                .get(&event.counter(&url))
                .copied()
                .unwrap_or(0)
                .max(0) as u64;
            *row.field(event) = value;
        }
        row.url = url;
        row
    }

    fn field(&mut self, event: TierEvent) -> &mut u64 {
        match event {
            TierEvent::Hits => &mut self.hits,
            TierEvent::Misses => &mut self.misses,
            TierEvent::BytesRead => &mut self.bytes_read,
            TierEvent::Writes => &mut self.writes,
            TierEvent::BytesWritten => &mut self.bytes_written,
            TierEvent::Errors => &mut self.errors,
            TierEvent::Skipped => &mut self.skipped,
            TierEvent::Backfills => &mut self.backfills,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_reads_only_its_own_tier() {
        let mut counters = BTreeMap::new();
        counters.insert(TierEvent::Hits.counter("redis://a:1/0"), 3);
        counters.insert(TierEvent::Backfills.counter("redis://a:1/0"), 2);
        counters.insert(TierEvent::Hits.counter("redis://b:1/0"), 7);
        let row = TierStats::from_counters("redis://a:1/0".into(), true, &counters);
        assert_eq!((row.hits, row.backfills, row.misses), (3, 2, 0));
        assert!(row.read_only);
        assert_eq!(row.url, "redis://a:1/0");
    }
}
