//! The event counters' one home (hits, misses, miss reasons, evictions, puts, and the counters
//! of the layers above…): `DIR/v1/counters.sqlite`, durable where the index is disposable, so statistics survive an
//! index rebuild. The index connection attaches it (as `events`), so folding the use log in
//! (`uses.rs`: a hit's last use and counter) is one transaction: last uses in the index, the
//! counters here. It runs in WAL mode with
//! `synchronous=NORMAL` (no fsync per commit): a crash may lose the last increments, which is
//! harmless. A new file is set up unsynced (`sqlite::set_up`): a power loss soon after may
//! lose it, and it starts afresh like a damaged one. The size counters (entries, bytes, failed
//! entries) describe the rows, not events: the index's triggers keep them beside the rows.
//!
//! An older cache kept events in the index's `counters` table and a snapshot `DIR/stats.json`;
//! the first open moves them here (each counter the larger of the two, as a rebuild used to
//! seed them), drops the index's copies and removes the snapshot.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Deserialize;
use tracing::warn;

use super::sqlite::{self, is_corruption, retry_busy};

/// The counters' file name, in the layout directory.
pub const COUNTERS_FILE: &str = "counters.sqlite";
/// The snapshot an older cache kept in the cache directory (read once, then removed).
pub const LEGACY_STATS_FILE: &str = "stats.json";
/// Counters that describe the entries rather than events: kept by the index's triggers.
pub const SIZE_COUNTERS: [&str; 3] = ["entry_count", "total_bytes", "failed_count"];
/// Prefix of the counters of miss reasons.
pub const MISS_REASON_PREFIX: &str = "miss_reason.";

const LEGACY_SCHEMA: &str = "mlir-cache-key.stats-file.v1";
const MAX_LEGACY_LEN: u64 = 1 << 20;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS events.counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events.meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
";

/// Where the counters live, and where an older cache kept them.
#[derive(Clone, Debug)]
pub struct CounterFiles {
    pub db: PathBuf,
    pub legacy_snapshot: PathBuf,
}

impl CounterFiles {
    /// The use log hits append to (`uses.rs`), beside the counters.
    pub fn uses_log(&self) -> PathBuf {
        self.db.with_file_name(super::uses::USES_FILE)
    }
}

/// Attaches the counters to the index connection `conn` (creating the file, with `file_mode`),
/// moving in an older cache's counters the first time. A damaged counters file is set aside
/// with a warning and started afresh: counters are worth less than a working cache.
pub fn attach(conn: &mut Connection, files: &CounterFiles, file_mode: u32) -> rusqlite::Result<()> {
    create_with_mode(&files.db, file_mode);
    match attach_once(conn, files) {
        Err(e) if is_corruption(&e) => {
            warn!(
                "the counters file {} is damaged ({e}); starting the statistics afresh",
                files.db.display()
            );
            let _ = conn.execute("DETACH DATABASE events", []);
            set_aside(&files.db);
            create_with_mode(&files.db, file_mode);
            attach_once(conn, files)
        }
        other => other,
    }
}

/// Attaches the counters of a read-only cache without writing: the file in SQLite's
/// `immutable` mode when it can be read, else an empty in-memory copy (what a read-only cache
/// counts is dropped with it).
pub fn attach_read_only(conn: &Connection, files: &CounterFiles) -> rusqlite::Result<()> {
    let on_disk = files.db.to_str().map(|path| {
        let uri = format!(
            "file:{}?immutable=1",
            path.replace('%', "%25")
                .replace('?', "%3f")
                .replace('#', "%23")
        );
        conn.execute("ATTACH DATABASE ?1 AS events", [uri])
            .and_then(|_| conn.query_row("SELECT count(*) FROM events.counters", [], |_| Ok(())))
    });
    if !matches!(on_disk, Some(Ok(()))) {
        let _ = conn.execute("DETACH DATABASE events", []);
        conn.execute("ATTACH DATABASE ':memory:' AS events", [])?;
        conn.execute_batch(SCHEMA)?;
    }
    Ok(())
}

fn attach_once(conn: &mut Connection, files: &CounterFiles) -> rusqlite::Result<()> {
    let path = files
        .db
        .to_str()
        .ok_or_else(|| rusqlite::Error::InvalidPath(files.db.clone()))?;
    let unwritten = sqlite::is_unwritten(&files.db);
    conn.execute("ATTACH DATABASE ?1 AS events", [path])?;
    conn.pragma_update(Some("events"), "synchronous", "NORMAL")?;
    sqlite::set_up(conn, "events", unwritten, |conn| {
        retry_busy(|| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute_batch(SCHEMA)?;
            tx.commit()
        })
    })?;
    // Moving an older cache's counters in is synced as usual: they are not new.
    retry_busy(|| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if migrated(&tx)? {
            return tx.commit();
        }
        migrate(&tx, &files.legacy_snapshot)?;
        tx.commit()
    })?;
    match std::fs::remove_file(&files.legacy_snapshot) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            // A reader without write access still gets its statistics; the copy is ignored.
            tracing::debug!("cannot remove {}: {e}", files.legacy_snapshot.display());
        }
        _ => {}
    }
    Ok(())
}

