//! The Redis backends, the ones that lease: one server, `redis://[USER[:PASSWORD]@]HOST[:PORT][/DB[/PREFIX…]]`,
//! or a cluster, `redis-cluster://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT…][/PREFIX…]`
//! (`redis_target.rs`); `rediss://` and `rediss-cluster://` over TLS (the server verified
//! against `remote_ca_file` or the system's roots; mutual TLS with `remote_cert_file` and
//! `remote_key_file`; the password best given in `remote_password_file`).
//! Everything — entries (`SET … PX` on every write, so an entry lives the cache's TTL after its
//! last write or hit), reads in parts, the compile lease, the expiry refresh after a hit and a
//! quick PING — goes through one client (`redis_client.rs`) on one connection.
//!
//! On a cluster, the digest in every key is its hash tag (`PREFIX/entries-v1/{DIGEST}`,
//! `PREFIX/leases/{DIGEST}`): an entry and its lease live in one slot, so on one node, and the
//! entries spread over the nodes as their digests do.

use std::borrow::Cow;
use std::time::Duration;

use bytes::Bytes;
use url::Url;

use super::redis_client::RedisClient;
use super::redis_target::Target;
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

pub const CLUSTER: Backend = Backend {
    schemes: &["redis-cluster", "rediss-cluster"],
    form: "redis-cluster://HOST:PORT,HOST:PORT (rediss-cluster:// with TLS)",
    ..BACKEND
};

/// A Redis database under a key prefix.
#[derive(Debug)]
pub struct RedisTier {
    client: RedisClient,
    /// A cluster: keys carry hash tags.
    cluster: bool,
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
        Ok(RedisTier {
            client,
            cluster: target.cluster,
            expiry,
        })
    }

    /// The key of `path`: on a cluster, [`hash_tagged`].
    fn key<'p>(&self, path: &'p str) -> Cow<'p, str> {
        if self.cluster {
            Cow::Owned(hash_tagged(path))
        } else {
            Cow::Borrowed(path)
        }
    }
}

impl Tier for RedisTier {
    /// In one `GET`, the value in the `Vec` the reply was parsed into.
    fn get(&self, path: &str) -> Result<Option<Bytes>, RemoteError> {
        Ok(self.client.get_value(&self.key(path))?.map(Bytes::from))
    }

    fn get_parts(
        &self,
        path: &str,
        part: &mut dyn FnMut(Bytes) -> bool,
    ) -> Result<bool, RemoteError> {
        self.client.get_parts(&self.key(path), part)
    }

    fn put(&self, path: &str, value: Vec<u8>) -> Result<(), RemoteError> {
        self.client.put_value(&self.key(path), &value, self.expiry)
    }

    /// A refused connection fails at once here, not after a timeout.
    fn reach(&self) -> Result<(), RemoteError> {
        self.client.ping()
    }

    fn touch(&self, path: &str) -> Result<(), RemoteError> {
        match self.expiry {
            Some(expiry) => self.client.refresh_expiry(&self.key(path), expiry),
            None => Ok(()),
        }
    }

    fn lease(&self, path: &str) -> Result<LeaseAttempt, RemoteError> {
        self.client.try_acquire(&self.key(path))
    }

    fn lease_holder(&self, path: &str) -> Result<Option<String>, RemoteError> {
        self.client.holder(&self.key(path))
    }
}

/// `path` with its last segment (the digest) as the hash tag: `DIR/{LAST}`.
fn hash_tagged(path: &str) -> String {
    match path.rsplit_once('/') {
        Some((dir, last)) => format!("{dir}/{{{last}}}"),
        None => format!("{{{path}}}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_the_hash_tag_so_an_entry_and_its_lease_share_a_slot() {
        assert_eq!(
            hash_tagged("team/entries-v1/ab12"),
            "team/entries-v1/{ab12}"
        );
        assert_eq!(hash_tagged("team/leases/ab12"), "team/leases/{ab12}");
        assert_eq!(hash_tagged("ab12"), "{ab12}");
    }
}
