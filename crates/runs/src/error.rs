//! Errors of addresses, the registry and run archives. Each names the operation and the file
//! (or the run, the archive) it failed on.

use std::path::PathBuf;

use mck_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum RunsError {
    /// The cache under the registry failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The registry of addresses and run records failed (its file, or a shared registry's
    /// URL, which never holds a password).
    #[error("cache registry {location}: cannot {op}: {source}")]
    Registry {
        op: &'static str,
        location: String,
        /// The database could not be reached (a shared registry's server or network), as
        /// opposed to refusing a statement.
        unreachable: bool,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A run closed with `runs close` is never changed.
    #[error("run {run} is closed (`runs close`): its record never changes; use another --run")]
    Sealed { run: String },
    /// An address or a run record that the registry refuses.
    #[error("{0}")]
    Refused(String),
    /// A run archive (`runs import`) that is refused; nothing was written.
    #[error("{}: {reason}; nothing was imported", file.display())]
    Archive { file: PathBuf, reason: String },
}

impl RunsError {
    /// True when the input (an address, a run, an archive) is at fault, not the cache.
    pub fn is_refusal(&self) -> bool {
        matches!(self, RunsError::Sealed { .. } | RunsError::Refused(_))
    }

    /// True when a shared registry's database could not be reached: addressed work then goes
    /// on unaddressed (unless `cache_errors = fail`).
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            RunsError::Registry {
                unreachable: true,
                ..
            }
        )
    }
}

/// `Result` with [`RunsError`].
pub type Result<T, E = RunsError> = std::result::Result<T, E>;
