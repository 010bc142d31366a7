//! The lookup-lock-recheck-compile-store sequence a compile wrapper needs, in one call, so no
//! caller gets the order wrong: look up; on a miss take the key's compile lock; look up again
//! (another process may have finished meanwhile); compile; store the result or the failure;
//! release the lock. A lock that times out means "compile anyway". Failing to store is logged,
//! never turned into a failed compile (the artefact is still good).

use std::time::Duration;

use serde_json::Value;
use tracing::warn;

use super::cache::{Artefact, CachedFailure, Lookup, Store};
use super::entry::Failure;
use super::error::Result;
use super::key::CacheKey;
use super::lock::CompileLock;

/// Where a result came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Compiled {
    /// Found in the cache.
    Cached(Artefact),
    /// A remembered failure, replayed without compiling.
    CachedFailure(CachedFailure),
    /// Compiled now (and stored).
    Fresh(Vec<u8>),
    /// Compiled now and failed (and remembered).
    FreshFailure(Failure),
}

impl Store {
    /// Returns the cached result for `key`, or runs `compile` (at most one process at a time per
    /// key, waiting up to `lock_timeout` for another) and stores what it returns.
    pub fn get_or_compile(
        &self,
        key: &CacheKey,
        ingredients: &Value,
        lock_timeout: Duration,
        compile: impl FnOnce() -> std::result::Result<Vec<u8>, Failure>,
    ) -> Result<Compiled> {
        if let Some(found) = cached(self.get(key)?) {
            return Ok(found);
        }
        let lock = self.lock_for_compile(key, lock_timeout)?;
        if matches!(lock, CompileLock::Acquired(_))
            && let Some(found) = cached(self.recheck(key)?)
        {
            return Ok(found);
        }
        let result = match compile() {
            Ok(bytes) => {
                if let Err(e) = self.put(key, &bytes, ingredients) {
                    warn!("could not store the artefact for {key}: {e}");
                }
                Compiled::Fresh(bytes)
            }
            Err(failure) => {
                if let Err(e) = self.put_failure(key, &failure, ingredients) {
                    warn!("could not remember the failed compilation of {key}: {e}");
                }
                Compiled::FreshFailure(failure)
            }
        };
        drop(lock);
        Ok(result)
    }
}

fn cached(lookup: Lookup) -> Option<Compiled> {
    match lookup {
        Lookup::Hit(a) => Some(Compiled::Cached(a)),
        Lookup::Failed(f) => Some(Compiled::CachedFailure(f)),
        Lookup::Miss => None,
    }
}
