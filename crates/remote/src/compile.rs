//! The one compile-once API: look up; on a miss claim the key (the local per-key lock, and the
//! team's lease with a remote); use a result that arrived while we waited; else compile, store
//! the result or remember the failure in both tiers, and release the claim. `exec`, the Python
//! package and the tests all go through [`Tiered::compile_once`], so no caller gets the order
//! wrong. A claim that times out means "compile anyway"; failing to store is logged, never
//! turned into a failed compile (the artefact is still good).

use std::time::Duration;

use serde_json::Value;
use tracing::{info, warn};

use mck_store::history::with_compile_time;
use mck_store::{
    Artefact, CacheKey, CachedFailure, EntryState, Failure, Lookup, PutOutcome, StoreError,
};

use crate::chain::{Claim, Tiered};

/// What a compile function produced.
#[derive(Clone, Debug, PartialEq)]
pub enum Compiled {
    /// An artefact: stored under the key.
    Success(Vec<u8>),
    /// A failed compilation: remembered and replayed to later callers.
    Failed(Failure),
    /// Nothing usable and nothing to remember (the compiler was killed, say): the next caller
    /// compiles again.
    Abandoned(String),
}

/// Where a result came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Served {
    /// Found in the cache (this host, the remote, or another process that compiled meanwhile).
    Cached(Artefact),
    /// A remembered failure, replayed without compiling.
    CachedFailure(CachedFailure),
    /// Compiled now (and stored, or remembered).
    Fresh(Compiled),
    /// Found in the cache and streamed straight to the output ([`Tiered::get_to`]).
    Written { key: CacheKey, ingredients: Value },
}

impl Served {
    /// The state a run record gives this result: `ok`, `failed`, or `None` when nothing usable
    /// was produced.
    pub fn state(&self) -> Option<EntryState> {
        match self {
            Served::Cached(_) | Served::Written { .. } | Served::Fresh(Compiled::Success(_)) => {
                Some(EntryState::Ok)
            }
            Served::CachedFailure(_) | Served::Fresh(Compiled::Failed(_)) => {
                Some(EntryState::Failed)
            }
            Served::Fresh(Compiled::Abandoned(_)) => None,
        }
    }
}

impl Tiered {
    /// Returns the cached result for `key`, or runs `compile` (at most one process per host, and
    /// one host per team, at a time; others wait up to `lock_timeout`) and stores what it
    /// returns with `ingredients` (the key's readable record). `compile` runs only when this
    /// caller is the one to compile, so it is also where a miss is explained.
    pub fn compile_once<E: From<StoreError>>(
        &self,
        key: &CacheKey,
        ingredients: &Value,
        lock_timeout: Duration,
        compile: impl FnOnce() -> Result<Compiled, E>,
    ) -> Result<Served, E> {
        if let Some(found) = cached(self.get(key)?) {
            return Ok(found);
        }
        self.compile_after_miss(key, ingredients, lock_timeout, compile)
    }

    /// [`Tiered::compile_once`] after the caller's own lookup missed (e.g. [`Tiered::get_to`]).
    pub fn compile_after_miss<E: From<StoreError>>(
        &self,
        key: &CacheKey,
        ingredients: &Value,
        lock_timeout: Duration,
        compile: impl FnOnce() -> Result<Compiled, E>,
    ) -> Result<Served, E> {
        if self.local().is_read_only() {
            // No lock to take and nowhere to store: compile, and serve what it made.
            let compiled = compile()?;
            info!("the cache is read-only: the result of {key} is not stored");
            return Ok(Served::Fresh(compiled));
        }
        let claim = match self.claim(key, lock_timeout)? {
            Claim::Found(found) => match cached(found) {
                Some(found) => return Ok(found),
                None => None,
            },
            Claim::Compile(claim) => Some(claim),
        };
        let started = std::time::Instant::now();
        let compiled = compile()?;
        // What each later hit saves (the history's `saved_ms`).
        let ingredients = &with_compile_time(ingredients, started.elapsed());
        match &compiled {
            Compiled::Success(bytes) => match self.put(key, bytes, ingredients) {
                Ok(PutOutcome::Stored { path, .. }) => {
                    info!("Stored the artefact at {}", path.display())
                }
                Ok(PutOutcome::KeptExisting { .. }) => {}
                Err(e) => warn!("could not store the artefact of {key}: {e}"),
            },
            Compiled::Failed(failure) => match self.put_failure(key, failure, ingredients) {
                Ok(PutOutcome::Stored { path, .. }) => {
                    info!("Stored the failed compilation at {}", path.display())
                }
                Ok(PutOutcome::KeptExisting { .. }) => {}
                Err(e) => warn!("could not remember the failed compilation of {key}: {e}"),
            },
            Compiled::Abandoned(why) => {
                warn!("{why}; not remembered as a failure");
            }
        }
        drop(claim);
        Ok(Served::Fresh(compiled))
    }
}

fn cached(lookup: Lookup) -> Option<Served> {
    match lookup {
        Lookup::Hit(a) => Some(Served::Cached(a)),
        Lookup::Failed(f) => Some(Served::CachedFailure(f)),
        Lookup::Miss => None,
    }
}
