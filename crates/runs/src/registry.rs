//! The registry: which fingerprint (key) each address holds, which addresses
//! are being compiled right now (and by whom), and an append-only record of
//! what every run used at each address. A run closed with `runs close` is
//! sealed: nothing is ever added to its record again.
//!
//! Unlike the index (a disposable cache of the entry files), the registry is
//! the only copy of this information, so it lives in its own durable SQLite
//! file, `v1/registry.sqlite`. Eviction asks it (`pins.rs`) which artefacts run
//! records still reference, and never removes those.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use mck_store::sqlite::{BUSY_TIMEOUT, retry_busy};
use mck_store::{CacheKey, EntryState, Store, StoreError, UnixMillis};

use crate::address::{Address, AddressError, check_run_id, shorten};
use crate::error::{Result, RunsError};
use crate::state::RunState;

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

/// What an address holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AddressEntry {
    pub address: String,
    pub local_name: String,
    pub key: String,
    pub digest: String,
    pub state: EntryState,
    /// The run that last set it.
    pub run: String,
    pub updated_ms: UnixMillis,
    /// The key record (readable ingredients) of the fingerprint it holds.
    #[serde(skip)]
    pub record: Value,
}

/// One line of a run's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunEntry {
    pub address: String,
    pub key: String,
    pub digest: String,
    pub state: RunState,
    pub time_ms: UnixMillis,
    /// For a conflict: the fingerprint the address held.
    pub conflict_with: Option<String>,
}

/// Why a run line from outside is refused.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error(transparent)]
    Address(#[from] AddressError),
    /// The key, or the conflicting key, is not a cache key.
    #[error(transparent)]
    Key(#[from] StoreError),
    #[error("{address}: digest {digest} is not the key's")]
    Digest { address: String, digest: String },
    #[error("{0}: only a conflict line names the fingerprint it met")]
    ConflictWith(String),
}

impl RunEntry {
    /// Checks a line that came from outside (an imported archive): a valid, bounded address, a
    /// key whose digest is `digest`, a valid conflicting key exactly on a conflict line (the
    /// state itself is typed: an unknown one never parses).
    pub fn check(&self) -> std::result::Result<(), LineError> {
        Address::parse(&self.address)?;
        let key = CacheKey::parse(&self.key)?;
        if key.digest().as_str() != self.digest {
            return Err(LineError::Digest {
                address: self.address.clone(),
                digest: shorten(&self.digest),
            });
        }
        match (&self.conflict_with, self.state == RunState::Conflict) {
            (Some(other), true) => Ok(CacheKey::parse(other).map(drop)?),
            (None, false) => Ok(()),
            _ => Err(LineError::ConflictWith(self.address.clone())),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunSummary {
    pub run: String,
    pub created_ms: UnixMillis,
    pub entries: u64,
    pub failed: u64,
    pub conflicts: u64,
    /// When `runs close` sealed it.
    pub sealed_ms: Option<UnixMillis>,
}

/// A compile in progress at an address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunningEntry {
    pub address: String,
    pub run: String,
    pub key: String,
    pub host: String,
    pub pid: u32,
    pub started_ms: UnixMillis,
}

impl std::fmt::Display for RunningEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "run {} (pid {} on {}) is compiling {} at {}",
            self.run, self.pid, self.host, self.key, self.address
        )
    }
}

/// What an address says about a new fingerprint.
#[derive(Debug, Clone, PartialEq)]
pub enum AddressClaim {
    /// Nothing is recorded at the address, or only a failed result (which the next run
    /// simply computes again: a failure is never a conflict).
    Free,
    /// The address holds this very fingerprint.
    Same,
    /// The address holds another fingerprint: a cache conflict.
    Conflict(Box<AddressEntry>),
    /// This run already reached the address with another fingerprint.
    RunConflict { earlier_key: String },
    /// A live process of another run is compiling another fingerprint at the address.
    Running(Box<RunningEntry>),
}

pub struct Registry {
    conn: Connection,
    path: PathBuf,
}

impl Registry {
    /// Opens (creating if needed) the registry of `store`; its file is protected and, when
    /// damaged, rebuilt (`registry_file.rs`).
    pub fn open(store: &Store) -> Result<Registry> {
        let layout = store.layout();
        let conn = crate::registry_file::open(layout, store.file_mode(), store.now(), migrate)?;
        Ok(Registry {
            conn,
            path: layout.registry_path(),
        })
    }

