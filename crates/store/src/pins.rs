//! What eviction must spare, asked of whoever records references to entries (run records, in
//! `mck-runs`): the store names its candidates, the owner of the references answers which of them
//! are pinned. The store never opens another component's database.

use std::collections::HashSet;

/// Why [`Pins::pinned`] could not answer; eviction then removes nothing.
pub type PinsError = Box<dyn std::error::Error + Send + Sync>;

/// Entries that something outside the cache still references and that eviction must keep.
pub trait Pins: Send + Sync + std::fmt::Debug {
    /// Which of `digests` (entry digests, 64 hex) are pinned.
    fn pinned(&self, digests: &[String]) -> Result<HashSet<String>, PinsError>;
}
