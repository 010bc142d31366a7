//! The tiered cache a compile wrapper uses: this host's [`Store`] first, then the chain of shared
//! remote tiers (`remote.rs`, fastest first: `--remote` once per tier), so every host reuses what
//! any host compiled. Every remote tier is a [`Remote`] whatever its service: nothing here asks
//! which.
//!
//! - lookup: local; on a miss each tier in order; with a shared secret, a value whose HMAC tag
//!   does not verify is a miss (`auth.rs`); a remote entry is verified exactly as a local
//!   file is (`mck_store`'s entry checks: checksums, digest, key); a value that fails either check is counted
//!   and never used. A hit in tier k is back-filled into the local store and into every
//!   writable tier before k, so the next lookup stops earlier;
//! - claim before compiling: the local per-key `flock` (one compiler per host), then the lease
//!   of the first tier that has leases (one compiler per team); a host that finds the lease
//!   held waits for the result, up to the same timeout, then compiles itself;
//! - write: the result (or the failure record) goes to the local store and every writable remote
//!   tier; a remote gets the exact bytes of the entry file.
//!
//! A tier that is down, slow or returns garbage never fails a compile: each problem skips that
//! tier (the others go on), bumps the aggregate `remote_*` counters and the tier's own
//! (`stats.rs`) in `cache stats`, and warns once per process and tier.

use std::path::Path;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use tracing::{debug, info, warn};

use mck_store::history::{TierAnswer, What};
use mck_store::{
    Artefact, CacheKey, CachedFailure, CompileLock, DecodeError, EntryMeta, EntryState, Failure,
    Lookup, PutOutcome, Result, Store, StoreError, Streamed,
};

use crate::auth::AuthError;
use crate::backend::OpenTier;
use crate::backfill::Backfills;
use crate::error::RemoteError;
use crate::receive::Digests;
use crate::remote::Remote;
use crate::settings::RemoteSettings;
use crate::stats::{TierEvent, Total};
use crate::tier::{Lease, LeaseAttempt};

const FIRST_PAUSE: Duration = Duration::from_millis(50);
const MAX_PAUSE: Duration = Duration::from_secs(1);

/// The local store with the remote tiers behind it.
#[derive(Debug)]
pub struct Tiered {
    /// Copies of remote hits still being written. First, so that dropping joins them before
    /// the chain's last handle can go with a thread.
    backfills: Backfills,
    chain: Chain,
    settings: RemoteSettings,
}

/// The local store and the remote tiers, shared with the back-fill threads.
#[derive(Debug, Clone)]
struct Chain {
    local: Arc<Store>,
    /// Fastest first.
    remotes: Arc<[Remote]>,
}

/// What [`Tiered::claim`] found.
#[derive(Debug)]
pub enum Claim {
    /// Another process or host stored the result while we waited: use it.
    Found(Lookup),
    /// Compile now, then store the result; drop the claim afterwards.
    Compile(CompileClaim),
}

/// The right to compile a key: the local lock (or its timeout) and the remote lease, if any.
/// Dropping it releases both.
#[derive(Debug)]
pub struct CompileClaim {
    local: CompileLock,
    lease: Option<Box<dyn Lease>>,
}

impl CompileClaim {
    /// True when this process holds the team-wide lease.
    pub fn has_lease(&self) -> bool {
        self.lease.is_some()
    }
    /// The local lock (or how long we waited for it in vain).
    pub fn local(&self) -> &CompileLock {
        &self.local
    }
}

impl Tiered {
    /// Puts the chain `settings` names behind `local`, each tier set up by the backend its
    /// scheme picks (nothing is contacted yet). A tier that cannot even be set up is a warning
    /// and left out of the chain.
    pub fn open(local: Store, settings: &RemoteSettings) -> Tiered {
        Tiered::open_with(local, settings, None)
    }

    /// As [`Tiered::open`], every tier set up by `open` when given (a test's in-memory tier).
    pub fn open_with(local: Store, settings: &RemoteSettings, open: Option<OpenTier>) -> Tiered {
        let mut remotes = Vec::new();
        for tier in &settings.tiers {
            match Remote::open(
                tier,
                settings,
                local.settings().ttl,
                local.layout().state_dir(),
                local.file_mode(),
                local.clock().clone(),
                open,
            ) {
                Ok(r) => remotes.push(r),
                Err(e) => {
                    warn!("{e}; going on without this tier");
                    local.count_named(Total::Errors.counter(), 1);
                    local.count_named(&TierEvent::Errors.counter(&tier.url.to_string()), 1);
                }
            }
        }
        Tiered {
            backfills: Backfills::default(),
            chain: Chain {
                local: Arc::new(local),
                remotes: remotes.into(),
            },
            settings: settings.clone(),
        }
    }

