//! `run.json`, the first member of a run archive: the run's record and the SHA-256 of each
//! entry file in the archive. It comes from outside, so [`Manifest::check`] bounds and validates
//! every field before anything else is read.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use mck_store::{Digest, UnixMillis};

use crate::address::{check_run_id, shorten};
use crate::registry::{LineError, RunEntry};
use crate::state::RunState;

/// Format of the manifest.
pub const EXPORT_FORMAT: u32 = 1;
/// The manifest's member name.
pub const MANIFEST: &str = "run.json";
/// Largest manifest read (it is held in memory while the archive is read).
pub const MAX_MANIFEST_LEN: u64 = 16 << 20;
/// Most lines a run record may have.
pub const MAX_LINES: usize = 100_000;
/// The prefix of an entry file's member name (`entries/<digest>`).
pub const ENTRY_PREFIX: &str = "entries/";

/// What is wrong with a manifest.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("export format {0} is not supported (expected {EXPORT_FORMAT})")]
    Format(u32),
    #[error("run id {run:?}: {reason}")]
    RunId { run: String, reason: String },
    #[error("{0} lines; a run record may have at most {MAX_LINES}")]
    TooManyLines(usize),
    #[error(transparent)]
    Line(#[from] LineError),
    #[error("the line for address {0} appears twice")]
    DuplicateLine(String),
    #[error("address {0} has two fingerprints as results")]
    TwoResults(String),
    #[error("{0} is not an entry file name")]
    NotEntryName(String),
    #[error("the checksum of {0} is not a SHA-256")]
    NotSha256(String),
    #[error("{0} is listed but no line uses it")]
    Unused(String),
    #[error("{0} is used by a line but not listed")]
    Unlisted(String),
}

/// The record and each entry file's checksum.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    pub run: String,
    pub created_ms: UnixMillis,
    pub entries: Vec<RunEntry>,
    /// Entry file member name → SHA-256 of its bytes (lowercase hex).
    pub files: BTreeMap<String, String>,
}

impl Manifest {
    /// Checks everything the manifest says: format, run id, every line (address, key, digest,
    /// state), no address twice, file names and checksums well formed, a file for every line
    /// that has an artefact and no file that no line uses.
    pub fn check(&self) -> Result<(), ManifestError> {
        if self.format != EXPORT_FORMAT {
            return Err(ManifestError::Format(self.format));
        }
        check_run_id(&self.run).map_err(|reason| ManifestError::RunId {
            run: shorten(&self.run),
            reason,
        })?;
        if self.entries.len() > MAX_LINES {
            return Err(ManifestError::TooManyLines(self.entries.len()));
        }
        // A record is append-only: an address may have a conflict line and then its result,
        // but never the same line twice, nor two fingerprints as results.
        let mut lines = BTreeSet::new();
        let mut results = std::collections::BTreeMap::new();
        let mut used = BTreeSet::new();
        for line in &self.entries {
            line.check()?;
            if !lines.insert((
                line.address.as_str(),
                line.key.as_str(),
                line.state.as_str(),
            )) {
                return Err(ManifestError::DuplicateLine(shorten(&line.address)));
            }
            if line.state != RunState::Conflict
                && let Some(other) = results.insert(line.address.as_str(), line.key.as_str())
                && other != line.key
            {
                return Err(ManifestError::TwoResults(shorten(&line.address)));
            }
            if line.state != RunState::Conflict {
                used.insert(member_name(&line.digest));
            }
        }
        for (name, sum) in &self.files {
            digest_of(name)?;
            if sum.len() != 64 || !sum.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                return Err(ManifestError::NotSha256(name.clone()));
            }
            if !used.contains(name) {
                return Err(ManifestError::Unused(name.clone()));
            }
        }
        if let Some(missing) = used.iter().find(|n| !self.files.contains_key(*n)) {
            return Err(ManifestError::Unlisted(missing.clone()));
        }
        Ok(())
    }
}

/// The member name of the entry file of `digest`.
pub fn member_name(digest: &str) -> String {
    format!("{ENTRY_PREFIX}{digest}")
}

/// The digest in a member name `entries/<digest>`.
pub fn digest_of(name: &str) -> Result<Digest, ManifestError> {
    name.strip_prefix(ENTRY_PREFIX)
        .and_then(|d| Digest::parse(d).ok())
        .ok_or_else(|| ManifestError::NotEntryName(shorten(name)))
}
