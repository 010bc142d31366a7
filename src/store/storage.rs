//! The narrow storage interface (sccache's `Storage`): what a compile wrapper needs, and no more,
//! so a remote tier (HTTP, S3, a shared filesystem) can sit behind it later, alone or in front of
//! the local [`Store`].

use serde_json::Value;

use super::cache::{Lookup, PutOutcome, Store};
use super::entry::Failure;
use super::error::Result;
use super::key::CacheKey;

/// A place compiled artefacts are kept.
pub trait Storage: Send + Sync {
    /// Looks `key` up: a verified artefact, a remembered failure, or a miss.
    fn get(&self, key: &CacheKey) -> Result<Lookup>;
    /// Stores an artefact with its key's readable ingredients.
    fn put(&self, key: &CacheKey, artefact: &[u8], ingredients: &Value) -> Result<PutOutcome>;
    /// Remembers a failed compilation.
    fn put_failure(
        &self,
        key: &CacheKey,
        failure: &Failure,
        ingredients: &Value,
    ) -> Result<PutOutcome>;
    /// Forgets `key`; true if something was removed.
    fn remove(&self, key: &CacheKey) -> Result<bool>;
    /// Bytes currently stored.
    fn size(&self) -> Result<u64>;
    /// The size cap, if the backend has one.
    fn max_size(&self) -> Option<u64>;
    /// Where the data lives, for messages.
    fn location(&self) -> String;
}

impl Storage for Store {
    fn get(&self, key: &CacheKey) -> Result<Lookup> {
        Store::get(self, key)
    }
    fn put(&self, key: &CacheKey, artefact: &[u8], ingredients: &Value) -> Result<PutOutcome> {
        Store::put(self, key, artefact, ingredients)
    }
    fn put_failure(
        &self,
        key: &CacheKey,
        failure: &Failure,
        ingredients: &Value,
    ) -> Result<PutOutcome> {
        Store::put_failure(self, key, failure, ingredients)
    }
    fn remove(&self, key: &CacheKey) -> Result<bool> {
        Store::remove(self, key)
    }
    fn size(&self) -> Result<u64> {
        Store::size(self)
    }
    fn max_size(&self) -> Option<u64> {
        Some(self.settings().max_size)
    }
    fn location(&self) -> String {
        format!("local disk: {}", self.layout().root().display())
    }
}
