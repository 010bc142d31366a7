//! The on-disk store: opening, lookups and writes. Management (stats, list, clear, verify, gc)
//! lives in `manage.rs`, eviction in `evict.rs`, index repair in `rebuild.rs`, verified reads in
//! `read.rs`, export/import in `transfer.rs`.
//!
//! Rules that hold everywhere here:
//! - the directory is the truth, the index a cache of it: a lookup reads the entry file and
//!   never believes the index alone; index failures on the lookup path are logged, not fatal;
//! - every read verifies the entry (`entry.rs`); a damaged file is quarantined and read as a miss;
//! - every write is a temp file + rename (`atomic.rs`).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;
use tracing::{info, warn};

use super::atomic;
use super::clock::{Clock, SystemClock, UnixMillis, ms_to_system_time};
use super::entry::{self, EntryMeta, EntryState, Failure};
use super::entry_file::{Damaged, EntryRead, ValidEntry};
use super::error::{Result, StoreError};
use super::fsutil;
use super::history::{History, What, compile_ms_of};
use super::index::{Counter, Index, Row};
use super::key::{CacheKey, Digest};
use super::layout::Layout;
use super::lock::{self, CompileLock};
use super::lock_spares::{ShardsAhead, SpareLocks};
use super::pins::Pins;
use super::settings::Settings;
use super::sqlite::{is_corruption, retry_busy};

/// A cached artefact, verified.
#[derive(Clone, Debug, PartialEq)]
pub struct Artefact {
    pub key: CacheKey,
    /// The payload (a view: a caller may share the buffer it was read into, e.g. with a copy
    /// being written beside it).
    pub bytes: Bytes,
    /// The key's readable ingredients as stored by the writer.
    pub ingredients: Value,
    pub created_ms: UnixMillis,
    pub path: PathBuf,
}

/// A remembered failed compilation.
#[derive(Clone, Debug, PartialEq)]
pub struct CachedFailure {
    pub key: CacheKey,
    pub failure: Failure,
    pub ingredients: Value,
    pub created_ms: UnixMillis,
    pub path: PathBuf,
}

/// How a lookup counts what it finds: the first look of a lookup counts everything, a recheck
/// under the compile lock no second miss, a peek (a prefetch) nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Look {
    First,
    Recheck,
    Peek,
}

/// The answer to a lookup.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup {
    Hit(Artefact),
    Failed(CachedFailure),
    Miss,
}

/// What a write did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PutOutcome {
    /// Published at `path`; `size` is the entry file's length.
    Stored { path: PathBuf, size: u64 },
    /// `put_failure` found a valid artefact under the key and kept it.
    KeptExisting { path: PathBuf },
}

/// The counting a lookup leaves for later: run with the store it came from.
pub type CountJob = Box<dyn FnOnce(&Store) + Send>;

/// Where a store hands its [`CountJob`]s (see [`Store::count_misses_later`]).
pub type CountLater = Box<dyn Fn(CountJob) + Send + Sync>;

/// A miss as counted: in the index, and as a line of the history at the lookup's time.
struct Miss {
    key: String,
    digest: Digest,
    gone: bool,
    corrupt: bool,
    t: UnixMillis,
}

