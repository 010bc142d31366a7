//! Where the shared tier lives, as data: which service, and where inside it ([`RemoteUrl`]). The
//! settings carry one; parsing `--remote=URL` is `mck-remote`'s (`url.rs`), as are the services.
//! Passwords never appear in messages: [`RemoteUrl`] displays itself with the password replaced
//! by `***`.
//!
//! | form | service |
//! |---|---|
//! | `redis://[USER:PASSWORD@]HOST[:PORT][/DB[/PREFIX…]]` | Redis (first-class, tested) |
//! | `s3://BUCKET[/PREFIX…][?endpoint=URL&region=NAME]` | S3-compatible (cargo feature `remote-s3`) |
//! | `gcs://BUCKET[/PREFIX…][?endpoint=URL&credential_path=FILE]` | Google Cloud Storage (`remote-gcs`) |
//!
//! A chain holds several tiers ([`RemoteTier`]), fastest first; `read_only=1` in a tier's query
//! (`redis://h:6379/0?read_only=1`) makes that one tier read-only.

use std::fmt;

/// Default key prefix inside a Redis database (buckets default to their root).
pub const DEFAULT_REDIS_PREFIX: &str = "mlir-cache-key";

/// The query option that makes one tier of a chain read-only.
pub const READ_ONLY_OPTION: &str = "read_only";

/// One tier of the chain: where it lives and whether this host may write to it.
#[derive(Clone, PartialEq, Eq, serde::Serialize)]
pub struct RemoteTier {
    pub url: RemoteUrl,
    /// `read_only=1` in its URL: read it, never write to it (nor take its leases).
    pub read_only: bool,
}

impl RemoteTier {
    /// A writable tier.
    pub fn writable(url: RemoteUrl) -> RemoteTier {
        RemoteTier {
            url,
            read_only: false,
        }
    }
}

/// As written in the configuration file: the URL (password redacted) and its read-only mark.
impl fmt::Display for RemoteTier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.url)?;
        if self.read_only {
            let has_query =
                matches!(&self.url, RemoteUrl::S3(b) | RemoteUrl::Gcs(b) if !b.options.is_empty());
            write!(
                f,
                "{}{READ_ONLY_OPTION}=1",
                if has_query { '&' } else { '?' }
            )?;
        }
        Ok(())
    }
}

impl fmt::Debug for RemoteTier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RemoteTier({self})")
    }
}

/// A parsed remote URL.
#[derive(Clone, PartialEq, Eq)]
pub enum RemoteUrl {
    Redis(RedisTarget),
    S3(BucketTarget),
    Gcs(BucketTarget),
}

/// A Redis server, database and key prefix.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisTarget {
    pub host: String,
    pub port: u16,
    pub db: i64,
    pub username: Option<String>,
    pub password: Option<String>,
    /// Keys are `PREFIX/…`; never empty, no leading or trailing `/`.
    pub prefix: String,
}

/// A bucket, a prefix inside it, and the service options given in the query.
#[derive(Clone, PartialEq, Eq)]
pub struct BucketTarget {
    pub bucket: String,
    /// Objects are `PREFIX/…` (empty: the bucket's root); no leading or trailing `/`.
    pub prefix: String,
    /// `(name, value)` pairs from the query, each one the service accepts.
    pub options: Vec<(String, String)>,
}

impl RemoteUrl {
    /// The service's name, for messages and the cargo feature it needs.
    pub fn service(&self) -> &'static str {
        match self {
            RemoteUrl::Redis(_) => "redis",
            RemoteUrl::S3(_) => "s3",
            RemoteUrl::Gcs(_) => "gcs",
        }
    }

    /// Whether this service's tier takes compile leases (one compile per key across hosts):
    /// Redis does (`SET NX`); buckets do not (no conditional create on the servers tested:
    /// docs/remote-and-trust.md). mck-remote's tests hold its tiers' `Tier::leases` to this.
    pub fn leases(&self) -> bool {
        matches!(self, RemoteUrl::Redis(_))
    }

    /// The key (object path) prefix every entry and lease lives under.
    pub fn prefix(&self) -> &str {
        match self {
            RemoteUrl::Redis(r) => &r.prefix,
            RemoteUrl::S3(b) | RemoteUrl::Gcs(b) => &b.prefix,
        }
    }
}

impl fmt::Display for RemoteUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteUrl::Redis(r) => {
                write!(f, "redis://")?;
                match (&r.username, &r.password) {
                    (Some(u), Some(_)) => write!(f, "{u}:***@")?,
                    (None, Some(_)) => write!(f, ":***@")?,
                    (Some(u), None) => write!(f, "{u}@")?,
                    (None, None) => {}
                }
                if r.host.contains(':') {
                    write!(f, "[{}]", r.host)?;
                } else {
                    write!(f, "{}", r.host)?;
                }
                write!(f, ":{}/{}", r.port, r.db)?;
                if r.prefix != DEFAULT_REDIS_PREFIX {
                    write!(f, "/{}", r.prefix)?;
                }
                Ok(())
            }
            RemoteUrl::S3(b) | RemoteUrl::Gcs(b) => {
                write!(f, "{}://{}", self.service(), b.bucket)?;
                if !b.prefix.is_empty() {
                    write!(f, "/{}", b.prefix)?;
                }
                for (i, (n, v)) in b.options.iter().enumerate() {
                    write!(f, "{}{n}={v}", if i == 0 { '?' } else { '&' })?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Debug for RemoteUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RemoteUrl({self})")
    }
}

impl serde::Serialize for RemoteUrl {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
