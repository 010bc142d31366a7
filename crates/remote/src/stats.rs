//! The chain's counters and its part of `cache stats`: totals over every tier ([`Total`]:
//! `remote_hits`, …) and each tier's own ([`TierEvent`], named after the tier:
//! `tier.<URL>.<event>`, the URL with its password redacted), kept in the local store's
//! `counters.sqlite` like every other counter, so they add up across the short-lived processes
//! of a build, survive a changed chain and are zeroed with the rest. [`CacheStats`] is the
//! store's [`mck_store::Stats`] with the chain's fields beside it (one JSON object).

use std::collections::BTreeMap;

use mck_store::{Store, UnixMillis};
use serde::Serialize;

use crate::breaker::{marked_down_until, state_file_name};
use crate::settings::RemoteSettings;

/// What the chain did, over all its tiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Total {
    /// Verified entries used (and back-filled locally).
    Hits,
    /// No tier had a usable entry.
    Misses,
    /// Entries written.
    Writes,
    /// Operations that failed or timed out (each fell back to local).
    Errors,
    /// Operations skipped while a tier was marked down (local fallback).
    Skipped,
    /// Values that failed verification (never used).
    Corrupt,
    /// Values without a valid HMAC tag while a secret is configured (never used).
    Unauthenticated,
}

impl Total {
    /// The event counter's name in the store.
    pub fn counter(self) -> &'static str {
        match self {
            Total::Hits => "remote_hits",
            Total::Misses => "remote_misses",
            Total::Writes => "remote_writes",
            Total::Errors => "remote_errors",
            Total::Skipped => "remote_skipped",
            Total::Corrupt => "remote_corrupt",
            Total::Unauthenticated => "remote_unauthenticated",
        }
    }
}

/// `cache stats`: the local store's numbers and the chain's, as one object.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CacheStats {
    #[serde(flatten)]
    pub local: mck_store::Stats,
    #[serde(flatten)]
    pub remote: RemoteStats,
}

/// The chain's part of `cache stats`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RemoteStats {
    /// The remote tiers (passwords redacted, comma-separated, fastest first), if any.
    pub remote: Option<String>,
    pub remote_read_only: bool,
    /// Until when an earlier failure marked a remote tier down (the first such tier's mark).
    pub remote_down_until_ms: Option<UnixMillis>,
    pub remote_hits: u64,
    pub remote_misses: u64,
    pub remote_writes: u64,
    /// Operations that fell back to the local cache: `remote_errors + remote_skipped`.
    pub remote_fallbacks: u64,
    pub remote_errors: u64,
    pub remote_skipped: u64,
    pub remote_corrupt: u64,
    /// Whether remote values are authenticated with a shared secret.
    pub remote_authenticated: bool,
    /// Values refused for a missing or wrong HMAC tag (with a secret).
    pub remote_unauthenticated: u64,
    /// One row per remote tier, fastest first (the `remote_*` totals add them up).
    pub tiers: Vec<TierStats>,
    /// The tier whose lease makes one compile per key across hosts (the first that leases:
    /// Redis); `None`: no tier leases, each host compiles a missing key itself.
    pub lease_tier: Option<String>,
}

/// The stats of `store` with the chain `settings` names behind it. Nothing is contacted: the
/// counters are the store's, the "down until" marks the breakers' files.
pub fn stats(store: &Store, settings: &RemoteSettings) -> mck_store::Result<CacheStats> {
    let local = store.stats()?;
    let counters = store.counters()?;
    let get = |t: Total| counters.get(t.counter()).copied().unwrap_or(0).max(0) as u64;
    let now = store.now();
    let tiers: Vec<TierStats> = settings
        .tiers
        .iter()
        .map(|tier| {
            let url = tier.url.to_string();
            let mark = store.layout().state_dir().join(state_file_name(&url));
            TierStats {
                down_until_ms: marked_down_until(&mark, &url, now),
                ..TierStats::from_counters(url, settings.read_only || tier.read_only, &counters)
            }
        })
        .collect();
    let remote = RemoteStats {
        remote: (!tiers.is_empty()).then(|| {
            let urls: Vec<&str> = tiers.iter().map(|t| t.url.as_str()).collect();
            urls.join(", ")
        }),
        remote_read_only: settings.read_only,
        remote_down_until_ms: tiers.iter().find_map(|t| t.down_until_ms),
        remote_hits: get(Total::Hits),
        remote_misses: get(Total::Misses),
        remote_writes: get(Total::Writes),
        remote_fallbacks: get(Total::Errors) + get(Total::Skipped),
        remote_errors: get(Total::Errors),
        remote_skipped: get(Total::Skipped),
        remote_corrupt: get(Total::Corrupt),
        remote_authenticated: settings.secret.is_some(),
        remote_unauthenticated: get(Total::Unauthenticated),
        lease_tier: settings
            .tiers
            .iter()
            .find(|t| t.url.leases())
            .map(|t| t.url.to_string()),
        tiers,
    };
    Ok(CacheStats { local, remote })
}

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
