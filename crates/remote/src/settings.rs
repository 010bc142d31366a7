//! The remote tiers' settings (`--remote…` flags, the configuration file's `remote…` keys),
//! as plain values; `mck-settings` reads them from their sources.

use std::time::Duration;

use serde::Serialize;

use crate::auth::Secret;
use crate::credentials::Credentials;
use crate::tier_url::RemoteTier;

/// Default timeout of one remote operation.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
/// Default time the remote is skipped after a failure.
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(30);
/// Default lease expiry (renewed every third of it while compiling).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// The remote tiers' settings (`--remote…` flags).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RemoteSettings {
    /// The chain, fastest first (`--remote` once per tier); empty: no remote tier.
    pub tiers: Vec<RemoteTier>,
    /// Read every remote tier, never write to one (no entries, no leases).
    pub read_only: bool,
    /// Bound on one remote operation.
    #[serde(serialize_with = "serialize_secs")]
    pub timeout: Duration,
    /// After a failure, how long the remote is skipped.
    #[serde(serialize_with = "serialize_secs")]
    pub retry_after: Duration,
    /// Expiry of a compile lease.
    #[serde(serialize_with = "serialize_secs")]
    pub lease: Duration,
    /// The shared secret that authenticates every value (`auth.rs`); `None`: values are trusted.
    pub secret: Option<Secret>,
    /// How the tiers' servers are reached: TLS files and a password from a file.
    pub credentials: Credentials,
}

fn serialize_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl Default for RemoteSettings {
    fn default() -> Self {
        RemoteSettings {
            tiers: Vec::new(),
            read_only: false,
            timeout: DEFAULT_TIMEOUT,
            retry_after: DEFAULT_RETRY_AFTER,
            lease: DEFAULT_LEASE,
            secret: None,
            credentials: Credentials::default(),
        }
    }
}
