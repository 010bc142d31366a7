//! [`RedisTier`]: the Redis implementation of [`Tier`], and the one that leases. Entries go
//! through opendal like any object store (`service.rs`, `SET … EX` on every write); what opendal
//! does not offer — the compile lease, the expiry refresh after a hit, a quick PING — goes
//! through the `redis` crate (`lease.rs`).

use std::time::Duration;

use super::lease::Coordinator;
use super::service::ObjectStore;
use mck_store::remote::RemoteError;
use mck_store::remote::{LeaseAttempt, Tier, TierOptions};
use mck_store::remote::{RedisTarget, RemoteUrl};

/// A Redis database under a key prefix.
#[derive(Debug)]
pub struct RedisTier {
    entries: ObjectStore,
    coordinator: Coordinator,
    /// How long an entry lives after its last write or hit; `None`: forever.
    expiry: Option<Duration>,
}

impl RedisTier {
    /// Connects lazily: nothing is contacted yet.
    pub fn open(
        url: &RemoteUrl,
        target: &RedisTarget,
        options: TierOptions,
    ) -> Result<RedisTier, RemoteError> {
        let entries =
            ObjectStore::open(url, options.shown.clone(), options.timeout, options.expiry)?;
        let coordinator = Coordinator::new(
            target,
            options.shown,
            options.timeout,
            options.lease,
            options.breaker,
        )?;
        Ok(RedisTier {
            entries,
            coordinator,
            expiry: options.expiry,
        })
    }
}

impl Tier for RedisTier {
    fn get(&self, path: &str) -> Result<Option<Vec<u8>>, RemoteError> {
        self.entries.get(path)
    }

    fn put(&self, path: &str, value: Vec<u8>) -> Result<(), RemoteError> {
        self.entries.put(path, value)
    }

    /// A refused connection fails at once here, where opendal's connection manager would retry
    /// until the timeout.
    fn reach(&self) -> Result<(), RemoteError> {
        self.coordinator.ping()
    }

    fn touch(&self, path: &str) -> Result<(), RemoteError> {
        match self.expiry {
            Some(expiry) => self.coordinator.refresh_expiry(path, expiry),
            None => Ok(()),
        }
    }

    fn leases(&self) -> bool {
        true
    }

    fn lease(&self, path: &str) -> Result<LeaseAttempt, RemoteError> {
        self.coordinator.try_acquire(path)
    }

    fn lease_holder(&self, path: &str) -> Result<Option<String>, RemoteError> {
        self.coordinator.holder(path)
    }
}
