//! [`Remote`]: one tier of the chain, opened — a [`Tier`] implementation inside what every
//! service gets alike: the key layout (`PREFIX/entries-v1/<digest>` for entries, the entry
//! format version in the name so another format never overwrites this one's, and
//! `PREFIX/leases/<digest>` for leases), the HMAC seal (`auth`), its own circuit breaker
//! (`breaker`) and the read-only setting.
//!
//! Nothing here may fail a compile or return damaged bytes: every operation has a short timeout,
//! a failure opens the circuit breaker (local only until `retry_after`), and what comes back is
//! verified as an entry file before anyone uses it (the chain does that). Checksums do not say
//! who wrote a value: with a shared secret every value is MACed, and without one, write access
//! to the remote is trusted access.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use mck_store::{Clock, Digest, UnixMillis};
use tracing::debug;

use crate::auth::{self, AuthError, Secret};
use crate::backend::OpenTier;
use crate::breaker::{Breaker, state_file_name};
use crate::error::RemoteError;
use crate::receive::{self, Received};
use crate::settings::RemoteSettings;
use crate::tier::{LeaseAttempt, Tier, TierOptions};
use crate::tier_url::RemoteTier;

/// An open remote tier: one [`Tier`] implementation inside what every service gets alike —
/// the key layout, the HMAC seal (`auth`), its own circuit breaker (`breaker`) and the
/// read-only setting.
#[derive(Debug)]
pub struct Remote {
    shown: String,
    prefix: String,
    read_only: bool,
    secret: Option<Secret>,
    tier: Box<dyn Tier>,
    /// Its backend takes compile leases.
    leases: bool,
    breaker: Arc<Breaker>,
    /// The server answered once in this process.
    reached: AtomicBool,
}

impl Remote {
    /// Sets up `tier` with the rest of `settings`. `expiry` is how long an entry lives on the
    /// server after its last write or hit (the cache's TTL); the tier's breaker keeps its mark
    /// in `state_dir` (a file named after the tier's URL, [`state_file_name`]); the backend its
    /// scheme picks sets up the service (`open`, where given, instead). Nothing is contacted
    /// yet.
    pub fn open(
        tier: &RemoteTier,
        settings: &RemoteSettings,
        expiry: Duration,
        state_dir: &Path,
        file_mode: u32,
        clock: Arc<dyn Clock>,
        open: Option<OpenTier>,
    ) -> Result<Remote, RemoteError> {
        let url = &tier.url;
        let read_only = settings.read_only || tier.read_only;
        let shown = url.to_string();
        let breaker = Arc::new(Breaker::new(
            shown.clone(),
            state_dir.join(state_file_name(&shown)),
            settings.retry_after,
            file_mode,
            clock,
        ));
        let tier = open.unwrap_or(url.backend().open)(
            url.url(),
            TierOptions {
                shown: shown.clone(),
                timeout: settings.timeout,
                expiry: (expiry.as_secs() >= 1).then_some(expiry),
                lease: settings.lease,
                breaker: breaker.clone(),
                credentials: settings.credentials.clone(),
            },
        )?;
        Ok(Remote {
            prefix: url.prefix().trim_matches('/').to_owned(),
            shown,
            read_only,
            secret: settings.secret.clone(),
            tier,
            leases: url.leases(),
            breaker,
            reached: AtomicBool::new(false),
        })
    }

    /// True when this process must not write to the remote.
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// True when values are authenticated with a shared secret.
    pub fn authenticated(&self) -> bool {
        self.secret.is_some()
    }

    /// The value stored for `digest`, unverified; `None` when absent. [`Remote::unseal`] says
    /// where its entry file starts, if it may be used at all.
    pub fn get(&self, digest: &Digest) -> Result<Option<Bytes>, RemoteError> {
        let path = self.entry_path(digest);
        self.guarded("get", || {
            self.reach()?;
            self.tier.get(&path)
        })
    }

    /// Stores an entry file (the concatenation of `parts`) for `digest`.
    pub fn put(&self, digest: &Digest, parts: &[&[u8]]) -> Result<(), RemoteError> {
        if self.read_only {
            return Err(RemoteError::Setup {
                remote: self.shown.clone(),
                reason: "read-only (--remote_read_only or read_only=1): not writing".to_owned(),
            });
        }
        let path = self.entry_path(digest);
        let bytes = auth::seal(self.secret.as_ref(), &path, parts);
        self.guarded("put", || {
            self.reach()?;
            self.tier.put(&path, bytes)
        })
    }

