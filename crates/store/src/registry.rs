//! The registry: which fingerprint (key) each address holds, and an
//! immutable record of what every run used at each address.
//!
//! Unlike the index (a disposable cache of the entry files), the registry is
//! the only copy of this information, so it lives in its own durable SQLite
//! file, `v1/registry.sqlite`. The index attaches it so that eviction never
//! removes an artefact a run record still references (see `index.rs`).

use std::path::PathBuf;

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::address::{Address, check_run_id, shorten};
use super::clock::UnixMillis;
use super::error::{Result, StoreError};
use super::index::retry_busy;
use super::key::CacheKey;
use super::layout::Layout;

/// File name of the registry inside the layout directory.
pub const REGISTRY_FILE: &str = "registry.sqlite";

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
CREATE TABLE IF NOT EXISTS runs(run TEXT PRIMARY KEY, created_ms INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS run_entries(
    run TEXT NOT NULL,
    address TEXT NOT NULL,
    key TEXT NOT NULL,
    digest TEXT NOT NULL,
    state TEXT NOT NULL,
    time_ms INTEGER NOT NULL,
    conflict_with TEXT,
    PRIMARY KEY(run, address)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS run_entries_by_digest ON run_entries(digest);
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
    /// `ok` or `failed`.
    pub state: String,
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
    /// `ok`, `failed` or `conflict`.
    pub state: String,
    pub time_ms: UnixMillis,
    /// For a conflict: the fingerprint the address held.
    pub conflict_with: Option<String>,
}

/// The states a run line may have.
pub const RUN_STATES: [&str; 3] = ["ok", "failed", "conflict"];

impl RunEntry {
    /// Checks a line that came from outside (an imported archive): a valid, bounded address, a
    /// key whose digest is `digest`, a known state, a valid conflicting key.
    pub fn check(&self) -> std::result::Result<(), String> {
        Address::parse(&self.address).map_err(|e| e.to_string())?;
        let key = CacheKey::parse(&self.key).map_err(|e| e.to_string())?;
        if key.digest().as_str() != self.digest {
            return Err(format!(
                "{}: digest {} is not the key's",
                self.address,
                shorten(&self.digest)
            ));
        }
        if !RUN_STATES.contains(&self.state.as_str()) {
            return Err(format!(
                "{}: unknown state {:?} (expected ok, failed or conflict)",
                self.address,
                shorten(&self.state)
            ));
        }
        match (&self.conflict_with, self.state == "conflict") {
            (Some(other), true) => CacheKey::parse(other).map(drop).map_err(|e| e.to_string()),
            (None, false) => Ok(()),
            _ => Err(format!(
                "{}: only a conflict line names the fingerprint it met",
                self.address
            )),
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
}

/// What an address says about a new fingerprint.
#[derive(Debug, Clone, PartialEq)]
pub enum AddressClaim {
    /// Nothing is recorded at the address.
    Free,
    /// The address holds this very fingerprint.
    Same,
    /// The address holds another fingerprint: a cache conflict.
    Conflict(Box<AddressEntry>),
    /// This run already reached the address with another fingerprint.
    RunConflict { earlier_key: String },
}

pub struct Registry {
    conn: Connection,
    path: PathBuf,
}

impl Registry {
    /// Opens (creating if needed) the registry of `layout`; its file is protected and, when
    /// damaged, rebuilt (`registry_file.rs`).
    pub(super) fn open(layout: &Layout, file_mode: u32, now: UnixMillis) -> Result<Registry> {
        let conn = super::registry_file::open(layout, file_mode, now, SCHEMA)?;
        Ok(Registry {
            conn,
            path: layout.registry_path(),
        })
    }

    fn error(&self, op: &'static str) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |source| StoreError::Registry {
            op,
            path: self.path.clone(),
            source,
        }
    }

    /// Compares `key` with what the address (and this run) recorded.
    pub fn claim(&self, address: &Address, key: &str, run: &str) -> Result<AddressClaim> {
        decide(&self.conn, &address.to_string(), key, run).map_err(self.error("read an address"))
    }

    /// Records what this run did at `address`, deciding again under the
    /// registry's write lock (another run may have set the address since
    /// [`Registry::claim`]): sets the address unless it now holds another
    /// fingerprint and `overwrite` is off, and appends the run's line. A
    /// run's line, once written, never changes.
    pub fn commit(
        &self,
        address: &Address,
        entry: &RunEntry,
        run: &str,
        record: &Value,
        overwrite: bool,
    ) -> Result<AddressClaim> {
        self.immediately("record a run", |conn| {
            let claim = decide(conn, &address.to_string(), &entry.key, run)?;
            if matches!(claim, AddressClaim::RunConflict { .. }) {
                return Ok(claim);
            }
            conn.execute(
                "INSERT OR IGNORE INTO runs(run, created_ms) VALUES (?1, ?2)",
                params![run, entry.time_ms],
            )?;
            if matches!(claim, AddressClaim::Conflict(_)) && !overwrite {
                let mut line = entry.clone();
                line.state = "conflict".into();
                if let AddressClaim::Conflict(c) = &claim {
                    line.conflict_with = Some(c.key.clone());
                }
                insert_run_entry(conn, run, &line)?;
                return Ok(claim);
            }
            upsert_address(conn, address, entry, run, record)?;
            insert_run_entry(conn, run, entry)?;
            Ok(claim)
        })
    }

    /// Appends a conflict line to the run's record (the address is left as is).
    pub fn record_conflict(&self, run: &str, entry: &RunEntry) -> Result<()> {
        self.immediately("record a conflict", |conn| {
            conn.execute(
                "INSERT OR IGNORE INTO runs(run, created_ms) VALUES (?1, ?2)",
                params![run, entry.time_ms],
            )?;
            insert_run_entry(conn, run, entry).map(|_| ())
        })
    }

    /// Runs `f` inside `BEGIN IMMEDIATE … COMMIT` (rolled back on error).
    fn immediately<T>(
        &self,
        op: &'static str,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T> {
        retry_busy(|| self.conn.execute_batch("BEGIN IMMEDIATE")).map_err(self.error(op))?;
        match f(&self.conn) {
            Ok(value) => {
                self.conn.execute_batch("COMMIT").map_err(self.error(op))?;
                Ok(value)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(self.error(op)(e))
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
        let mut stmt = self
            .conn
            .prepare(&format!("{SELECT_ADDRESS} ORDER BY address"))
            .map_err(self.error("list addresses"))?;
        let rows = stmt
            .query_map([], row_to_address)
            .map_err(self.error("list addresses"))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(self.error("list addresses"))
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
        let mut stmt = self
            .conn
            .prepare(
                "SELECT r.run, r.created_ms, count(e.address),
                        count(CASE e.state WHEN 'failed' THEN 1 END),
                        count(CASE e.state WHEN 'conflict' THEN 1 END)
                 FROM runs r LEFT JOIN run_entries e ON e.run = r.run
                 GROUP BY r.run ORDER BY r.created_ms, r.run",
            )
            .map_err(self.error("list runs"))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(RunSummary {
                    run: r.get(0)?,
                    created_ms: r.get(1)?,
                    entries: r.get::<_, i64>(2)?.max(0) as u64,
                    failed: r.get::<_, i64>(3)?.max(0) as u64,
                    conflicts: r.get::<_, i64>(4)?.max(0) as u64,
                })
            })
            .map_err(self.error("list runs"))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(self.error("list runs"))
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
        let mut stmt = self
            .conn
            .prepare(
                "SELECT address, key, digest, state, time_ms, conflict_with FROM run_entries
                 WHERE run = ?1 ORDER BY time_ms, address",
            )
            .map_err(self.error("read a run"))?;
        let rows = stmt
            .query_map([run], |r| {
                Ok(RunEntry {
                    address: r.get(0)?,
                    key: r.get(1)?,
                    digest: r.get(2)?,
                    state: r.get(3)?,
                    time_ms: r.get(4)?,
                    conflict_with: r.get(5)?,
                })
            })
            .map_err(self.error("read a run"))?;
        rows.collect::<rusqlite::Result<_>>()
            .map(Some)
            .map_err(self.error("read a run"))
    }

    /// Adds a whole run (from `runs import`). Refuses to change an existing
    /// run's record; importing the same record twice is a no-op.
    pub fn import_run(
        &self,
        run: &str,
        created_ms: UnixMillis,
        entries: &[RunEntry],
    ) -> Result<()> {
        check_run_id(run).map_err(|reason| {
            StoreError::Refused(format!("run id {:?}: {reason}", shorten(run)))
        })?;
        for entry in entries {
            entry.check().map_err(StoreError::Refused)?;
        }
        if let Some(existing) = self.run(run)? {
            if existing == entries {
                return Ok(());
            }
            return Err(StoreError::Refused(format!(
                "run {run} already exists here with another record; run records are immutable"
            )));
        }
        self.immediately("import a run", |conn| {
            conn.execute(
                "INSERT INTO runs(run, created_ms) VALUES (?1, ?2)",
                params![run, created_ms],
            )?;
            for entry in entries {
                insert_run_entry(conn, run, entry)?;
            }
            Ok(())
        })
    }

    /// Forgets a run's record (its artefacts may then be evicted).
    pub fn prune_run(&self, run: &str) -> Result<bool> {
        self.immediately("prune a run", |conn| {
            conn.execute("DELETE FROM run_entries WHERE run = ?1", [run])?;
            Ok(conn.execute("DELETE FROM runs WHERE run = ?1", [run])? > 0)
        })
    }

    /// True when some run record references the artefact `digest`.
    pub fn is_pinned(&self, digest: &str) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT 1 FROM run_entries WHERE digest = ?1 AND state <> 'conflict' LIMIT 1",
                [digest],
                |_| Ok(()),
            )
            .optional()
            .map(|found| found.is_some())
            .map_err(self.error("read run records"))
    }
}

