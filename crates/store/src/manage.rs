//! Management: what the CLI's `cache stats|list|clear|verify|gc` call. Listings and stats come
//! from the index (O(result) / O(1)); `verify` and `rebuild_index` walk the directory because
//! their job is to make the index agree with it.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;
use tracing::{debug, info};

use super::cache::{Store, remove_file_if_exists};
use super::clock::UnixMillis;
use super::entry::EntryState;
use super::error::{Result, StoreError};
use super::events::MISS_REASON_PREFIX;
use super::evict::EvictReport;
use super::index::{Counter, ListFilter, MAX_REASON_LEN, Row, SortBy};
use super::key::Digest;
use super::lock;
use super::prefetch_list::PrefetchCounters;
use super::rebuild::{self, Depth, RebuildReport};
use super::suspect::AuditCounts;

/// A temporary file untouched for this long belongs to a dead writer.
pub const STALE_TMP_MS: i64 = super::atomic::STALE_TMP_AGE.as_millis() as i64;

/// Version of the shape of [`Stats`] as JSON (`cache stats --json`).
pub const STATS_SCHEMA: &str = "mlir-cache-key.stats.v1";

/// Counters and sizes, serializable for `--json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    /// [`STATS_SCHEMA`].
    pub schema: &'static str,
    pub cache_dir: PathBuf,
    /// The cache is used read-only: hits served, nothing stored or counted.
    pub read_only: bool,
    pub entries: u64,
    pub bytes: u64,
    pub failed_entries: u64,
    pub max_size: u64,
    pub ttl_days: f64,
    pub hits: u64,
    /// Hits served through a direct-mode manifest, without parsing the input.
    pub direct_hits: u64,
    pub misses: u64,
    /// hits / (hits + misses), when there was a lookup.
    pub hit_rate: Option<f64>,
    /// Misses by what moved against the nearest stored entry (`flag`, `option`, `compiler`,
    /// `computation`, …; `new` when no entry of the module was stored).
    pub miss_reasons: BTreeMap<String, u64>,
    /// When the counters were last zeroed (`cache stats --zero`), ms since the epoch.
    pub zeroed_ms: Option<UnixMillis>,
    pub failures_replayed: u64,
    pub evictions: u64,
    pub corrupt: u64,
    pub puts: u64,
    pub bytes_written: u64,
    pub quarantined_files: u64,
    /// Hit audits (`--verify-hits`) and what they found.
    pub audits: AuditCounts,
    /// Executables loaded ahead of a warm start, and whether the program used them.
    pub prefetch: PrefetchCounters,
}

/// One entry as listed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EntrySummary {
    pub key: String,
    pub name: String,
    pub digest: String,
    pub state: EntryState,
    /// Entry file size (what counts against the cap).
    pub size: u64,
    pub artefact_size: u64,
    pub created_ms: UnixMillis,
    pub last_used_ms: UnixMillis,
    pub path: PathBuf,
    /// Why a hit audit stopped serving the entry, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspect: Option<String>,
}

/// What `clear` removes.
pub enum Clear<'a> {
    /// Every entry (found by walking the directory, so nothing the index missed survives) and
    /// the quarantine.
    All,
    /// Entries (as the index lists them) for which the predicate holds.
    Matching(&'a dyn Fn(&EntrySummary) -> bool),
}

/// What `clear` did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ClearReport {
    pub removed: u64,
    pub freed_bytes: u64,
}

/// What `gc` did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GcReport {
    pub eviction: EvictReport,
    pub tmp_removed: u64,
    pub quarantine_removed: u64,
    pub locks_removed: u64,
    /// Suspect markers whose entry is gone or was replaced.
    pub suspects_removed: u64,
    /// History files whose newest line was older than `history_days`.
    pub history_files_removed: u64,
}

impl Store {
    /// Counts a hit served through a direct-mode manifest (best effort).
    pub fn record_direct_hit(&self) {
        let now = self.now();
        self.index_best_effort("count a direct hit", |ix| {
            ix.count_hit(Counter::DirectHits, now)
        });
    }

