//! What a report holds: the JSON schema `mlir-cache-key.report.v1` (documented in
//! `docs/report.md`), which the text and HTML renderings show.

use serde::{Deserialize, Serialize};

/// The schema name every report carries.
pub const REPORT_SCHEMA: &str = "mlir-cache-key.report.v1";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    /// The window, in Unix milliseconds: events at or after `since_ms`, up to `until_ms`.
    pub since_ms: u64,
    pub until_ms: u64,
    /// The caches whose histories were read.
    pub caches: Vec<CacheSource>,
    pub totals: Totals,
    /// Lookups and compile time per time bucket, oldest first.
    pub timeline: Vec<Bucket>,
    /// Misses grouped by cause, most frequent first.
    pub causes: Vec<CauseGroup>,
    /// The modules that miss most (at most [`crate::TOP_MODULES`]), most misses first.
    pub modules: Vec<ModuleLine>,
    /// Lookups per host, by name.
    pub hosts: Vec<HostLine>,
    pub eviction: Churn,
    /// Each remote tier's answers, by name.
    pub tiers: Vec<TierLine>,
}

/// One cache directory read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheSource {
    pub dir: String,
    /// Events in the window.
    pub events: u64,
    /// Lines that were torn or of another format (skipped).
    pub unreadable_lines: u64,
    /// The cache's size cap, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_size: Option<u64>,
}

/// Counts over the window; `hits`, `misses`, `failures_replayed`, `puts` and `evictions` equal
/// `cache stats` over the same span.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// hits + misses + failures_replayed.
    pub lookups: u64,
    pub hits: u64,
    pub misses: u64,
    pub failures_replayed: u64,
    /// hits / (hits + misses); none without lookups.
    pub hit_rate: Option<f64>,
    pub puts: u64,
    pub evictions: u64,
    /// Compile time the misses of these caches spent (as measured by the compiling process).
    pub compile_ms_spent: u64,
    /// Compile time the hits saved (each hit: its entry's recorded compile time).
    pub compile_ms_saved: u64,
}

/// One time bucket of the timeline.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    pub start_ms: u64,
    pub hits: u64,
    pub misses: u64,
    pub compile_ms_spent: u64,
    pub compile_ms_saved: u64,
}

/// The misses of one cause.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CauseGroup {
    /// A stable code: see [`crate::CAUSES`].
    pub cause: String,
    /// The code in words.
    pub label: String,
    pub count: u64,
    /// Hosts where it happened, by name.
    pub hosts: Vec<String>,
    /// Up to three keys that missed for it.
    pub example_keys: Vec<String>,
    /// What moved, most frequent first (at most five).
    pub details: Vec<DetailCount>,
    pub compile_ms_spent: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DetailCount {
    pub detail: String,
    pub count: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModuleLine {
    pub module: String,
    pub misses: u64,
    pub hits: u64,
    pub compile_ms_spent: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostLine {
    pub host: String,
    pub hits: u64,
    pub misses: u64,
}

/// Entries compiled again after eviction, and what cap would have kept them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Churn {
    pub evictions: u64,
    pub evicted_bytes: u64,
    /// Misses of an entry the same cache had evicted earlier.
    pub recompiled_after_eviction: u64,
    /// The smallest LRU cache (bytes of entries) that would have kept every one of them: the
    /// bytes of the distinct entries used between an entry's last use and its miss, plus its
    /// own, at most. None when nothing was compiled again.
    pub size_to_keep_them: Option<u64>,
}

/// One remote tier's answers to first look-ups.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TierLine {
    pub tier: String,
    pub lookups: u64,
    pub hits: u64,
    pub misses: u64,
    /// Look-ups it failed, timed out or skipped (breaker open).
    pub down: u64,
    /// hits / lookups.
    pub hit_rate: Option<f64>,
    /// Time from each first failed answer to the next good one (or to its last failed one).
    pub downtime_ms: u64,
    pub outages: u64,
}
