//! The tiers of the cache, in one place: this host's store (`mck-store`) first, then the chain
//! of shared remote tiers — Redis, S3-compatible stores, GCS — so every host reuses what any
//! host compiled. The contract every backend implements, the chain (lookup order, back-fill,
//! compile once across tiers), the HMAC seal, the circuit breaker, the chain's counters and
//! every backend live here; the local store names none of them.
//!
//! Files:
//! - `settings`: the chain's settings as plain values; `credentials`: TLS files and a password; `tier_url`: a tier's URL, checked by its
//!   backend, and a chain of them; `schemes`: the scheme table that picks the backend;
//!   `backend`: what a backend is ([`Backend`]) and the URL pieces backends share;
//! - `tier`: the [`Tier`] trait every backend implements; `backends/`: one file per backend
//!   (`redis.rs` with its client `redis_client.rs`; `buckets.rs` over `object_store.rs`);
//! - `remote`: one opened tier ([`Remote`]) — a backend inside the key layout, the seal (`auth`),
//!   its breaker (`breaker`) and the read-only setting; `receive`: a value verified as its parts
//!   arrive; `error`: what can go wrong, by operation;
//! - `chain`: [`Tiered`], the store with the chain behind it; `backfill`: a remote hit's copies,
//!   written beside the caller; `compile`: the one compile-once API on it;
//! - `stats`: the chain's counters and its part of `cache stats`.
//!
//! A compile wrapper calls [`Tiered::compile_once`]: look up; on a miss claim the key (local
//! lock, remote lease); look up again; compile; store the result or the failure; release.

mod auth;
mod backend;
mod backends;
mod backfill;
mod breaker;
mod chain;
mod compile;
mod credentials;
mod error;
mod receive;
mod remote;
mod schemes;
mod settings;
mod stats;
mod tier;
mod tier_url;

pub use auth::{AuthError, MAX_SECRET_LEN, MIN_SECRET_LEN, Secret, TAG_LEN};
pub use backend::{Backend, OpenTier, Parsed, UrlError};
pub use backends::PART_BYTES;
pub use breaker::{Breaker, marked_down_until, state_file_name};
pub use chain::{Claim, CompileClaim, Tiered};
pub use compile::{Attempt, Compiled, Served, Unstored};
pub use credentials::Credentials;
pub use error::{RemoteError, ServiceError, one_line, show_ms};
pub use receive::{Digests, Received};
pub use remote::Remote;
pub use settings::{DEFAULT_LEASE, DEFAULT_RETRY_AFTER, DEFAULT_TIMEOUT, RemoteSettings};
pub use stats::{CacheStats, RemoteStats, TierEvent, TierStats, Total};
pub use tier::{Lease, LeaseAttempt, Tier, TierOptions};
pub use tier_url::{READ_ONLY_OPTION, RemoteTier, TierUrl, parse_chain, parse_tier, redact};

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use mck_store::{Digest, ManualClock};

    use super::*;

    /// A remote at `url` on a port nobody listens on (a refused connection, no timeout).
    fn refused_at(dir: &Path, url: &str) -> Remote {
        let tier = parse_tier(url).unwrap();
        let clock = Arc::new(ManualClock::new(1_000));
        let settings = RemoteSettings::default();
        Remote::open(&tier, &settings, DEFAULT_LEASE, dir, 0o600, clock, None).unwrap()
    }

    #[test]
    fn a_failing_tier_opens_the_breaker_and_later_calls_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let remote = refused_at(dir.path(), "redis://127.0.0.1:1/0/team");
        let digest = Digest::parse(&"ab".repeat(32)).unwrap();
        assert_eq!(
            remote.entry_path(&digest),
            format!("team/entries-v1/{}", "ab".repeat(32))
        );
        let first = remote.get(&digest).unwrap_err();
        assert!(!first.is_skip(), "{first}");
        assert!(remote.down_until().is_some());
        assert!(remote.try_lease(&digest).unwrap_err().is_skip());
        assert!(remote.put(&digest, &[b"x"]).unwrap_err().is_skip());
    }

    /// A bucket has no lease: asking is no call, so even with the breaker open it is no skip
    /// (a skip would be counted in `cache stats`).
    #[cfg(feature = "remote-s3")]
    #[test]
    fn a_bucket_answers_unsupported_without_a_call() {
        let dir = tempfile::tempdir().unwrap();
        let url = "s3://bucket/team?endpoint=http://127.0.0.1:1&region=us-east-1";
        let remote = refused_at(dir.path(), url);
        let digest = Digest::parse(&"cd".repeat(32)).unwrap();
        assert!(!remote.get(&digest).unwrap_err().is_skip());
        assert!(remote.down_until().is_some());
        assert!(matches!(
            remote.try_lease(&digest),
            Ok(LeaseAttempt::Unsupported)
        ));
        assert!(!remote.leases());
    }
}
