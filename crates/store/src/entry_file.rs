//! Reading an entry file from an open file: its header and metadata checked against the file's
//! length, or the whole file verified while streaming its payload. Used by lookups, the index
//! rebuild, streamed hits and staged imports.

use std::fs::{File, Metadata};
use std::io::{self, Read};

use super::clock::{UnixMillis, system_time_to_ms};
use super::entry::{self, DecodeError, EntryMeta, HEADER_LEN};
use super::key::Digest;

/// Reads the header and metadata from `file` (at its start), checking them against `file_len`.
/// The outer error is I/O; the inner one says what is wrong with the bytes.
pub fn read_metadata_from(
    file: &mut File,
    file_len: u64,
    digest: &Digest,
) -> io::Result<std::result::Result<EntryMeta, DecodeError>> {
    let mut header = [0u8; HEADER_LEN];
    let mut got = 0;
    while got < HEADER_LEN {
        match file.read(&mut header[got..])? {
            0 => break,
            n => got += n,
        }
    }
    let h = match entry::decode_header(&header[..got]) {
        Ok(h) => h,
        Err(e) => return Ok(Err(e)),
    };
    if h.file_len() != file_len {
        return Ok(Err(DecodeError::Corrupt(
            entry::Corruption::LengthMismatch {
                expected: h.file_len(),
                actual: file_len,
            },
        )));
    }
    let mut meta = vec![0u8; h.metadata_len];
    file.read_exact(&mut meta)?;
    Ok(entry::decode_metadata(&h, &meta, digest))
}

/// Verifies a whole entry file from its start, streaming the payload through SHA-256 (memory:
/// the metadata, at most 64 MiB, and a 64 KiB buffer). The outer error is I/O.
pub fn verify_from(
    file: &mut File,
    file_len: u64,
    digest: &Digest,
) -> io::Result<std::result::Result<EntryMeta, DecodeError>> {
    use sha2::{Digest as _, Sha256};
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(0))?;
    let meta = match read_metadata_from(file, file_len, digest)? {
        Ok(meta) => meta,
        Err(e) => return Ok(Err(e)),
    };
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match file.read(&mut buf)? {
            0 => break,
            n => hasher.update(&buf[..n]),
        }
    }
    if hex::encode(hasher.finalize()) != meta.payload_sha256 {
        return Ok(Err(entry::Corruption::PayloadChecksum.into()));
    }
    Ok(Ok(meta))
}

/// File length and mtime (as [`UnixMillis`]) of an open entry.
pub fn len_and_mtime(meta: &Metadata) -> (u64, UnixMillis) {
    let mtime = meta.modified().map(system_time_to_ms).unwrap_or(0);
    (meta.len(), mtime)
}

/// What reading a damaged entry does with it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Damaged {
    Quarantine,
    Leave,
}

/// What reading an entry file found.
pub(super) enum EntryRead {
    Absent,
    Valid(Box<ValidEntry>),
    /// Damaged: already quarantined.
    Corrupt,
    /// A newer format version: left alone.
    Unsupported(u16),
}

/// A verified entry file, still open (its mtime is touched on use).
pub(super) struct ValidEntry {
    pub(super) file: File,
    pub(super) size: u64,
    pub(super) meta: EntryMeta,
    pub(super) bytes: Vec<u8>,
    pub(super) payload_start: usize,
}
