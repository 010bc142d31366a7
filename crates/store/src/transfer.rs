//! Moving entries between caches: export the verified bytes of an entry file, import them
//! elsewhere after verifying them again (for `runs export` / `runs import --adopt-cache`, §4).

use super::cache::Store;
use super::entry::{self, EntryMeta, HEADER_LEN};
use super::error::{Result, StoreError};
use super::key::CacheKey;
use super::read::EntryRead;

impl Store {
    /// The raw bytes of `key`'s entry file, fully verified: for sharing an entry with another
    /// cache ([`Store::import_entry`]). `None` when absent, damaged (then quarantined) or for
    /// another name.
    pub fn export_entry(&self, key: &CacheKey) -> Result<Option<Vec<u8>>> {
        let path = self.layout.entry_path(key.digest());
        match self.read_entry(&path, key.digest())? {
            EntryRead::Valid(v) if v.meta.key == key.to_string() => Ok(Some(v.bytes)),
            EntryRead::Corrupt => {
                self.index_best_effort("record a corrupt entry", |ix| {
                    ix.record_miss(key.digest().as_str(), true, true)
                });
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
