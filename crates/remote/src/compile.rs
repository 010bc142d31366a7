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

use crate::chain::{Claim, CompileClaim, Tiered};

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
        let attempt = self.compile_once_unstored(key, lock_timeout, compile)?;
        Ok(self.finish(attempt, ingredients))
    }

    /// [`Tiered::compile_once`] up to the store, as [`Tiered::compile_unstored`].
    pub fn compile_once_unstored<E: From<StoreError>>(
        &self,
        key: &CacheKey,
        lock_timeout: Duration,
        compile: impl FnOnce() -> Result<Compiled, E>,
    ) -> Result<Attempt, E> {
        if let Some(found) = cached(self.get(key)?) {
            return Ok(Attempt::Served(found));
        }
        self.compile_unstored(key, lock_timeout, compile)
    }

    /// [`Tiered::compile_once`] after the caller's own lookup missed (e.g. [`Tiered::get_to`]).
    pub fn compile_after_miss<E: From<StoreError>>(
        &self,
        key: &CacheKey,
        ingredients: &Value,
        lock_timeout: Duration,
        compile: impl FnOnce() -> Result<Compiled, E>,
    ) -> Result<Served, E> {
        let attempt = self.compile_unstored(key, lock_timeout, compile)?;
        Ok(self.finish(attempt, ingredients))
    }

    /// What an attempt serves, once its compile (if any) is stored.
    fn finish(&self, attempt: Attempt, ingredients: &Value) -> Served {
        match attempt {
            Attempt::Served(served) => served,
            Attempt::Compiled(compiled, unstored) => {
                self.store_compiled(unstored, &compiled, ingredients);
                Served::Fresh(compiled)
            }
        }
    }

    /// The first half of [`Tiered::compile_after_miss`]: claims `key` and compiles, or serves
    /// what arrived while it waited. A compile's result is not stored yet: the caller hands it
    /// to [`Tiered::store_compiled`] (on another thread, say, so that the compile's caller goes
    /// on at once); until then the claim is held, so other processes wait for the entry rather
    /// than compile it again.
    pub fn compile_unstored<E: From<StoreError>>(
        &self,
        key: &CacheKey,
        lock_timeout: Duration,
        compile: impl FnOnce() -> Result<Compiled, E>,
    ) -> Result<Attempt, E> {
        let claim = match self.local().is_read_only() {
            // No lock to take and nowhere to store.
            true => None,
            false => match self.claim(key, lock_timeout)? {
                Claim::Found(found) => match cached(found) {
                    Some(found) => return Ok(Attempt::Served(found)),
                    None => None,
                },
                Claim::Compile(claim) => Some(claim),
            },
        };
        let started = std::time::Instant::now();
        let compiled = compile()?;
        let unstored = Unstored {
            key: key.clone(),
            claim,
            compile_time: started.elapsed(),
        };
        Ok(Attempt::Compiled(compiled, unstored))
    }

    /// Stores what [`Tiered::compile_unstored`] compiled (or remembers the failure) with
    /// `ingredients` (the key's readable record), then releases the claim. Failing to store
    /// is logged: the compile's result is good all the same.
    pub fn store_compiled(&self, unstored: Unstored, compiled: &Compiled, ingredients: &Value) {
        let Unstored {
            key,
            claim,
            compile_time,
        } = unstored;
        if self.local().is_read_only() {
            info!("the cache is read-only: the result of {key} is not stored");
            return;
        }
        // What each later hit saves (the history's `saved_ms`).
        let ingredients = &with_compile_time(ingredients, compile_time);
        match compiled {
            Compiled::Success(bytes) => match self.put(&key, bytes, ingredients) {
                Ok(PutOutcome::Stored { path, .. }) => {
                    info!("Stored the artefact at {}", path.display())
                }
                Ok(PutOutcome::KeptExisting { .. }) => {}
                Err(e) => warn!("could not store the artefact of {key}: {e}"),
            },
            Compiled::Failed(failure) => match self.put_failure(&key, failure, ingredients) {
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
    }
}

/// What [`Tiered::compile_unstored`] did.
#[derive(Debug)]
pub enum Attempt {
    /// Another process or host stored the result while we waited.
    Served(Served),
    /// Compiled here; [`Tiered::store_compiled`] stores it and releases the claim.
    Compiled(Compiled, Unstored),
}

/// A compile's result not yet stored: the claim on its key (held until it is) and how long the
/// compile took.
#[derive(Debug)]
pub struct Unstored {
    key: CacheKey,
    claim: Option<CompileClaim>,
    compile_time: Duration,
}

fn cached(lookup: Lookup) -> Option<Served> {
    match lookup {
        Lookup::Hit(a) => Some(Served::Cached(a)),
        Lookup::Failed(f) => Some(Served::CachedFailure(f)),
        Lookup::Miss => None,
    }
}
