//! What every SQLite database of the cache (the index here, the registry in `mck-runs`) does
//! the same way: how long to wait for another writer, which errors mean busy or damaged, and
//! how a read-only cache opens one without writing.

use std::time::{Duration, Instant};

use rusqlite::ErrorCode;

/// How long a statement waits for another process's write transaction.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

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
