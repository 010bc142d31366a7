//! The event counters (hits, misses, miss reasons, evictions, …) outside the disposable index:
//! `DIR/stats.json`, a snapshot written atomically whenever the counters are read (`cache
//! stats`), zeroed or after `gc`, and read back when a fresh index is built, so that
//! statistics survive an index rebuild. A damaged index's counters are salvaged when they can
//! still be read; otherwise the snapshot is the floor.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The snapshot's file name, in the cache directory.
pub const STATS_FILE: &str = "stats.json";
/// Counters that describe the entries rather than events: recomputed, never persisted.
pub const SIZE_COUNTERS: [&str; 3] = ["entry_count", "total_bytes", "failed_count"];
const MAX_STATS_LEN: u64 = 1 << 20;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Snapshot {
    schema: String,
    /// When the counters were last zeroed (ms since the epoch), if ever.
    zeroed_ms: Option<i64>,
    counters: BTreeMap<String, i64>,
}

const SCHEMA: &str = "mlir-cache-key.stats-file.v1";

pub fn path(root: &Path) -> PathBuf {
    root.join(STATS_FILE)
}

/// The event counters of the snapshot and when they were zeroed (missing or damaged: none).
pub fn read(root: &Path) -> (BTreeMap<String, i64>, Option<i64>) {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    let ok = std::fs::File::open(path(root))
        .and_then(|f| f.take(MAX_STATS_LEN).read_to_end(&mut bytes))
        .is_ok();
    if !ok {
        return (BTreeMap::new(), None);
    }
    match serde_json::from_slice::<Snapshot>(&bytes) {
        Ok(s) if s.schema == SCHEMA => (events_only(s.counters), s.zeroed_ms),
        _ => {
            tracing::warn!(
                "ignoring the damaged statistics file {}",
                path(root).display()
            );
            (BTreeMap::new(), None)
        }
    }
}

/// Writes the event counters of `counters` (best effort: a failure is logged).
pub fn write(root: &Path, counters: &BTreeMap<String, i64>, zeroed_ms: Option<i64>, mode: u32) {
    let snapshot = Snapshot {
        schema: SCHEMA.to_owned(),
        zeroed_ms,
        counters: events_only(counters.clone()),
    };
    let Ok(bytes) = serde_json::to_vec_pretty(&snapshot) else {
        return;
    };
    if let Err(e) = super::atomic::write_file(&path(root), &bytes, mode) {
        // A reader without write access (a shared cache) still gets its statistics.
        tracing::debug!("cannot write the statistics file: {e}");
    }
}

fn events_only(mut counters: BTreeMap<String, i64>) -> BTreeMap<String, i64> {
    counters.retain(|k, _| !SIZE_COUNTERS.contains(&k.as_str()));
    counters
}

/// The event counters a damaged index at `index` still yields, if any.
pub fn salvage(index: &Path) -> Option<BTreeMap<String, i64>> {
    let conn = rusqlite::Connection::open_with_flags(
        index,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .ok()?;
    let mut stmt = conn.prepare("SELECT name, value FROM counters").ok()?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .ok()?;
    let map: rusqlite::Result<BTreeMap<String, i64>> = rows.collect();
    map.ok().map(events_only)
}

/// Prefix of the counters of miss reasons in the index.
pub const MISS_REASON_PREFIX: &str = "miss_reason.";
