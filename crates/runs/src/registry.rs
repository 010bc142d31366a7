//! The registry: which fingerprint (key) each address holds, which addresses are being
//! compiled right now (and by whom), and an append-only record of what every run used at each
//! address. A run closed with `runs close` is sealed: nothing is ever added to its record again.
//!
//! Unlike the index (a disposable cache of the entry files), the registry is the only copy of
//! this information. It lives in one of two databases, behind the same answers:
//! - `sqlite`: `v1/registry.sqlite` in the cache directory (the default), one host's;
//! - `postgres`: a PostgreSQL schema a team shares (`registry = postgres://…`), where the
//!   database decides conflicts between hosts, a compile's `running` mark is a lease its
//!   process renews (`lease`), and a trigger keeps sealed runs immutable.
//!
//! The decisions (`decide`, what `begin` and `commit` do) are written once here, against
//! [`Tx`]: the statements each database runs inside one write transaction.

mod lease;
mod model;
mod passfile;
mod pg_connect;
mod pg_schema;
mod postgres;
mod sqlite;

use std::error::Error as StdError;
use std::time::{Duration, Instant};

use mck_settings::RegistrySettings;
use serde_json::Value;

use mck_store::{EntryState, Store, UnixMillis};

use crate::address::{Address, check_run_id, shorten};
use crate::error::{Result, RunsError};
use crate::state::RunState;

pub use model::{AddressClaim, AddressEntry, LineError, RunEntry, RunSummary, RunningEntry};
pub(crate) use postgres::PgDb;
pub(crate) use sqlite::{PINNED, connect_for_pins};

/// What a database failed with, boxed: SQLite's or PostgreSQL's error.
pub(crate) type DbError = Box<dyn StdError + Send + Sync>;

/// What a registry transaction fails with.
pub(crate) enum TxError {
    /// The database: a statement, or the connection (`unreachable`).
    Db { source: DbError, unreachable: bool },
    /// A sealed run that must not change.
    Sealed(String),
    /// A change the database refuses (its triggers keep sealed runs immutable).
    Refused(String),
}

impl TxError {
    pub(crate) fn db(source: impl Into<DbError>) -> TxError {
        TxError::Db {
            source: source.into(),
            unreachable: false,
        }
    }

    /// The crate's error for this failure of `op` on the registry at `location`.
    pub(crate) fn into_runs(self, op: &'static str, location: String) -> RunsError {
        match self {
            TxError::Sealed(run) => RunsError::Sealed { run },
            TxError::Refused(reason) => {
                RunsError::Refused(format!("registry {location}: {reason}"))
            }
            TxError::Db {
                source,
                unreachable,
            } => RunsError::Registry {
                op,
                location,
                unreachable,
                source,
            },
        }
    }
}

pub(crate) type TxResult<T> = std::result::Result<T, TxError>;

/// The statements of a registry transaction, one implementation per database.
pub(crate) trait Tx {
    /// `None`: no such run; `Some(None)`: open; `Some(Some(ms))`: sealed then. In a write
    /// transaction it holds the run's row against a concurrent `runs close`.
    fn sealed_at(&mut self, run: &str) -> TxResult<Option<Option<UnixMillis>>>;
    /// Adds the run unless it exists.
    fn ensure_run(&mut self, run: &str, created_ms: UnixMillis) -> TxResult<()>;
    /// Adds the run; an existing one is an error.
    fn insert_run(&mut self, run: &str, created_ms: UnixMillis) -> TxResult<()>;
    /// The key of this run's last non-conflict line at the address.
    fn earlier_key(&mut self, run: &str, address: &str) -> TxResult<Option<String>>;
    fn running_at(&mut self, address: &str) -> TxResult<Option<RunningEntry>>;
    fn running_all(&mut self) -> TxResult<Vec<RunningEntry>>;
    /// Marks the address `running` by `mark`'s process (replacing an older mark), live for
    /// `lease` where the database keeps leases.
    fn mark_running(&mut self, mark: &RunningEntry, lease: Duration) -> TxResult<()>;
    /// Clears the address's mark if this process (`host`, `pid`) holds it.
    fn clear_mark(&mut self, address: &str, host: &str, pid: u32) -> TxResult<()>;
    fn address(&mut self, address: &str) -> TxResult<Option<AddressEntry>>;
    fn addresses(&mut self) -> TxResult<Vec<AddressEntry>>;
    fn upsert_address(
        &mut self,
        address: &Address,
        entry: &RunEntry,
        run: &str,
        record: &Value,
    ) -> TxResult<()>;
    fn remove_address(&mut self, address: &str) -> TxResult<bool>;
    /// Appends a line to the run's record; the same line twice (a run revisiting an address
    /// with the same fingerprint) is written once. Lines are never changed.
    fn insert_run_line(&mut self, run: &str, entry: &RunEntry) -> TxResult<()>;
    fn run_lines(&mut self, run: &str) -> TxResult<Vec<RunEntry>>;
    fn runs(&mut self) -> TxResult<Vec<RunSummary>>;
    /// Seals an open run; false when there is none to seal.
    fn seal(&mut self, run: &str, now: UnixMillis) -> TxResult<bool>;
    /// Removes a run and its lines; false when there was none.
    fn prune(&mut self, run: &str) -> TxResult<bool>;
    fn is_pinned(&mut self, digest: &str) -> TxResult<bool>;
}