    /// The local store alone, no tier behind it.
    pub fn local_only(local: Store) -> Tiered {
        Tiered::open(local, &RemoteSettings::default())
    }

    /// The chain's settings.
    pub fn remote_settings(&self) -> &RemoteSettings {
        &self.settings
    }

    /// `cache stats`: the local store's numbers and the chain's (nothing is contacted).
    pub fn stats(&self) -> Result<crate::CacheStats> {
        crate::stats::stats(self.local(), &self.settings)
    }

    /// Waits for the copies of earlier remote hits (into the local store and the faster
    /// tiers) still being written; dropping the cache does the same.
    pub fn settle(&self) {
        self.backfills.settle();
    }

    pub fn local(&self) -> &Store {
        &self.chain.local
    }

    /// The local store, shared: for work that outlives a call (a miss explained on a thread).
    pub fn local_shared(&self) -> Arc<Store> {
        Arc::clone(&self.chain.local)
    }

    /// The remote tiers, fastest first.
    pub fn remotes(&self) -> &[Remote] {
        &self.chain.remotes
    }

    /// Looks `key` up locally, then in each remote tier (verifying and back-filling a remote
    /// entry).
    pub fn get(&self, key: &CacheKey) -> Result<Lookup> {
        self.backfills.settle_key(key.digest());
        match self.chain.local.get(key)? {
            Lookup::Miss => {}
            found => return Ok(found),
        }
        self.remotes_lookup(key)
    }

    fn remotes_lookup(&self, key: &CacheKey) -> Result<Lookup> {
        for tier in 0..self.chain.remotes.len() {
            match self.chain.remote_lookup(tier, key, true, &self.backfills)? {
                Lookup::Miss => {}
                found => return Ok(found),
            }
        }
        Ok(Lookup::Miss)
    }

    /// As [`Tiered::get`], streaming a local hit to `dest` (a remote value is verified in
    /// memory and written, its back-fill beside).
    pub fn get_to(&self, key: &CacheKey, dest: &Path, file_mode: u32) -> Result<Streamed> {
        self.backfills.settle_key(key.digest());
        match self.chain.local.get_to(key, dest, file_mode)? {
            Streamed::Miss => {}
            found => return Ok(found),
        }
        Ok(match self.remotes_lookup(key)? {
            Lookup::Hit(a) => {
                mck_store::write_hit_output(dest, &a.bytes, file_mode)?;
                Streamed::Written {
                    key: a.key,
                    ingredients: a.ingredients,
                    size: a.bytes.len() as u64,
                }
            }
            Lookup::Failed(f) => Streamed::Failed(f),
            Lookup::Miss => Streamed::Miss,
        })
    }

    /// Takes the right to compile `key` after a miss, waiting up to `timeout` in all for another
    /// process (local lock) or host (remote lease) compiling it; their result, if it comes, is
    /// returned instead. On timeout the claim is given anyway: compile without the lock.
    pub fn claim(&self, key: &CacheKey, timeout: Duration) -> Result<Claim> {
        let start = Instant::now();
        let local = self.chain.local.lock_for_compile(key, timeout)?;
        if matches!(local, CompileLock::Acquired(_)) {
            match self.chain.local.recheck(key)? {
                Lookup::Miss => {}
                found => return Ok(Claim::Found(found)),
            }
        }
        let compile = |local, lease| Ok(Claim::Compile(CompileClaim { local, lease }));
        // The first tier that leases, so every host of the team asks the same one; the next
        // one only while it is down (then the team's hosts that see it down agree again).
        for tier in (0..self.chain.remotes.len()).filter(|&i| self.chain.remotes[i].leases()) {
            match self.claim_lease(tier, key, start, timeout)? {
                LeaseClaim::Unreachable => {}
                LeaseClaim::Unsupported => break,
                LeaseClaim::Found(found) => return Ok(Claim::Found(found)),
                LeaseClaim::Compile(lease) => return compile(local, lease),
            }
        }
        compile(local, None)
    }