/// What `key` meets at `address`: this run's earlier visit, then the address.
fn decide(
    conn: &Connection,
    address: &str,
    key: &str,
    run: &str,
) -> rusqlite::Result<AddressClaim> {
    let earlier: Option<String> = conn
        .query_row(
            "SELECT key FROM run_entries WHERE run = ?1 AND address = ?2 AND state <> 'conflict'",
            params![run, address],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(earlier_key) = earlier.filter(|k| k != key) {
        return Ok(AddressClaim::RunConflict { earlier_key });
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
        Some(c) => AddressClaim::Conflict(Box::new(c)),
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
            entry.state,
            run,
            entry.time_ms,
            record.to_string()
        ],
    )
}

fn insert_run_entry(conn: &Connection, run: &str, entry: &RunEntry) -> rusqlite::Result<usize> {
    // A run reaching the same address with the same key again changes
    // nothing (a different key was refused by `commit`); only a conflict line,
    // which the run may later resolve with --overwrite-cache-conflicts, is
    // replaced.
    conn.execute(
        "INSERT INTO run_entries(run, address, key, digest, state, time_ms, conflict_with)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT(run, address) DO UPDATE SET key = excluded.key, digest = excluded.digest,
           state = excluded.state, time_ms = excluded.time_ms, conflict_with = excluded.conflict_with
         WHERE run_entries.state = 'conflict'",
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