/// What a transaction serializes with: a write on one address (or one run) waits for every
/// other write on it; reads wait for nothing.
#[derive(Clone, Copy)]
pub(crate) enum Scope<'a> {
    Read,
    Address(&'a str),
    Run(&'a str),
}

/// A database that keeps a registry.
pub(crate) trait Db: Send {
    /// Runs `f` in one transaction, committed when it returns `Ok` (rolled back otherwise).
    fn transact(
        &mut self,
        scope: Scope<'_>,
        f: &mut dyn FnMut(&mut dyn Tx) -> TxResult<()>,
    ) -> TxResult<()>;
    /// The registry's file, or its URL (never a password), for messages.
    fn location(&self) -> String;
    /// Keeps this process's mark at `address` live until [`Db::stop_renewing`] (shared
    /// registries; the local one has nothing to renew).
    fn start_renewing(&mut self, _address: &str) {}
    fn stop_renewing(&mut self, _address: &str) {}
}

pub struct Registry {
    db: std::sync::Mutex<Box<dyn Db>>,
    /// A registry other hosts share: a mark is a lease, and the same fingerprint compiling
    /// elsewhere is waited for.
    shared: bool,
    lease: Duration,
}

impl Registry {
    /// Opens (creating if needed) the registry of `store` that `settings` name: the cache
    /// directory's file (protected and, when damaged, rebuilt: `sqlite.rs`) or a shared
    /// PostgreSQL schema (created or migrated first: `pg_schema.rs`).
    pub fn open(store: &Store, settings: &RegistrySettings) -> Result<Registry> {
        let db: Box<dyn Db> = match &settings.shared {
            None => Box::new(sqlite::SqliteDb::open(store)?),
            Some(url) => Box::new(postgres::PgDb::open(url, settings)?),
        };
        Ok(Registry {
            db: std::sync::Mutex::new(db),
            shared: settings.shared.is_some(),
            lease: settings.lease,
        })
    }

    /// Runs `f` in one transaction; `op` names it in errors.
    fn transact<T>(
        &self,
        op: &'static str,
        scope: Scope<'_>,
        f: impl FnOnce(&mut dyn Tx) -> TxResult<T>,
    ) -> Result<T> {
        let mut db = self.db.lock().unwrap_or_else(|e| e.into_inner());
        let mut f = Some(f);
        let mut value = None;
        let outcome = db.transact(scope, &mut |tx| {
            let f = f.take().expect("a transaction runs its body once");
            value = Some(f(tx)?);
            Ok(())
        });
        match outcome {
            Ok(()) => Ok(value.expect("set by the body")),
            Err(e) => Err(e.into_runs(op, db.location())),
        }
    }

    /// Compares `key` with what the address (and this run) recorded, before compiling; when
    /// this run is to compile there (a free address, its own fingerprint, or an overwrite),
    /// marks the address `running` by this process until [`Registry::commit`] or
    /// [`Registry::abandon`] (in a shared registry, renewed meanwhile).
    pub fn begin(
        &self,
        address: &Address,
        key: &str,
        run: &str,
        overwrite: bool,
        now: UnixMillis,
    ) -> Result<AddressClaim> {
        let text = address.to_string();
        let (shared, lease) = (self.shared, self.lease);
        let claim = self.transact("read an address", Scope::Address(&text), |tx| {
            refuse_sealed(tx, run)?;
            let claim = decide(tx, &text, key, run, shared)?;
            let compiles = match &claim {
                AddressClaim::Free | AddressClaim::Same => true,
                AddressClaim::Conflict(_) => overwrite,
                AddressClaim::RunConflict { .. }
                | AddressClaim::Running(_)
                | AddressClaim::Busy(_) => false,
            };
            if compiles {
                let (host, pid) = this_process();
                let mark = RunningEntry {
                    address: text.clone(),
                    run: run.to_owned(),
                    key: key.to_owned(),
                    host,
                    pid,
                    started_ms: now,
                    lease_left_ms: None,
                };
                tx.mark_running(&mark, lease)?;
            }
            Ok((claim, compiles))
        })?;
        if claim.1 {
            self.db
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .start_renewing(&text);
        }
        Ok(claim.0)
    }

    /// [`Registry::begin`], waiting up to `wait` while another process compiles this very
    /// fingerprint at the address (a shared registry's [`AddressClaim::Busy`]): when its mark
    /// goes (its result recorded, or its lease expired with its host), this one goes on and
    /// finds the result in the cache's tiers, or compiles. Past `wait` it goes on regardless.
    pub fn begin_waiting(
        &self,
        address: &Address,
        key: &str,
        run: &str,
        overwrite: bool,
        wait: Duration,
        now: impl Fn() -> UnixMillis,
    ) -> Result<AddressClaim> {
        let started = Instant::now();
        let mut announced = false;
        loop {
            let claim = self.begin(address, key, run, overwrite, now())?;
            let AddressClaim::Busy(holder) = &claim else {
                return Ok(claim);
            };
            if started.elapsed() >= wait {
                tracing::warn!(
                    "{holder} for longer than lock_timeout ({} s); compiling here too",
                    wait.as_secs_f64()
                );
                return Ok(AddressClaim::Same);
            }
            if !announced {
                tracing::info!("{holder}: waiting for its result");
                announced = true;
            }
            // A fraction of the lease: a dead holder is noticed soon after its lease ends.
            std::thread::sleep(
                (self.lease / 8).clamp(Duration::from_millis(50), Duration::from_millis(1000)),
            );
        }
    }

    /// Records what this run did at `address`, deciding again under the registry's write lock
    /// (another run may have set the address since [`Registry::begin`]): sets the address
    /// unless it now holds another fingerprint and `overwrite` is off, appends the run's line
    /// (lines are never changed), and clears this process's `running` mark.
    pub fn commit(
        &self,
        address: &Address,
        entry: &RunEntry,
        run: &str,
        record: &Value,
        overwrite: bool,
    ) -> Result<AddressClaim> {
        let text = address.to_string();
        self.stop_renewing(&text);
        self.transact("record a run", Scope::Address(&text), |tx| {
            refuse_sealed(tx, run)?;
            let (host, pid) = this_process();
            tx.clear_mark(&text, &host, pid)?;
            let claim = decide(tx, &text, &entry.key, run, false)?;
            if matches!(claim, AddressClaim::RunConflict { .. }) {
                return Ok(claim);
            }
            tx.ensure_run(run, entry.time_ms)?;
            let blocked = match &claim {
                AddressClaim::Conflict(c) if !overwrite => Some(c.key.clone()),
                AddressClaim::Running(r) => Some(r.key.clone()),
                _ => None,
            };
            if let Some(held) = blocked {
                let mut line = entry.clone();
                line.state = RunState::Conflict;
                line.conflict_with = Some(held);
                tx.insert_run_line(run, &line)?;
                return Ok(claim);
            }
            tx.upsert_address(address, entry, run, record)?;
            tx.insert_run_line(run, entry)?;
            Ok(claim)
        })
    }

    /// Clears this process's `running` mark at `address` (the compile produced nothing).
    pub fn abandon(&self, address: &Address) -> Result<()> {
        let text = address.to_string();
        self.stop_renewing(&text);
        self.transact("clear a running mark", Scope::Address(&text), |tx| {
            let (host, pid) = this_process();
            tx.clear_mark(&text, &host, pid)
        })
    }

    fn stop_renewing(&self, address: &str) {
        self.db
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .stop_renewing(address);
    }

    /// The live compiles in progress, by address (marks of dead processes are dropped).
    pub fn running(&self) -> Result<Vec<RunningEntry>> {
        let rows = self.transact("list running compiles", Scope::Read, |tx| tx.running_all())?;
        Ok(rows.into_iter().filter(is_alive).collect())
    }

    /// Seals a run: its record never changes again (`exec --run` on it is refused).
    pub fn close_run(&self, run: &str, now: UnixMillis) -> Result<bool> {
        self.transact("close a run", Scope::Run(run), |tx| tx.seal(run, now))
    }

    /// When the run was sealed, if it was; `Ok(None)` also for an unknown run.
    pub fn sealed_at(&self, run: &str) -> Result<Option<UnixMillis>> {
        self.transact("read a run", Scope::Read, |tx| {
            Ok(tx.sealed_at(run)?.flatten())
        })
    }

    /// Appends a conflict line to the run's record (the address is left as is).
    pub fn record_conflict(&self, run: &str, entry: &RunEntry) -> Result<()> {
        self.transact("record a conflict", Scope::Address(&entry.address), |tx| {
            tx.ensure_run(run, entry.time_ms)?;
            refuse_sealed(tx, run)?;
            tx.insert_run_line(run, entry)
        })
    }

    /// The address's current fingerprint and record.
    pub fn address(&self, address: &str) -> Result<Option<AddressEntry>> {
        self.transact("read an address", Scope::Read, |tx| tx.address(address))
    }

    /// Every address, sorted; callers filter with an `AddressPattern`.
    pub fn addresses(&self) -> Result<Vec<AddressEntry>> {
        self.transact("list addresses", Scope::Read, |tx| tx.addresses())
    }

    pub fn remove_address(&self, address: &str) -> Result<bool> {
        self.transact("remove an address", Scope::Address(address), |tx| {
            tx.remove_address(address)
        })
    }

    /// Points an address at a fingerprint without a new run line (adoption).
    pub fn set_address(
        &self,
        address: &Address,
        entry: &RunEntry,
        run: &str,
        record: &Value,
    ) -> Result<()> {
        let text = address.to_string();
        self.transact("set an address", Scope::Address(&text), |tx| {
            tx.upsert_address(address, entry, run, record)
        })
    }

    pub fn runs(&self) -> Result<Vec<RunSummary>> {
        self.transact("list runs", Scope::Read, |tx| tx.runs())
    }

    /// A run's record, or `None` if there is no such run.
    pub fn run(&self, run: &str) -> Result<Option<Vec<RunEntry>>> {
        self.transact("read a run", Scope::Read, |tx| {
            if tx.sealed_at(run)?.is_none() {
                return Ok(None);
            }
            tx.run_lines(run).map(Some)
        })
    }

    /// Adds a whole run (from `runs import`). Refuses to change an existing run's record;
    /// importing the same record twice is a no-op.
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
        let differs = self.transact("import a run", Scope::Run(run), |tx| {
            if tx.sealed_at(run)?.is_some() {
                return Ok(tx.run_lines(run)? != entries);
            }
            tx.insert_run(run, created_ms)?;
            for entry in entries {
                tx.insert_run_line(run, entry)?;
            }
            Ok(false)
        })?;
        if differs {
            return Err(RunsError::Refused(format!(
                "run {run} already exists here with another record; run records are immutable"
            )));
        }
        Ok(())
    }

    /// Forgets a run's record (its artefacts may then be evicted). A shared registry refuses
    /// it for a sealed run: the database keeps those immutable.
    pub fn prune_run(&self, run: &str) -> Result<bool> {
        self.transact("prune a run", Scope::Run(run), |tx| tx.prune(run))
    }

    /// True when some run record references the artefact `digest`.
    pub fn is_pinned(&self, digest: &str) -> Result<bool> {
        self.transact("read run records", Scope::Read, |tx| tx.is_pinned(digest))
    }
}

