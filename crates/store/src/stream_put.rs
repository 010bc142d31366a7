//! Storing a file without reading it whole: hash it in one bounded pass, then copy it behind
//! the entry's prefix while hashing again (a file that changed meanwhile is refused).

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::cache::{PutOutcome, Store};
use super::entry::{self, EntryMeta, EntryState};
use super::error::{Result, StoreError};
use super::key::CacheKey;

const CHUNK: usize = 1 << 20;

/// Reads `file` from its start through a bounded buffer, handing each chunk to `each`;
/// returns its SHA-256 (hex) and length.
fn stream(
    file: &mut File,
    src: &Path,
    mut each: impl FnMut(&[u8]) -> Result<()>,
) -> Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut len = 0u64;
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| StoreError::io("read", src, e))?;
        if n == 0 {
            return Ok((hex::encode(hasher.finalize()), len));
        }
        hasher.update(&buf[..n]);
        each(&buf[..n])?;
        len += n as u64;
    }
}

impl Store {
    /// Stores the file at `src` as the artefact under `key`, never holding it whole.
    pub fn put_file(&self, key: &CacheKey, src: &Path, ingredients: &Value) -> Result<PutOutcome> {
        let open = || File::open(src).map_err(|e| StoreError::io("open", src, e));
        let (sha, len) = stream(&mut open()?, src, |_| Ok(()))?;
        let now = self.now();
        let mut meta = EntryMeta::new(key, EntryState::Ok, None, &[], now, ingredients.clone());
        meta.payload_sha256 = sha.clone();
        meta.artefact_size = len;
        let prefix = entry::encode_prefix(&meta)?;
        let tmp_dir = self.layout().tmp_dir();
        let mut tmp = tempfile::Builder::new()
            .prefix(".entry-")
            .permissions(std::fs::Permissions::from_mode(self.file_mode()))
            .tempfile_in(tmp_dir)
            .map_err(|e| StoreError::io("create a temporary file in", tmp_dir, e))?;
        let tmp_path = tmp.path().to_owned();
        let write_err = |e| StoreError::io("write temporary file", &tmp_path, e);
        tmp.write_all(&prefix).map_err(write_err)?;
        let (again, _) = stream(&mut open()?, src, |chunk| {
            tmp.write_all(chunk).map_err(write_err)
        })?;
        if again != sha {
            return Err(StoreError::io(
                "store",
                src,
                std::io::Error::other("the file changed while it was being stored"),
            ));
        }
        let size = prefix.len() as u64 + len;
        self.publish_file(key, &meta, size, tmp, now)
    }
}