    /// The lease part of [`Tiered::claim`] on tier `tier`.
    fn claim_lease(
        &self,
        tier: usize,
        key: &CacheKey,
        start: Instant,
        timeout: Duration,
    ) -> Result<LeaseClaim> {
        let remote = &self.chain.remotes[tier];
        let compile = |lease| Ok(LeaseClaim::Compile(lease));
        let deadline = saturating_deadline(start, timeout);
        let mut pause = FIRST_PAUSE;
        let mut announced = false;
        loop {
            match remote.try_lease(key.digest()) {
                Err(e) => {
                    self.chain.remote_failed(remote, &e);
                    return Ok(LeaseClaim::Unreachable);
                }
                Ok(LeaseAttempt::Unsupported) => return Ok(LeaseClaim::Unsupported),
                Ok(LeaseAttempt::Acquired(lease)) => {
                    // Another host may have finished between our lookup and the lease.
                    return match self
                        .chain
                        .remote_lookup(tier, key, false, &self.backfills)?
                    {
                        Lookup::Miss => compile(Some(lease)),
                        found => Ok(LeaseClaim::Found(found)),
                    };
                }
                Ok(LeaseAttempt::Held(holder)) => {
                    let now = Instant::now();
                    if !announced {
                        announced = true;
                        warn!(
                            "Blocking waiting for {holder} compiling {key} (lease on {}, up to {} s)",
                            remote.shown(),
                            deadline.saturating_duration_since(now).as_secs()
                        );
                    }
                    match self
                        .chain
                        .remote_lookup(tier, key, false, &self.backfills)?
                    {
                        Lookup::Miss => {}
                        found => return Ok(LeaseClaim::Found(found)),
                    }
                    if now >= deadline {
                        warn!(
                            "Gave up waiting for {holder} compiling {key} after {:?}; compiling here",
                            start.elapsed()
                        );
                        return compile(None);
                    }
                    thread::sleep(pause.min(deadline - now));
                    pause = (pause * 2).min(MAX_PAUSE);
                }
            }
        }
    }

    /// Stores an artefact locally and remotely (the same entry bytes).
    pub fn put(&self, key: &CacheKey, artefact: &[u8], ingredients: &Value) -> Result<PutOutcome> {
        let meta = EntryMeta::new(
            key,
            EntryState::Ok,
            None,
            artefact,
            self.chain.local.now(),
            ingredients.clone(),
        );
        let prefix = mck_store::encode_prefix(&meta)?;
        let stored =
            self.chain
                .local
                .publish_parts(key, &meta, artefact.len() as u64, &[&prefix, artefact]);
        self.chain.remote_put(key, &[&prefix, artefact]);
        stored
    }

    /// Remembers a failed compilation locally and, unless a valid artefact was kept locally,
    /// remotely (the local entry file's bytes).
    pub fn put_failure(
        &self,
        key: &CacheKey,
        failure: &Failure,
        ingredients: &Value,
    ) -> Result<PutOutcome> {
        let stored = self.chain.local.put_failure(key, failure, ingredients)?;
        if matches!(stored, PutOutcome::Stored { .. })
            && self.chain.remotes.iter().any(|r| !r.read_only())
        {
            match self.chain.local.export_entry(key) {
                Ok(Some(bytes)) => self.chain.remote_put(key, &[&bytes]),
                Ok(None) => {
                    debug!("the failure record of {key} is gone before reaching the remote")
                }
                Err(e) => warn!("cannot read back the failure record of {key}: {e}"),
            }
        }
        Ok(stored)
    }
}

