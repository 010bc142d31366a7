//! A compilation at an address, within a run: fingerprints compared before compiling and again
//! when the result is recorded (another run may have set the address meanwhile).

use crate::error::ExecError;
use crate::request::AtAddress;
use mck_key::KeyRecord;
use mck_runs::{AddressClaim, AddressEntry, Registry, RunEntry, RunState, RunningEntry, RunsError};
use mck_store::history::{TierAnswer, What};
use mck_store::{CacheKey, EntryState, Store};
use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// A cache conflict: the address holds another fingerprint; nothing was overwritten.
#[derive(Debug, Clone)]
pub struct ConflictReport {
    pub address: String,
    pub run: String,
    pub cached_key: String,
    pub cached_run: String,
    pub new_key: String,
    /// What moved (the `why` explanation), when the cached fingerprint's record was kept.
    pub what_moved: Option<String>,
    /// The cache options in force, repeated in the commands that resolve the conflict.
    pub cache_args: String,
}

impl fmt::Display for ConflictReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "cache conflict at {}", self.address)?;
        writeln!(
            f,
            "  cached fingerprint: {} (set by run {})",
            self.cached_key, self.cached_run
        )?;
        writeln!(f, "  new fingerprint:    {}", self.new_key)?;
        match &self.what_moved {
            Some(text) => {
                writeln!(f, "  what moved:")?;
                for line in text.lines() {
                    writeln!(f, "    {line}")?;
                }
            }
            None => writeln!(
                f,
                "  (the cached fingerprint's ingredients were not recorded)"
            )?,
        }
        let cache = if self.cache_args.is_empty() {
            String::new()
        } else {
            format!(" {}", self.cache_args)
        };
        write!(
            f,
            "  nothing was overwritten; to resolve:\n    \
             rerun with --overwrite-cache-conflicts to replace it for run {run}, or\n    \
             mlir-cache-key cache clear{cache} '{pattern}' and rerun (clear, then resume), or\n    \
             mlir-cache-key cache clear{cache} --conflicts-in {run} to clear every conflict of this run",
            run = self.run,
            pattern = self.address,
        )
    }
}

/// The address side of one compilation.
pub(crate) struct Site {
    registry: Registry,
    at: AtAddress,
    record: KeyRecord,
}

impl Site {
    /// Compares the address (and this run's earlier visits) with `key` before anything is
    /// compiled, marking the address `running` when this run compiles there; `Err(report)` on
    /// a conflict (recorded in the run). In a shared registry, another host compiling this
    /// very fingerprint there is waited for, up to `wait`. `Ok(Ok(None))`: a shared registry
    /// that cannot be reached, the work going on unaddressed (warned, and counted in the
    /// cache's history as the registry being down).
    pub(crate) fn check(
        store: &Store,
        at: AtAddress,
        key: &CacheKey,
        record: &KeyRecord,
        wait: Duration,
    ) -> Result<Result<Option<Site>, ConflictReport>, ExecError> {
        let registry = match Registry::open(store, &at.registry) {
            Ok(registry) => registry,
            Err(e) => {
                unaddressed(store, &at, key, e)?;
                return Ok(Ok(None));
            }
        };
        let site = Site {
            registry,
            at,
            record: record.clone(),
        };
        let claim = match site.registry.begin_waiting(
            &site.at.address,
            &key.to_string(),
            &site.at.run,
            site.at.overwrite_conflicts,
            wait,
            now_ms,
        ) {
            Ok(claim) => claim,
            Err(e) => {
                unaddressed(store, &site.at, key, e)?;
                return Ok(Ok(None));
            }
        };
        match claim {
            AddressClaim::RunConflict { earlier_key } => Err(site.run_conflict(&earlier_key, key)),
            AddressClaim::Conflict(existing) if !site.at.overwrite_conflicts => {
                let mut entry = site.line(key, RunState::Conflict);
                entry.conflict_with = Some(existing.key.clone());
                site.registry.record_conflict(&site.at.run, &entry)?;
                Ok(Err(site.conflict(&existing, key)))
            }
            AddressClaim::Running(holder) => {
                let mut entry = site.line(key, RunState::Conflict);
                entry.conflict_with = Some(holder.key.clone());
                site.registry.record_conflict(&site.at.run, &entry)?;
                Ok(Err(site.running_conflict(&holder, key)))
            }
            _ => Ok(Ok(Some(site))),
        }
    }

