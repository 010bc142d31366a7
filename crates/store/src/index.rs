//! The SQLite index: which entries exist, their sizes and last use, and their totals; the event
//! counters it bumps live in `counters.sqlite`, attached to its connection (`events.rs`). A hit
//! writes neither, nor does a plain miss or its reason: each appends to the use log (`uses.rs`),
//! which a read of counters (or of rows, when a line moves a last use) folds in first, and every
//! write folds into its own transaction, so counting an event performs no SQLite write of its
//! own. It makes
//! eviction (least recently used first) and listing cost O(log n) per entry touched instead of a
//! directory scan, and keeps running totals so no write needs a `SUM`.
//!
//! The index is a cache of the directory, never the truth: an entry file decides whether an
//! entry exists. A missing, corrupt or stale index is rebuilt from the files (`rebuild.rs`).
//! WAL mode lets readers proceed while one process writes; every write transaction is
//! `BEGIN IMMEDIATE` so concurrent writers queue on the busy timeout instead of failing on a
//! lock upgrade. Totals (entry count, bytes, failed entries) are kept by triggers, so they cannot
//! drift from the rows whatever statement changes them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::clock::UnixMillis;
use super::entry::EntryState;
use super::events::{self, CounterFiles, MISS_REASON_PREFIX};
use super::sqlite::{self, BUSY_TIMEOUT, is_corruption, retry_busy};
use super::uses::UseLog;

/// Bumped when the schema changes incompatibly: an index of another version is rebuilt.
pub const SCHEMA_VERSION: &str = "1";

/// Bytes of the index file read through `mmap`.
const MMAP_SIZE: i64 = 256 << 20;
/// SQLite page cache per connection, in KiB (negative: the unit SQLite expects for KiB).
const CACHE_SIZE_KIB: i64 = -16 * 1024;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', '1'), ('populated', '0');
CREATE TABLE IF NOT EXISTS entries(
    digest TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    state TEXT NOT NULL,
    size INTEGER NOT NULL,
    artefact_size INTEGER NOT NULL,
    created INTEGER NOT NULL,
    last_used INTEGER NOT NULL
) WITHOUT ROWID;
-- Covering: eviction and listings by last use read rows in order without a lookup per row.
CREATE INDEX IF NOT EXISTS entries_by_last_used
    ON entries(last_used, name, state, size, artefact_size, created);
CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT OR IGNORE INTO counters(name, value) VALUES
    ('entry_count', 0), ('total_bytes', 0), ('failed_count', 0);
CREATE TRIGGER IF NOT EXISTS entries_after_insert AFTER INSERT ON entries BEGIN
    UPDATE counters SET value = value + 1 WHERE name = 'entry_count';
    UPDATE counters SET value = value + NEW.size WHERE name = 'total_bytes';
    UPDATE counters SET value = value + (NEW.state = 'failed') WHERE name = 'failed_count';
END;
CREATE TRIGGER IF NOT EXISTS entries_after_delete AFTER DELETE ON entries BEGIN
    UPDATE counters SET value = value - 1 WHERE name = 'entry_count';
    UPDATE counters SET value = value - OLD.size WHERE name = 'total_bytes';
    UPDATE counters SET value = value - (OLD.state = 'failed') WHERE name = 'failed_count';
END;
CREATE TRIGGER IF NOT EXISTS entries_after_update AFTER UPDATE OF size, state ON entries BEGIN
    UPDATE counters SET value = value + NEW.size - OLD.size WHERE name = 'total_bytes';
    UPDATE counters SET value = value + (NEW.state = 'failed') - (OLD.state = 'failed')
        WHERE name = 'failed_count';
END;
";

/// Event counters (kept in `counters.sqlite`, `events.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    Hits,
    Misses,
    FailuresReplayed,
    Evictions,
    Corrupt,
    Puts,
    BytesWritten,
    /// Hits served through a direct-mode manifest (no parse).
    DirectHits,
    /// Direct-mode manifests read (kept out of `hits`, which count results).
    ManifestReads,
}

impl Counter {
    fn name(self) -> &'static str {
        match self {
            Counter::Hits => "hits",
            Counter::Misses => "misses",
            Counter::FailuresReplayed => "failures_replayed",
            Counter::Evictions => "evictions",
            Counter::Corrupt => "corrupt",
            Counter::Puts => "puts",
            Counter::BytesWritten => "bytes_written",
            Counter::DirectHits => "direct_hits",
            Counter::ManifestReads => "manifest_reads",
        }
    }

    /// The counters of hits: their lines in the use log may name an entry whose last use moves.
    const OF_HITS: [Counter; 4] = [
        Counter::Hits,
        Counter::FailuresReplayed,
        Counter::DirectHits,
        Counter::ManifestReads,
    ];

    fn of_hits(name: &str) -> bool {
        Counter::OF_HITS.iter().any(|c| c.name() == name)
    }
}

/// Longest reason a miss-reason counter names (longer ones are cut before they are counted).
pub const MAX_REASON_LEN: usize = 40;

/// True for the counters the use log may carry: those of hits, `misses`, and a miss reason's
/// (`miss_reason.` and 1 to [`MAX_REASON_LEN`] of `[a-z0-9_]`). A foreign name in the log (a
/// hostile or newer writer) is skipped, never made a counter.
fn logged(name: &str) -> bool {
    if Counter::of_hits(name) || name == Counter::Misses.name() {
        return true;
    }
    name.strip_prefix(MISS_REASON_PREFIX).is_some_and(|reason| {
        (1..=MAX_REASON_LEN).contains(&reason.len())
            && reason
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    })
}

/// One row of `entries`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub digest: String,
    pub name: String,
    pub state: EntryState,
    /// Entry file size (what the cap counts).
    pub size: u64,
    pub artefact_size: u64,
    pub created_ms: UnixMillis,
    pub last_used_ms: UnixMillis,
}