    fn error(&self, op: &'static str) -> impl Fn(rusqlite::Error) -> RunsError + '_ {
        move |source| RunsError::Registry {
            op,
            path: self.path.clone(),
            source,
        }
    }

    /// Compares `key` with what the address (and this run) recorded, before compiling; when
    /// this run is to compile there (a free address, its own fingerprint, or an overwrite),
    /// marks the address `running` by this process until [`Registry::commit`] or
    /// [`Registry::abandon`].
    pub fn begin(
        &self,
        address: &Address,
        key: &str,
        run: &str,
        overwrite: bool,
        now: UnixMillis,
    ) -> Result<AddressClaim> {
        self.immediately("read an address", |conn| {
            refuse_sealed(conn, run)?;
            let address = address.to_string();
            let claim = decide(conn, &address, key, run)?;
            let compiles = match &claim {
                AddressClaim::Free | AddressClaim::Same => true,
                AddressClaim::Conflict(_) => overwrite,
                AddressClaim::RunConflict { .. } | AddressClaim::Running(_) => false,
            };
            if compiles {
                let (host, pid) = this_process();
                conn.execute(
                    "INSERT OR REPLACE INTO running(address, run, key, host, pid, started_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![address, run, key, host, pid, now],
                )?;
            }
            Ok(claim)
        })
    }

    /// Records what this run did at `address`, deciding again under the
    /// registry's write lock (another run may have set the address since
    /// [`Registry::begin`]): sets the address unless it now holds another
    /// fingerprint and `overwrite` is off, appends the run's line (lines are
    /// never changed), and clears this process's `running` mark.
    pub fn commit(
        &self,
        address: &Address,
        entry: &RunEntry,
        run: &str,
        record: &Value,
        overwrite: bool,
    ) -> Result<AddressClaim> {
        self.immediately("record a run", |conn| {
            refuse_sealed(conn, run)?;
            let text = address.to_string();
            clear_own_mark(conn, &text)?;
            let claim = decide(conn, &text, &entry.key, run)?;
            if matches!(claim, AddressClaim::RunConflict { .. }) {
                return Ok(claim);
            }
            conn.execute(
                "INSERT OR IGNORE INTO runs(run, created_ms) VALUES (?1, ?2)",
                params![run, entry.time_ms],
            )?;
            let blocked = match &claim {
                AddressClaim::Conflict(c) if !overwrite => Some(c.key.clone()),
                AddressClaim::Running(r) => Some(r.key.clone()),
                _ => None,
            };
            if let Some(held) = blocked {
                let mut line = entry.clone();
                line.state = RunState::Conflict;
                line.conflict_with = Some(held);
                insert_run_line(conn, run, &line)?;
                return Ok(claim);
            }
            upsert_address(conn, address, entry, run, record)?;
            insert_run_line(conn, run, entry)?;
            Ok(claim)
        })
    }

    /// Clears this process's `running` mark at `address` (the compile produced nothing).
    pub fn abandon(&self, address: &Address) -> Result<()> {
        self.immediately("clear a running mark", |conn| {
            Ok(clear_own_mark(conn, &address.to_string())?)
        })
    }

    /// The live compiles in progress, by address (marks of dead processes are dropped).
    pub fn running(&self) -> Result<Vec<RunningEntry>> {
        let rows = self.select_all(
            "list running compiles",
            &format!("{SELECT_RUNNING} ORDER BY address"),
            [],
            row_to_running,
        )?;
        Ok(rows.into_iter().filter(is_alive).collect())
    }

    /// Seals a run: its record never changes again (`exec --run` on it is refused).
    pub fn close_run(&self, run: &str, now: UnixMillis) -> Result<bool> {
        self.immediately("close a run", |conn| {
            Ok(conn.execute(
                "UPDATE runs SET sealed_ms = ?2 WHERE run = ?1 AND sealed_ms IS NULL",
                params![run, now],
            )? > 0)
        })
    }

    /// When the run was sealed, if it was; `Ok(None)` also for an unknown run.
    pub fn sealed_at(&self, run: &str) -> Result<Option<UnixMillis>> {
        self.conn
            .query_row("SELECT sealed_ms FROM runs WHERE run = ?1", [run], |r| {
                r.get::<_, Option<i64>>(0)
            })
            .optional()
            .map(Option::flatten)
            .map_err(self.error("read a run"))
    }

    /// Appends a conflict line to the run's record (the address is left as is).
    pub fn record_conflict(&self, run: &str, entry: &RunEntry) -> Result<()> {
        self.immediately("record a conflict", |conn| {
            conn.execute(
                "INSERT OR IGNORE INTO runs(run, created_ms) VALUES (?1, ?2)",
                params![run, entry.time_ms],
            )?;
            refuse_sealed(conn, run)?;
            insert_run_line(conn, run, entry)?;
            Ok(())
        })
    }

    /// Every row `sql` selects with `params`, each read by `row`; `op` names it in errors.
    fn select_all<T>(
        &self,
        op: &'static str,
        sql: &str,
        params: impl rusqlite::Params,
        row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>> {
        let mut stmt = self.conn.prepare(sql).map_err(self.error(op))?;
        let rows = stmt.query_map(params, row).map_err(self.error(op))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(self.error(op))
    }

    /// Runs `f` inside `BEGIN IMMEDIATE … COMMIT` (rolled back on error).
    fn immediately<T>(
        &self,
        op: &'static str,
        f: impl FnOnce(&Connection) -> std::result::Result<T, TxError>,
    ) -> Result<T> {
        retry_busy(|| self.conn.execute_batch("BEGIN IMMEDIATE")).map_err(self.error(op))?;
        match f(&self.conn) {
            Ok(value) => {
                self.conn.execute_batch("COMMIT").map_err(self.error(op))?;
                Ok(value)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(match e {
                    TxError::Sealed(run) => RunsError::Sealed { run },
                    TxError::Sql(e) => self.error(op)(e),
                })
            }
        }
    }

    /// The address's current fingerprint and record.
    pub fn address(&self, address: &str) -> Result<Option<AddressEntry>> {
        self.conn
            .query_row(
                &format!("{SELECT_ADDRESS} WHERE address = ?1"),
                [address],
                row_to_address,
            )
            .optional()
            .map_err(self.error("read an address"))
    }

    /// Every address, sorted; callers filter with an `AddressPattern`.
    pub fn addresses(&self) -> Result<Vec<AddressEntry>> {
        self.select_all(
            "list addresses",
            &format!("{SELECT_ADDRESS} ORDER BY address"),
            [],
            row_to_address,
        )
    }

    pub fn remove_address(&self, address: &str) -> Result<bool> {
        self.conn
            .execute("DELETE FROM addresses WHERE address = ?1", [address])
            .map(|n| n > 0)
            .map_err(self.error("remove an address"))
    }

    /// Points an address at a fingerprint without a new run line (adoption).
    pub fn set_address(
        &self,
        address: &Address,
        entry: &RunEntry,
        run: &str,
        record: &Value,
    ) -> Result<()> {
        upsert_address(&self.conn, address, entry, run, record)
            .map(|_| ())
            .map_err(self.error("set an address"))
    }

    pub fn runs(&self) -> Result<Vec<RunSummary>> {
        self.select_all(
            "list runs",
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

    /// A run's record, or `None` if there is no such run.
    pub fn run(&self, run: &str) -> Result<Option<Vec<RunEntry>>> {
        let exists: Option<i64> = self
            .conn
            .query_row("SELECT 1 FROM runs WHERE run = ?1", [run], |r| r.get(0))
            .optional()
            .map_err(self.error("read a run"))?;
        if exists.is_none() {
            return Ok(None);
        }
        self.select_all(
            "read a run",
            "SELECT address, key, digest, state, time_ms, conflict_with FROM run_lines
             WHERE run = ?1 ORDER BY id",
            [run],
            |r| {
                Ok(RunEntry {
                    address: r.get(0)?,
                    key: r.get(1)?,
                    digest: r.get(2)?,
                    state: r.get(3)?,
                    time_ms: r.get(4)?,
                    conflict_with: r.get(5)?,
                })
            },
        )
        .map(Some)
    }

    /// Adds a whole run (from `runs import`). Refuses to change an existing
    /// run's record; importing the same record twice is a no-op.
    pub fn import_run(
        &self,
        run: &str,
        created_ms: UnixMillis,
        entries: &[RunEntry],
    ) -> Result<()> {
        check_run_id(run)
            .map_err(|reason| RunsError::Refused(format!("run id {:?}: {reason}", shorten(run))))?;
        for entry in entries {
            entry
                .check()
                .map_err(|e| RunsError::Refused(e.to_string()))?;
        }
        if let Some(existing) = self.run(run)? {
            if existing == entries {
                return Ok(());
            }
            return Err(RunsError::Refused(format!(
                "run {run} already exists here with another record; run records are immutable"
            )));
        }
        self.immediately("import a run", |conn| {
            conn.execute(
                "INSERT INTO runs(run, created_ms) VALUES (?1, ?2)",
                params![run, created_ms],
            )?;
            for entry in entries {
                insert_run_line(conn, run, entry)?;
            }
            Ok(())
        })
    }

    /// Forgets a run's record (its artefacts may then be evicted).
    pub fn prune_run(&self, run: &str) -> Result<bool> {
        self.immediately("prune a run", |conn| {
            conn.execute("DELETE FROM run_lines WHERE run = ?1", [run])?;
            Ok(conn.execute("DELETE FROM runs WHERE run = ?1", [run])? > 0)
        })
    }

    /// True when some run record references the artefact `digest`.
    pub fn is_pinned(&self, digest: &str) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT 1 FROM run_lines WHERE digest = ?1 AND state <> 'conflict' LIMIT 1",
                [digest],
                |_| Ok(()),
            )
            .optional()
            .map(|found| found.is_some())
            .map_err(self.error("read run records"))
    }
}

/// What `key` meets at `address`: this run's earlier visit, a live compile of another
/// fingerprint, then the address (a failed result there is no conflict).
fn decide(
    conn: &Connection,
    address: &str,
    key: &str,
    run: &str,
) -> rusqlite::Result<AddressClaim> {
    let earlier: Option<String> = conn
        .query_row(
            "SELECT key FROM run_lines WHERE run = ?1 AND address = ?2 AND state <> 'conflict'
             ORDER BY id DESC LIMIT 1",
            params![run, address],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(earlier_key) = earlier.filter(|k| k != key) {
        return Ok(AddressClaim::RunConflict { earlier_key });
    }
    let running = conn
        .query_row(
            &format!("{SELECT_RUNNING} WHERE address = ?1"),
            [address],
            row_to_running,
        )
        .optional()?;
    if let Some(holder) = running.filter(|h| h.key != key && is_alive(h)) {
        return Ok(AddressClaim::Running(Box::new(holder)));
    }
    let current = conn
        .query_row(
            &format!("{SELECT_ADDRESS} WHERE address = ?1"),
            [address],
            row_to_address,
        )
        .optional()?;
    Ok(match current {
        None => AddressClaim::Free,
        Some(c) if c.key == key => AddressClaim::Same,
        Some(c) if c.state != EntryState::Ok => AddressClaim::Free,
        Some(c) => AddressClaim::Conflict(Box::new(c)),
    })
}

/// A connection to the registry file at `path` for reading pins, brought up to date first (an
/// older registry's lines are where eviction looks); a symlink is never followed.
pub(crate) fn connect_for_pins(path: &Path) -> rusqlite::Result<Connection> {
    let flags =
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = Connection::open_with_flags(path, flags)?;
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

/// What a registry transaction fails with: SQLite, or a sealed run it must not change.
enum TxError {
    Sql(rusqlite::Error),
    Sealed(String),
}

impl From<rusqlite::Error> for TxError {
    fn from(e: rusqlite::Error) -> Self {
        TxError::Sql(e)
    }
}

/// A sealed run's record never changes: refuse.
fn refuse_sealed(conn: &Connection, run: &str) -> std::result::Result<(), TxError> {
    let sealed: Option<i64> = conn
        .query_row("SELECT sealed_ms FROM runs WHERE run = ?1", [run], |r| {
            r.get(0)
        })
        .optional()?
        .flatten();
    match sealed {
        None => Ok(()),
        Some(_) => Err(TxError::Sealed(run.to_owned())),
    }
}

fn clear_own_mark(conn: &Connection, address: &str) -> rusqlite::Result<()> {
    let (host, pid) = this_process();
    conn.execute(
        "DELETE FROM running WHERE address = ?1 AND host = ?2 AND pid = ?3",
        params![address, host, pid],
    )
    .map(|_| ())
}

/// This host's name and this process's id, which identify a `running` mark.
fn this_process() -> (String, u32) {
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    (host, std::process::id())
}

/// Whether the process holding a `running` mark still runs. Marks of another host cannot be
/// checked here and count as alive for a day.
fn is_alive(holder: &RunningEntry) -> bool {
    let (host, _) = this_process();
    if holder.host != host {
        let age = mck_store::Clock::now_ms(&mck_store::SystemClock) - holder.started_ms;
        return age < 24 * 3_600_000;
    }
    let Some(pid) = rustix::process::Pid::from_raw(holder.pid as i32) else {
        return false;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(e) => e == rustix::io::Errno::PERM,
    }
}

/// The columns `row_to_running` reads.
const SELECT_RUNNING: &str = "SELECT address, run, key, host, pid, started_ms FROM running";

fn row_to_running(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunningEntry> {
    Ok(RunningEntry {
        address: r.get(0)?,
        run: r.get(1)?,
        key: r.get(2)?,
        host: r.get(3)?,
        pid: r.get(4)?,
        started_ms: r.get(5)?,
    })
}

fn upsert_address(
    conn: &Connection,
    address: &Address,
    entry: &RunEntry,
    run: &str,
    record: &Value,
) -> rusqlite::Result<usize> {
    conn.execute(
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
}

/// Appends a line to the run's record; the same line twice (a run revisiting an address with
/// the same fingerprint) is written once. Lines are never changed.
fn insert_run_line(conn: &Connection, run: &str, entry: &RunEntry) -> rusqlite::Result<usize> {
    conn.execute(
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
