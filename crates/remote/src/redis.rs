//! [`RedisTier`]: the Redis implementation of [`Tier`], and the one that leases. Entries are
//! written through opendal like any object store (`service.rs`, `SET … EX` on every write);
//! reads, the compile lease, the expiry refresh after a hit and a quick PING go through the
//! `redis` crate on one connection (`lease.rs`).

use std::time::Duration;

use bytes::Bytes;

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
    /// On the connection `reach` opened: one connection, and the value in the `Vec` the
    /// reply was parsed into (opendal's pool would open a second and copy the value).
    fn get(&self, path: &str) -> Result<Option<Bytes>, RemoteError> {
        Ok(self.coordinator.get_value(path)?.map(Bytes::from))
    }

    fn get_parts(
        &self,
        path: &str,
        part: &mut dyn FnMut(Bytes) -> bool,
    ) -> Result<bool, RemoteError> {
        self.coordinator.get_parts(path, part)
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
