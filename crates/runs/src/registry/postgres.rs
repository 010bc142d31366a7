//! A shared registry in a PostgreSQL schema. Every write transaction first takes a
//! transaction-scoped advisory lock on what it decides about (an address, or a run), so that
//! two hosts reaching one address are decided one after the other by the database: no
//! read-then-write race. Reads see one snapshot. A `running` mark carries a lease by the
//! database's clock, renewed while the compile lasts (`lease.rs`).

use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mck_settings::RegistrySettings;
use mck_store::{EntryState, UnixMillis};
use postgres::{Client, IsolationLevel, Row, Transaction};
use serde_json::Value;

use super::lease::Renewer;
use super::pg_schema::{self, SCHEMA_VERSION, SEALED_STATE};
use super::{AddressEntry, Db, RunEntry, RunSummary, RunningEntry, Scope, Tx, TxError, TxResult};
use crate::address::Address;
use crate::error::{Result, RunsError};
use crate::state::RunState;

pub(crate) struct PgDb {
    client: Arc<Mutex<Client>>,
    /// The schema, quoted for SQL.
    schema: String,
    shown: String,
    lease: Duration,
    renewer: Option<Renewer>,
}

impl PgDb {
    /// Connects to the registry `url` names and prepares its schema.
    pub(crate) fn open(url: &str, settings: &RegistrySettings) -> Result<PgDb> {
        // A URL or TLS file that cannot be used leaves the registry out of reach as a network
        // would: addressed work goes on unaddressed (`cache_errors = fail`: an error).
        let target = super::pg_connect::target(url, settings).map_err(|reason| {
            TxError::Db {
                source: reason.into(),
                unreachable: true,
            }
            .into_runs("read its URL and files", url.to_owned())
        })?;
        // Whatever stops a connection (network, authentication, TLS) leaves the registry out
        // of reach: addressed work goes on unaddressed.
        let mut client = target.connect().map_err(|e| {
            let source = Box::new(e);
            TxError::Db {
                source,
                unreachable: true,
            }
            .into_runs("connect", target.shown.clone())
        })?;
        let version = pg_schema::prepare(&mut client, &target.schema).map_err(|e| {
            pg_error(e).into_runs("create or migrate its tables", target.shown.clone())
        })?;
        if version > SCHEMA_VERSION {
            return Err(RunsError::Refused(format!(
                "registry {}: schema {} has layout version {version}, newer than this \
                 mlir-cache-key's ({SCHEMA_VERSION}): upgrade mlir-cache-key",
                target.shown, target.schema
            )));
        }
        Ok(PgDb {
            client: Arc::new(Mutex::new(client)),
            schema: pg_schema::quoted(&target.schema),
            shown: target.shown,
            lease: settings.lease,
            renewer: None,
        })
    }
}

impl PgDb {
    /// Which of `digests` some run line with an artefact references (eviction's question).
    pub(crate) fn pinned_among(
        &mut self,
        digests: &[String],
    ) -> std::result::Result<std::collections::HashSet<String>, postgres::Error> {
        let sql = format!(
            "SELECT DISTINCT digest FROM {}.run_lines
             WHERE digest = ANY($1) AND state <> 'conflict'",
            self.schema
        );
        let mut client = self.client.lock().unwrap_or_else(PoisonError::into_inner);
        let rows = client.query(&sql, &[&digests])?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }
}

impl Db for PgDb {
    fn transact(
        &mut self,
        scope: Scope<'_>,
        f: &mut dyn FnMut(&mut dyn Tx) -> TxResult<()>,
    ) -> TxResult<()> {
        let mut client = self.client.lock().unwrap_or_else(PoisonError::into_inner);
        let lock = match scope {
            Scope::Read => None,
            Scope::Address(address) => Some(format!("{} address {address}", self.schema)),
            Scope::Run(run) => Some(format!("{} run {run}", self.schema)),
        };
        let mut tx = match lock {
            None => client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start(),
            Some(_) => client.transaction(),
        }
        .map_err(pg_error)?;
        if let Some(lock) = &lock {
            tx.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                &[lock],
            )
            .map_err(pg_error)?;
        }
        f(&mut PgTx {
            tx: &mut tx,
            s: &self.schema,
            write: lock.is_some(),
        })?;
        tx.commit().map_err(pg_error)
    }

    fn location(&self) -> String {
        self.shown.clone()
    }

    fn start_renewing(&mut self, address: &str) {
        let renewer = self.renewer.get_or_insert_with(|| {
            Renewer::start(self.client.clone(), self.schema.clone(), self.lease)
        });
        renewer.add(address);
    }

    fn stop_renewing(&mut self, address: &str) {
        if let Some(renewer) = &self.renewer {
            renewer.remove(address);
        }
    }
}

/// A statement's error as a transaction's: a trigger's refusal, a statement the server
/// refused, or a connection that failed (the registry unreachable).
fn pg_error(e: postgres::Error) -> TxError {
    match e.as_db_error() {
        Some(db) if db.code().code() == SEALED_STATE => TxError::Refused(db.message().to_owned()),
        Some(_) => TxError::db(e),
        None => TxError::Db {
            unreachable: e.is_closed() || std::error::Error::source(&e).is_some(),
            source: Box::new(e),
        },
    }
}

