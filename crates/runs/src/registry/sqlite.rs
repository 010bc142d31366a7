//! The local registry: `v1/registry.sqlite` in the cache directory, one host's. Writes run in
//! `BEGIN IMMEDIATE` transactions (one writer at a time), which is what makes a decision and
//! the write it leads to atomic; the file's protections and repair are `registry_file.rs`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use mck_store::sqlite::{BUSY_TIMEOUT, keep_plans, retry_busy};
use mck_store::{Store, UnixMillis};

use super::{AddressEntry, Db, RunEntry, RunSummary, RunningEntry, Scope, Tx, TxError, TxResult};
use crate::address::Address;
use crate::error::Result;

/// `PRAGMA user_version` of the current layout (0: the first, with `run_entries`).
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS addresses(
    address TEXT PRIMARY KEY,
    local_name TEXT NOT NULL,
    key TEXT NOT NULL,
    digest TEXT NOT NULL,
    state TEXT NOT NULL,
    run TEXT NOT NULL,
    updated_ms INTEGER NOT NULL,
    record TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs(
    run TEXT PRIMARY KEY,
    created_ms INTEGER NOT NULL,
    sealed_ms INTEGER
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS run_lines(
    id INTEGER PRIMARY KEY,
    run TEXT NOT NULL,
    address TEXT NOT NULL,
    key TEXT NOT NULL,
    digest TEXT NOT NULL,
    state TEXT NOT NULL,
    time_ms INTEGER NOT NULL,
    conflict_with TEXT
);
CREATE INDEX IF NOT EXISTS run_lines_by_run ON run_lines(run, address);
CREATE INDEX IF NOT EXISTS run_lines_by_digest ON run_lines(digest);
CREATE TABLE IF NOT EXISTS running(
    address TEXT PRIMARY KEY,
    run TEXT NOT NULL,
    key TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started_ms INTEGER NOT NULL
) WITHOUT ROWID;
";

/// From the first layout: one mutable line per (run, address) becomes an append-only log.
const MIGRATE_FROM_0: &str = "
ALTER TABLE runs ADD COLUMN sealed_ms INTEGER;
INSERT INTO run_lines(run, address, key, digest, state, time_ms, conflict_with)
    SELECT run, address, key, digest, state, time_ms, conflict_with FROM run_entries
    ORDER BY time_ms, address;
DROP TABLE run_entries;
";

/// The columns `row_to_address` reads.
const SELECT_ADDRESS: &str =
    "SELECT address, local_name, key, digest, state, run, updated_ms, record FROM addresses";

/// The columns `row_to_running` reads.
const SELECT_RUNNING: &str = "SELECT address, run, key, host, pid, started_ms FROM running";

/// The columns `row_to_line` reads.
const SELECT_LINE: &str =
    "SELECT address, key, digest, state, time_ms, conflict_with FROM run_lines";

pub(crate) struct SqliteDb {
    conn: Connection,
    path: PathBuf,
}

impl SqliteDb {
    pub(crate) fn open(store: &Store) -> Result<SqliteDb> {
        let layout = store.layout();
        let conn = crate::registry_file::open(layout, store.file_mode(), store.now(), migrate)?;
        Ok(SqliteDb {
            conn,
            path: layout.registry_path(),
        })
    }
}

impl Db for SqliteDb {
    fn transact(
        &mut self,
        scope: Scope<'_>,
        f: &mut dyn FnMut(&mut dyn Tx) -> TxResult<()>,
    ) -> TxResult<()> {
        let begin = match scope {
            Scope::Read => "BEGIN",
            Scope::Address(_) | Scope::Run(_) => "BEGIN IMMEDIATE",
        };
        retry_busy(|| self.conn.execute_batch(begin)).map_err(TxError::db)?;
        match f(&mut SqliteTx(&self.conn)) {
            Ok(()) => self.conn.execute_batch("COMMIT").map_err(TxError::db),
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }
}

struct SqliteTx<'c>(&'c Connection);

impl SqliteTx<'_> {
    fn one<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        row: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> TxResult<Option<T>> {
        self.0
            .query_row(sql, params, row)
            .optional()
            .map_err(TxError::db)
    }

    fn all<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> TxResult<Vec<T>> {
        let mut stmt = self.0.prepare_cached(sql).map_err(TxError::db)?;
        let rows = stmt.query_map(params, row).map_err(TxError::db)?;
        rows.collect::<rusqlite::Result<_>>().map_err(TxError::db)
    }

    fn execute(&self, sql: &str, params: impl rusqlite::Params) -> TxResult<usize> {
        self.0.execute(sql, params).map_err(TxError::db)
    }
}

impl Tx for SqliteTx<'_> {
    fn sealed_at(&mut self, run: &str) -> TxResult<Option<Option<UnixMillis>>> {
        self.one("SELECT sealed_ms FROM runs WHERE run = ?1", [run], |r| {
            r.get(0)
        })
    }

    fn ensure_run(&mut self, run: &str, created_ms: UnixMillis) -> TxResult<()> {
        self.execute(
            "INSERT OR IGNORE INTO runs(run, created_ms) VALUES (?1, ?2)",
            params![run, created_ms],
        )
        .map(drop)
    }

    fn insert_run(&mut self, run: &str, created_ms: UnixMillis) -> TxResult<()> {
        self.execute(
            "INSERT INTO runs(run, created_ms) VALUES (?1, ?2)",
            params![run, created_ms],
        )
        .map(drop)
    }

    fn earlier_key(&mut self, run: &str, address: &str) -> TxResult<Option<String>> {
        self.one(
            "SELECT key FROM run_lines WHERE run = ?1 AND address = ?2 AND state <> 'conflict'
             ORDER BY id DESC LIMIT 1",
            params![run, address],
            |r| r.get(0),
        )
    }

    fn running_at(&mut self, address: &str) -> TxResult<Option<RunningEntry>> {
        self.one(
            &format!("{SELECT_RUNNING} WHERE address = ?1"),
            [address],
            row_to_running,
        )
    }

    fn running_all(&mut self) -> TxResult<Vec<RunningEntry>> {
        self.all(
            &format!("{SELECT_RUNNING} ORDER BY address"),
            [],
            row_to_running,
        )
    }

    fn mark_running(&mut self, mark: &RunningEntry, _lease: Duration) -> TxResult<()> {
        self.execute(
            "INSERT OR REPLACE INTO running(address, run, key, host, pid, started_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                mark.address,
                mark.run,
                mark.key,
                mark.host,
                mark.pid,
                mark.started_ms
            ],
        )
        .map(drop)
    }

    fn clear_mark(&mut self, address: &str, host: &str, pid: u32) -> TxResult<()> {
        self.execute(
            "DELETE FROM running WHERE address = ?1 AND host = ?2 AND pid = ?3",
            params![address, host, pid],
        )
        .map(drop)
    }

    fn address(&mut self, address: &str) -> TxResult<Option<AddressEntry>> {
        self.one(
            &format!("{SELECT_ADDRESS} WHERE address = ?1"),
            [address],
            row_to_address,
        )
    }

    fn addresses(&mut self) -> TxResult<Vec<AddressEntry>> {
        self.all(
            &format!("{SELECT_ADDRESS} ORDER BY address"),
            [],
            row_to_address,
        )
    }

    fn upsert_address(
        &mut self,
        address: &Address,
        entry: &RunEntry,
        run: &str,
        record: &Value,
    ) -> TxResult<()> {
        self.execute(
            "INSERT INTO addresses(address, local_name, key, digest, state, run, updated_ms, record)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT(address) DO UPDATE SET key = excluded.key, digest = excluded.digest,
               state = excluded.state, run = excluded.run, updated_ms = excluded.updated_ms,
               record = excluded.record",
            params![
                address.to_string(),
                address.local_name(),
                entry.key,
                entry.digest,
                entry.state.as_str(),
                run,
                entry.time_ms,
                record.to_string()
            ],
        )
        .map(drop)
    }

    fn remove_address(&mut self, address: &str) -> TxResult<bool> {
        self.execute("DELETE FROM addresses WHERE address = ?1", [address])
            .map(|n| n > 0)
    }

    fn insert_run_line(&mut self, run: &str, entry: &RunEntry) -> TxResult<()> {
        self.execute(
            "INSERT INTO run_lines(run, address, key, digest, state, time_ms, conflict_with)
             SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7
             WHERE NOT EXISTS (SELECT 1 FROM run_lines WHERE run = ?1 AND address = ?2
                               AND key = ?3 AND state = ?5)",
            params![
                run,
                entry.address,
                entry.key,
                entry.digest,
                entry.state,
                entry.time_ms,
                entry.conflict_with
            ],
        )
        .map(drop)
    }

    fn run_lines(&mut self, run: &str) -> TxResult<Vec<RunEntry>> {
        self.all(
            &format!("{SELECT_LINE} WHERE run = ?1 ORDER BY id"),
            [run],
            row_to_line,
        )
    }

    fn runs(&mut self) -> TxResult<Vec<RunSummary>> {
        self.all(
            "SELECT r.run, r.created_ms, count(e.address),
                    count(CASE e.state WHEN 'failed' THEN 1 END),
                    count(CASE e.state WHEN 'conflict' THEN 1 END), r.sealed_ms
             FROM runs r LEFT JOIN run_lines e ON e.run = r.run
             GROUP BY r.run ORDER BY r.created_ms, r.run",
            [],
            |r| {
                Ok(RunSummary {
                    run: r.get(0)?,
                    created_ms: r.get(1)?,
                    entries: r.get::<_, i64>(2)?.max(0) as u64,
                    failed: r.get::<_, i64>(3)?.max(0) as u64,
                    conflicts: r.get::<_, i64>(4)?.max(0) as u64,
                    sealed_ms: r.get(5)?,
                })
            },
        )
    }

    fn seal(&mut self, run: &str, now: UnixMillis) -> TxResult<bool> {
        self.execute(
            "UPDATE runs SET sealed_ms = ?2 WHERE run = ?1 AND sealed_ms IS NULL",
            params![run, now],
        )
        .map(|n| n > 0)
    }

    fn prune(&mut self, run: &str) -> TxResult<bool> {
        self.execute("DELETE FROM run_lines WHERE run = ?1", [run])?;
        self.execute("DELETE FROM runs WHERE run = ?1", [run])
            .map(|n| n > 0)
    }

    fn is_pinned(&mut self, digest: &str) -> TxResult<bool> {
        self.one(PINNED, [digest], |_| Ok(()))
            .map(|found| found.is_some())
    }
}