/// A persistent cache directory.
pub struct Store {
    settings: Settings,
    layout: Layout,
    clock: Arc<dyn Clock>,
    index: Mutex<Index>,
    /// Who tells eviction which entries are referenced elsewhere (run records).
    pins: Option<Arc<dyn Pins>>,
    history: History,
    /// Set by an embedder with a worker thread: misses are counted there.
    count_later: OnceLock<CountLater>,
    /// Compile lock files that worker made ahead (`make_locks_ahead`).
    spare_locks: SpareLocks,
    /// The lock shards it has still to make ahead.
    lock_shards_ahead: ShardsAhead,
    /// Lock shards this process has made or checked (once a process: only the owner of the
    /// locks directory, or the team sharing it, could swap one afterwards).
    lock_shards: fsutil::EnsuredDirs,
    /// Entry shards this process has made or checked, likewise (`entries/` is as private).
    entry_shards: fsutil::EnsuredDirs,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating if needed) the cache described by `settings`, with the system clock.
    /// Opens even when `settings.enabled` is false: whether to use a disabled cache is the
    /// caller's choice (`mck_runs::open_cache`).
    pub fn open(settings: &Settings) -> Result<Store> {
        Store::open_with_clock(settings, Arc::new(SystemClock))
    }

    /// Opens with an injected clock (tests move time instead of sleeping).
    pub fn open_with_clock(settings: &Settings, clock: Arc<dyn Clock>) -> Result<Store> {
        let layout = Layout::new(&settings.cache_dir);
        let read_only = settings.read_only || layout.is_read_only();
        let index = if read_only {
            open_read_only_index(settings, &layout)?
        } else {
            layout.ensure(settings.dir_mode)?;
            // What killed writers left (by the real clock: temporary files carry real mtimes).
            atomic::sweep_stale(layout.tmp_dir(), "", std::time::SystemTime::now());
            super::rebuild::open_index(&layout, settings, clock.as_ref(), false)?
        };
        let history = History::new(
            layout.state_dir(),
            settings.dir_mode & 0o666,
            settings.history_size,
            !read_only,
        );
        Ok(Store {
            settings: Settings {
                read_only,
                ..settings.clone()
            },
            layout,
            clock,
            index: Mutex::new(index),
            pins: None,
            history,
            count_later: OnceLock::new(),
            spare_locks: SpareLocks::default(),
            lock_shards_ahead: ShardsAhead::default(),
            lock_shards: fsutil::EnsuredDirs::default(),
            entry_shards: fsutil::EnsuredDirs::default(),
        })
    }

    /// Eviction asks `pins` which entries must stay (see `evict.rs`).
    pub fn with_pins(mut self, pins: Arc<dyn Pins>) -> Store {
        self.pins = Some(pins);
        self
    }

    pub(super) fn pins(&self) -> Option<&dyn Pins> {
        self.pins.as_deref()
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// True when the cache is used read-only (see [`Settings::read_only`]).
    pub fn is_read_only(&self) -> bool {
        self.settings.read_only
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The lookup history this store writes (`history.rs`).
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Appends one event to the history, now (best effort).
    pub fn record_event(&self, what: What) {
        self.history.record(self.now(), what);
    }

    /// Hands the counting of every later miss (a transaction on the index, a line of the
    /// history) to `defer`, which runs it off the lookup's path and in order: an embedder's
    /// worker, whose settling then makes `stats` whole. A miss is then as cheap as a hit,
    /// whose use is only appended to a log. Set once: later calls are ignored.
    pub fn count_misses_later(&self, defer: CountLater) {
        let _ = self.count_later.set(defer);
    }

    /// Counts a miss of `key` (given as text: a damaged entry found by digest alone names no
    /// module) in the index and the history; `gone`: the entry's row goes too.
    pub(super) fn count_miss(&self, key: &str, digest: &Digest, gone: bool, corrupt: bool) {
        let miss = Miss {
            key: key.to_owned(),
            digest: digest.clone(),
            gone,
            corrupt,
            t: self.now(),
        };
        match self.count_later.get() {
            Some(defer) => defer(Box::new(move |store: &Store| {
                // Counted late: the entry may have been stored since (by anyone), its row with it.
                let gone = miss.gone && !store.layout.entry_path(&miss.digest).exists();
                store.record_miss(Miss { gone, ..miss })
            })),
            None => self.record_miss(miss),
        }
    }

    fn record_miss(&self, miss: Miss) {
        self.index_best_effort("record a miss", |ix| {
            ix.record_miss(miss.digest.as_str(), miss.gone, miss.corrupt, miss.t)
        });
        self.history.record(
            miss.t,
            What::Miss {
                key: miss.key,
                corrupt: miss.corrupt,
            },
        );
    }

    /// The store's clock.
    pub fn now(&self) -> UnixMillis {
        self.clock.now_ms()
    }

    /// The mode of every file the cache creates (its directories' mode without the `x` bits).
    pub fn file_mode(&self) -> u32 {
        self.settings.dir_mode & 0o666
    }

    /// Looks `key` up. Verifies the entry; a damaged one is quarantined and reads as a miss.
    pub fn get(&self, key: &CacheKey) -> Result<Lookup> {
        self.lookup(key, Look::First)
    }

    /// Looks `key` up again after taking its compile lock: another process may have stored it
    /// meanwhile. An absent entry is not counted (or logged) as a second miss.
    pub fn recheck(&self, key: &CacheKey) -> Result<Lookup> {
        self.lookup(key, Look::Recheck)
    }

    /// Reads `key`'s artefact ahead of a lookup that may never come (a prefetch): verified like
    /// [`Store::get`], but counted nowhere and its use time unchanged; a failure or a suspect
    /// entry reads as a miss, and a damaged one stays in place for the lookup that counts it.
    /// [`Store::count_hit`] counts it once it is used.
    pub fn peek(&self, key: &CacheKey) -> Result<Lookup> {
        self.lookup(key, Look::Peek)
    }

    fn lookup(&self, key: &CacheKey, look: Look) -> Result<Lookup> {
        let first_look = look == Look::First;
        let counted = look != Look::Peek;
        let damaged = match counted {
            true => Damaged::Quarantine,
            false => Damaged::Leave,
        };
        let digest = key.digest();
        let path = self.layout.entry_path(digest);
        let miss = |absent, corrupt| {
            if counted {
                self.count_miss(&key.to_string(), digest, absent, corrupt);
            }
            Ok(Lookup::Miss)
        };
        let ValidEntry {
            file,
            size,
            meta,
            mut bytes,
            payload_start,
        } = match self.read_entry(&path, digest, damaged)? {
            // A manifest not found is no result missed: the canonical lookup counts that.
            EntryRead::Absent if !first_look || key.is_manifest() => return Ok(Lookup::Miss),
            EntryRead::Absent => {
                info!("No candidate found under {}", path.display());
                return miss(true, false);
            }
            EntryRead::Corrupt => return miss(true, true),
            EntryRead::Unsupported(v) => {
                info!(
                    "Ignoring the entry at {}: its format version {v} is newer than this tool's",
                    path.display()
                );
                return miss(false, false);
            }
            EntryRead::Valid(v) => *v,
        };
        if meta.key != key.to_string() {
            info!(
                "No candidate found under {}: it holds {}, not {key}",
                path.display(),
                meta.key
            );
            return miss(false, false);
        }
        let created_ms = meta.created_ms;
        match (meta.state, meta.failure.clone()) {
            (EntryState::Failed, _) if !counted => Ok(Lookup::Miss),
            (EntryState::Failed, Some(failure)) => {
                if self.settings.retry_failed_compilation {
                    // Counted and logged once: the recheck under the lock sees it again.
                    if !first_look {
                        return Ok(Lookup::Miss);
                    }
                    info!(
                        "Ignoring the cached failed compilation at {} (retry_failed_compilation)",
                        path.display()
                    );
                    return miss(false, false);
                }
                info!("Got a cached failed compilation at {}", path.display());
                self.touch(&file, &path, size, &meta, Counter::FailuresReplayed);
                Ok(Lookup::Failed(CachedFailure {
                    key: key.clone(),
                    failure,
                    ingredients: meta.ingredients,
                    created_ms,
                    path,
                }))
            }
            _ if self.suspect_of(&meta).is_some() => match first_look {
                true => miss(false, false),
                false => Ok(Lookup::Miss),
            },
            _ => {
                info!("Using a cached artefact at {}", path.display());
                let counter = match key.is_manifest() {
                    true => Counter::ManifestReads,
                    false => Counter::Hits,
                };
                if counted {
                    self.touch(&file, &path, size, &meta, counter);
                }
                bytes.drain(..payload_start);
                Ok(Lookup::Hit(Artefact {
                    key: key.clone(),
                    bytes: Bytes::from(bytes),
                    ingredients: meta.ingredients,
                    created_ms,
                    path,
                }))
            }
        }
    }

    /// Stores an artefact under `key` (replacing what was there) with the key's readable
    /// ingredients; then evicts if the cache is above its cap.
    pub fn put(&self, key: &CacheKey, artefact: &[u8], ingredients: &Value) -> Result<PutOutcome> {
        self.write_entry(key, EntryState::Ok, None, artefact, ingredients)
    }

    /// Remembers a failed compilation under `key`. A valid artefact already stored under the key
    /// is kept (a failure from a racing, e.g. out-of-memory, compile must not replace a success).
    pub fn put_failure(
        &self,
        key: &CacheKey,
        failure: &Failure,
        ingredients: &Value,
    ) -> Result<PutOutcome> {
        self.refuse_if_read_only()?;
        if let Some(meta) = self.read_metadata(key.digest())?
            && meta.state == EntryState::Ok
            && meta.key == key.to_string()
        {
            let path = self.layout.entry_path(key.digest());
            info!(
                "Keeping the cached artefact at {}; not replacing it with a failure",
                path.display()
            );
            return Ok(PutOutcome::KeptExisting { path });
        }
        self.write_entry(
            key,
            EntryState::Failed,
            Some(bounded_failure(failure)),
            &[],
            ingredients,
        )
    }

    /// Removes the entry under `key`; true if a file was removed.
    pub fn remove(&self, key: &CacheKey) -> Result<bool> {
        let path = self.layout.entry_path(key.digest());
        let removed = remove_file_if_exists(&path)?;
        self.with_index("remove an entry", |ix| ix.remove(key.digest().as_str()))?;
        Ok(removed)
    }

    /// Total bytes of the entries, from the index (O(1)).
    pub fn size(&self) -> Result<u64> {
        Ok(self.with_index("read totals", |ix| ix.totals())?.1)
    }

    /// Makes compile locks ahead of need, for the next `lock_for_compile`s (`lock_spares.rs`):
    /// spare lock files to link in, and a few more lock shards a call until all exist. For an
    /// embedder's worker, off the compile's path. Best effort.
    pub fn make_locks_ahead(&self) {
        let dir = self.layout.locks_dir();
        if self.settings.read_only
            || (self.spare_locks.full() && self.lock_shards_ahead.done())
            || fsutil::ensure_private_dir(dir, self.settings.dir_mode).is_err()
        {
            return;
        }
        self.lock_shards_ahead
            .make(dir, &self.lock_shards, self.settings.dir_mode);
        if !self.spare_locks.full() {
            self.spare_locks.fill(dir, self.file_mode());
        }
    }

    /// Closes the spare lock files (an embedder about to fork: `lock_spares.rs`).
    pub fn drop_spare_locks(&self) {
        self.spare_locks.drop_all();
    }

    /// Takes the compile lock for `key`, waiting up to `timeout`. On `Acquired`, look the key
    /// up again before compiling: another process may have stored it while we waited. On
    /// `TimedOut`, compile anyway.
    pub fn lock_for_compile(&self, key: &CacheKey, timeout: Duration) -> Result<CompileLock> {
        let start = Instant::now();
        let shard = self.layout.lock_shard_dir(key.digest());
        let known = self.lock_shards.ensure(&shard, self.settings.dir_mode)?;
        let path = self.layout.lock_path(key.digest());
        if let Some(guard) = self.spare_locks.link(&path) {
            return Ok(CompileLock::Acquired(guard));
        }
        if known {
            // Checked earlier by this process: made again here in case it was removed since.
            fsutil::ensure_private_dir(&shard, self.settings.dir_mode)?;
        }
        let what = format!("the compile lock on {key}");
        match lock::acquire(&path, &what, self.file_mode(), timeout)? {
            Some(guard) => Ok(CompileLock::Acquired(guard)),
            None => Ok(CompileLock::TimedOut {
                waited: start.elapsed(),
            }),
        }
    }

    fn write_entry(
        &self,
        key: &CacheKey,
        state: EntryState,
        failure: Option<Failure>,
        payload: &[u8],
        ingredients: &Value,
    ) -> Result<PutOutcome> {
        let now = self.now();
        let meta = EntryMeta::new(key, state, failure, payload, now, ingredients.clone());
        let prefix = entry::encode_prefix(&meta)?;
        self.publish_parts(key, &meta, payload.len() as u64, &[&prefix, payload])
    }

    /// Publishes an encoded entry (`parts` concatenated), records it in the index, evicts if
    /// the cache is now above its cap.
    pub fn publish_parts(
        &self,
        key: &CacheKey,
        meta: &EntryMeta,
        artefact_size: u64,
        parts: &[&[u8]],
    ) -> Result<PutOutcome> {
        self.publish_synced(key, meta, artefact_size, parts, self.settings.fsync)
    }

    /// As [`Store::publish_parts`] for a copy of an entry file that is durable elsewhere: never
    /// synced.
    /// Every read verifies an entry, so a copy a crash tore is quarantined as a miss and fetched
    /// again; what it saves is an fsync of the whole artefact on every copy.
    pub fn publish_copy(
        &self,
        key: &CacheKey,
        meta: &EntryMeta,
        file: &[u8],
    ) -> Result<PutOutcome> {
        self.publish_synced(key, meta, meta.artefact_size, &[file], false)
    }

    fn publish_synced(
        &self,
        key: &CacheKey,
        meta: &EntryMeta,
        artefact_size: u64,
        parts: &[&[u8]],
        fsync: bool,
    ) -> Result<PutOutcome> {
        self.refuse_if_read_only()?;
        let digest = key.digest();
        let now = self.now();
        let shard = self.layout.entry_shard_dir(digest);
        let known = self.entry_shards.ensure(&shard, self.settings.dir_mode)?;
        let path = self.layout.entry_path(digest);
        let publish = || {
            atomic::publish(
                self.layout.tmp_dir(),
                ".entry-",
                &path,
                parts,
                self.file_mode(),
                ms_to_system_time(now),
                fsync,
            )
        };
        let size = match publish() {
            // Checked earlier by this process and removed since: made again, written again.
            Err(_) if known && !shard.is_dir() => {
                fsutil::ensure_private_dir(&shard, self.settings.dir_mode)?;
                publish()?
            }
            written => written?,
        };
        self.record_published(key, meta, artefact_size, size, now, path)
    }

    /// Publishes a verified entry file staged in `v1/tmp/` (an import, a streamed put), used
    /// at `now`, as [`Store::publish_parts`] does with bytes.
    pub(super) fn publish_file(
        &self,
        key: &CacheKey,
        meta: &EntryMeta,
        size: u64,
        tmp: tempfile::NamedTempFile,
        now: UnixMillis,
    ) -> Result<PutOutcome> {
        self.refuse_if_read_only()?;
        let digest = key.digest();
        fsutil::ensure_private_dir(&self.layout.entry_shard_dir(digest), self.settings.dir_mode)?;
        let path = self.layout.entry_path(digest);
        atomic::persist(
            tmp,
            &path,
            self.file_mode(),
            ms_to_system_time(now),
            self.settings.fsync,
        )?;
        self.record_published(key, meta, meta.artefact_size, size, now, path)
    }

    /// Records a published entry in the index and evicts if the cache is now above its cap.
    pub(super) fn record_published(
        &self,
        key: &CacheKey,
        meta: &EntryMeta,
        artefact_size: u64,
        size: u64,
        now: UnixMillis,
        path: PathBuf,
    ) -> Result<PutOutcome> {
        let digest = key.digest();
        info!(
            "Stored the {} entry {key} at {}",
            meta.state.as_str(),
            path.display()
        );
        let row = Row {
            digest: digest.as_str().to_owned(),
            name: key.name().to_owned(),
            state: meta.state,
            size,
            artefact_size,
            created_ms: meta.created_ms,
            last_used_ms: now,
        };
        let bumps = [
            (Counter::Puts, 1),
            (
                Counter::BytesWritten,
                i64::try_from(size).unwrap_or(i64::MAX),
            ),
        ];
        self.lift_suspect(digest, &meta.payload_sha256);
        // The entry is published whatever happens to the index: `verify` repairs a missed row.
        self.record_event(What::Stored {
            key: key.to_string(),
            size,
            compile_ms: compile_ms_of(&meta.ingredients),
            failed: meta.state == EntryState::Failed,
        });
        // (Never read-only here: a read-only cache refuses to publish.)
        match self.with_index("record a new entry", |ix| ix.upsert(&row, &bumps)) {
            Ok(total) if total > self.settings.max_size => {
                if let Err(e) = self.evict_now(Some(digest)) {
                    warn!("eviction after storing {key} failed: {e}");
                }
            }
            Ok(_) => {}
            Err(e) => warn!("{e}"),
        }
        Ok(PutOutcome::Stored { path, size })
    }

    /// An error for a write to a read-only cache.
    pub(super) fn refuse_if_read_only(&self) -> Result<()> {
        if !self.settings.read_only {
            return Ok(());
        }
        Err(StoreError::io(
            "store in",
            self.layout.root(),
            io::Error::new(io::ErrorKind::ReadOnlyFilesystem, "the cache is read-only"),
        ))
    }

    pub(super) fn lock_index(&self) -> MutexGuard<'_, Index> {
        self.index.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the index; if the index turns out to be corrupt, rebuilds it from the entry
    /// files and runs `f` once more.
    pub(super) fn with_index<T>(
        &self,
        op: &'static str,
        mut f: impl FnMut(&mut Index) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let mut ix = self.lock_index();
        match retry_busy(|| f(&mut ix)) {
            Ok(v) => Ok(v),
            Err(e) if is_corruption(&e) => {
                warn!(
                    "cache index {} is corrupt ({e}) while trying to {op}; rebuilding it",
                    self.layout.index_path().display()
                );
                *ix = super::rebuild::open_index(
                    &self.layout,
                    &self.settings,
                    self.clock.as_ref(),
                    true,
                )?;
                retry_busy(|| f(&mut ix)).map_err(|source| self.index_error(op, source))
            }
            Err(source) => Err(self.index_error(op, source)),
        }
    }

    /// As [`Store::with_index`], but a failure is only logged (lookup paths).
    pub(super) fn index_best_effort(
        &self,
        op: &'static str,
        f: impl FnMut(&mut Index) -> rusqlite::Result<()>,
    ) {
        // A read-only cache records nothing (its index may be immutable).
        if self.settings.read_only {
            return;
        }
        if let Err(e) = self.with_index(op, f) {
            warn!("{e}");
        }
    }

    pub(super) fn index_error(&self, op: &'static str, source: rusqlite::Error) -> StoreError {
        StoreError::Index {
            op,
            path: self.layout.index_path().to_owned(),
            source,
        }
    }
}

/// Longest compiler stderr remembered with a failure; beyond it the tail is kept (errors are
/// usually at the end), so a runaway log cannot make the entry unwritable.
pub const MAX_STDERR_LEN: usize = 4 << 20;

/// The index of a read-only cache (the `read_only` setting, or a directory we cannot write):
/// nothing is created, swept, stored, evicted or recorded; hits are served from the entry files.
fn open_read_only_index(settings: &Settings, layout: &Layout) -> Result<Index> {
    fsutil::check_dir(layout.root(), settings.dir_mode)?;
    let path = layout.index_path();
    let index = Index::open_read_only(path, &layout.counter_files()).map_err(|source| {
        let (op, path) = ("open read-only", path.to_owned());
        StoreError::Index { op, path, source }
    })?;
    let root = layout.root().display();
    info!("the cache {root} is read-only: serving hits, storing nothing");
    Ok(index)
}

fn bounded_failure(f: &Failure) -> Failure {
    if f.stderr.len() <= MAX_STDERR_LEN {
        return f.clone();
    }
    let mut start = f.stderr.len() - MAX_STDERR_LEN;
    while !f.stderr.is_char_boundary(start) {
        start += 1;
    }
    Failure {
        exit_status: f.exit_status,
        stderr: format!(
            "[mlir-cache-key: the first {start} bytes of stderr were not kept]\n{}",
            &f.stderr[start..]
        ),
    }
}

/// Unlinks `path`; true if it existed.
pub(super) fn remove_file_if_exists(path: &Path) -> Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io("remove", path, e)),
    }
}