struct PgTx<'t, 'c> {
    tx: &'t mut Transaction<'c>,
    /// The schema, quoted.
    s: &'t str,
    /// A write transaction: reads that decide hold their rows.
    write: bool,
}

impl PgTx<'_, '_> {
    fn sql(&self, text: &str) -> String {
        text.replace("{s}", self.s)
    }

    fn rows(
        &mut self,
        text: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> TxResult<Vec<Row>> {
        let sql = self.sql(text);
        self.tx.query(&sql, params).map_err(pg_error)
    }

    fn row(
        &mut self,
        text: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> TxResult<Option<Row>> {
        let sql = self.sql(text);
        self.tx.query_opt(&sql, params).map_err(pg_error)
    }

    fn execute(
        &mut self,
        text: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> TxResult<u64> {
        let sql = self.sql(text);
        self.tx.execute(&sql, params).map_err(pg_error)
    }
}

const SELECT_ADDRESS: &str =
    "SELECT address, local_name, key, digest, state, run, updated_ms, record FROM {s}.addresses";

const SELECT_RUNNING: &str = "SELECT address, run, key, host, pid, started_ms,
    (extract(epoch FROM lease_until - clock_timestamp()) * 1000)::int8 FROM {s}.running";

const SELECT_LINE: &str =
    "SELECT address, key, digest, state, time_ms, conflict_with FROM {s}.run_lines";

impl Tx for PgTx<'_, '_> {
    fn sealed_at(&mut self, run: &str) -> TxResult<Option<Option<UnixMillis>>> {
        let lock = if self.write { " FOR SHARE" } else { "" };
        let row = self.row(
            &format!("SELECT sealed_ms FROM {{s}}.runs WHERE run = $1{lock}"),
            &[&run],
        )?;
        Ok(row.map(|r| r.get(0)))
    }

    fn ensure_run(&mut self, run: &str, created_ms: UnixMillis) -> TxResult<()> {
        self.execute(
            "INSERT INTO {s}.runs(run, created_ms) VALUES ($1, $2) ON CONFLICT (run) DO NOTHING",
            &[&run, &created_ms],
        )
        .map(drop)
    }

    fn insert_run(&mut self, run: &str, created_ms: UnixMillis) -> TxResult<()> {
        self.execute(
            "INSERT INTO {s}.runs(run, created_ms) VALUES ($1, $2)",
            &[&run, &created_ms],
        )
        .map(drop)
    }

    fn earlier_key(&mut self, run: &str, address: &str) -> TxResult<Option<String>> {
        let row = self.row(
            "SELECT key FROM {s}.run_lines WHERE run = $1 AND address = $2
             AND state <> 'conflict' ORDER BY id DESC LIMIT 1",
            &[&run, &address],
        )?;
        Ok(row.map(|r| r.get(0)))
    }

    fn running_at(&mut self, address: &str) -> TxResult<Option<RunningEntry>> {
        let row = self.row(&format!("{SELECT_RUNNING} WHERE address = $1"), &[&address])?;
        row.map(|r| to_running(&r)).transpose()
    }

    fn running_all(&mut self) -> TxResult<Vec<RunningEntry>> {
        let rows = self.rows(&format!("{SELECT_RUNNING} ORDER BY address"), &[])?;
        rows.iter().map(to_running).collect()
    }

    fn mark_running(&mut self, mark: &RunningEntry, lease: Duration) -> TxResult<()> {
        self.execute(
            "INSERT INTO {s}.running(address, run, key, host, pid, started_ms, lease_until)
             VALUES ($1, $2, $3, $4, $5, $6, clock_timestamp() + $7::float8 * interval '1 second')
             ON CONFLICT (address) DO UPDATE SET run = excluded.run, key = excluded.key,
               host = excluded.host, pid = excluded.pid, started_ms = excluded.started_ms,
               lease_until = excluded.lease_until",
            &[
                &mark.address,
                &mark.run,
                &mark.key,
                &mark.host,
                &i64::from(mark.pid),
                &mark.started_ms,
                &lease.as_secs_f64(),
            ],
        )
        .map(drop)
    }

    fn clear_mark(&mut self, address: &str, host: &str, pid: u32) -> TxResult<()> {
        self.execute(
            "DELETE FROM {s}.running WHERE address = $1 AND host = $2 AND pid = $3",
            &[&address, &host, &i64::from(pid)],
        )
        .map(drop)
    }

    fn address(&mut self, address: &str) -> TxResult<Option<AddressEntry>> {
        let row = self.row(&format!("{SELECT_ADDRESS} WHERE address = $1"), &[&address])?;
        row.map(|r| to_address(&r)).transpose()
    }

    fn addresses(&mut self) -> TxResult<Vec<AddressEntry>> {
        let rows = self.rows(&format!("{SELECT_ADDRESS} ORDER BY address"), &[])?;
        rows.iter().map(to_address).collect()
    }

    fn upsert_address(
        &mut self,
        address: &Address,
        entry: &RunEntry,
        run: &str,
        record: &Value,
    ) -> TxResult<()> {
        self.execute(
            "INSERT INTO {s}.addresses(address, local_name, key, digest, state, run, updated_ms,
                                       record)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (address) DO UPDATE SET key = excluded.key, digest = excluded.digest,
               state = excluded.state, run = excluded.run, updated_ms = excluded.updated_ms,
               record = excluded.record",
            &[
                &address.to_string(),
                &address.local_name(),
                &entry.key,
                &entry.digest,
                &entry.state.as_str(),
                &run,
                &entry.time_ms,
                &record.to_string(),
            ],
        )
        .map(drop)
    }

    fn remove_address(&mut self, address: &str) -> TxResult<bool> {
        self.execute("DELETE FROM {s}.addresses WHERE address = $1", &[&address])
            .map(|n| n > 0)
    }

    fn insert_run_line(&mut self, run: &str, entry: &RunEntry) -> TxResult<()> {
        self.execute(
            "INSERT INTO {s}.run_lines(run, address, key, digest, state, time_ms, conflict_with)
             SELECT $1, $2, $3, $4, $5, $6, $7
             WHERE NOT EXISTS (SELECT 1 FROM {s}.run_lines WHERE run = $1 AND address = $2
                               AND key = $3 AND state = $5)",
            &[
                &run,
                &entry.address,
                &entry.key,
                &entry.digest,
                &entry.state.as_str(),
                &entry.time_ms,
                &entry.conflict_with,
            ],
        )
        .map(drop)
    }

    fn run_lines(&mut self, run: &str) -> TxResult<Vec<RunEntry>> {
        let rows = self.rows(
            &format!("{SELECT_LINE} WHERE run = $1 ORDER BY id"),
            &[&run],
        )?;
        rows.iter().map(to_line).collect()
    }

    fn runs(&mut self) -> TxResult<Vec<RunSummary>> {
        let rows = self.rows(
            "SELECT r.run, r.created_ms, count(e.address),
                    count(CASE e.state WHEN 'failed' THEN 1 END),
                    count(CASE e.state WHEN 'conflict' THEN 1 END), r.sealed_ms
             FROM {s}.runs r LEFT JOIN {s}.run_lines e ON e.run = r.run
             GROUP BY r.run ORDER BY r.created_ms, r.run",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|r| RunSummary {
                run: r.get(0),
                created_ms: r.get(1),
                entries: r.get::<_, i64>(2).max(0) as u64,
                failed: r.get::<_, i64>(3).max(0) as u64,
                conflicts: r.get::<_, i64>(4).max(0) as u64,
                sealed_ms: r.get(5),
            })
            .collect())
    }