    fn line(&self, key: &CacheKey, state: RunState) -> RunEntry {
        RunEntry {
            address: self.at.address.to_string(),
            key: key.to_string(),
            digest: key.digest().to_string(),
            state,
            time_ms: now_ms(),
            conflict_with: None,
        }
    }

    /// Records the result at the address, deciding again under the registry lock.
    pub(crate) fn commit(
        &mut self,
        store: &Store,
        key: &CacheKey,
        ingredients: &Value,
        state: EntryState,
    ) -> Result<Option<ConflictReport>, ExecError> {
        let entry = self.line(key, state.into());
        let claim = self.registry.commit(
            &self.at.address,
            &entry,
            &self.at.run,
            ingredients,
            self.at.overwrite_conflicts,
        );
        let claim = match claim {
            Ok(claim) => claim,
            Err(e) => return unaddressed(store, &self.at, key, e).map(|()| None),
        };
        match claim {
            AddressClaim::RunConflict { earlier_key } => Err(self.run_conflict(&earlier_key, key)),
            AddressClaim::Conflict(existing) if !self.at.overwrite_conflicts => {
                Ok(Some(self.conflict(&existing, key)))
            }
            AddressClaim::Running(holder) => Ok(Some(self.running_conflict(&holder, key))),
            AddressClaim::Conflict(existing) => {
                tracing::warn!(
                    "overwrote the cache conflict at {}: {} → {key} (run {})",
                    self.at.address,
                    existing.key,
                    self.at.run
                );
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// Clears the `running` mark when the compile produced nothing to record.
    pub(crate) fn abandon(&self) {
        if let Err(e) = self.registry.abandon(&self.at.address) {
            tracing::warn!("cannot clear the running mark at {}: {e}", self.at.address);
        }
    }

    fn running_conflict(&self, holder: &RunningEntry, key: &CacheKey) -> ConflictReport {
        let what_moved = format!(
            "{holder} right now (started {} ms ago); wait for it, or use another address",
            now_ms() - holder.started_ms
        );
        self.report(&holder.key, &holder.run, key, Some(what_moved))
    }

    /// A conflict at this site between what `cached_run` recorded and `key`.
    fn report(
        &self,
        cached_key: &str,
        cached_run: &str,
        key: &CacheKey,
        what_moved: Option<String>,
    ) -> ConflictReport {
        ConflictReport {
            address: self.at.address.to_string(),
            run: self.at.run.clone(),
            cached_key: cached_key.to_string(),
            cached_run: cached_run.to_string(),
            new_key: key.to_string(),
            what_moved,
            cache_args: self.at.cache_args.clone(),
        }
    }

    fn run_conflict(&self, earlier: &str, key: &CacheKey) -> ExecError {
        ExecError::RunConflict(format!(
            "run {} reached address {} with two fingerprints: {earlier} (earlier) and {key}; \
             one address must name one program within a run",
            self.at.run, self.at.address
        ))
    }

    fn conflict(&self, existing: &AddressEntry, key: &CacheKey) -> ConflictReport {
        let what_moved = serde_json::from_value::<KeyRecord>(existing.record.clone())
            .ok()
            .map(|old| mck_key::explain::explain(&old, &self.record).to_string());
        self.report(&existing.key, &existing.run, key, what_moved)
    }
}

/// A registry that failed: when it is a shared one out of reach (and `cache_errors` is not
/// `fail`), warned once per process and recorded as the registry being down in the cache's
/// history; the work goes on unaddressed, its artefact still cached. Anything else fails.
fn unaddressed(
    store: &Store,
    at: &AtAddress,
    key: &CacheKey,
    e: RunsError,
) -> Result<(), ExecError> {
    if !e.is_unreachable() || at.strict {
        return Err(e.into());
    }
    static WARNED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if WARNED.set(()).is_ok() {
        // The registry error shows its own source; the causes below it say why.
        let mut why = String::new();
        let mut cause = std::error::Error::source(&e).and_then(|s| s.source());
        while let Some(c) = cause {
            why.push_str(&format!(" ({c})"));
            cause = c.source();
        }
        tracing::warn!(
            "{e}{why}; {} and the rest of this process's addressed work go on unaddressed \
             (cache_errors=fail makes this an error)",
            at.address
        );
    }
    let registry = at.registry.shared.as_deref().unwrap_or("local");
    store.record_event(What::Tier {
        tier: format!("registry {registry}"),
        key: key.to_string(),
        answer: TierAnswer::Down,
    });
    Ok(())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
