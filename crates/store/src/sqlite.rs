//! What every SQLite database of the cache (the index here, the registry in `mck-runs`) does
//! the same way: how long to wait for another writer, which errors mean busy or damaged, and
//! how a read-only cache opens one without writing.

use std::time::{Duration, Instant};

use rusqlite::ErrorCode;

/// How long a statement waits for another process's write transaction.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Sets up a new connection the way every database of the cache uses it: keeps a statement's
/// plan once made. Without this, SQLite marks a statement whose plan could use a bound value,
/// and expires it when its bindings are cleared, which rusqlite does each time it takes a
/// statement back into its cache: every cached query was parsed and planned again on each use
/// (~12 µs, a tenth of the plan's cost to run). Our queries use their indexes whatever the
/// values, and nothing is `ANALYZE`d for a value to inform.
pub fn keep_plans(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )
    .map(|_| ())
}

/// True for errors that mean the database file itself is damaged.
pub fn is_corruption(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

/// True for "database is busy/locked" errors that escaped the busy timeout.
pub fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Runs `f` again while it fails with a busy error that SQLite returned without waiting (as it
/// does during WAL recovery or a journal-mode switch), for up to about 30 seconds.
pub fn retry_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(2);
    loop {
        match f() {
            Err(e) if is_busy(&e) && Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            other => return other,
        }
    }
}

/// A URI that opens `path` in SQLite's `immutable` mode (no writes, no locks, no WAL files).
pub fn immutable_uri(path: &std::path::Path) -> String {
    let path = path.to_string_lossy();
    let escaped = path
        .replace('%', "%25")
        .replace('?', "%3f")
        .replace('#', "%23");
    format!("file:{escaped}?immutable=1")
}

/// True when `path` holds no database yet (absent or empty).
pub fn is_unwritten(path: &std::path::Path) -> bool {
    std::fs::symlink_metadata(path).map_or(true, |m| m.len() == 0)
}

/// Puts database `db` of `conn` in WAL mode, unless it is already. Switching (and recovering a
/// WAL after a killed process) can answer "database is locked" without consulting the busy
/// handler: those are retried.
pub fn use_wal(conn: &rusqlite::Connection, db: &str) -> rusqlite::Result<()> {
    let mode: String =
        retry_busy(|| conn.pragma_query_value(Some(db), "journal_mode", |r| r.get(0)))?;
    if !mode.eq_ignore_ascii_case("wal") {
        retry_busy(|| {
            conn.pragma_update_and_check(Some(db), "journal_mode", "WAL", |r| r.get::<_, String>(0))
        })?;
    }
    Ok(())
}

/// Puts database `db` of `conn` in WAL mode ([`use_wal`]) and runs `schema` on it, with
/// `synchronous=OFF` when the file held nothing before (`unwritten`), then restores the
/// connection's setting. Syncing that cost six fsyncs a file. Without them, a power loss soon
/// after may leave the file empty or damaged (and SQLite drops a WAL beside an empty file): only
/// for files whose loss is harmless, the index (rebuilt from the entries) and the counters
/// (started afresh), never the registry.
pub fn set_up<T>(
    conn: &mut rusqlite::Connection,
    db: &str,
    unwritten: bool,
    schema: impl FnOnce(&mut rusqlite::Connection) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let steps = |conn: &mut rusqlite::Connection| {
        use_wal(conn, db)?;
        schema(conn)
    };
    if !unwritten {
        return steps(conn);
    }
    let before: i64 = conn.pragma_query_value(Some(db), "synchronous", |r| r.get(0))?;
    conn.pragma_update(Some(db), "synchronous", 0)?;
    let result = steps(conn);
    let restored = conn.pragma_update(Some(db), "synchronous", before);
    let value = result?;
    restored.map(|()| value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synchronous(conn: &rusqlite::Connection) -> i64 {
        conn.pragma_query_value(None, "synchronous", |r| r.get(0))
            .unwrap()
    }

    /// Only a new file is set up unsynced, and the connection's setting comes back after, also
    /// when a step fails.
    #[test]
    fn only_a_new_database_is_set_up_unsynced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        assert!(is_unwritten(&path));
        let mut conn = rusqlite::Connection::open(&path).unwrap();
        assert!(is_unwritten(&path), "opening writes nothing");
        conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
        let during = set_up(&mut conn, "main", true, |c| {
            c.execute_batch("CREATE TABLE t(x);")?;
            Ok(synchronous(c))
        })
        .unwrap();
        assert_eq!((during, synchronous(&conn)), (0, 1));
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        assert!(!is_unwritten(&path));

        let failed = set_up(&mut conn, "main", true, |c| c.execute_batch("NOT SQL"));
        assert!(failed.is_err());
        assert_eq!(synchronous(&conn), 1, "a failed step left it unsynced");
        let during = set_up(&mut conn, "main", false, |c| Ok(synchronous(c))).unwrap();
        assert_eq!(during, 1, "an existing database was set up unsynced");
    }
}