/// Sort order of a listing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortBy {
    /// Most recently used first.
    #[default]
    LastUsed,
    /// Least recently used first (eviction order).
    LeastRecentlyUsed,
    /// By module name; a module's entries least recently used first (the index's order).
    Name,
}

/// Which rows a listing returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// SQLite `GLOB` pattern on the module name (`jit_*`; case-sensitive).
    pub name_glob: Option<String>,
    /// Exactly this module name.
    pub name: Option<String>,
    pub state: Option<EntryState>,
    pub sort: SortBy,
    pub limit: Option<usize>,
}

impl ListFilter {
    /// Entries of exactly the module `name`, most recently used first (read in the order of
    /// `entries_by_name_last_used`: a limit bounds the work, however many share the name).
    pub fn module(name: &str) -> ListFilter {
        ListFilter {
            name: Some(name.to_owned()),
            sort: SortBy::LastUsed,
            ..ListFilter::default()
        }
    }
}

/// Indexes added since schema version 1 first shipped, made by every open that misses them
/// (an older release neither needs them nor makes again what this drops). A module's entries,
/// most recently used first, without a sort: a miss is explained against the newest of them,
/// and a test suite stores thousands under one name (`jit__lambda`). Folding a hit's last use
/// moves its row in this index too. It replaces `entries_by_name`, whose every listing of a
/// module read and sorted all of the module's rows.
fn added_indexes() -> String {
    format!(
        "CREATE INDEX IF NOT EXISTS {NEWEST_BY_NAME} ON entries(name, last_used, digest);
         DROP INDEX IF EXISTS entries_by_name;"
    )
}

/// The newest of [`added_indexes`]: an index that has it has them all.
const NEWEST_BY_NAME: &str = "entries_by_name_last_used";

/// Makes [`added_indexes`] unless they are there (read first: an open takes no write lock for
/// nothing).
fn add_missing_indexes(conn: &mut Connection) -> rusqlite::Result<()> {
    let present: i64 = retry_busy(|| {
        conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?1",
            [NEWEST_BY_NAME],
            |r| r.get(0),
        )
    })?;
    if present > 0 {
        return Ok(());
    }
    retry_busy(|| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(&added_indexes())?;
        tx.commit()
    })
}

/// Why an index could not be used as it is.
#[derive(Debug)]
pub enum OpenFailure {
    /// Damaged, of another schema, or not a database: move it aside and rebuild.
    Unusable(String),
    /// Anything else (busy, I/O, permissions): report.
    Error(rusqlite::Error),
}

/// An open index connection.
#[derive(Debug)]
pub struct Index {
    conn: Connection,
    /// Where hits are recorded (none for a read-only cache, which records nothing).
    uses: Option<UseLog>,
}

fn row_from(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
        digest: r.get(0)?,
        name: r.get(1)?,
        state: r.get(2)?,
        size: r.get::<_, i64>(3)?.max(0) as u64,
        artefact_size: r.get::<_, i64>(4)?.max(0) as u64,
        created_ms: r.get(5)?,
        last_used_ms: r.get(6)?,
    })
}

