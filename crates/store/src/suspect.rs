//! Suspect entries and hit audits. An audit (exec's `--verify-hits`, the Python cache's
//! `verify_rate`) recompiles a hit and compares; a false hit marks the entry suspect: the entry
//! file stays on disk for inspection, untouched, and a marker `v1/suspect/<digest>` beside the
//! entries names the payload it condemns (its SHA-256) and why. Every read path treats an entry
//! whose payload the marker names as a miss; a put of a different payload lifts the marker, and
//! `gc` removes markers whose entry is gone or was replaced.
//!
//! Audit outcomes are event counters (`counters.sqlite`), read by `cache stats`.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read as _};
use std::path::Path;

use serde::{Deserialize, Serialize};
use tracing::{info, warn};

use super::cache::{Store, remove_file_if_exists};
use super::clock::{UnixMillis, ms_to_system_time};
use super::entry::EntryMeta;
use super::error::{Result, StoreError};
use super::fsutil;
use super::key::{CacheKey, Digest};

/// Longest reason kept in a marker, in bytes (the start is kept).
pub const MAX_SUSPECT_REASON_LEN: usize = 4096;
/// Longest marker file read back (a reason at its bound plus the fields fits easily).
const MAX_MARKER_LEN: u64 = 64 << 10;
/// Most markers `cache list` reads (a cache with more lists the rest unmarked).
const MAX_MARKERS_LISTED: usize = 100_000;
const MARKER_SCHEMA: &str = "mlir-cache-key.suspect.v1";

/// Why an entry is no longer served.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suspect {
    pub schema: String,
    pub key: String,
    /// SHA-256 of the condemned payload: a marker applies to that payload only.
    pub payload_sha256: String,
    /// When the condemned entry was created (lets `cache list` match rows without reading them).
    pub entry_created_ms: UnixMillis,
    pub marked_ms: UnixMillis,
    pub reason: String,
}

/// What a hit audit found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditOutcome {
    /// The fresh artefact equals the stored one.
    Confirmed,
    /// Two fresh artefacts agree with each other and differ from the stored one.
    FalseHit,
    /// Two fresh artefacts differ from each other: the compiler is nondeterministic here.
    Nondeterministic,
}

impl AuditOutcome {
    /// The event counter this outcome bumps (besides [`AUDITS_RUN`]).
    pub fn counter(self) -> &'static str {
        match self {
            AuditOutcome::Confirmed => "audits_confirmed",
            AuditOutcome::FalseHit => "audits_false_hits",
            AuditOutcome::Nondeterministic => "audits_nondeterministic",
        }
    }
}

/// The counter of audits run, whatever they found.
pub const AUDITS_RUN: &str = "audits_run";

/// Audit counters as `cache stats` shows them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AuditCounts {
    pub run: u64,
    pub confirmed: u64,
    pub false_hits: u64,
    pub nondeterministic: u64,
}

impl AuditCounts {
    /// Reads them from the counters by name (missing: 0).
    pub fn from_counters(get: impl Fn(&str) -> u64) -> AuditCounts {
        AuditCounts {
            run: get(AUDITS_RUN),
            confirmed: get(AuditOutcome::Confirmed.counter()),
            false_hits: get(AuditOutcome::FalseHit.counter()),
            nondeterministic: get(AuditOutcome::Nondeterministic.counter()),
        }
    }
}

impl Store {
    /// Stops serving the entry under `key`: it stays on disk, every lookup reads it as a miss,
    /// and `reason` (cut to [`MAX_SUSPECT_REASON_LEN`]) is shown by `cache show` and `cache list`.
    /// No entry under the key: nothing to mark.
    pub fn mark_suspect(&self, key: &CacheKey, reason: &str) -> Result<()> {
        self.refuse_if_read_only()?;
        let Some(meta) = self.read_metadata(key.digest())? else {
            return Ok(());
        };
        if meta.key != key.to_string() {
            return Ok(());
        }
        let marker = Suspect {
            schema: MARKER_SCHEMA.to_owned(),
            key: meta.key.clone(),
            payload_sha256: meta.payload_sha256.clone(),
            entry_created_ms: meta.created_ms,
            marked_ms: self.now(),
            reason: bounded_reason(reason),
        };
        let json = serde_json::to_vec_pretty(&marker).map_err(|e| StoreError::Encode {
            key: key.to_string(),
            reason: e.to_string(),
        })?;
        let dir = self.layout().suspect_dir();
        fsutil::ensure_private_dir(&dir, self.settings().dir_mode)?;
        super::atomic::publish(
            self.layout().tmp_dir(),
            ".suspect-",
            &self.layout().suspect_path(key.digest()),
            &[&json],
            self.file_mode(),
            ms_to_system_time(marker.marked_ms),
            self.settings().fsync,
        )?;
        info!(
            "Marked the cache entry {key} at {} suspect: it is no longer served ({})",
            self.layout().entry_path(key.digest()).display(),
            marker.reason
        );
        Ok(())
    }

