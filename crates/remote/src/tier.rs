//! The one narrow interface every remote storage implements ([`Tier`]): read and write a value
//! at an object path, and, where the service can, a compile lease and an expiry refresh. What
//! is the same for every service — the key layout, the HMAC seal, the circuit breaker and the
//! read-only setting — is done once around it (`remote.rs`), and the entry checks once in
//! `chain.rs`, so a new service is one more implementation (`backends/`) and one line in the
//! scheme table (`schemes.rs`, each entry a `backend.rs` [`crate::backend::Backend`]), never a branch elsewhere.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::breaker::Breaker;
use crate::credentials::Credentials;
use crate::error::RemoteError;

/// A held compile lease: released when dropped (or, if this process dies, when it expires).
pub trait Lease: Debug + Send {
    /// The key or object path the lease lives at.
    fn key(&self) -> &str;
}

/// What a lease request answered, including "this remote has no leases".
#[derive(Debug)]
pub enum LeaseAttempt {
    Acquired(Box<dyn Lease>),
    /// Another host holds it (its token).
    Held(String),
    /// No lease on this service (buckets), or not ours to take (read-only) and nobody holds it.
    Unsupported,
}

/// One remote storage service. Paths are complete keys (`PREFIX/entries-v1/<digest>`); values
/// are opaque bytes. Every call is bounded by the tier's timeout.
pub trait Tier: Debug + Send + Sync {
    /// The value at `path`; `None` when absent.
    fn get(&self, path: &str) -> Result<Option<Bytes>, RemoteError>;

    /// As [`Tier::get`], handing the value to `part` piece by piece as it arrives, so that the
    /// caller can check each piece meanwhile (`receive.rs`); stops early when `part` returns
    /// false. True when the value exists. By default: the whole value in one piece.
    fn get_parts(
        &self,
        path: &str,
        part: &mut dyn FnMut(Bytes) -> bool,
    ) -> Result<bool, RemoteError> {
        Ok(match self.get(path)? {
            Some(value) => {
                part(value);
                true
            }
            None => false,
        })
    }

    /// Stores `value` at `path`, replacing what is there.
    fn put(&self, path: &str, value: Vec<u8>) -> Result<(), RemoteError>;

    /// A cheap check that the server answers, made before a process's first operation so a
    /// server that is down costs a refused connection rather than a timeout.
    fn reach(&self) -> Result<(), RemoteError> {
        Ok(())
    }

    /// After a hit: the value at `path` lives another expiry (where the service expires values
    /// itself; buckets rely on their lifecycle rules).
    fn touch(&self, _path: &str) -> Result<(), RemoteError> {
        Ok(())
    }

    /// Tries to take the compile lease at `path` (a backend whose [`crate::backend::Backend`]
    /// says it leases implements this and [`Tier::lease_holder`]).
    fn lease(&self, _path: &str) -> Result<LeaseAttempt, RemoteError> {
        Ok(LeaseAttempt::Unsupported)
    }

    /// Who holds the lease at `path`, if anyone (read-only clients wait on it, never take it).
    fn lease_holder(&self, _path: &str) -> Result<Option<String>, RemoteError> {
        Ok(None)
    }
}

/// How to reach a tier, beyond its URL.
pub struct TierOptions {
    /// The remote as shown in messages (password redacted).
    pub shown: String,
    /// Bound on one operation.
    pub timeout: Duration,
    /// How long a written or refreshed value lives, on a service that expires values itself.
    pub expiry: Option<Duration>,
    /// Expiry of a compile lease.
    pub lease: Duration,
    /// Told about failures that happen outside a call (a lease renewed in the background).
    pub breaker: Arc<Breaker>,
    /// TLS files and a password, for a backend whose server wants them.
    pub credentials: Credentials,
}