    /// Sizes and counters.
    pub fn stats(&self) -> Result<Stats> {
        let c = self.counters()?;
        let get = |k: &str| c.get(k).copied().unwrap_or(0).max(0) as u64;
        let quarantined_files = count_files(self.layout().quarantine_dir())?;
        let zeroed_ms = self.with_index("read counters", |ix| ix.zeroed_ms())?;
        let (hits, misses) = (get("hits"), get("misses"));
        let miss_reasons = c
            .iter()
            .filter_map(|(k, v)| {
                let reason = k.strip_prefix(MISS_REASON_PREFIX)?;
                Some((reason.to_owned(), (*v).max(0) as u64))
            })
            .collect();
        Ok(Stats {
            schema: STATS_SCHEMA,
            cache_dir: self.layout().root().to_owned(),
            read_only: self.is_read_only(),
            entries: get("entry_count"),
            bytes: get("total_bytes"),
            failed_entries: get("failed_count"),
            max_size: self.settings().max_size,
            ttl_days: self.settings().ttl.as_secs_f64() / 86_400.0,
            hits,
            misses,
            hit_rate: (hits + misses > 0).then(|| hits as f64 / (hits + misses) as f64),
            miss_reasons,
            zeroed_ms,
            direct_hits: get("direct_hits"),
            failures_replayed: get("failures_replayed"),
            evictions: get("evictions"),
            corrupt: get("corrupt"),
            puts: get("puts"),
            bytes_written: get("bytes_written"),
            quarantined_files,
            audits: AuditCounts::from_counters(get),
            prefetch: PrefetchCounters::from_counters(get),
        })
    }

    /// Entries from the index, filtered and sorted (`filter.limit` bounds the work).
    pub fn list(&self, filter: &ListFilter) -> Result<Vec<EntrySummary>> {
        let rows = self.with_index("list entries", |ix| ix.list(filter))?;
        let mut suspects = self.suspects()?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let suspect = suspects
                    .remove(&r.digest)
                    .filter(|s| s.entry_created_ms == r.created_ms)
                    .map(|s| s.reason);
                EntrySummary {
                    suspect,
                    ..self.summary(r)
                }
            })
            .collect())
    }

    /// One entry's index row, if the index knows it.
    pub fn summary_of(&self, digest: &Digest) -> Result<Option<EntrySummary>> {
        let row = self.with_index("read an entry", |ix| ix.row(digest.as_str()))?;
        Ok(row.map(|r| self.summary(r)))
    }

    fn summary(&self, r: Row) -> EntrySummary {
        let path = match Digest::parse(&r.digest) {
            Ok(d) => self.layout().entry_path(&d),
            Err(_) => PathBuf::new(),
        };
        EntrySummary {
            key: format!("{}-{}", r.name, r.digest),
            name: r.name,
            digest: r.digest,
            state: r.state,
            size: r.size,
            artefact_size: r.artefact_size,
            created_ms: r.created_ms,
            last_used_ms: r.last_used_ms,
            path,
            suspect: None,
        }
    }

    /// Removes entries.
    pub fn clear(&self, what: Clear<'_>) -> Result<ClearReport> {
        let mut report = ClearReport::default();
        match what {
            Clear::All => {
                for file in files_in_shards(self.layout().entries_dir())? {
                    let size = fs::symlink_metadata(&file).map(|m| m.len()).unwrap_or(0);
                    if remove_file_if_exists(&file)? {
                        report.removed += 1;
                        report.freed_bytes += size;
                    }
                }
                self.with_index("clear the index", |ix| ix.clear_rows())?;
                let quarantine = read_dir_paths(self.layout().quarantine_dir())?;
                let suspects = read_dir_paths(&self.layout().suspect_dir())?;
                for file in quarantine.into_iter().chain(suspects) {
                    remove_file_if_exists(&file)?;
                }
            }
            Clear::Matching(pred) => {
                let all = self.list(&ListFilter {
                    sort: SortBy::Name,
                    ..ListFilter::default()
                })?;
                for entry in all.into_iter().filter(|e| pred(e)) {
                    let removed = remove_file_if_exists(&entry.path)?;
                    self.with_index("remove an entry", |ix| ix.remove(&entry.digest))?;
                    if removed {
                        report.removed += 1;
                        report.freed_bytes += entry.size;
                    }
                }
            }
        }
        info!(
            "Removed {} entries ({} bytes) from {}",
            report.removed,
            report.freed_bytes,
            self.layout().root().display()
        );
        Ok(report)
    }

    /// Re-checks every entry file completely (payload checksums included), quarantines damaged
    /// ones and makes the index agree with the directory. `progress(done, total)` is called
    /// once before the first file and after each.
    pub fn verify(&self, mut progress: impl FnMut(u64, u64)) -> Result<RebuildReport> {
        let mut ix = self.lock_index();
        let mut recreated = false;
        if !ix.quick_check().unwrap_or(false) {
            *ix = rebuild::open_index(self.layout(), self.settings(), self.clock().as_ref(), true)?;
            recreated = true;
        }
        let mut report = rebuild::reconcile(
            self.layout(),
            &mut ix,
            self.clock().as_ref(),
            Depth::Full,
            &mut progress,
        )?;
        report.index_recreated = recreated;
        Ok(report)
    }

    /// Makes the index agree with the entry files, checking headers and metadata only.
    pub fn rebuild_index(&self) -> Result<RebuildReport> {
        let mut ix = self.lock_index();
        rebuild::reconcile(
            self.layout(),
            &mut ix,
            self.clock().as_ref(),
            Depth::Metadata,
            &mut |_, _| {},
        )
    }

    /// Evicts now, then sweeps what dead processes leave behind: temporary files older than an
    /// hour, quarantined files older than the TTL, lock files no one holds.
    pub fn gc(&self) -> Result<GcReport> {
        let now = self.now();
        let eviction = self.evict_now(None)?;
        let tmp_removed = remove_older_than(self.layout().tmp_dir(), now - STALE_TMP_MS)?;
        let ttl_ms = i64::try_from(self.settings().ttl.as_millis()).unwrap_or(i64::MAX);
        let quarantine_removed =
            remove_older_than(self.layout().quarantine_dir(), now.saturating_sub(ttl_ms))?;
        let mut locks_removed = 0;
        for file in files_in_shards(self.layout().locks_dir())? {
            if lock::remove_if_unlocked(&file, self.file_mode())? {
                locks_removed += 1;
            }
        }
        let suspects_removed = self.sweep_suspects()?;
        let history_files_removed = self.history().expire(
            crate::clock::ms_to_system_time(now),
            self.settings().history_age,
        );
        let report = GcReport {
            history_files_removed,
            eviction,
            tmp_removed,
            quarantine_removed,
            locks_removed,
            suspects_removed,
        };
        debug!("gc of {}: {report:?}", self.layout().root().display());
        Ok(report)
    }
}

