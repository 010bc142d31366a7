//! Streaming a hit to a file: read, verify (SHA-256) and write in one pass through a bounded
//! buffer, then rename into place, so an artefact is never held whole in memory. A checksum
//! mismatch found on the way quarantines the entry, removes the partial output and is a miss.
//! The output is not synced (a hit performs no fsync, as a compiler writing it would not): the
//! entry it copies is durable, and a lost output is a hit again on the next run.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::mpsc;

use serde_json::Value;
use sha2::{Digest as _, Sha256};
use tracing::info;

use super::atomic::{OUTPUT_TMP_PREFIX, sweep_stale};
use super::cache::{CachedFailure, Store};
use super::entry::{DecodeError, EntryState};
use super::entry_file::read_metadata_from;
use super::error::{Result, StoreError};
use super::index::Counter;
use super::key::CacheKey;
use super::quarantine::quarantine;

/// Buffer of a streamed copy: what a hit holds of the artefact at once.
const CHUNK: usize = 1 << 20;

/// Buffers in flight between the copy and the hashing thread.
const CHUNKS_IN_FLIGHT: usize = 3;

/// Which side of a copy failed.
enum Copy {
    Read(std::io::Error),
    Write(std::io::Error),
}

/// Copies `from` to `to` through `CHUNK`-sized buffers and returns the size and SHA-256 of what
/// was copied. The hash runs on a second thread while the copy goes on: SHA-256 of a large
/// artefact costs about as much as reading and writing it. Each chunk written is handed to the
/// disk at once, so the fsync that follows waits for the last few only.
fn copy_hashed(mut from: impl Read, mut to: &std::fs::File) -> Result<(u64, [u8; 32]), Copy> {
    let (full, to_hash) = mpsc::sync_channel::<Vec<u8>>(CHUNKS_IN_FLIGHT);
    let (hashed, empty) = mpsc::channel::<Vec<u8>>();
    for _ in 0..CHUNKS_IN_FLIGHT {
        let _ = hashed.send(vec![0u8; CHUNK]);
    }
    std::thread::scope(|scope| {
        let hasher = scope.spawn(move || {
            let mut hasher = Sha256::new();
            for chunk in to_hash {
                hasher.update(&chunk);
                let _ = hashed.send(chunk);
            }
            <[u8; 32]>::from(hasher.finalize())
        });
        let mut size = 0u64;
        let copied = loop {
            let mut buf = empty.recv().unwrap_or_default();
            buf.resize(CHUNK, 0);
            let n = match from.read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => n,
                Err(e) => break Err(Copy::Read(e)),
            };
            buf.truncate(n);
            if let Err(e) = to.write_all(&buf) {
                break Err(Copy::Write(e));
            }
            size += n as u64;
            if full.send(buf).is_err() {
                break Ok(());
            }
        };
        drop(full);
        let sha256 = hasher
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        copied.map(|()| (size, sha256))
    })
}

/// The answer to a streamed lookup.
#[derive(Clone, Debug, PartialEq)]
pub enum Streamed {
    /// The artefact, verified, is now at the destination.
    Written {
        key: CacheKey,
        ingredients: Value,
        size: u64,
    },
    Failed(CachedFailure),
    Miss,
}

impl Store {
    /// Looks `key` up and streams its artefact to `dest` (mode `file_mode`), verifying it on
    /// the way; nothing is written on a miss or a remembered failure.
    pub fn get_to(&self, key: &CacheKey, dest: &Path, file_mode: u32) -> Result<Streamed> {
        let digest = key.digest();
        let path = self.layout().entry_path(digest);
        // `gone`: the file is absent or quarantined, so its index row goes too.
        let miss = |gone: bool, corrupt: bool| {
            if corrupt || !key.is_manifest() {
                self.count_miss(&key.to_string(), digest, gone, corrupt);
            }
            Ok(Streamed::Miss)
        };
        let Some(mut file) = self.open_entry(&path)? else {
            if !key.is_manifest() {
                info!("No candidate found under {}", path.display());
            }
            return miss(true, false);
        };
        let seen = file
            .metadata()
            .map_err(|e| StoreError::io("inspect", &path, e))?;
        let corrupt = |reason: String| -> Result<Streamed> {
            quarantine(
                self.layout().quarantine_dir(),
                &path,
                Some(&seen),
                self.now(),
                &reason,
            )?;
            miss(true, true)
        };
        let meta = match read_metadata_from(&mut file, seen.len(), digest) {
            Ok(Ok(meta)) => meta,
            Ok(Err(DecodeError::UnsupportedVersion(_))) => return miss(false, false),
            Ok(Err(DecodeError::Corrupt(c))) => return corrupt(c.to_string()),
            Err(e) => return Err(StoreError::io("read", &path, e)),
        };
        if meta.key != key.to_string() {
            return miss(false, false);
        }
        if self.suspect_of(&meta).is_some() {
            return miss(false, false);
        }
        if let (EntryState::Failed, Some(failure)) = (meta.state, meta.failure.clone()) {
            if self.settings().retry_failed_compilation {
                info!(
                    "Ignoring the cached failed compilation at {} (retry_failed_compilation)",
                    path.display()
                );
                return miss(false, false);
            }
            info!("Got a cached failed compilation at {}", path.display());
            self.touch(&file, &path, seen.len(), &meta, Counter::FailuresReplayed);
            return Ok(Streamed::Failed(CachedFailure {
                key: key.clone(),
                failure,
                ingredients: meta.ingredients,
                created_ms: meta.created_ms,
                path,
            }));
        }
        let dir = dest
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        sweep_stale(dir, OUTPUT_TMP_PREFIX, std::time::SystemTime::now());
        let tmp = tempfile::Builder::new()
            .prefix(OUTPUT_TMP_PREFIX)
            .permissions(std::fs::Permissions::from_mode(file_mode))
            .tempfile_in(dir)
            .map_err(|e| StoreError::io("create a temporary file in", dir, e))?;
        let (size, sha256) = match copy_hashed(&mut file, tmp.as_file()) {
            Ok(copied) => copied,
            Err(Copy::Read(e)) => return Err(StoreError::io("read", &path, e)),
            Err(Copy::Write(e)) => {
                return Err(StoreError::io("write temporary file", tmp.path(), e));
            }
        };
        if hex::encode(sha256) != meta.payload_sha256 {
            drop(tmp);
            return corrupt("the payload checksum does not match".to_owned());
        }
        tmp.persist(dest)
            .map_err(|e| StoreError::io("rename a temporary file into place at", dest, e.error))?;
        info!("Using a cached artefact at {}", path.display());
        let counter = match key.is_manifest() {
            true => Counter::ManifestReads,
            false => Counter::Hits,
        };
        self.touch(&file, &path, seen.len(), &meta, counter);
        Ok(Streamed::Written {
            key: key.clone(),
            ingredients: meta.ingredients,
            size,
        })
    }
}