const ROW_COLUMNS: &str = "digest, name, state, size, artefact_size, created, last_used";

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Index {
    /// Opens (creating the schema if absent) the index at `path`, with the event counters of
    /// `counters` attached. Returns the index and whether it has been populated from the
    /// directory.
    pub fn open(
        path: &Path,
        counters: &CounterFiles,
        file_mode: u32,
    ) -> Result<(Index, bool), OpenFailure> {
        let classify = |e: rusqlite::Error| {
            if is_corruption(&e) {
                OpenFailure::Unusable(e.to_string())
            } else {
                OpenFailure::Error(e)
            }
        };
        let unwritten = sqlite::is_unwritten(path);
        let mut conn = Connection::open(path).map_err(classify)?;
        sqlite::keep_plans(&conn).map_err(classify)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(classify)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(classify)?;
        // Read pages through a memory map and keep more of them cached: a 100k-entry index is
        // tens of MB, and without these every lookup pays a pread per b-tree level.
        conn.pragma_update(None, "mmap_size", MMAP_SIZE)
            .map_err(classify)?;
        conn.pragma_update(None, "cache_size", CACHE_SIZE_KIB)
            .map_err(classify)?;
        sqlite::set_up(&mut conn, "main", unwritten, |conn| {
            let has_meta: i64 = retry_busy(|| {
                conn.query_row(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
                    [],
                    |r| r.get(0),
                )
            })?;
            if has_meta == 0 {
                retry_busy(|| {
                    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                    tx.execute_batch(SCHEMA)?;
                    tx.execute_batch(&added_indexes())?;
                    tx.commit()
                })?;
            }
            Ok(())
        })
        .map_err(classify)?;
        let meta = |key: &str| -> Result<Option<String>, OpenFailure> {
            conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
                .optional()
                .map_err(|e| match e {
                    e if is_corruption(&e) => OpenFailure::Unusable(e.to_string()),
                    rusqlite::Error::SqliteFailure(_, Some(ref m)) if m.contains("no such") => {
                        OpenFailure::Unusable(e.to_string())
                    }
                    e => OpenFailure::Error(e),
                })
        };
        let version = meta("schema_version")?;
        if version.as_deref() != Some(SCHEMA_VERSION) {
            return Err(OpenFailure::Unusable(format!(
                "schema version {version:?}, expected {SCHEMA_VERSION}"
            )));
        }
        let populated = meta("populated")?.as_deref() == Some("1");
        // Without them listings only cost more: a write refused (a database this user may only
        // read) or a busy timeout leaves them for the next open.
        if let Err(e) = add_missing_indexes(&mut conn) {
            if is_corruption(&e) {
                return Err(OpenFailure::Unusable(e.to_string()));
            }
            tracing::debug!(
                "cannot add the index's new indexes to {}: {e}",
                path.display()
            );
        }
        // Its own damage is handled inside; anything else is an error, not a reason to rebuild
        // the index.
        events::attach(&mut conn, counters, file_mode).map_err(OpenFailure::Error)?;
        let uses = Some(UseLog::new(counters.uses_log(), file_mode));
        Ok((Index { conn, uses }, populated))
    }

    /// Opens the index of a read-only cache: SQLite's `immutable` mode, which neither writes
    /// nor locks nor needs a writable directory for the WAL's shared memory. A missing or
    /// unusable index is an empty one in memory: lookups read the entry files anyway, and what
    /// the index would record (last use, counters) is dropped with it.
    pub fn open_read_only(path: &Path, counters: &CounterFiles) -> rusqlite::Result<Index> {
        let uri = sqlite::immutable_uri(path);
        let flags =
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI;
        let on_disk = Connection::open_with_flags(uri, flags).and_then(|conn| {
            conn.query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get::<_, String>(0),
            )
            .map(|version| (conn, version))
        });
        let conn = match on_disk {
            Ok((conn, version)) if version == SCHEMA_VERSION => conn,
            _ => {
                let conn = Connection::open_in_memory()?;
                conn.execute_batch(SCHEMA)?;
                conn.execute_batch(&added_indexes())?;
                conn
            }
        };
        sqlite::keep_plans(&conn)?;
        events::attach_read_only(&conn, counters)?;
        Ok(Index { conn, uses: None })
    }

    /// Marks the index as reflecting the directory.
    pub fn mark_populated(&mut self) -> rusqlite::Result<()> {
        self.conn
            .execute("UPDATE meta SET value = '1' WHERE key = 'populated'", [])
            .map(|_| ())
    }

    /// A hit: log the last use and `counter` (a counter of hits) in the use log, no SQLite
    /// write. Returns whether the row exists.
    pub fn record_use(
        &mut self,
        digest: &str,
        now: UnixMillis,
        counter: Counter,
    ) -> rusqlite::Result<bool> {
        let exists = self.has_row(digest)?;
        self.log_use(Some(digest), now, counter.name())?;
        Ok(exists)
    }

    fn has_row(&self, digest: &str) -> rusqlite::Result<bool> {
        self.conn
            .prepare_cached("SELECT 1 FROM entries WHERE digest = ?1")?
            .exists([digest])
    }

    /// Appends one event of `counter` to the log; a counter the fold would not take (not
    /// [`logged`]) or a log that cannot be written takes the index's ordinary way.
    fn log_use(
        &self,
        digest: Option<&str>,
        now: UnixMillis,
        counter: &str,
    ) -> rusqlite::Result<()> {
        if let Some(log) = self.uses.as_ref().filter(|_| logged(counter)) {
            match log.append(digest, now, counter) {
                Ok(()) => return Ok(()),
                Err(e) => tracing::debug!("cannot append to {}: {e}", log.path().display()),
            }
        }
        let tx = self.conn.unchecked_transaction()?;
        if let Some(digest) = digest {
            tx.execute(
                "UPDATE entries SET last_used = max(last_used, ?2) WHERE digest = ?1",
                params![digest, now],
            )?;
        }
        add_to(&tx, counter, 1)?;
        tx.commit()
    }

    /// Folds the use log into the rows and counters, in a write transaction of its own (before
    /// anything reads last uses or counters).
    fn fold_uses(&self) -> rusqlite::Result<()> {
        match self.pending_uses() {
            Some(log) => self.fold_alone(log),
            None => Ok(()),
        }
    }

    /// Folds the use log in before a read of rows, when a line of it moves a row's last use.
    fn fold_uses_for_rows(&self) -> rusqlite::Result<()> {
        match self.pending_uses() {
            Some(log) if log.names_entries() => self.fold_alone(log),
            _ => Ok(()),
        }
    }

    /// The use log, when it may hold lines (a `stat`).
    fn pending_uses(&self) -> Option<&UseLog> {
        self.uses.as_ref().filter(|log| log.has_uses())
    }

    fn fold_alone(&self, log: &UseLog) -> rusqlite::Result<()> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        fold_into(&tx, log)?;
        tx.commit()
    }

    /// Begins a write transaction with the use log folded into it: the log's events commit with
    /// the writer's change, one transaction rather than two.
    fn write(&mut self) -> rusqlite::Result<Transaction<'_>> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        if let Some(log) = self.pending_uses() {
            fold_into(&tx, log)?;
        }
        Ok(tx)
    }

    /// A miss at `now`: bump `misses` (and `corrupt` when the entry was quarantined) and drop a
    /// row whose file is gone. A plain miss (no such row) only appends to the use log.
    pub fn record_miss(
        &mut self,
        digest: &str,
        drop_row: bool,
        corrupt: bool,
        now: UnixMillis,
    ) -> rusqlite::Result<()> {
        // Only a corrupt entry or a row to drop needs the index's write now.
        let write_now = corrupt || (drop_row && self.has_row(digest)?);
        if !write_now {
            return self.log_use(None, now, Counter::Misses.name());
        }
        let tx = self.write()?;
        if drop_row {
            tx.execute("DELETE FROM entries WHERE digest = ?1", [digest])?;
        }
        bump(&tx, Counter::Misses, 1)?;
        if corrupt {
            bump(&tx, Counter::Corrupt, 1)?;
        }
        tx.commit()
    }

    /// Inserts or replaces a row and bumps the given counters, in one transaction; returns the
    /// entries' total bytes after it (read in that transaction: a store checks its cap without
    /// a read of its own).
    pub fn upsert(&mut self, row: &Row, bumps: &[(Counter, i64)]) -> rusqlite::Result<u64> {
        let tx = self.write()?;
        upsert_in(&tx, row)?;
        for (c, by) in bumps {
            bump(&tx, *c, *by)?;
        }
        let total = size_counter(&tx, "total_bytes")?;
        tx.commit()?;
        Ok(total)
    }

    /// Inserts a row unless one exists (self-healing a file found without a row).
    pub fn insert_if_absent(&mut self, row: &Row) -> rusqlite::Result<()> {
        write_row(&self.conn, "INSERT OR IGNORE", "", row)
    }

    /// Removes a row; returns it if it existed.
    pub fn remove(&mut self, digest: &str) -> rusqlite::Result<Option<Row>> {
        let tx = self.write()?;
        let row = tx
            .query_row(
                &format!("SELECT {ROW_COLUMNS} FROM entries WHERE digest = ?1"),
                [digest],
                row_from,
            )
            .optional()?;
        tx.execute("DELETE FROM entries WHERE digest = ?1", [digest])?;
        tx.commit()?;
        Ok(row)
    }

    pub fn row(&self, digest: &str) -> rusqlite::Result<Option<Row>> {
        self.fold_uses_for_rows()?;
        self.conn
            .query_row(
                &format!("SELECT {ROW_COLUMNS} FROM entries WHERE digest = ?1"),
                [digest],
                row_from,
            )
            .optional()
    }

    /// Entry count and total bytes (trigger-maintained, O(1); the use log does not move them).
    pub fn totals(&self) -> rusqlite::Result<(u64, u64)> {
        // One read transaction for both (the event counters, in their own file, are not read).
        let tx = self.conn.unchecked_transaction()?;
        Ok((
            size_counter(&tx, "entry_count")?,
            size_counter(&tx, "total_bytes")?,
        ))
    }

    /// Counts one hit of `counter` that names no entry (through the use log, no fsync).
    pub fn count_hit(&mut self, counter: Counter, now: UnixMillis) -> rusqlite::Result<()> {
        self.log_use(None, now, counter.name())
    }

    /// Counts one miss of reason `reason` (`[a-z0-9_]`, 1 to [`MAX_REASON_LEN`]) at `now`,
    /// through the use log.
    pub fn count_miss_reason(&mut self, reason: &str, now: UnixMillis) -> rusqlite::Result<()> {
        let counter = format!("{MISS_REASON_PREFIX}{reason}");
        if !logged(&counter) {
            return Err(rusqlite::Error::InvalidParameterName(counter));
        }
        self.log_use(None, now, &counter)
    }

    /// Adds `by` to the event counter called `name` (e.g. `miss_reason.flag`), creating it.
    pub fn add_named(&mut self, name: &str, by: i64) -> rusqlite::Result<()> {
        add_to(&self.conn, name, by)
    }

    /// Sets every event counter to zero (the sizes, which describe the entries, stay) and
    /// records `now_ms` as when.
    pub fn zero_events(&mut self, now_ms: UnixMillis) -> rusqlite::Result<()> {
        let tx = self.write()?;
        tx.execute("DELETE FROM events.counters", [])?;
        events::set_zeroed(&tx, now_ms)?;
        tx.commit()
    }

    /// When the event counters were last zeroed, if ever.
    pub fn zeroed_ms(&self) -> rusqlite::Result<Option<UnixMillis>> {
        events::zeroed(&self.conn)
    }

    /// Every counter by name: the sizes (this index's) and the events (`counters.sqlite`).
    pub fn counters(&self) -> rusqlite::Result<BTreeMap<String, i64>> {
        self.fold_uses()?;
        self.stored_counters()
    }

    /// [`Index::counters`] without folding the use log in.
    fn stored_counters(&self) -> rusqlite::Result<BTreeMap<String, i64>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT name, value FROM main.counters
             WHERE name IN ('entry_count', 'total_bytes', 'failed_count')
             UNION ALL SELECT name, value FROM events.counters",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        rows.collect()
    }

    /// One eviction step, in one write transaction: while the total exceeds `cap`, take up to
    /// `batch` least-recently-used rows last used before `protect_from` (the TTL boundary),
    /// after `after` in eviction order, excluding `exclude` and what `pinned` names among them;
    /// call `unlink` on each victim, delete its row and count it. `pinned` answering `None`
    /// (it cannot tell) evicts nothing.
    pub fn evict_step(
        &mut self,
        window: &EvictWindow<'_>,
        pinned: impl FnOnce(&[String]) -> Option<HashSet<String>>,
        mut unlink: impl FnMut(&str),
    ) -> rusqlite::Result<EvictStep> {
        let tx = self.write()?;
        let mut total = size_counter(&tx, "total_bytes")?;
        let mut step = EvictStep {
            total_after: total,
            ..EvictStep::default()
        };
        let EvictWindow {
            cap,
            protect_from,
            exclude,
            after,
            batch,
        } = *window;
        // Committed even when nothing is evicted: the use log was folded into this transaction.
        if total <= cap {
            tx.commit()?;
            return Ok(step);
        }
        let (after_used, after_digest) = after.map_or((i64::MIN, ""), |c| (c.0, c.1.as_str()));
        let candidates: Vec<(String, u64, UnixMillis)> = {
            let mut stmt = tx.prepare_cached(
                "SELECT digest, size, last_used FROM entries WHERE last_used < ?1 AND digest <> ?2 \
                 AND (last_used > ?4 OR (last_used = ?4 AND digest > ?5)) \
                 ORDER BY last_used, digest LIMIT ?3",
            )?;
            let rows = stmt.query_map(
                params![
                    protect_from,
                    exclude.unwrap_or(""),
                    to_i64(batch as u64),
                    after_used,
                    after_digest
                ],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)?.max(0) as u64,
                        r.get(2)?,
                    ))
                },
            )?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let digests: Vec<String> = candidates.iter().map(|c| c.0.clone()).collect();
        let Some(pinned) = pinned(&digests) else {
            step.blocked = true;
            tx.commit()?;
            return Ok(step);
        };
        step.exhausted = candidates.len() < batch;
        for (digest, size, last_used) in candidates {
            if total <= cap {
                step.exhausted = false;
                break;
            }
            step.next = Some(EvictCursor(last_used, digest.clone()));
            if pinned.contains(&digest) {
                continue;
            }
            unlink(&digest);
            tx.execute("DELETE FROM entries WHERE digest = ?1", [&digest])?;
            total = total.saturating_sub(size);
            step.evicted += 1;
            step.freed += size;
            step.victims.push((digest, size));
        }
        bump(&tx, Counter::Evictions, to_i64(step.evicted))?;
        tx.commit()?;
        step.total_after = total;
        Ok(step)
    }

    /// Rows matching `filter`, in its order.
    pub fn list(&self, filter: &ListFilter) -> rusqlite::Result<Vec<Row>> {
        self.fold_uses_for_rows()?;
        let (sql, args) = list_query(filter);
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(args), row_from)?;
        rows.collect()
    }

    /// Digest → last use of every row (for reconciling with the directory).
    pub fn last_uses(&self) -> rusqlite::Result<HashMap<String, UnixMillis>> {
        self.fold_uses_for_rows()?;
        let mut stmt = self
            .conn
            .prepare_cached("SELECT digest, last_used FROM entries")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        rows.collect()
    }

    /// Applies a reconciliation in one transaction: upsert `rows`, delete `stale`, recompute the
    /// totals from scratch (defensive: triggers keep them, this repairs an older damage).
    pub fn reconcile(&mut self, rows: &[Row], stale: &[String]) -> rusqlite::Result<()> {
        let tx = self.write()?;
        for row in rows {
            upsert_in(&tx, row)?;
        }
        for digest in stale {
            tx.execute("DELETE FROM entries WHERE digest = ?1", [digest])?;
        }
        tx.execute_batch(
            "UPDATE counters SET value = (SELECT count(*) FROM entries) WHERE name = 'entry_count';
             UPDATE counters SET value = (SELECT coalesce(sum(size), 0) FROM entries)
                 WHERE name = 'total_bytes';
             UPDATE counters SET value = (SELECT count(*) FROM entries WHERE state = 'failed')
                 WHERE name = 'failed_count';",
        )?;
        tx.commit()
    }

    /// Deletes every row (counters of events are kept).
    pub fn clear_rows(&mut self) -> rusqlite::Result<()> {
        self.fold_uses()?;
        self.conn.execute("DELETE FROM entries", []).map(|_| ())
    }

    /// SQLite's own consistency check; true when it says "ok".
    pub fn quick_check(&self) -> rusqlite::Result<bool> {
        let first: String = self
            .conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))?;
        Ok(first == "ok")
    }
}