impl Chain {
    /// Tier `tier`'s entry for `key`, verified; back-filled locally and into the writable
    /// tiers before it by a thread of `backfills`. `first_look`: count an absent entry as a
    /// miss (polls while waiting for another host do not).
    fn remote_lookup(
        &self,
        tier: usize,
        key: &CacheKey,
        first_look: bool,
        backfills: &Backfills,
    ) -> Result<Lookup> {
        let remote = &self.remotes[tier];
        let received = match remote.receive(key.digest()) {
            Ok(Some(received)) => received,
            Ok(None) => {
                if first_look {
                    info!("No candidate found on {}", remote.shown());
                }
                self.count_miss(remote, key, first_look);
                return Ok(Lookup::Miss);
            }
            Err(e) => {
                self.remote_failed(remote, &e);
                if first_look {
                    self.note_answer(remote, key, TierAnswer::Down);
                }
                return Ok(Lookup::Miss);
            }
        };
        let mut value = received.value;
        let mut checked = check(remote, key, &value, received.digests);
        if checked.is_err() && received.parts > 1 {
            // Read in parts, it may have been replaced between two of them: read it whole.
            info!(
                "The entry of {key} on {} failed its checks as read in {} parts; reading it whole",
                remote.shown(),
                received.parts
            );
            match remote.get(key.digest()) {
                Ok(Some(whole)) => {
                    checked = check(remote, key, &whole, Digests::default());
                    value = whole;
                }
                Ok(None) => {}
                Err(e) => self.remote_failed(remote, &e),
            }
        }
        let (start, meta, range) = match checked {
            Ok(v) => v,
            Err(Refusal::Unauthenticated(why)) => {
                let why = format!("is not authenticated ({why})");
                return Ok(self.refuse(remote, key, first_look, &why, Total::Unauthenticated));
            }
            Err(Refusal::Decode(DecodeError::Corrupt(c))) => {
                let why = format!("is corrupt ({c})");
                return Ok(self.refuse(remote, key, first_look, &why, Total::Corrupt));
            }
            Err(Refusal::Decode(DecodeError::UnsupportedVersion(v))) => {
                info!(
                    "Ignoring the entry on {}: its format version {v} is newer",
                    remote.shown()
                );
                self.count_miss(remote, key, first_look);
                return Ok(Lookup::Miss);
            }
        };
        let entry_file = value.slice(start..);
        // A remote tier may still hold what a hit audit condemned here.
        if self.local.suspect_of(&meta).is_some() {
            self.count_miss(remote, key, first_look);
            return Ok(Lookup::Miss);
        }
        if meta.key != key.to_string() {
            info!(
                "No candidate found on {}: it holds {}, not {key}",
                remote.shown(),
                meta.key
            );
            self.count_miss(remote, key, first_look);
            return Ok(Lookup::Miss);
        }
        if meta.state == EntryState::Failed && self.local.settings().retry_failed_compilation {
            info!(
                "Ignoring the cached failed compilation on {} (retry_failed_compilation)",
                remote.shown()
            );
            self.count_miss(remote, key, first_look);
            return Ok(Lookup::Miss);
        }
        let path = self.local.layout().entry_path(key.digest());
        self.count(Total::Hits);
        self.count_on(remote, TierEvent::Hits, 1);
        self.note_answer(remote, key, TierAnswer::Hit);
        self.count_on(remote, TierEvent::BytesRead, entry_file.len() as u64);
        let payload = entry_file.slice(range);
        let (chain, job_key, job_meta) = (self.clone(), key.clone(), meta.clone());
        backfills.start(key.digest(), move || {
            chain.copy_hit(tier, &job_key, &job_meta, &entry_file)
        });
        let EntryMeta {
            failure,
            ingredients,
            created_ms,
            ..
        } = meta;
        Ok(match failure {
            Some(failure) => {
                info!(
                    "Got a cached failed compilation from {} (copying it to {})",
                    remote.shown(),
                    path.display()
                );
                Lookup::Failed(CachedFailure {
                    key: key.clone(),
                    failure,
                    ingredients,
                    created_ms,
                    path,
                })
            }
            None => {
                info!(
                    "Using a cached artefact from {} (copying it to {})",
                    remote.shown(),
                    path.display()
                );
                Lookup::Hit(Artefact {
                    key: key.clone(),
                    bytes: payload,
                    ingredients,
                    created_ms,
                    path,
                })
            }
        })
    }

    /// The back-fill of a verified hit in tier `tier`: its entry file into the local store and
    /// every writable tier before `tier`, and its expiry refreshed where it was found.
    fn copy_hit(&self, tier: usize, key: &CacheKey, meta: &EntryMeta, entry_file: &[u8]) {
        let remote = &self.remotes[tier];
        if let Err(e) = self.local.publish_copy(key, meta, entry_file) {
            warn!("cannot copy the remote entry of {key} into the local cache: {e}");
        }
        remote.refresh(key.digest());
        self.backfill(tier, key, entry_file);
    }

    /// A remote value that must not be used: a miss, counted and reported once per process and
    /// key (rechecks while waiting see it again).
    fn refuse(
        &self,
        remote: &Remote,
        key: &CacheKey,
        first_look: bool,
        why: &str,
        counter: Total,
    ) -> Lookup {
        if first_look {
            warn!(
                "the remote entry {} on {} {why}; not using it",
                remote.entry_path(key.digest()),
                remote.shown()
            );
            self.count(counter);
            self.count_on(remote, TierEvent::Misses, 1);
            self.note_answer(remote, key, TierAnswer::Miss);
        }
        Lookup::Miss
    }

    /// Writes an entry file to every writable remote tier.
    fn remote_put(&self, key: &CacheKey, parts: &[&[u8]]) {
        for remote in self.remotes.iter() {
            if self.write_to(remote, key, parts) {
                debug!("Stored {key} on {}", remote.shown());
            }
        }
    }

