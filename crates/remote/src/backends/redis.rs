//! The Redis backend, and the one that leases: `redis://[USER:PASSWORD@]HOST[:PORT][/DB[/PREFIX…]]`.
//! Everything — entries (`SET … PX` on every write, so an entry lives the cache's TTL after its
//! last write or hit), reads in parts, the compile lease, the expiry refresh after a hit and a
//! quick PING — goes through one client (`redis_client.rs`) on one connection.

use std::time::Duration;

use bytes::Bytes;
use url::Url;

use super::redis_client::RedisClient;
use crate::error::RemoteError;
use crate::schemes::Backend;
use crate::tier::{LeaseAttempt, Tier, TierOptions};
use crate::tier_url::{Parsed, TierUrl, UrlError, path_segments, percent_decode};

/// Default key prefix inside a Redis database.
pub const DEFAULT_PREFIX: &str = "mlir-cache-key";
/// Redis's port when the URL names none.
pub const DEFAULT_PORT: u16 = 6379;

pub const BACKEND: Backend = Backend {
    schemes: &["redis", "rediss"],
    form: "redis://HOST:PORT/DB",
    leases: true,
    parse: |url| Target::parse(url).map(|t| t.parsed()),
    open: |url, options| Ok(Box::new(RedisTier::open(url, options)?)),
};

/// A Redis server, database and key prefix, as the URL names them.
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub db: i64,
    pub username: Option<String>,
    pub password: Option<String>,
    /// Keys are `PREFIX/…`; never empty, no leading or trailing `/`.
    pub prefix: String,
}

impl Target {
    pub fn parse(url: &Url) -> Result<Target, UrlError> {
        if url.scheme() == "rediss" {
            return Err(UrlError(
                "TLS Redis (rediss://) is not supported; use redis:// on a trusted network or a TLS tunnel"
                    .to_owned(),
            ));
        }
        let host = match url.host_str() {
            Some(h) if !h.is_empty() => h.trim_start_matches('[').trim_end_matches(']'),
            _ => {
                return Err(UrlError(
                    "a redis URL needs a host: redis://HOST:PORT/DB".into(),
                ));
            }
        };
        if url.query().is_some() || url.fragment().is_some() {
            return Err(UrlError(
                "a redis URL takes no query or fragment: redis://HOST:PORT/DB[/PREFIX]".into(),
            ));
        }
        let mut segments = path_segments(url)?;
        let db = if segments.is_empty() {
            0
        } else {
            let first = segments.remove(0);
            first
                .parse::<i64>()
                .ok()
                .filter(|n| (0..=1_000_000).contains(n))
                .ok_or_else(|| {
                    UrlError(format!(
                        "expected a database number after the host (redis://HOST:PORT/DB), got {first:?}"
                    ))
                })?
        };
        let prefix = if segments.is_empty() {
            DEFAULT_PREFIX.to_owned()
        } else {
            segments.join("/")
        };
        let decode = |s: &str| -> Result<String, UrlError> {
            percent_decode(s)
                .ok_or_else(|| UrlError("the user name or password is not valid UTF-8".into()))
        };
        let username = (!url.username().is_empty())
            .then(|| decode(url.username()))
            .transpose()?;
        let password = url.password().map(decode).transpose()?;
        Ok(Target {
            host: host.to_owned(),
            port: url.port().unwrap_or(DEFAULT_PORT),
            db,
            username,
            password,
            prefix,
        })
    }

    /// The prefix, and the URL as shown: port and database always, the prefix unless it is the
    /// default, the password as `***`.
    fn parsed(&self) -> Parsed {
        let mut shown = "redis://".to_owned();
        match (&self.username, &self.password) {
            (Some(u), Some(_)) => shown += &format!("{u}:***@"),
            (None, Some(_)) => shown += ":***@",
            (Some(u), None) => shown += &format!("{u}@"),
            (None, None) => {}
        }
        if self.host.contains(':') {
            shown += &format!("[{}]", self.host);
        } else {
            shown += &self.host;
        }
        shown += &format!(":{}/{}", self.port, self.db);
        if self.prefix != DEFAULT_PREFIX {
            shown += &format!("/{}", self.prefix);
        }
        Parsed {
            prefix: self.prefix.clone(),
            shown,
        }
    }
}

/// A Redis database under a key prefix.
#[derive(Debug)]
pub struct RedisTier {
    client: RedisClient,
    /// How long an entry lives after its last write or hit; `None`: forever.
    expiry: Option<Duration>,
}

impl RedisTier {
    /// Connects lazily: nothing is contacted yet.
    pub fn open(url: &TierUrl, options: TierOptions) -> Result<RedisTier, RemoteError> {
        let target = Target::parse(url.url()).map_err(|e| RemoteError::Setup {
            remote: options.shown.clone(),
            reason: e.to_string(),
        })?;
        let client = RedisClient::new(
            &target,
            options.shown,
            options.timeout,
            options.lease,
            options.breaker,
        )?;
        Ok(RedisTier {
            client,
            expiry: options.expiry,
        })
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