/// What `key` meets at `address`: this run's earlier visit, a live compile of another
/// fingerprint (or, in a shared registry with `wait_same`, of this one by another process),
/// then the address (a failed result there is no conflict).
fn decide(
    tx: &mut dyn Tx,
    address: &str,
    key: &str,
    run: &str,
    wait_same: bool,
) -> TxResult<AddressClaim> {
    if let Some(earlier_key) = tx.earlier_key(run, address)?.filter(|k| k != key) {
        return Ok(AddressClaim::RunConflict { earlier_key });
    }
    if let Some(holder) = tx.running_at(address)?.filter(is_alive) {
        if holder.key != key {
            return Ok(AddressClaim::Running(Box::new(holder)));
        }
        let (host, pid) = this_process();
        if wait_same && (holder.host != host || holder.pid != pid) {
            return Ok(AddressClaim::Busy(Box::new(holder)));
        }
    }
    Ok(match tx.address(address)? {
        None => AddressClaim::Free,
        Some(c) if c.key == key => AddressClaim::Same,
        Some(c) if c.state != EntryState::Ok => AddressClaim::Free,
        Some(c) => AddressClaim::Conflict(Box::new(c)),
    })
}

/// A sealed run's record never changes: refuse.
fn refuse_sealed(tx: &mut dyn Tx, run: &str) -> TxResult<()> {
    match tx.sealed_at(run)?.flatten() {
        None => Ok(()),
        Some(_) => Err(TxError::Sealed(run.to_owned())),
    }
}

/// This host's name and this process's id, which identify a `running` mark.
pub(crate) fn this_process() -> (String, u32) {
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    (host, std::process::id())
}

/// Whether the process holding a `running` mark still runs. A shared registry's mark is live
/// while its lease lasts (host names need not be unique across a team's machines). A local
/// mark of this host asks the kernel; one of another host counts as alive for a day.
fn is_alive(holder: &RunningEntry) -> bool {
    if let Some(left) = holder.lease_left_ms {
        return left > 0;
    }
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
