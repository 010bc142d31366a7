//! The remote tier's services, behind `mck-store`'s [`Tier`] trait: the cache's contract (the
//! trait, the key layout, the HMAC seal, the circuit breaker, the tiered lookup) stays in the
//! store, which needs neither opendal nor a runtime; what talks to a server lives here. Adding
//! a service is one more [`Tier`] implementation and one arm in [`open_tier`].
//!
//! Files:
//! - `url`: parsing `--remote=URL` into the store's [`RemoteUrl`], and a chain of tiers;
//! - `service`: [`Tier`] over an opendal operator (entries as objects; S3, GCS) and its timeouts;
//! - `buckets`: the S3 and GCS builders, from the URL and the AWS / Google environment;
//! - `redis`: the Redis [`Tier`]: entries through opendal, plus `lease`: the compile lease
//!   (`SET NX PX`, renewed, released by token) and expiry refresh.
//!
//! [`tiered`] is the one place a local store gets its chain of remote tiers.

#[cfg(any(feature = "remote-s3", feature = "remote-gcs"))]
mod buckets;
mod lease;
mod redis;
mod service;
mod url;

use mck_store::remote::{RemoteError, RemoteUrl, Tier, TierOptions};
use mck_store::{Store, Tiered};

pub use lease::PART_BYTES;
use redis::RedisTier;
use service::ObjectStore;

pub use url::{
    DEFAULT_REDIS_PORT, UrlError, parse as parse_url, parse_chain,
    parse_supported as parse_supported_url, parse_tier, redact,
};

/// `local` with the chain of remote tiers its settings name behind it (see [`Tiered::over`]).
pub fn tiered(local: Store) -> Tiered {
    Tiered::over(local, open_tier)
}

/// The implementation for `url` (nothing is contacted yet): the only place that picks one.
pub fn open_tier(url: &RemoteUrl, options: TierOptions) -> Result<Box<dyn Tier>, RemoteError> {
    Ok(match url {
        RemoteUrl::Redis(target) => Box::new(RedisTier::open(url, target, options)?),
        RemoteUrl::S3(_) | RemoteUrl::Gcs(_) => Box::new(ObjectStore::open(
            url,
            options.shown,
            options.timeout,
            options.expiry,
        )?),
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use mck_store::remote::{DEFAULT_LEASE, Remote, RemoteSettings, TierOptions, state_file_name};
    use mck_store::{Digest, ManualClock};

    use super::*;

    /// A remote at `url` on a port nobody listens on (a refused connection, no timeout).
    fn refused_at(dir: &Path, url: &str) -> Remote {
        let tier = parse_tier(url).unwrap();
        let clock = Arc::new(ManualClock::new(1_000));
        let settings = RemoteSettings::default();
        Remote::open(
            &tier,
            &settings,
            DEFAULT_LEASE,
            dir,
            0o600,
            clock,
            open_tier,
        )
        .unwrap()
    }

    fn refused(dir: &Path) -> Remote {
        refused_at(dir, "redis://127.0.0.1:1/0/team")
    }

    #[test]
    fn a_failing_tier_opens_the_breaker_and_later_calls_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let remote = refused(dir.path());
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

    /// Redis leases, buckets do not; `RemoteUrl::leases` (what `cache stats` shows) says the
    /// same as each tier.
    #[test]
    fn redis_is_the_tier_that_leases() {
        let dir = tempfile::tempdir().unwrap();
        let mut urls = vec![("redis://127.0.0.1:1/0", true)];
        // The slim build (`--no-default-features`) has no buckets to ask.
        if cfg!(feature = "remote-s3") {
            urls.push(("s3://b/p?endpoint=http://127.0.0.1:1&region=r", false));
        }
        if cfg!(feature = "remote-gcs") {
            urls.push(("gcs://b/p", false));
        }
        for (text, leases) in urls {
            let clock = Arc::new(ManualClock::new(1_000));
            let breaker = Arc::new(mck_store::remote::Breaker::new(
                text.to_owned(),
                dir.path().join(state_file_name(text)),
                DEFAULT_LEASE,
                0o600,
                clock,
            ));
            let options = TierOptions {
                shown: text.to_owned(),
                timeout: DEFAULT_LEASE,
                expiry: None,
                lease: DEFAULT_LEASE,
                breaker,
            };
            let url = parse_url(text).unwrap();
            let tier = open_tier(&url, options).unwrap();
            assert_eq!((tier.leases(), url.leases()), (leases, leases), "{text}");
        }
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
            Ok(mck_store::remote::LeaseAttempt::Unsupported)
        ));
    }
}