    /// As [`Remote::get`], with the value's digests computed while it arrived (`receive.rs`),
    /// for [`Remote::unseal`] and `entry::decode_digested`.
    pub fn receive(&self, digest: &Digest) -> Result<Option<Received>, RemoteError> {
        let path = self.entry_path(digest);
        self.guarded("get", || {
            self.reach()?;
            receive::receive(self.tier.as_ref(), &path, self.secret.as_ref())
        })
    }

    /// Where the entry file starts in `value`, read for `digest`; an error when a secret is
    /// configured and the value is not authenticated with it. `body_mac`: its MAC as
    /// [`Remote::receive`] computed it, or `None` (a value from [`Remote::get`]).
    pub fn unseal(
        &self,
        digest: &Digest,
        value: &[u8],
        body_mac: Option<hmac::Hmac<sha2::Sha256>>,
    ) -> Result<usize, AuthError> {
        auth::unseal(
            self.secret.as_ref(),
            &self.entry_path(digest),
            value,
            body_mac,
        )
    }

    /// After a hit: the entry lives another expiry (best effort; not read-only; a no-op on
    /// services that do not expire values themselves).
    pub fn refresh(&self, digest: &Digest) {
        if !self.read_only
            && let Err(e) = self.guarded("refresh", || self.tier.touch(&self.entry_path(digest)))
        {
            debug!("{e}");
        }
    }

    /// Asks for the compile lease of `digest`. A read-only client never takes one: it reports
    /// `Held` while another host holds it (so it can wait for the result), else `Unsupported`.
    pub fn try_lease(&self, digest: &Digest) -> Result<LeaseAttempt, RemoteError> {
        if !self.leases {
            return Ok(LeaseAttempt::Unsupported);
        }
        let key = self.lease_path(digest);
        if self.read_only {
            return self.guarded("read the lease", || {
                Ok(match self.tier.lease_holder(&key)? {
                    Some(h) => LeaseAttempt::Held(h),
                    None => LeaseAttempt::Unsupported,
                })
            });
        }
        self.guarded("take the lease", || self.tier.lease(&key))
    }

    /// Warns (once per process) that the remote was not used; `others`: other tiers of the
    /// chain go on.
    pub fn fallback(&self, err: &RemoteError, others: bool) {
        self.breaker.warn_once(err, others);
    }

    /// Until when the remote is marked down, if it is.
    pub fn down_until(&self) -> Option<UnixMillis> {
        self.breaker.down_until()
    }

    /// The remote as shown in messages (password redacted).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The key or object path of `digest`'s entry.
    pub fn entry_path(&self, digest: &Digest) -> String {
        self.path(&format!("entries-v1/{}", digest.as_str()))
    }

    /// The key of `digest`'s compile lease.
    pub fn lease_path(&self, digest: &Digest) -> String {
        self.path(&format!("leases/{}", digest.as_str()))
    }

    fn path(&self, rest: &str) -> String {
        if self.prefix.is_empty() {
            rest.to_owned()
        } else {
            format!("{}/{rest}", self.prefix)
        }
    }

    /// Before the first entry operation of a process, the tier's quick check (Redis: PING): a
    /// server that is down then costs a refused connection, not a timeout.
    fn reach(&self) -> Result<(), RemoteError> {
        if !self.reached.load(Ordering::Relaxed) {
            self.tier.reach()?;
            self.reached.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// True when this tier can lease (whether or not this client may take leases).
    pub fn leases(&self) -> bool {
        self.leases
    }

    /// Runs `op` unless the breaker is open; a failure opens it, a success closes it.
    fn guarded<T>(
        &self,
        op: &'static str,
        f: impl FnOnce() -> Result<T, RemoteError>,
    ) -> Result<T, RemoteError> {
        self.breaker.check(op)?;
        match f() {
            Ok(v) => {
                self.breaker.succeeded();
                Ok(v)
            }
            Err(e) => {
                self.breaker.trip(&e.to_string());
                Err(e)
            }
        }
    }
}
