//! The Redis backend, and the one that leases: `redis://[USER[:PASSWORD]@]HOST[:PORT][/DB[/PREFIX…]]`,
//! `rediss://…` over TLS (the server verified against `remote_ca_file` or the system's roots;
//! mutual TLS with `remote_cert_file` and `remote_key_file`; the password best given in
//! `remote_password_file`).
//! Everything — entries (`SET … PX` on every write, so an entry lives the cache's TTL after its
//! last write or hit), reads in parts, the compile lease, the expiry refresh after a hit and a
//! quick PING — goes through one client (`redis_client.rs`) on one connection.

use std::time::Duration;

use bytes::Bytes;
use url::Url;

use super::redis_client::{RedisClient, Target};
use crate::backend::Backend;
use crate::error::RemoteError;
use crate::tier::{LeaseAttempt, Tier, TierOptions};

pub const BACKEND: Backend = Backend {
    schemes: &["redis", "rediss"],
    form: "redis://HOST:PORT/DB (rediss:// with TLS)",
    leases: true,
    parse: |url| Target::parse(url).map(|t| t.parsed()),
    open: |url, options| Ok(Box::new(RedisTier::open(url, options)?)),
};

/// A Redis database under a key prefix.
#[derive(Debug)]
pub struct RedisTier {
    client: RedisClient,
    /// How long an entry lives after its last write or hit; `None`: forever.
    expiry: Option<Duration>,
}

impl RedisTier {
    /// Connects lazily: nothing is contacted yet.
    pub fn open(url: &Url, options: TierOptions) -> Result<RedisTier, RemoteError> {
        let target = Target::parse(url).map_err(|e| RemoteError::Setup {
            remote: options.shown.clone(),
            reason: e.to_string(),
        })?;
        let expiry = options.expiry;
        let client = RedisClient::new(&target, options)?;
        Ok(RedisTier { client, expiry })
    }
}

impl Tier for RedisTier {
    /// In one `GET`, the value in the `Vec` the reply was parsed into.
    fn get(&self, path: &str) -> Result<Option<Bytes>, RemoteError> {
        Ok(self.client.get_value(path)?.map(Bytes::from))
    }

    fn get_parts(
        &self,
        path: &str,
        part: &mut dyn FnMut(Bytes) -> bool,
    ) -> Result<bool, RemoteError> {
        self.client.get_parts(path, part)
    }

    fn put(&self, path: &str, value: Vec<u8>) -> Result<(), RemoteError> {
        self.client.put_value(path, &value, self.expiry)
    }

    /// A refused connection fails at once here, not after a timeout.
    fn reach(&self) -> Result<(), RemoteError> {
        self.client.ping()
    }

    fn touch(&self, path: &str) -> Result<(), RemoteError> {
        match self.expiry {
            Some(expiry) => self.client.refresh_expiry(path, expiry),
            None => Ok(()),
        }
    }

    fn lease(&self, path: &str) -> Result<LeaseAttempt, RemoteError> {
        self.client.try_acquire(path)
    }

    fn lease_holder(&self, path: &str) -> Result<Option<String>, RemoteError> {
        self.client.holder(path)
    }
}

#[cfg(test)]
mod tests {
    use super::super::redis_client::DEFAULT_PREFIX;
    use super::*;

    fn redis(text: &str) -> Target {
        Target::parse(&Url::parse(text).unwrap()).unwrap()
    }

    #[test]
    fn redis_forms() {
        let r = redis("redis://127.0.0.1:6380/2");
        assert_eq!((r.host.as_str(), r.port, r.db), ("127.0.0.1", 6380, 2));
        assert_eq!(r.prefix, DEFAULT_PREFIX);
        let r = redis("redis://cache.example");
        assert_eq!((r.port, r.db), (6379, 0));
        assert_eq!(r.parsed().shown, "redis://cache.example:6379/0");
        let r = redis("redis://h:1/0/team/a");
        assert_eq!(r.prefix, "team/a");
        let r = redis("redis://alice:s%40cret@h:1/3");
        assert_eq!(r.username.as_deref(), Some("alice"));
        assert_eq!(r.password.as_deref(), Some("s@cret"));
        let r = redis("redis://[::1]:7000/1");
        assert_eq!(r.host, "::1");
        assert_eq!(r.parsed().shown, "redis://[::1]:7000/1");
    }
}