    /// A hit in tier `tier`: its verified entry file `bytes` go to each writable tier before it.
    fn backfill(&self, tier: usize, key: &CacheKey, bytes: &[u8]) {
        for faster in &self.remotes[..tier] {
            if self.write_to(faster, key, &[bytes]) {
                self.count_on(faster, TierEvent::Backfills, 1);
                debug!(
                    "Back-filled {key} from {} into {}",
                    self.remotes[tier].shown(),
                    faster.shown()
                );
            }
        }
    }

    /// Writes an entry file to `remote` unless it is read-only; true when it was written.
    fn write_to(&self, remote: &Remote, key: &CacheKey, parts: &[&[u8]]) -> bool {
        if remote.read_only() {
            return false;
        }
        match remote.put(key.digest(), parts) {
            Ok(()) => {
                self.count(Total::Writes);
                self.count_on(remote, TierEvent::Writes, 1);
                let len: usize = parts.iter().map(|p| p.len()).sum();
                self.count_on(remote, TierEvent::BytesWritten, len as u64);
                true
            }
            Err(e) => {
                self.remote_failed(remote, &e);
                false
            }
        }
    }

    fn count_miss(&self, remote: &Remote, key: &CacheKey, first_look: bool) {
        if first_look {
            self.count(Total::Misses);
            self.count_on(remote, TierEvent::Misses, 1);
            self.note_answer(remote, key, TierAnswer::Miss);
        }
    }

    /// Leaves `remote`'s answer for `key` in the local history (what a report's tier view reads).
    fn note_answer(&self, remote: &Remote, key: &CacheKey, answer: TierAnswer) {
        self.local.record_event(What::Tier {
            tier: remote.shown().to_owned(),
            key: key.to_string(),
            answer,
        });
    }

    /// Bumps one of the chain's totals in the local store (best effort).
    fn count(&self, total: Total) {
        self.local.count_named(total.counter(), 1);
    }

    /// Adds `by` to the counter of `event` on `remote` (best effort).
    fn count_on(&self, remote: &Remote, event: TierEvent, by: u64) {
        self.local.count_named(&event.counter(remote.shown()), by);
    }

    fn remote_failed(&self, remote: &Remote, e: &RemoteError) {
        let (total, own) = if e.is_skip() {
            (Total::Skipped, TierEvent::Skipped)
        } else {
            (Total::Errors, TierEvent::Errors)
        };
        self.count(total);
        self.count_on(remote, own, 1);
        remote.fallback(e, self.remotes.len() > 1);
    }
}

/// Why a remote value is not used.
enum Refusal {
    Unauthenticated(AuthError),
    Decode(DecodeError),
}

/// Checks a value read from `remote` for `key` (`digests`: what was computed while it
/// arrived): where its entry file starts, the entry's metadata and its payload's range there.
fn check(
    remote: &Remote,
    key: &CacheKey,
    value: &[u8],
    digests: Digests,
) -> std::result::Result<(usize, EntryMeta, std::ops::Range<usize>), Refusal> {
    let start = remote
        .unseal(key.digest(), value, digests.body_mac)
        .map_err(Refusal::Unauthenticated)?;
    let (meta, range) = mck_store::decode_digested(&value[start..], key.digest(), digests.payload)
        .map_err(Refusal::Decode)?;
    Ok((start, meta, range))
}

/// What the lease of one remote tier gave [`Tiered::claim`].
enum LeaseClaim {
    /// No lease for this client (read-only) and nobody holds it: compile without one.
    Unsupported,
    /// The tier failed or is marked down: ask the next tier that leases.
    Unreachable,
    /// The result arrived while we waited.
    Found(Lookup),
    /// Compile, holding this lease if any.
    Compile(Option<Box<dyn Lease>>),
}

/// `start + timeout`, or a century on when that overflows (`--lock-timeout` is a user's u64).
fn saturating_deadline(start: Instant, timeout: Duration) -> Instant {
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 86_400);
    start
        .checked_add(timeout)
        .unwrap_or_else(|| start + CENTURY)
}

impl Tiered {
    /// As [`Tiered::put`] from a file: streamed into the local tier; a remote tier, which
    /// takes whole values, gets the bytes read once more.
    pub fn put_file(&self, key: &CacheKey, src: &Path, ingredients: &Value) -> Result<PutOutcome> {
        if self.remotes().is_empty() {
            return self.local().put_file(key, src, ingredients);
        }
        let bytes = std::fs::read(src).map_err(|e| StoreError::io("read", src, e))?;
        self.put(key, &bytes, ingredients)
    }
}
