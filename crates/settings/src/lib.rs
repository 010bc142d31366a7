//! The settings of mlir-cache-key, defined once ([`SETTINGS`], in `defs`) and read from their
//! sources: the configuration file of the cache directory (`config`), `MLIR_CACHE_KEY_FLAGS`
//! and command-line overrides (`layer`), layered with the source of each (`resolve`). Values are
//! parsed by `values`; `docs` renders the table for docs/settings.md and the man page.
//! MLIR-free; the store it configures (`mck-store`) reads no environment.

mod config;
mod defs;
mod docs;
mod layer;
mod registry;
mod resolve;
mod user_dir;
mod values;

use serde::Serialize;

pub use config::{CONFIG_FILE, ConfigError, MAX_CONFIG_LEN, parse_config, read_config, set_config};
pub use defs::{CommandLine, Kind, SETTINGS, Setter, Setting, find};
pub use docs::{man_section, markdown_table};
pub use layer::{Assignment, Layer};
pub use registry::{
    DEFAULT_REGISTRY_LEASE, MAX_REGISTRY_URL_LEN, RegistrySettings, parse_registry,
};
pub use resolve::{Resolved, Source};
pub use user_dir::{CACHE_DIR_NAME, user_cache_dir};
pub use values::{
    check_rate, parse_cache_errors, parse_dir_mode, parse_log_level, parse_rate, parse_seconds,
    parse_size, parse_ttl_days, parse_wait,
};

/// The environment variable the settings are read from.
pub const FLAGS_VAR: &str = "MLIR_CACHE_KEY_FLAGS";

/// Every setting after layering: the store's, and the commands' own.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Settings {
    /// What the store is opened with.
    pub store: mck_store::Settings,
    /// The chain of remote tiers behind it (`mck-remote`).
    pub remote: mck_remote::RemoteSettings,
    /// Where addresses and run records live (`mck-runs`).
    pub registry: RegistrySettings,
    /// `exec` goes through the canonical key only: no manifest from the input's raw bytes.
    pub no_direct: bool,
    /// Direct mode hashes every input: no digest remembered in the inode cache.
    pub no_inode_cache: bool,
    /// The fraction of `exec`/`wrap` hits recompiled and compared (0 to 1).
    pub verify_hits: f64,
    /// How long a compile waits for another process compiling the same key.
    pub lock_timeout: std::time::Duration,
    pub log_level: LogLevel,
    /// What `exec`, `wrap` and the compiler symlinks do when the cache cannot be used.
    pub cache_errors: CacheErrors,
}

/// The default of `lock_timeout`.
pub const DEFAULT_LOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

impl Default for Settings {
    fn default() -> Self {
        Settings {
            store: Default::default(),
            remote: Default::default(),
            registry: Default::default(),
            no_direct: false,
            no_inode_cache: false,
            verify_hits: 0.0,
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            log_level: Default::default(),
            cache_errors: Default::default(),
        }
    }
}

/// What a compile wrapper does when the cache cannot be opened or used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheErrors {
    /// Warn once and run the compiler as if the wrapper were not there.
    #[default]
    Warn,
    /// Fail with the cache's exit code (74), the compiler not run: for CI that must notice.
    Fail,
}

impl CacheErrors {
    /// The value's name as the configuration file writes it.
    pub fn name(self) -> &'static str {
        match self {
            CacheErrors::Warn => "warn",
            CacheErrors::Fail => "fail",
        }
    }
}

/// The log level named by `log_level`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum LogLevel {
    Error,
    #[default]
    Warning,
    Info,
    Debug,
}

impl LogLevel {
    /// The matching `tracing` level, for a subscriber.
    pub fn as_tracing(self) -> tracing::Level {
        match self {
            LogLevel::Error => tracing::Level::ERROR,
            LogLevel::Warning => tracing::Level::WARN,
            LogLevel::Debug => tracing::Level::DEBUG,
            LogLevel::Info => tracing::Level::INFO,
        }
    }

    /// The level's name as `config show` writes it.
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Error => "ERROR",
            LogLevel::Warning => "WARNING",
            LogLevel::Info => "INFO",
            LogLevel::Debug => "DEBUG",
        }
    }
}

/// A setting that could not be parsed. `source_name` names where it came from: the
/// environment variable (`MLIR_CACHE_KEY_FLAGS`), a line of the configuration file, or
/// `command line`.
#[derive(Debug, thiserror::Error)]
#[error("{source_name}: {flag}: {message}")]
pub struct SettingsError {
    pub source_name: String,
    pub flag: String,
    pub message: String,
    pub kind: ErrorKind,
}

/// Whose fault a [`SettingsError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A bad name or value: a usage error.
    Invalid,
    /// The configuration file or the cache directory cannot be read or found (permissions, no
    /// home directory): the cache is unusable, the request is fine.
    Unreadable,
}