    fn seal(&mut self, run: &str, now: UnixMillis) -> TxResult<bool> {
        self.execute(
            "UPDATE {s}.runs SET sealed_ms = $2 WHERE run = $1 AND sealed_ms IS NULL",
            &[&run, &now],
        )
        .map(|n| n > 0)
    }

    fn prune(&mut self, run: &str) -> TxResult<bool> {
        self.execute("DELETE FROM {s}.run_lines WHERE run = $1", &[&run])?;
        self.execute("DELETE FROM {s}.runs WHERE run = $1", &[&run])
            .map(|n| n > 0)
    }

    fn is_pinned(&mut self, digest: &str) -> TxResult<bool> {
        self.row(
            "SELECT 1 FROM {s}.run_lines WHERE digest = $1 AND state <> 'conflict' LIMIT 1",
            &[&digest],
        )
        .map(|row| row.is_some())
    }
}

/// A column that must parse as `T` (a state): a row another tool wrote wrong is an error.
fn parsed<T: FromStr>(row: &Row, column: usize) -> TxResult<T> {
    let text: String = row.get(column);
    text.parse()
        .map_err(|_| TxError::db(format!("unknown state {text:?} in the registry")))
}

fn to_running(r: &Row) -> TxResult<RunningEntry> {
    Ok(RunningEntry {
        address: r.get(0),
        run: r.get(1),
        key: r.get(2),
        host: r.get(3),
        pid: u32::try_from(r.get::<_, i64>(4)).unwrap_or(0),
        started_ms: r.get(5),
        lease_left_ms: Some(r.get(6)),
    })
}

fn to_line(r: &Row) -> TxResult<RunEntry> {
    Ok(RunEntry {
        address: r.get(0),
        key: r.get(1),
        digest: r.get(2),
        state: parsed::<RunState>(r, 3)?,
        time_ms: r.get(4),
        conflict_with: r.get(5),
    })
}

fn to_address(r: &Row) -> TxResult<AddressEntry> {
    let record: String = r.get(7);
    Ok(AddressEntry {
        address: r.get(0),
        local_name: r.get(1),
        key: r.get(2),
        digest: r.get(3),
        state: parsed::<EntryState>(r, 4)?,
        run: r.get(5),
        updated_ms: r.get(6),
        record: serde_json::from_str(&record).unwrap_or(Value::Null),
    })
}
