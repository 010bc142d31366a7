//! What the registry holds and answers, whichever database keeps it: an address's fingerprint,
//! a run's lines and summary, a compile in progress, and what an address says of a new
//! fingerprint.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use mck_store::{CacheKey, EntryState, StoreError, UnixMillis};

use crate::address::{Address, AddressError, shorten};
use crate::state::RunState;

/// What an address holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AddressEntry {
    pub address: String,
    pub local_name: String,
    pub key: String,
    pub digest: String,
    pub state: EntryState,
    /// The run that last set it.
    pub run: String,
    pub updated_ms: UnixMillis,
    /// The key record (readable ingredients) of the fingerprint it holds.
    #[serde(skip)]
    pub record: Value,
}

/// One line of a run's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunEntry {
    pub address: String,
    pub key: String,
    pub digest: String,
    pub state: RunState,
    pub time_ms: UnixMillis,
    /// For a conflict: the fingerprint the address held.
    pub conflict_with: Option<String>,
}

/// Why a run line from outside is refused.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error(transparent)]
    Address(#[from] AddressError),
    /// The key, or the conflicting key, is not a cache key.
    #[error(transparent)]
    Key(#[from] StoreError),
    #[error("{address}: digest {digest} is not the key's")]
    Digest { address: String, digest: String },
    #[error("{0}: only a conflict line names the fingerprint it met")]
    ConflictWith(String),
}

impl RunEntry {
    /// Checks a line that came from outside (an imported archive): a valid, bounded address, a
    /// key whose digest is `digest`, a valid conflicting key exactly on a conflict line (the
    /// state itself is typed: an unknown one never parses).
    pub fn check(&self) -> std::result::Result<(), LineError> {
        Address::parse(&self.address)?;
        let key = CacheKey::parse(&self.key)?;
        if key.digest().as_str() != self.digest {
            return Err(LineError::Digest {
                address: self.address.clone(),
                digest: shorten(&self.digest),
            });
        }
        match (&self.conflict_with, self.state == RunState::Conflict) {
            (Some(other), true) => Ok(CacheKey::parse(other).map(drop)?),
            (None, false) => Ok(()),
            _ => Err(LineError::ConflictWith(self.address.clone())),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunSummary {
    pub run: String,
    pub created_ms: UnixMillis,
    pub entries: u64,
    pub failed: u64,
    pub conflicts: u64,
    /// When `runs close` sealed it.
    pub sealed_ms: Option<UnixMillis>,
}

/// A compile in progress at an address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunningEntry {
    pub address: String,
    pub run: String,
    pub key: String,
    pub host: String,
    pub pid: u32,
    pub started_ms: UnixMillis,
    /// In a shared registry: how long the mark stays live unless its process renews it, by
    /// the database's clock (negative: expired). The local registry asks the kernel instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_left_ms: Option<i64>,
}

impl std::fmt::Display for RunningEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "run {} (pid {} on {}) is compiling {} at {}",
            self.run, self.pid, self.host, self.key, self.address
        )
    }
}

/// What an address says about a new fingerprint.
#[derive(Debug, Clone, PartialEq)]
pub enum AddressClaim {
    /// Nothing is recorded at the address, or only a failed result (which the next run
    /// simply computes again: a failure is never a conflict).
    Free,
    /// The address holds this very fingerprint.
    Same,
    /// The address holds another fingerprint: a cache conflict.
    Conflict(Box<AddressEntry>),
    /// This run already reached the address with another fingerprint.
    RunConflict { earlier_key: String },
    /// A live process of another run is compiling another fingerprint at the address.
    Running(Box<RunningEntry>),
    /// In a shared registry, another live process is compiling this very fingerprint at the
    /// address: wait for its result rather than compile it twice.
    Busy(Box<RunningEntry>),
}