/// Whether a run line with an artefact references a digest.
pub(crate) const PINNED: &str =
    "SELECT 1 FROM run_lines WHERE digest = ?1 AND state <> 'conflict' LIMIT 1";

/// A connection to the registry file at `path` for reading pins, brought up to date first (an
/// older registry's lines are where eviction looks); a symlink is never followed.
pub(crate) fn connect_for_pins(path: &Path) -> rusqlite::Result<Connection> {
    let flags =
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = Connection::open_with_flags(path, flags)?;
    keep_plans(&conn)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    migrate(&conn)?;
    Ok(conn)
}

/// Creates the tables, or brings an older registry up to date, in one transaction.
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version >= SCHEMA_VERSION {
        return Ok(());
    }
    retry_busy(|| conn.execute_batch("BEGIN IMMEDIATE"))?;
    let result = (|| {
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version >= SCHEMA_VERSION {
            return Ok(());
        }
        let old: bool = conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'run_entries'",
            [],
            |r| r.get::<_, i64>(0).map(|n| n > 0),
        )?;
        conn.execute_batch(SCHEMA)?;
        if old {
            conn.execute_batch(MIGRATE_FROM_0)?;
        }
        conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
    })();
    match result {
        Ok(()) => conn.execute_batch("COMMIT"),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

fn row_to_running(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunningEntry> {
    Ok(RunningEntry {
        address: r.get(0)?,
        run: r.get(1)?,
        key: r.get(2)?,
        host: r.get(3)?,
        pid: r.get(4)?,
        started_ms: r.get(5)?,
        lease_left_ms: None,
    })
}

fn row_to_line(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunEntry> {
    Ok(RunEntry {
        address: r.get(0)?,
        key: r.get(1)?,
        digest: r.get(2)?,
        state: r.get(3)?,
        time_ms: r.get(4)?,
        conflict_with: r.get(5)?,
    })
}

fn row_to_address(r: &rusqlite::Row<'_>) -> rusqlite::Result<AddressEntry> {
    let record: String = r.get(7)?;
    Ok(AddressEntry {
        address: r.get(0)?,
        local_name: r.get(1)?,
        key: r.get(2)?,
        digest: r.get(3)?,
        state: r.get(4)?,
        run: r.get(5)?,
        updated_ms: r.get(6)?,
        record: serde_json::from_str(&record).unwrap_or(Value::Null),
    })
}