/// Which rows one [`Index::evict_step`] may take: the cap to reach, the TTL boundary (rows used
/// at or after `protect_from` stay), a row that must stay, where to resume, how many to look at.
#[derive(Clone, Copy, Debug)]
pub struct EvictWindow<'a> {
    pub cap: u64,
    pub protect_from: UnixMillis,
    pub exclude: Option<&'a str>,
    pub after: Option<&'a EvictCursor>,
    pub batch: usize,
}

/// Where eviction order resumes: the last candidate an [`Index::evict_step`] looked at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvictCursor(UnixMillis, String);

/// What one [`Index::evict_step`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EvictStep {
    pub evicted: u64,
    /// The evicted entries' digests and sizes.
    pub victims: Vec<(String, u64)>,
    pub freed: u64,
    pub total_after: u64,
    /// No further candidates outside the TTL.
    pub exhausted: bool,
    /// Which entries are pinned could not be told: nothing was evicted.
    pub blocked: bool,
    /// Resume after this candidate (pinned ones are skipped, not retried).
    pub next: Option<EvictCursor>,
}

/// The statement that lists `filter`'s rows, and its arguments.
fn list_query(filter: &ListFilter) -> (String, Vec<rusqlite::types::Value>) {
    let mut sql = format!("SELECT {ROW_COLUMNS} FROM entries WHERE 1");
    let mut args: Vec<rusqlite::types::Value> = Vec::new();
    if let Some(g) = &filter.name_glob {
        args.push(g.clone().into());
        sql.push_str(&format!(" AND name GLOB ?{}", args.len()));
    }
    if let Some(name) = &filter.name {
        args.push(name.clone().into());
        sql.push_str(&format!(" AND name = ?{}", args.len()));
    }
    if let Some(s) = filter.state {
        args.push(s.as_str().to_owned().into());
        sql.push_str(&format!(" AND state = ?{}", args.len()));
    }
    sql.push_str(match filter.sort {
        SortBy::LastUsed => " ORDER BY last_used DESC, digest DESC",
        SortBy::LeastRecentlyUsed => " ORDER BY last_used, digest",
        SortBy::Name => " ORDER BY name, last_used, digest",
    });
    if let Some(limit) = filter.limit {
        args.push(to_i64(limit as u64).into());
        sql.push_str(&format!(" LIMIT ?{}", args.len()));
    }
    (sql, args)
}

