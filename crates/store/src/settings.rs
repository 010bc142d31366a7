//! The values the store is opened with: a plain struct with its defaults. Reading them from
//! `MLIR_CACHE_KEY_FLAGS`, the configuration file or a command line is `mck-settings`' job; the
//! store reads no environment.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

/// The cache directory of a store opened with no directory chosen. The command line and the
/// Python package never use it: `mck-settings` picks a per-user directory
/// (`$XDG_CACHE_HOME/mlir-cache-key`, else `~/.cache/mlir-cache-key`).
pub const DEFAULT_CACHE_DIR: &str = "/var/tmp/mlir-cache-key";
/// Default size cap: 100 GB.
pub const DEFAULT_CACHE_SIZE: u64 = 100_000_000_000;
/// Default time-to-live in days.
pub const DEFAULT_TTL_DAYS: u32 = 30;
/// Default bound of the lookup history (`history.rs`): 16 MiB.
pub const DEFAULT_HISTORY_SIZE: u64 = 16 << 20;
/// Default age after which history lines are dropped, in days.
pub const DEFAULT_HISTORY_DAYS: u32 = 90;
/// Default mode of the directories the store creates.
pub const DEFAULT_DIR_MODE: u32 = 0o700;

const SECONDS_PER_DAY: f64 = 86_400.0;

/// What the store needs to know to open a cache.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Settings {
    pub cache_dir: PathBuf,
    /// False when caching is off: the caller should neither look up nor store.
    pub enabled: bool,
    /// Size cap in bytes (whole entry files: header, metadata and artefact).
    pub max_size: u64,
    /// Entries whose last use is within this long are never evicted.
    #[serde(serialize_with = "serialize_days")]
    pub ttl: Duration,
    /// A remembered failure reads as a miss.
    pub retry_failed_compilation: bool,
    /// Mode of the directories the store creates (files get the same bits minus execute).
    pub dir_mode: u32,
    /// Serve hits only: look up, never store, evict or record a use (the `read_only` setting;
    /// the store also turns it on by itself when the cache directory is not writable).
    pub read_only: bool,
    /// Bytes the lookup history may take (0: keep none).
    pub history_size: u64,
    /// History lines older than this are dropped.
    #[serde(serialize_with = "serialize_days")]
    pub history_age: Duration,
    /// fsync artefacts and directories when publishing (power-loss safety). Not a setting: only
    /// benchmarks turn it off. A killed process never needs it: rename is atomic regardless.
    pub fsync: bool,
}

fn serialize_days<S: serde::Serializer>(ttl: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(ttl.as_secs_f64() / SECONDS_PER_DAY)
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            cache_dir: PathBuf::from(DEFAULT_CACHE_DIR),
            enabled: true,
            max_size: DEFAULT_CACHE_SIZE,
            ttl: Duration::from_secs(u64::from(DEFAULT_TTL_DAYS) * 86_400),
            retry_failed_compilation: false,
            dir_mode: DEFAULT_DIR_MODE,
            read_only: false,
            history_size: DEFAULT_HISTORY_SIZE,
            history_age: Duration::from_secs(u64::from(DEFAULT_HISTORY_DAYS) * 86_400),
            fsync: true,
        }
    }
}
