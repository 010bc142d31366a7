//! Exec errors, by whose fault: the input, the cache, a conflict at an address, or other.

use mck_runs::RunsError;
use mck_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// An input could not be read or used (the compiler, an argument, the environment).
    #[error("{0:#}")]
    Input(anyhow::Error),
    /// The compiler (or another file the command needs) does not exist or cannot be read.
    #[error("{0:#}")]
    Missing(anyhow::Error),
    /// The cache could not be opened or used.
    #[error(transparent)]
    Cache(#[from] StoreError),
    /// The registry of addresses and runs could not be used, or refused the record.
    #[error(transparent)]
    Runs(#[from] RunsError),
    /// One run reached one address with two fingerprints.
    #[error("{0}")]
    RunConflict(String),
    /// Anything else (I/O on the output, waiting for the compiler).
    #[error("{0:#}")]
    Other(anyhow::Error),
}

impl ExecError {
    pub(crate) fn input(error: impl Into<anyhow::Error>) -> Self {
        ExecError::Input(error.into())
    }
    pub(crate) fn other(error: impl Into<anyhow::Error>) -> Self {
        ExecError::Other(error.into())
    }
}

impl From<mck_key::KeyError> for ExecError {
    fn from(e: mck_key::KeyError) -> Self {
        ExecError::Input(e.into())
    }
}