fn read_dir_paths(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io("list", dir, e)),
    };
    rd.map(|e| {
        e.map(|e| e.path())
            .map_err(|err| StoreError::io("list", dir, err))
    })
    .collect()
}

/// The files one level down in `dir`'s shard directories (anything else in `dir` is skipped).
fn files_in_shards(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for shard in read_dir_paths(dir)? {
        if fs::symlink_metadata(&shard).is_ok_and(|m| m.is_dir()) {
            files.extend(read_dir_paths(&shard)?);
        }
    }
    Ok(files)
}

fn count_files(dir: &Path) -> Result<u64> {
    Ok(read_dir_paths(dir)?.len() as u64)
}

/// Removes regular files in `dir` whose mtime is before `cutoff`; returns how many.
fn remove_older_than(dir: &Path, cutoff: UnixMillis) -> Result<u64> {
    let mut n = 0;
    for p in read_dir_paths(dir)? {
        let Ok(m) = fs::symlink_metadata(&p) else {
            continue;
        };
        let mtime = m
            .modified()
            .map(super::clock::system_time_to_ms)
            .unwrap_or(0);
        if !m.is_dir() && mtime < cutoff && remove_file_if_exists(&p)? {
            n += 1;
        }
    }
    Ok(n)
}

impl Store {
    /// Counts one miss whose reason is `reason` (what moved against the nearest stored entry:
    /// `flag`, `option`, `compiler`, `computation`, `new`, …). The reason is reduced to
    /// lowercase letters, digits and `_`. Best effort: a failure is only logged.
    pub fn count_miss_reason(&self, reason: &str) {
        let mut name: String = reason
            .trim()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .take(MAX_REASON_LEN)
            .collect();
        if name.is_empty() {
            name.push_str("unknown");
        }
        let now = self.now();
        self.index_best_effort("count a miss reason", |ix| ix.count_miss_reason(&name, now));
    }

    /// Every event counter by name, as the index holds it (layers above the store read their
    /// own counters here).
    pub fn counters(&self) -> Result<BTreeMap<String, i64>> {
        self.with_index("read counters", |ix| ix.counters())
    }

    /// Adds `by` to the event counter `name`, for a layer above the store that keeps counters
    /// of its own beside the store's (best effort: a counter is never worth failing a lookup).
    pub fn count_named(&self, name: &str, by: u64) {
        let by = i64::try_from(by).unwrap_or(i64::MAX);
        self.index_best_effort("count an event", |ix| ix.add_named(name, by));
    }

    /// Sets every event counter (hits, misses, reasons, evictions, and the counters of the
    /// layers above) to zero;
    /// sizes stay (ccache's `--zero-stats`).
    pub fn zero_stats(&self) -> Result<()> {
        let now = self.now();
        self.with_index("zero the counters", |ix| ix.zero_events(now))
    }
}