/// A size counter of this index (`entry_count`, `total_bytes`, `failed_count`; 0 if absent).
fn size_counter(conn: &Connection, name: &str) -> rusqlite::Result<u64> {
    let value = conn
        .prepare_cached("SELECT value FROM main.counters WHERE name = ?1")?
        .query_row([name], |r| r.get::<_, i64>(0))
        .optional()?;
    Ok(value.unwrap_or(0).max(0) as u64)
}

/// Moves the use log's lines into the rows and counters of `tx`, the index's write lock held.
/// A log that cannot be read or emptied is left for the next writer (its changes rolled back):
/// what it holds is only ever a little stale.
fn fold_into(tx: &Transaction<'_>, log: &UseLog) -> rusqlite::Result<()> {
    // Folders queue on the index's write lock first, then take the log's.
    let drain = match log.drain() {
        Ok(Some(drain)) => drain,
        Ok(None) => return Ok(()),
        Err(e) => {
            tracing::warn!("cannot read the use log {}: {e}", log.path().display());
            return Ok(());
        }
    };
    tx.execute_batch("SAVEPOINT fold_uses")?;
    let mut counts: BTreeMap<&str, i64> = BTreeMap::new();
    for used in drain.uses.iter().filter(|used| logged(&used.counter)) {
        if let Some(digest) = &used.digest
            && Counter::of_hits(&used.counter)
        {
            tx.prepare_cached(
                "UPDATE entries SET last_used = max(last_used, ?2) WHERE digest = ?1",
            )?
            .execute(params![digest, used.at_ms])?;
        }
        *counts.entry(used.counter.as_str()).or_insert(0) += 1;
    }
    for (name, by) in counts {
        add_to(tx, name, by)?;
    }
    // Emptied before the commit: a failed commit loses these events, never counts them
    // twice.
    if let Err(e) = drain.finish() {
        tracing::warn!("cannot empty the use log {}: {e}", log.path().display());
        return tx.execute_batch("ROLLBACK TO fold_uses; RELEASE fold_uses");
    }
    tx.execute_batch("RELEASE fold_uses")
}