    /// Counts one hit audit and what it found (best effort: a failure is only logged).
    pub fn record_audit(&self, outcome: AuditOutcome) {
        self.index_best_effort("count a hit audit", |ix| {
            ix.add_named(AUDITS_RUN, 1)?;
            ix.add_named(outcome.counter(), 1)
        });
    }

    /// The marker condemning the entry under `key` as it is now, if one does.
    pub fn suspect(&self, key: &CacheKey) -> Result<Option<Suspect>> {
        match self.read_metadata(key.digest())? {
            Some(meta) => Ok(self.suspect_of(&meta)),
            None => Ok(None),
        }
    }

    /// The marker condemning the entry described by `meta`, if one does. A marker that cannot
    /// be read condemns nothing (logged): serving is what the cache did before it.
    pub fn suspect_of(&self, meta: &EntryMeta) -> Option<Suspect> {
        let digest = Digest::parse(&meta.digest).ok()?;
        let path = self.layout().suspect_path(&digest);
        let marker = read_marker(&path)?;
        (marker.key == meta.key && marker.payload_sha256 == meta.payload_sha256).then(|| {
            info!(
                "Not serving the suspect cache entry {} (see {}): {}",
                meta.key,
                path.display(),
                marker.reason
            );
            marker
        })
    }

    /// Every marker by digest (for `cache list`; matched to rows by key and creation time).
    pub fn suspects(&self) -> Result<HashMap<String, Suspect>> {
        let dir = self.layout().suspect_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(HashMap::new()),
            Err(e) => return Err(StoreError::io("list", &dir, e)),
        };
        let mut found = HashMap::new();
        for entry in entries.take(MAX_MARKERS_LISTED) {
            let entry = entry.map_err(|e| StoreError::io("list", &dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if Digest::parse(&name).is_err() {
                continue;
            }
            if let Some(marker) = read_marker(&entry.path()) {
                found.insert(name, marker);
            }
        }
        Ok(found)
    }

    /// Lifts the marker on `digest` unless it condemns `payload_sha256` (a put of the same
    /// payload stays suspect). Best effort.
    pub(super) fn lift_suspect(&self, digest: &Digest, payload_sha256: &str) {
        let path = self.layout().suspect_path(digest);
        let Some(marker) = read_marker_quiet(&path) else {
            return;
        };
        if marker.payload_sha256 == payload_sha256 {
            return;
        }
        if let Err(e) = remove_file_if_exists(&path) {
            warn!("{e}");
        }
    }

    /// Removes markers whose entry is gone or holds another payload; returns how many.
    pub(super) fn sweep_suspects(&self) -> Result<u64> {
        let mut removed = 0;
        for (name, marker) in self.suspects()? {
            let Ok(digest) = Digest::parse(&name) else {
                continue;
            };
            let stale = match self.read_metadata(&digest)? {
                Some(meta) => meta.payload_sha256 != marker.payload_sha256,
                None => true,
            };
            if stale && remove_file_if_exists(&self.layout().suspect_path(&digest))? {
                removed += 1;
            }
        }
        Ok(removed)
    }
}

fn read_marker(path: &Path) -> Option<Suspect> {
    let read = read_marker_result(path);
    match read {
        Ok(marker) => marker,
        Err(e) => {
            warn!("ignoring the suspect marker {}: {e}", path.display());
            None
        }
    }
}

fn read_marker_quiet(path: &Path) -> Option<Suspect> {
    read_marker_result(path).ok().flatten()
}

fn read_marker_result(path: &Path) -> std::result::Result<Option<Suspect>, String> {
    let mut file = match fsutil::open_regular_nofollow(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let mut bytes = Vec::new();
    file.by_ref()
        .take(MAX_MARKER_LEN)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    let marker: Suspect = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    if marker.schema != MARKER_SCHEMA {
        return Err(format!("unknown schema {:?}", marker.schema));
    }
    Ok(Some(marker))
}

fn bounded_reason(reason: &str) -> String {
    if reason.len() <= MAX_SUSPECT_REASON_LEN {
        return reason.to_owned();
    }
    let mut end = MAX_SUSPECT_REASON_LEN;
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &reason[..end])
}
