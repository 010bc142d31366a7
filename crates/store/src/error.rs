//! Errors of the cache store. Every variant names the operation and the path (or the input) it
//! failed on, so a message alone tells a user what to look at.

use std::io;
use std::path::PathBuf;

/// Anything the store can fail with.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A filesystem operation failed.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The SQLite index failed (after the automatic repair was tried, where one applies).
    #[error("cache index {}: cannot {op}: {source}", path.display())]
    Index {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// A key that does not have the form `<module name>-<64 lowercase hex digits>`.
    #[error("invalid cache key {key:?}: {reason}")]
    InvalidKey { key: String, reason: &'static str },
    /// The cache directory (or a directory inside it) is unsafe to use.
    #[error("refusing to use cache directory {}: {reason}", path.display())]
    Insecure { path: PathBuf, reason: String },
    /// An entry could not be encoded (the metadata did not serialize, or is too large).
    #[error("cannot encode cache entry for {key}: {reason}")]
    Encode { key: String, reason: String },
}

impl StoreError {
    /// A filesystem failure of `op` on `path`.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        StoreError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// `Result` with [`StoreError`].
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
