//! The persistent compilation cache: compiled artefacts and remembered failures, content-addressed
//! by a cache key (`<name>-<64 hex>`, computed by `mck-key` or anyone else), on disk, with a size
//! cap, LRU eviction under a TTL, verified reads, atomic writes, a per-key compile lock for
//! concurrent processes, and management operations. No MLIR needed. This host's cache only:
//! what shares it across hosts (the chain of tiers, with this store first) is `mck-remote`'s.
//! Addresses and run records live in `mck-runs`, which tells eviction what they pin ([`Pins`]).
//!
//! Files, each with one job:
//! - `settings`: the plain values a store is opened with (`mck-settings` reads them);
//! - `key`: validating `<name>-<64 hex>`; `layout`: the versioned directory tree;
//! - `entry`: the entry file format and its checksums; `entry_file`: reading one from a file,
//!   and what a read found;
//!   `atomic`: temp file + rename publishing
//!   (entries, and a compiler's output restored on a hit);
//! - `index`: the SQLite index; `rebuild`: repairing it from the directory; `events`: the event
//!   counters' durable home (and moving an older cache's into it);
//! - `cache`: open, get, put; `read`: verified reads; `transfer`: entries moved between caches,
//!   and entry files staged from outside; `evict`: LRU under TTL, sparing what
//!   `pins` names; `manage`: stats, list, clear, verify, gc;
//! - `lock`: advisory compile locks; `quarantine`: moving damaged files aside; `suspect`:
//!   entries a hit audit caught (kept, never served) and the audit counters;
//! - `history`: the lookup history a report reads (a line per hit, miss, cause, store,
//!   eviction and remote answer);
//! - `background_thread`: threads doing handed-off work give way to their callers;
//! - `clock`: injectable time; `fsutil`: no-follow opens and ownership checks;
//! - `sqlite`: busy and corruption handling shared by every SQLite file of the cache;
//! - `stream`: a hit streamed to a file; `stream_put`: a file stored without reading it whole;
//! - `prefetch_list`: the keys each run of a program used, in order (what a warm start
//!   prefetches), and the prefetch counters.

mod atomic;
mod background_thread;
mod cache;
mod clock;
mod entry;
mod entry_file;
mod error;
mod events;
mod evict;
pub mod fsutil;
pub mod history;
mod index;
mod key;
mod layout;
mod lock;
mod lock_spares;
mod manage;
mod pins;
mod prefetch_list;
mod quarantine;
mod read;
mod rebuild;
mod settings;
pub mod sqlite;
mod stream;
mod stream_put;
mod suspect;
mod transfer;
mod uses;

pub use atomic::{OUTPUT_TMP_PREFIX, write_file, write_hit_output};
pub use background_thread::lower_current_thread;
pub use cache::{Artefact, CachedFailure, CountJob, CountLater, Lookup, PutOutcome, Store};
pub use clock::{Clock, ManualClock, SystemClock, UnixMillis};
pub use entry::{
    DecodeError, EntryMeta, EntryState, Failure, UnknownEntryState, decode_digested, encode_prefix,
};
pub use error::{Result, StoreError};
pub use events::COUNTERS_FILE;
pub use evict::EvictReport;
pub use fsutil::ensure_private_dir;
pub use index::{ListFilter, SortBy};
pub use key::{CacheKey, Digest, MANIFEST_NAME};
pub use layout::{Layout, REGISTRY_FILE};
pub use lock::{CompileGuard, CompileLock, acquire as lock_file};
pub use manage::{Clear, ClearReport, EntrySummary, GcReport, STATS_SCHEMA, Stats};
pub use pins::{Pins, PinsError};
pub use prefetch_list::{
    MAX_CONTEXT_LEN, MAX_PROGRAMS, MAX_RUN_KEYS, PREFETCH_COUNTER_PREFIX, PrefetchCounters,
    RUNS_KEPT, RunKeys,
};
pub use quarantine::move_into as move_into_quarantine;
pub use rebuild::RebuildReport;
pub use settings::{
    DEFAULT_CACHE_DIR, DEFAULT_CACHE_SIZE, DEFAULT_DIR_MODE, DEFAULT_TTL_DAYS, Settings,
};
pub use stream::Streamed;
pub use suspect::{AUDITS_RUN, AuditCounts, AuditOutcome, MAX_SUSPECT_REASON_LEN, Suspect};
pub use transfer::{StageError, StagedEntry};

/// The entry file format, for tests and tools that inspect entries.
pub mod format {
    pub use super::entry::{FORMAT_VERSION, HEADER_LEN, MAGIC, MAX_METADATA_LEN};
}