fn migrated(conn: &Connection) -> rusqlite::Result<bool> {
    Ok(conn
        .query_row(
            "SELECT value FROM events.meta WHERE key = 'migrated'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .optional()?
        .is_some())
}

/// Moves the index's event rows and the snapshot's counters here (each the larger of the two).
fn migrate(conn: &Connection, legacy_snapshot: &Path) -> rusqlite::Result<()> {
    let (mut merged, zeroed_ms) = read_legacy_snapshot(legacy_snapshot);
    let mut stmt = conn.prepare(
        "SELECT name, value FROM main.counters
         WHERE name NOT IN ('entry_count', 'total_bytes', 'failed_count')",
    )?;
    let in_index = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
    for row in in_index {
        let (name, value) = row?;
        let e = merged.entry(name).or_insert(0);
        *e = (*e).max(value);
    }
    for (name, value) in merged.iter().filter(|(_, v)| **v != 0) {
        conn.execute(
            "INSERT INTO events.counters(name, value) VALUES (?1, ?2)
             ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
            params![name, value],
        )?;
    }
    if let Some(ms) = zeroed_ms {
        set_zeroed(conn, ms)?;
    }
    conn.execute(
        "DELETE FROM main.counters WHERE name NOT IN ('entry_count', 'total_bytes', 'failed_count')",
        [],
    )?;
    conn.execute(
        "INSERT OR REPLACE INTO events.meta(key, value) VALUES ('migrated', 1)",
        [],
    )?;
    Ok(())
}

/// Records when the counters were zeroed.
pub fn set_zeroed(conn: &Connection, ms: i64) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO events.meta(key, value) VALUES ('zeroed_ms', ?1)",
        [ms],
    )
    .map(|_| ())
}

/// When the counters were last zeroed, if ever.
pub fn zeroed(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    conn.query_row(
        "SELECT value FROM events.meta WHERE key = 'zeroed_ms'",
        [],
        |r| r.get(0),
    )
    .optional()
}

#[derive(Deserialize)]
struct LegacySnapshot {
    schema: String,
    zeroed_ms: Option<i64>,
    counters: BTreeMap<String, i64>,
}

/// The event counters of an older cache's snapshot and when they were zeroed (missing or
/// damaged: none).
fn read_legacy_snapshot(path: &Path) -> (BTreeMap<String, i64>, Option<i64>) {
    let mut bytes = Vec::new();
    let read =
        std::fs::File::open(path).and_then(|f| f.take(MAX_LEGACY_LEN).read_to_end(&mut bytes));
    if read.is_err() {
        return (BTreeMap::new(), None);
    }
    match serde_json::from_slice::<LegacySnapshot>(&bytes) {
        Ok(s) if s.schema == LEGACY_SCHEMA => {
            let mut counters = s.counters;
            counters.retain(|k, _| !SIZE_COUNTERS.contains(&k.as_str()));
            (counters, s.zeroed_ms)
        }
        _ => {
            warn!("ignoring the damaged statistics file {}", path.display());
            (BTreeMap::new(), None)
        }
    }
}

/// Creates an empty file with `mode` if none is there (SQLite would create it with the umask's).
fn create_with_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::OpenOptionsExt as _;
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path);
}

/// Renames a damaged counters file (and its WAL, which must not meet a new file) aside.
fn set_aside(db: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut from = db.as_os_str().to_owned();
        from.push(suffix);
        let mut to = from.clone();
        to.push(".damaged");
        if let Err(e) = std::fs::rename(&from, &to)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            warn!("cannot move {} aside: {e}", PathBuf::from(from).display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events_of(conn: &Connection) -> BTreeMap<String, i64> {
        let mut stmt = conn
            .prepare("SELECT name, value FROM events.counters")
            .unwrap();
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        rows.collect::<rusqlite::Result<_>>().unwrap()
    }

    fn files_in(dir: &Path) -> CounterFiles {
        CounterFiles {
            db: dir.join(COUNTERS_FILE),
            legacy_snapshot: dir.join(LEGACY_STATS_FILE),
        }
    }

    /// An older cache: events in the index's `counters` table and in `stats.json`.
    #[test]
    fn an_older_caches_counters_move_in_once() {
        let dir = tempfile::tempdir().unwrap();
        let files = files_in(dir.path());
        let index = dir.path().join("index.sqlite");
        let mut conn = Connection::open(&index).unwrap();
        conn.execute_batch(
            "CREATE TABLE counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
             INSERT INTO counters VALUES ('hits', 5), ('misses', 2), ('miss_reason.flag', 1),
                 ('entry_count', 3), ('total_bytes', 30), ('failed_count', 0);",
        )
        .unwrap();
        let snapshot = r#"{"schema": "mlir-cache-key.stats-file.v1", "zeroed_ms": 123,
            "counters": {"hits": 4, "evictions": 7, "entry_count": 99}}"#;
        std::fs::write(&files.legacy_snapshot, snapshot).unwrap();

        attach(&mut conn, &files, 0o600).unwrap();
        let expected: BTreeMap<String, i64> = [
            ("evictions", 7),
            ("hits", 5),
            ("miss_reason.flag", 1),
            ("misses", 2),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        assert_eq!(events_of(&conn), expected);
        assert_eq!(zeroed(&conn).unwrap(), Some(123));
        let left: i64 = conn
            .query_row("SELECT count(*) FROM main.counters", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 3, "only the size counters stay in the index");
        assert!(!files.legacy_snapshot.exists());

        // A second process (or a later open) counts nothing twice, even if an old version
        // wrote the snapshot again meanwhile.
        std::fs::write(&files.legacy_snapshot, snapshot).unwrap();
        let mut again = Connection::open(&index).unwrap();
        attach(&mut again, &files, 0o600).unwrap();
        assert_eq!(events_of(&again), expected);
    }

    #[test]
    fn a_damaged_counters_file_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let files = files_in(dir.path());
        std::fs::write(&files.db, vec![0x55u8; 8192]).unwrap();
        let mut conn = Connection::open(dir.path().join("index.sqlite")).unwrap();
        conn.execute_batch("CREATE TABLE counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL);")
            .unwrap();
        attach(&mut conn, &files, 0o600).unwrap();
        assert!(events_of(&conn).is_empty());
        assert!(dir.path().join("counters.sqlite.damaged").exists());
    }
}