/// Adds `by` to an event counter, creating its row.
fn bump(conn: &Connection, c: Counter, by: i64) -> rusqlite::Result<()> {
    add_to(conn, c.name(), by)
}

/// Adds `by` to the event counter called `name`, creating its row.
fn add_to(conn: &Connection, name: &str, by: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO events.counters(name, value) VALUES (?1, ?2)
         ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
    )?
    .execute(params![name, by])
    .map(|_| ())
}

fn upsert_in(conn: &Connection, row: &Row) -> rusqlite::Result<()> {
    let on_conflict = "ON CONFLICT(digest) DO UPDATE SET name = excluded.name,
        state = excluded.state, size = excluded.size, artefact_size = excluded.artefact_size,
        created = excluded.created, last_used = excluded.last_used";
    write_row(conn, "INSERT", on_conflict, row)
}

/// `VERB INTO entries … VALUES (row) ON_CONFLICT`: one statement for every way a row is written.
fn write_row(conn: &Connection, verb: &str, on_conflict: &str, row: &Row) -> rusqlite::Result<()> {
    conn.prepare_cached(&format!(
        "{verb} INTO entries({ROW_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) {on_conflict}"
    ))?
    .execute(params![
        row.digest,
        row.name,
        row.state.as_str(),
        to_i64(row.size),
        to_i64(row.artefact_size),
        row.created_ms,
        row.last_used_ms
    ])
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter_files(dir: &Path) -> CounterFiles {
        CounterFiles {
            db: dir.join("c.sqlite"),
            legacy_snapshot: dir.join("stats.json"),
        }
    }

    fn row(d: char, size: u64, last_used: i64) -> Row {
        Row {
            digest: d.to_string().repeat(64),
            name: format!("m{d}"),
            state: EntryState::Ok,
            size,
            artefact_size: size,
            created_ms: 0,
            last_used_ms: last_used,
        }
    }

    /// The index `i.sqlite` in `dir`, its counters beside it; whether it was populated.
    fn open_in(dir: &Path) -> (Index, bool) {
        Index::open(&dir.join("i.sqlite"), &counter_files(dir), 0o600).unwrap()
    }

    /// How SQLite plans the listing of `filter` on `ix`, one step a line.
    fn plan(ix: &Index, filter: &ListFilter) -> String {
        let (sql, args) = list_query(filter);
        let mut stmt = ix
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap();
        let steps = stmt
            .query_map(rusqlite::params_from_iter(args), |r| r.get::<_, String>(3))
            .unwrap();
        steps.map(Result::unwrap).collect::<Vec<_>>().join("\n")
    }

    fn named(n: u32, name: &str, last_used: i64) -> Row {
        Row {
            digest: format!("{n:064x}"),
            name: name.into(),
            ..row('a', 1, last_used)
        }
    }

    /// A cached statement keeps its plan from one use to the next: the worker lists a module on
    /// every miss it explains, and planning the listing again cost ten times running it.
    #[test]
    fn cached_statements_are_not_planned_again_on_each_use() {
        let dir = tempfile::tempdir().unwrap();
        let (mut ix, _) = open_in(dir.path());
        let filter = ListFilter {
            limit: Some(2),
            ..ListFilter::module("jit__lambda")
        };
        for n in 0..5 {
            ix.upsert(
                &named(n, "jit__lambda", i64::from(n)),
                &[(Counter::Puts, 1)],
            )
            .unwrap();
            assert_eq!(ix.list(&filter).unwrap().len(), 2.min(n as usize + 1));
            ix.count_miss_reason("computation", i64::from(n)).unwrap();
        }
        let (sql, _) = list_query(&filter);
        let replanned = ix
            .conn
            .prepare_cached(&sql)
            .unwrap()
            .get_status(rusqlite::StatementStatus::RePrepare);
        assert_eq!(replanned, 0, "{sql}");
    }

    /// A module's newest entries are read in index order, never by sorting all of the module's
    /// rows: a miss explained against a module of 100k entries costs what one of 2 does.
    #[test]
    fn a_module_is_listed_newest_first_without_a_sort() {
        let dir = tempfile::tempdir().unwrap();
        let (mut ix, _) = open_in(dir.path());
        for n in 0..40 {
            let name = if n % 3 == 0 {
                "jit_other"
            } else {
                "jit__lambda"
            };
            ix.upsert(&named(n, name, i64::from(n % 7)), &[]).unwrap();
        }
        let filter = ListFilter {
            limit: Some(2),
            ..ListFilter::module("jit__lambda")
        };
        let plan = plan(&ix, &filter);
        assert!(plan.contains("entries_by_name_last_used"), "{plan}");
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
        let newest: Vec<(String, i64)> = ix
            .list(&filter)
            .unwrap()
            .into_iter()
            .map(|r| (r.digest, r.last_used_ms))
            .collect();
        // Last used 6: n = 13, 20 and 34 of jit__lambda; the greater digests first.
        assert_eq!(
            newest,
            [(format!("{:064x}", 34), 6), (format!("{:064x}", 20), 6)]
        );
    }

    /// An index in `dir` holding one row of module `jit_f`, its schema then changed by `sql`
    /// (as an older release, or damage, left it).
    fn with_one_row_then(dir: &Path, sql: &str) -> Index {
        let (mut ix, _) = open_in(dir);
        ix.upsert(&named(1, "jit_f", 5), &[]).unwrap();
        ix.conn.execute_batch(sql).unwrap();
        ix
    }

    /// An index written before `entries_by_name_last_used` existed gets it at its next open, and
    /// loses the index it replaces; its rows are untouched.
    #[test]
    fn an_older_index_gets_the_added_indexes_when_opened() {
        let dir = tempfile::tempdir().unwrap();
        let ix = with_one_row_then(
            dir.path(),
            "DROP INDEX entries_by_name_last_used;
             CREATE INDEX entries_by_name ON entries(name);",
        );
        let indexes = |ix: &Index| -> Vec<String> {
            let mut stmt = ix
                .conn
                .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
                .unwrap();
            stmt.query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        assert_eq!(indexes(&ix), ["entries_by_last_used", "entries_by_name"]);
        drop(ix);
        let (ix, _) = open_in(dir.path());
        assert_eq!(
            indexes(&ix),
            ["entries_by_last_used", "entries_by_name_last_used"]
        );
        let listed = ix.list(&ListFilter::module("jit_f")).unwrap();
        assert_eq!(listed.len(), 1);
        assert!(plan(&ix, &ListFilter::module("jit_f")).contains("entries_by_name_last_used"));
    }

    /// Indexes that cannot be added (here a table holds the name) leave an index that opens and
    /// lists as before, only by sorting.
    #[test]
    fn an_index_whose_added_indexes_cannot_be_made_still_opens() {
        let dir = tempfile::tempdir().unwrap();
        drop(with_one_row_then(
            dir.path(),
            "DROP INDEX entries_by_name_last_used;
             CREATE TABLE entries_by_name_last_used(x);",
        ));
        let (ix, populated) = open_in(dir.path());
        assert!(!populated);
        let listed = ix.list(&ListFilter::module("jit_f")).unwrap();
        assert_eq!(listed.len(), 1);
        assert!(plan(&ix, &ListFilter::module("jit_f")).contains("TEMP B-TREE"));
    }

    #[test]
    fn triggers_keep_totals() {
        let dir = tempfile::tempdir().unwrap();
        let (mut ix, populated) = open_in(dir.path());
        assert!(!populated);
        // Each upsert answers the total after it, as `totals` reads it.
        assert_eq!(ix.upsert(&row('a', 10, 1), &[]).unwrap(), 10);
        assert_eq!(ix.upsert(&row('b', 20, 2), &[]).unwrap(), 30);
        assert_eq!(ix.upsert(&row('a', 15, 3), &[]).unwrap(), 35);
        assert_eq!(ix.totals().unwrap(), (2, 35));
        let mut failed = row('b', 5, 4);
        failed.state = EntryState::Failed;
        assert_eq!(ix.upsert(&failed, &[]).unwrap(), 20);
        assert_eq!(ix.counters().unwrap()["failed_count"], 1);
        ix.remove(&"b".repeat(64)).unwrap();
        assert_eq!(ix.totals().unwrap(), (1, 15));
        assert_eq!(ix.counters().unwrap()["failed_count"], 0);
    }

    #[test]
    fn evict_step_respects_ttl_boundary_and_order() {
        let dir = tempfile::tempdir().unwrap();
        let (mut ix, _) = open_in(dir.path());
        ix.upsert(&row('a', 10, 30), &[]).unwrap();
        ix.upsert(&row('b', 10, 10), &[]).unwrap();
        ix.upsert(&row('c', 10, 20), &[]).unwrap();
        let mut gone = Vec::new();
        let step = ix
            .evict_step(
                &EvictWindow {
                    cap: 0,
                    protect_from: 25,
                    exclude: None,
                    after: None,
                    batch: 64,
                },
                |_| Some(HashSet::new()),
                |d| gone.push(d.to_owned()),
            )
            .unwrap();
        assert_eq!(gone, vec!["b".repeat(64), "c".repeat(64)]);
        assert_eq!(step.total_after, 10);
        assert!(step.exhausted);
    }

    /// A write that ends early (nothing to evict, or the pins cannot tell) still commits the
    /// events it folded in: the log was emptied for them.
    #[test]
    fn an_eviction_that_evicts_nothing_keeps_the_events_it_folded() {
        let dir = tempfile::tempdir().unwrap();
        let (mut ix, _) = open_in(dir.path());
        ix.upsert(&row('a', 10, 30), &[]).unwrap();
        let window = |cap| EvictWindow {
            cap,
            protect_from: 100,
            exclude: None,
            after: None,
            batch: 64,
        };
        ix.record_miss(&"c".repeat(64), true, false, 40).unwrap();
        let step = ix
            .evict_step(&window(u64::MAX), |_| Some(HashSet::new()), |_| {})
            .unwrap();
        assert_eq!(step.evicted, 0);
        assert_eq!(ix.stored_counters().unwrap()["misses"], 1);
        ix.record_miss(&"d".repeat(64), true, false, 41).unwrap();
        let step = ix.evict_step(&window(0), |_| None, |_| {}).unwrap();
        assert!(step.blocked);
        assert_eq!(ix.stored_counters().unwrap()["misses"], 2);
    }

    /// A hit writes no SQLite page (its use waits in the log); any read of last uses or
    /// counters folds it in first, once.
    #[test]
    fn hits_wait_in_the_use_log_until_a_read_folds_them_in() {
        let dir = tempfile::tempdir().unwrap();
        let files = counter_files(dir.path());
        let (mut ix, _) = Index::open(&dir.path().join("i.sqlite"), &files, 0o600).unwrap();
        ix.upsert(&row('a', 10, 1), &[]).unwrap();
        ix.upsert(&row('b', 10, 2), &[]).unwrap();
        let wal = dir.path().join("i.sqlite-wal");
        let wal_before = std::fs::metadata(&wal).unwrap().len();
        assert!(ix.record_use(&"a".repeat(64), 50, Counter::Hits).unwrap());
        assert!(!ix.record_use(&"c".repeat(64), 60, Counter::Hits).unwrap());
        ix.count_hit(Counter::DirectHits, 50).unwrap();
        assert_eq!(std::fs::metadata(&wal).unwrap().len(), wal_before);
        assert!(files.uses_log().metadata().unwrap().len() > 0);

        let counters = ix.counters().unwrap();
        assert_eq!((counters["hits"], counters["direct_hits"]), (2, 1));
        let by_use: Vec<(String, i64)> = ix
            .list(&ListFilter::default())
            .unwrap()
            .into_iter()
            .map(|r| (r.name, r.last_used_ms))
            .collect();
        assert_eq!(by_use, [("ma".to_owned(), 50), ("mb".to_owned(), 2)]);
        assert_eq!(ix.counters().unwrap()["hits"], 2, "folded once");
        assert_eq!(files.uses_log().metadata().unwrap().len(), 0);
    }

    /// A plain miss and its reason write no SQLite page either; the next write folds them into
    /// its own transaction. A miss of a row whose file is gone still drops the row at once, and
    /// a foreign counter in the log is never made a counter.
    #[test]
    fn misses_and_their_reasons_wait_in_the_use_log_and_fold_into_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let (mut ix, _) = open_in(dir.path());
        let files = counter_files(dir.path());
        ix.upsert(&row('a', 10, 1), &[]).unwrap();
        let wal = dir.path().join("i.sqlite-wal");
        let events_wal = files.db.with_extension("sqlite-wal");
        let wals =
            || [&wal, &events_wal].map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0));
        let before = wals();
        ix.record_miss(&"c".repeat(64), true, false, 60).unwrap();
        ix.record_miss(&"d".repeat(64), false, false, 61).unwrap();
        ix.count_miss_reason("computation", 60).unwrap();
        ix.count_miss_reason("xla_build2", 61).unwrap();
        assert!(ix.count_miss_reason("Not-A-Reason", 62).is_err());
        // Rows read as they are: no line moves a last use.
        assert_eq!(ix.list(&ListFilter::default()).unwrap().len(), 1);
        assert!(ix.row(&"a".repeat(64)).unwrap().is_some());
        assert_eq!(wals(), before, "nothing written but the log");
        super::super::fsutil::append_line(
            &files.uses_log(),
            0o600,
            b"- 63 entry_count\n- 63 miss_reason.\n- 63 puts\n",
        )
        .unwrap();

        ix.upsert(&row('b', 10, 2), &[]).unwrap();
        assert_eq!(files.uses_log().metadata().unwrap().len(), 0, "folded");
        let counters = ix.stored_counters().unwrap();
        assert_eq!(counters["misses"], 2);
        assert_eq!(counters["miss_reason.computation"], 1);
        assert_eq!(counters["miss_reason.xla_build2"], 1);
        assert_eq!(
            counters["entry_count"], 2,
            "a foreign line moves no counter"
        );
        assert!(!counters.contains_key("puts") && !counters.contains_key("miss_reason."));

        // A hit's line moves a last use: a read of rows folds it first.
        ix.count_miss_reason("new", 64).unwrap();
        assert!(ix.record_use(&"b".repeat(64), 65, Counter::Hits).unwrap());
        let b = ix.list(&ListFilter::default()).unwrap();
        assert_eq!((b[0].name.as_str(), b[0].last_used_ms), ("mb", 65));
        assert_eq!(files.uses_log().metadata().unwrap().len(), 0, "folded");
        assert_eq!(ix.stored_counters().unwrap()["miss_reason.new"], 1);

        // The row of `a` whose file went: its miss drops it now, not later.
        ix.record_miss(&"a".repeat(64), true, false, 70).unwrap();
        assert!(ix.row(&"a".repeat(64)).unwrap().is_none());
        ix.record_miss(&"b".repeat(64), true, true, 71).unwrap();
        let counters = ix.counters().unwrap();
        assert_eq!((counters["misses"], counters["corrupt"]), (4, 1));
        assert_eq!(counters["entry_count"], 0);
    }

    #[test]
    fn garbage_file_is_unusable() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("i.sqlite");
        std::fs::write(&p, vec![0x55u8; 8192]).unwrap();
        assert!(matches!(
            Index::open(&p, &counter_files(dir.path()), 0o600),
            Err(OpenFailure::Unusable(_))
        ));
    }
}
