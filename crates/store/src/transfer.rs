//! Moving entries between caches: export the verified bytes of an entry file, import
//! them elsewhere after verifying them again, or stage an entry file streamed from outside (a
//! run archive, `mck-runs`) in `v1/tmp/`, verified, before publishing it.

use std::fs::File;
use std::io::{self, Read, Write};

use sha2::{Digest as _, Sha256};
use tempfile::NamedTempFile;

use super::cache::PutOutcome;
use super::cache::Store;
use super::entry::{self, DecodeError, EntryMeta, HEADER_LEN};
use super::entry_file::verify_from;
use super::entry_file::{Damaged, EntryRead};
use super::error::{Result, StoreError};
use super::key::{CacheKey, Digest};

impl Store {
    /// The raw bytes of `key`'s entry file, fully verified: for sharing an entry with another
    /// cache ([`Store::import_entry`]). `None` when absent, damaged (then quarantined) or for
    /// another name.
    pub fn export_entry(&self, key: &CacheKey) -> Result<Option<Vec<u8>>> {
        let path = self.layout().entry_path(key.digest());
        match self.read_entry(&path, key.digest(), Damaged::Quarantine)? {
            EntryRead::Valid(v) if v.meta.key == key.to_string() => Ok(Some(v.bytes)),
            EntryRead::Corrupt => {
                self.count_miss(&key.to_string(), key.digest(), true, true);
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// Verifies an entry file's bytes (from [`Store::export_entry`], possibly another machine's)
    /// and publishes them under the key they carry, which is returned. Its creation time and
    /// ingredients are kept; its last use is now. Damaged bytes are refused with
    /// [`StoreError::Encode`].
    pub fn import_entry(&self, bytes: &[u8]) -> Result<CacheKey> {
        let refuse = |reason: String| StoreError::Encode {
            key: "(imported entry)".to_owned(),
            reason,
        };
        let header = entry::decode_header(bytes).map_err(|e| refuse(e.to_string()))?;
        let meta_end = HEADER_LEN + header.metadata_len;
        let meta_bytes = bytes
            .get(HEADER_LEN..meta_end)
            .ok_or_else(|| refuse("truncated metadata".to_owned()))?;
        let claimed: EntryMeta = serde_json::from_slice(meta_bytes)
            .map_err(|e| refuse(format!("metadata is not valid: {e}")))?;
        let key = CacheKey::parse(&claimed.key)?;
        let (meta, range) =
            entry::decode(bytes, key.digest()).map_err(|e| refuse(e.to_string()))?;
        self.publish_parts(&key, &meta, (range.end - range.start) as u64, &[bytes])?;
        Ok(key)
    }
}

/// A verified entry file waiting in `v1/tmp/`; dropping it removes the file.
#[derive(Debug)]
pub struct StagedEntry {
    file: NamedTempFile,
    meta: EntryMeta,
    size: u64,
}

impl StagedEntry {
    /// The entry's verified metadata (its key, state and ingredients).
    pub fn meta(&self) -> &EntryMeta {
        &self.meta
    }
}

/// Why a streamed entry file was not staged.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// Creating, filling or reading back the temporary file failed (`what` says which).
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        source: io::Error,
    },
    #[error("truncated: the archive holds {copied} of the {claimed} bytes it claims")]
    Truncated { copied: u64, claimed: u64 },
    #[error("does not match its checksum")]
    Checksum,
    /// The bytes are no valid entry of the digest, or one of a newer format.
    #[error("{}", match .0 { DecodeError::Corrupt(c) => format!("not a valid entry: {c}"), e => e.to_string() })]
    Invalid(DecodeError),
    #[error("cannot read back: {0}")]
    ReadBack(io::Error),
}

impl Store {
    /// Copies `size` bytes of `from` into a temporary file in `v1/tmp/`, checking their SHA-256
    /// against `sha256` (hex), then verifies them as a whole entry file of `digest`. Memory: a
    /// 64 KiB buffer and the entry's metadata.
    pub fn stage_entry(
        &self,
        from: &mut impl Read,
        size: u64,
        sha256: &str,
        digest: &Digest,
    ) -> std::result::Result<StagedEntry, StageError> {
        let mut file = tempfile::Builder::new()
            .prefix(".import-")
            .tempfile_in(self.layout().tmp_dir())
            .map_err(|source| StageError::Io {
                what: "cannot create a temporary file",
                source,
            })?;
        let (copied, hash) =
            copy_hashing(from, file.as_file_mut()).map_err(|source| StageError::Io {
                what: "damaged archive",
                source,
            })?;
        if copied != size {
            return Err(StageError::Truncated {
                copied,
                claimed: size,
            });
        }
        if hex::encode(hash) != *sha256 {
            return Err(StageError::Checksum);
        }
        let meta = verify_from(file.as_file_mut(), size, digest)
            .map_err(|source| StageError::Io {
                what: "cannot read back",
                source,
            })?
            .map_err(StageError::Invalid)?;
        Ok(StagedEntry { file, meta, size })
    }

    /// Publishes a staged entry under the key it carries, used now.
    pub fn publish_staged(&self, staged: StagedEntry) -> Result<PutOutcome> {
        let key = CacheKey::parse(&staged.meta.key)?;
        self.publish_file(&key, &staged.meta, staged.size, staged.file, self.now())
    }
}

/// Copies `from` into `to`, returning the byte count and SHA-256; a fixed 64 KiB buffer.
fn copy_hashing(from: &mut impl Read, to: &mut File) -> io::Result<(u64, [u8; 32])> {
    let mut buf = vec![0u8; 64 << 10];
    let mut hasher = Sha256::new();
    let mut copied = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        to.write_all(&buf[..n])?;
        copied += n as u64;
    }
    Ok((copied, hasher.finalize().into()))
}
