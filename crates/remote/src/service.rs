//! [`ObjectStore`]: a remote tier over opendal (the storage layer sccache uses), one object per
//! entry holding the entry file's exact bytes (`entry.rs`, self-checksummed, so a reader verifies
//! what it gets as it would a local file). It is the whole tier for buckets and the entry half
//! of the Redis tier (`redis.rs`). opendal's API is async; a small current-thread tokio runtime
//! drives it, and every call is bounded by a timeout so a slow or silent server costs at most
//! that long.
//!
//! Redis is built in; S3-compatible stores and GCS are compiled only with the cargo features
//! `remote-s3` / `remote-gcs`. Expiry: Redis sets it on every write (`SET … EX`); buckets rely on
//! their own lifecycle rules.

use std::future::Future;
use std::time::Duration;

use opendal::{ErrorKind, Operator};

use mck_store::remote::RemoteError;
use mck_store::remote::RemoteUrl;
use mck_store::remote::Tier;

/// Connections opendal may keep to Redis: one process runs one compile at a time.
const POOL_SIZE: usize = 4;
/// Writes get one more second per this many bytes beyond the base timeout.
const WRITE_BYTES_PER_SECOND: u64 = 64 << 20;

/// Entries stored in an opendal service.
pub struct ObjectStore {
    runtime: tokio::runtime::Runtime,
    op: Operator,
    remote: String,
    timeout: Duration,
}

// Not derived: opendal's and tokio's own Debug output says nothing a log reader needs.
impl std::fmt::Debug for ObjectStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ObjectStore({}, timeout {:?})",
            self.remote, self.timeout
        )
    }
}

impl ObjectStore {
    /// Builds the operator for `url` (nothing is contacted yet). `expiry`: how long a written
    /// entry lives on a server that supports it.
    pub fn open(
        url: &RemoteUrl,
        remote: String,
        timeout: Duration,
        expiry: Option<Duration>,
    ) -> Result<ObjectStore, RemoteError> {
        let setup = |reason: String| RemoteError::Setup {
            remote: remote.clone(),
            reason,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| setup(format!("cannot start the I/O runtime: {e}")))?;
        let op = build_operator(url, expiry).map_err(|e| setup(e.to_string()))?;
        Ok(ObjectStore {
            runtime,
            op,
            remote,
            timeout,
        })
    }

    /// Runs `fut` to completion or until `limit`.
    fn bounded<T>(
        &self,
        op: &'static str,
        limit: Duration,
        fut: impl Future<Output = T>,
    ) -> Result<T, RemoteError> {
        self.runtime
            .block_on(async { tokio::time::timeout(limit, fut).await })
            .map_err(|_| RemoteError::Timeout {
                op,
                remote: self.remote.clone(),
                after: limit,
            })
    }

    fn service_error(&self, op: &'static str, source: opendal::Error) -> RemoteError {
        RemoteError::Service {
            op,
            remote: self.remote.clone(),
            source: Box::new(source),
        }
    }
}

impl Tier for ObjectStore {
    fn get(&self, path: &str) -> Result<Option<Vec<u8>>, RemoteError> {
        let result = self.bounded("read an entry", self.timeout, self.op.read(path))?;
        match result {
            Ok(buffer) => Ok(Some(buffer.to_vec())),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(source) => Err(self.service_error("read an entry", source)),
        }
    }

    fn put(&self, path: &str, value: Vec<u8>) -> Result<(), RemoteError> {
        let extra = Duration::from_secs(value.len() as u64 / WRITE_BYTES_PER_SECOND);
        self.bounded(
            "write an entry",
            self.timeout.saturating_add(extra),
            self.op.write(path, value),
        )?
        .map(|_| ())
        .map_err(|source| self.service_error("write an entry", source))
    }
}

impl Drop for ObjectStore {
    fn drop(&mut self) {
        // Never wait for a connection task stuck on a dead server.
        let runtime = std::mem::replace(
            &mut self.runtime,
            match tokio::runtime::Builder::new_current_thread().build() {
                Ok(rt) => rt,
                Err(_) => return,
            },
        );
        runtime.shutdown_background();
    }
}

fn build_operator(url: &RemoteUrl, expiry: Option<Duration>) -> Result<Operator, opendal::Error> {
    match url {
        RemoteUrl::Redis(r) => {
            let host = if r.host.contains(':') {
                format!("[{}]", r.host)
            } else {
                r.host.clone()
            };
            let mut b = opendal::services::Redis::default()
                .endpoint(&format!("redis://{host}:{}", r.port))
                .db(r.db)
                .root("/")
                .connection_pool_max_size(POOL_SIZE);
            if let Some(u) = &r.username {
                b = b.username(u);
            }
            if let Some(p) = &r.password {
                b = b.password(p);
            }
            // Redis's EX is whole seconds, and EX 0 is an error: no expiry below one second.
            if let Some(t) = expiry.filter(|t| t.as_secs() >= 1) {
                b = b.default_ttl(t);
            }
            Operator::new(b)
        }
        #[cfg(feature = "remote-s3")]
        RemoteUrl::S3(t) => {
            opendal::install_default();
            let mut b = opendal::services::S3::default().bucket(&t.bucket).root("/");
            for (name, value) in &t.options {
                b = match name.as_str() {
                    "endpoint" => b.endpoint(value),
                    _ => b.region(value),
                };
            }
            Operator::new(b)
        }
        #[cfg(feature = "remote-gcs")]
        RemoteUrl::Gcs(t) => {
            opendal::install_default();
            let mut b = opendal::services::Gcs::default()
                .bucket(&t.bucket)
                .root("/");
            for (name, value) in &t.options {
                b = match name.as_str() {
                    "endpoint" => b.endpoint(value),
                    _ => b.credential_path(value),
                };
            }
            Operator::new(b)
        }
        #[allow(unreachable_patterns)]
        other => Err(opendal::Error::new(
            ErrorKind::Unsupported,
            format!(
                "this build has no {} support: rebuild with `--features remote-{}`",
                other.service(),
                other.service()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redis_operator_is_built_without_contacting_the_server() {
        let url = crate::url::parse("redis://127.0.0.1:1/0").unwrap();
        assert!(build_operator(&url, Some(Duration::from_secs(60))).is_ok());
    }

    /// Only in builds with the features; there is no such service here to talk to.
    #[cfg(feature = "remote-s3")]
    #[test]
    fn an_s3_operator_is_built_from_the_url() {
        let url =
            crate::url::parse("s3://bucket/team?endpoint=http://127.0.0.1:9&region=us-east-1")
                .unwrap();
        build_operator(&url, None).unwrap();
    }

    #[cfg(feature = "remote-gcs")]
    #[test]
    fn a_gcs_operator_is_built_from_the_url() {
        let url = crate::url::parse("gcs://bucket/team").unwrap();
        build_operator(&url, None).unwrap();
    }
}
