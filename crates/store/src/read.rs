//! Reading entry files: opening without following symlinks, verifying, quarantining what fails,
//! and recording a use (index last use and counter, file mtime). Every path that returns entry
//! bytes or metadata to a caller goes through here, so nothing unverified gets out.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::Path;

use tracing::debug;

use super::cache::Store;
use super::clock::ms_to_system_time;
use super::entry::{self, DecodeError, EntryMeta, EntryState};
use super::entry_file::{Damaged, EntryRead, ValidEntry, read_metadata_from};
use super::error::{Result, StoreError};
use super::fsutil;
use super::history::{What, compile_ms_of};
use super::index::{Counter, Row};
use super::key::{CacheKey, Digest};
use super::quarantine::quarantine;

impl Store {
    /// Reads and checks an entry's metadata (header and metadata checksum; not the payload),
    /// e.g. to explain a miss against an existing entry's ingredients. A damaged entry is
    /// quarantined and gives `None`.
    pub fn read_metadata(&self, digest: &Digest) -> Result<Option<EntryMeta>> {
        let path = self.layout().entry_path(digest);
        let Some(mut file) = self.open_entry(&path)? else {
            return Ok(None);
        };
        let seen = file
            .metadata()
            .map_err(|e| StoreError::io("inspect", &path, e))?;
        match read_metadata_from(&mut file, seen.len(), digest) {
            Ok(Ok(meta)) => Ok(Some(meta)),
            Ok(Err(DecodeError::UnsupportedVersion(_))) => Ok(None),
            Ok(Err(DecodeError::Corrupt(c))) => {
                quarantine(
                    self.layout().quarantine_dir(),
                    &path,
                    Some(&seen),
                    self.now(),
                    &c.to_string(),
                )?;
                self.count_miss(digest.as_str(), digest, true, true);
                Ok(None)
            }
            Err(e) => Err(StoreError::io("read", &path, e)),
        }
    }

    /// Opens an entry file without following symlinks. `None` when absent. A symlink or
    /// non-regular file where an entry should be is quarantined (and gives `None`).
    pub(super) fn open_entry(&self, path: &Path) -> Result<Option<File>> {
        if let Some(shard) = path.parent() {
            match fs::symlink_metadata(shard) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(StoreError::Insecure {
                        path: shard.to_owned(),
                        reason: "a shard directory is a symlink or not a directory".to_owned(),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(StoreError::io("inspect", shard, e)),
            }
        }
        match fsutil::open_regular_nofollow(path) {
            Ok(f) => Ok(Some(f)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => match fs::symlink_metadata(path) {
                Ok(m) if !m.file_type().is_file() => {
                    quarantine(
                        self.layout().quarantine_dir(),
                        path,
                        Some(&m),
                        self.now(),
                        "not a regular file",
                    )?;
                    Ok(None)
                }
                _ => Err(StoreError::io("open", path, e)),
            },
        }
    }

    /// Reads and verifies an entry file. A damaged one is quarantined unless `damaged` says to
    /// leave it (a prefetch: the lookup that may follow counts and quarantines it).
    pub(super) fn read_entry(
        &self,
        path: &Path,
        digest: &Digest,
        damaged: Damaged,
    ) -> Result<EntryRead> {
        let Some(mut file) = self.open_entry(path)? else {
            return Ok(EntryRead::Absent);
        };
        let seen = file
            .metadata()
            .map_err(|e| StoreError::io("inspect", path, e))?;
        let mut bytes = Vec::with_capacity(usize::try_from(seen.len()).unwrap_or(0));
        file.read_to_end(&mut bytes)
            .map_err(|e| StoreError::io("read", path, e))?;
        match entry::decode(&bytes, digest) {
            Ok((meta, range)) => Ok(EntryRead::Valid(Box::new(ValidEntry {
                file,
                size: bytes.len() as u64,
                meta,
                payload_start: range.start,
                bytes,
            }))),
            Err(DecodeError::UnsupportedVersion(v)) => Ok(EntryRead::Unsupported(v)),
            Err(DecodeError::Corrupt(_)) if damaged == Damaged::Leave => Ok(EntryRead::Corrupt),
            Err(DecodeError::Corrupt(c)) => {
                quarantine(
                    self.layout().quarantine_dir(),
                    path,
                    Some(&seen),
                    self.now(),
                    &c.to_string(),
                )?;
                Ok(EntryRead::Corrupt)
            }
        }
    }

    /// Counts a hit of `key`'s artefact read earlier by [`Store::peek`] and used now (its use
    /// time, the hit counter, the history), as [`Store::get`] would have; false when the entry
    /// is no longer there (removed or replaced meanwhile: nothing is counted).
    pub fn count_hit(&self, key: &CacheKey) -> Result<bool> {
        let path = self.layout().entry_path(key.digest());
        let Some(file) = self.open_entry(&path)? else {
            return Ok(false);
        };
        let Some(meta) = self.read_metadata(key.digest())? else {
            return Ok(false);
        };
        if meta.key != key.to_string() || meta.state != EntryState::Ok {
            return Ok(false);
        }
        let size = file
            .metadata()
            .map_err(|e| StoreError::io("inspect", &path, e))?
            .len();
        self.touch(&file, &path, size, &meta, Counter::Hits);
        Ok(true)
    }

    /// Records a use: index last-use and counter, re-adding a missing row; file mtime (so a
    /// rebuilt index recovers the last use).
    pub(super) fn touch(
        &self,
        file: &File,
        path: &Path,
        size: u64,
        meta: &EntryMeta,
        counter: Counter,
    ) {
        let now = self.now();
        self.index_best_effort("record a use", |ix| {
            if !ix.record_use(&meta.digest, now, counter)? {
                ix.insert_if_absent(&Row {
                    digest: meta.digest.clone(),
                    name: meta.name.clone(),
                    state: meta.state,
                    size,
                    artefact_size: meta.artefact_size,
                    created_ms: meta.created_ms,
                    last_used_ms: now,
                })?;
            }
            Ok(())
        });
        let key = meta.key.clone();
        match counter {
            Counter::Hits => self.history().record(
                now,
                What::Hit {
                    key,
                    size,
                    saved_ms: compile_ms_of(&meta.ingredients),
                },
            ),
            Counter::FailuresReplayed => self.history().record(now, What::FailureReplayed { key }),
            _ => {}
        }
        if let Err(e) = file.set_modified(ms_to_system_time(now)) {
            debug!("cannot update the mtime of {}: {e}", path.display());
        }
    }
}
