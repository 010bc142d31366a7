//! The entry file format and its checks. One file holds one entry, and every read verifies it:
//!
//! ```text
//! offset  size  field
//!      0     4  magic "MCKE"
//!      4     2  format version, u16 little-endian (1)
//!      6     2  reserved, 0
//!      8     4  metadata length M, u32 LE (at most 64 MiB)
//!     12     8  payload length P, u64 LE
//!     20    32  SHA-256 of the metadata bytes
//!     52     M  metadata: JSON (EntryMeta), including the payload's SHA-256
//!   52+M     P  payload: the artefact bytes (empty for a failure)
//! ```
//!
//! Design note: a metadata block cannot carry its own checksum, so the metadata's SHA-256 sits in
//! the fixed header and the payload's inside the metadata; the header also records both lengths
//! so a truncated or extended file is caught before hashing. The file must end exactly at
//! `52 + M + P`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::clock::UnixMillis;
use super::error::StoreError;
use super::key::{CacheKey, Digest};

pub const MAGIC: &[u8; 4] = b"MCKE";
pub const FORMAT_VERSION: u16 = 1;
pub const HEADER_LEN: usize = 52;
pub const MAX_METADATA_LEN: usize = 64 << 20;

/// Whether an entry holds an artefact or a remembered failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryState {
    Ok,
    Failed,
}

impl EntryState {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryState::Ok => "ok",
            EntryState::Failed => "failed",
        }
    }
    pub fn parse(s: &str) -> Option<EntryState> {
        match s {
            "ok" => Some(EntryState::Ok),
            "failed" => Some(EntryState::Failed),
            _ => None,
        }
    }
}

/// A state name that is neither `ok` nor `failed`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown entry state {0:?}")]
pub struct UnknownEntryState(pub String);

impl std::str::FromStr for EntryState {
    type Err = UnknownEntryState;
    fn from_str(s: &str) -> Result<Self, UnknownEntryState> {
        EntryState::parse(s).ok_or_else(|| UnknownEntryState(s.to_owned()))
    }
}

/// As stored in the index and the registry: by name.
impl rusqlite::types::FromSql for EntryState {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        value
            .as_str()?
            .parse()
            .map_err(|e: UnknownEntryState| rusqlite::types::FromSqlError::Other(e.into()))
    }
}

/// A failed compilation as remembered: the compiler's exit status (None when it was killed by a
/// signal or never started) and its standard error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub exit_status: Option<i32>,
    pub stderr: String,
}

/// The metadata block of an entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EntryMeta {
    /// The full key, `<module name>-<digest>`.
    pub key: String,
    pub name: String,
    pub digest: String,
    pub state: EntryState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// Payload (artefact) length in bytes.
    pub artefact_size: u64,
    pub created_ms: UnixMillis,
    /// SHA-256 of the payload, lowercase hex.
    pub payload_sha256: String,
    /// The key's readable ingredients, as supplied by the caller (opaque to the store).
    pub ingredients: Value,
}

impl EntryMeta {
    pub fn new(
        key: &CacheKey,
        state: EntryState,
        failure: Option<Failure>,
        payload: &[u8],
        created_ms: UnixMillis,
        ingredients: Value,
    ) -> EntryMeta {
        EntryMeta {
            key: key.to_string(),
            name: key.name().to_owned(),
            digest: key.digest().as_str().to_owned(),
            state,
            failure,
            artefact_size: payload.len() as u64,
            created_ms,
            payload_sha256: hex::encode(Sha256::digest(payload)),
            ingredients,
        }
    }
}

/// Why an entry file was not believed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Corruption {
    #[error("file is {0} bytes, shorter than the {HEADER_LEN}-byte header")]
    ShortHeader(usize),
    #[error("bad magic (not an MCKE entry)")]
    BadMagic,
    #[error("metadata length {0} exceeds the limit")]
    MetadataTooLong(u64),
    #[error("file is {actual} bytes but its header says {expected}")]
    LengthMismatch { expected: u64, actual: u64 },
    #[error("metadata checksum mismatch")]
    MetadataChecksum,
    #[error("metadata is not valid: {0}")]
    MetadataJson(String),
    #[error("metadata is for digest {found}, but the file is named {expected}")]
    WrongDigest { expected: String, found: String },
    #[error("metadata is inconsistent: {0}")]
    Inconsistent(&'static str),
    #[error("payload checksum mismatch")]
    PayloadChecksum,
}

/// The outcome of decoding that is not a valid entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The bytes are damaged: quarantine the file.
    Corrupt(Corruption),
    /// A valid file of a newer format version: leave it alone, read as a miss.
    UnsupportedVersion(u16),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Corrupt(c) => write!(f, "{c}"),
            DecodeError::UnsupportedVersion(v) => {
                write!(f, "entry format version {v} is newer than this tool's")
            }
        }
    }
}

impl From<Corruption> for DecodeError {
    fn from(c: Corruption) -> Self {
        DecodeError::Corrupt(c)
    }
}

/// The parsed fixed header.
#[derive(Debug, Clone, Copy)]
pub struct Header {
    pub metadata_len: usize,
    pub payload_len: u64,
    pub metadata_sha256: [u8; 32],
}

impl Header {
    /// Total file length the header promises.
    pub fn file_len(&self) -> u64 {
        (HEADER_LEN + self.metadata_len) as u64 + self.payload_len
    }
}

/// Encodes header and metadata (the payload is written after them by the caller, so a large
/// artefact is never copied). The error names the entry's key.
pub fn encode_prefix(meta: &EntryMeta) -> Result<Vec<u8>, StoreError> {
    let refuse = |reason: String| StoreError::Encode {
        key: meta.key.clone(),
        reason,
    };
    let json = serde_json::to_vec(meta).map_err(|e| refuse(e.to_string()))?;
    if json.len() > MAX_METADATA_LEN {
        return Err(refuse(format!(
            "metadata is {} bytes, more than the {MAX_METADATA_LEN}-byte limit",
            json.len()
        )));
    }
    let mut out = Vec::with_capacity(HEADER_LEN + json.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&meta.artefact_size.to_le_bytes());
    out.extend_from_slice(&Sha256::digest(&json));
    out.extend_from_slice(&json);
    Ok(out)
}

/// Parses and checks the fixed header (magic, version, metadata length bound).
pub fn decode_header(bytes: &[u8]) -> Result<Header, DecodeError> {
    if bytes.len() < HEADER_LEN {
        return Err(Corruption::ShortHeader(bytes.len()).into());
    }
    if &bytes[0..4] != MAGIC {
        return Err(Corruption::BadMagic.into());
    }
    let version = u16::from_le_bytes([bytes[4], bytes[5]]);
    if version != FORMAT_VERSION {
        // Version 0 never existed: treat it as damage, not as a newer writer.
        if version == 0 {
            return Err(Corruption::BadMagic.into());
        }
        return Err(DecodeError::UnsupportedVersion(version));
    }
    if bytes[6] != 0 || bytes[7] != 0 {
        return Err(Corruption::Inconsistent("reserved header bytes are not zero").into());
    }
    let mut u32b = [0u8; 4];
    u32b.copy_from_slice(&bytes[8..12]);
    let metadata_len = u32::from_le_bytes(u32b) as usize;
    if metadata_len > MAX_METADATA_LEN {
        return Err(Corruption::MetadataTooLong(metadata_len as u64).into());
    }
    let mut u64b = [0u8; 8];
    u64b.copy_from_slice(&bytes[12..20]);
    let payload_len = u64::from_le_bytes(u64b);
    let mut metadata_sha256 = [0u8; 32];
    metadata_sha256.copy_from_slice(&bytes[20..52]);
    Ok(Header {
        metadata_len,
        payload_len,
        metadata_sha256,
    })
}

/// Checks the metadata bytes against the header and the expected digest.
pub fn decode_metadata(
    header: &Header,
    metadata: &[u8],
    expected: &Digest,
) -> Result<EntryMeta, DecodeError> {
    if Sha256::digest(metadata).as_slice() != header.metadata_sha256 {
        return Err(Corruption::MetadataChecksum.into());
    }
    let meta: EntryMeta =
        serde_json::from_slice(metadata).map_err(|e| Corruption::MetadataJson(e.to_string()))?;
    if meta.digest != expected.as_str() {
        return Err(Corruption::WrongDigest {
            expected: expected.as_str().to_owned(),
            found: meta.digest,
        }
        .into());
    }
    if meta.key != format!("{}-{}", meta.name, meta.digest) {
        return Err(Corruption::Inconsistent("key is not <name>-<digest>").into());
    }
    if meta.artefact_size != header.payload_len {
        return Err(Corruption::Inconsistent("artefact size differs from the header").into());
    }
    if (meta.state == EntryState::Failed) != meta.failure.is_some() {
        return Err(Corruption::Inconsistent("state and failure record disagree").into());
    }
    Ok(meta)
}

/// Verifies a whole entry file held in memory; returns the metadata and the payload's range.
pub fn decode(
    bytes: &[u8],
    expected: &Digest,
) -> Result<(EntryMeta, std::ops::Range<usize>), DecodeError> {
    decode_digested(bytes, expected, None)
}

/// As [`decode`], with the SHA-256 of `bytes[offset..]` already computed (by a caller that
/// hashed the bytes as they arrived); used only when `offset` is where this parse finds the
/// payload.
pub fn decode_digested(
    bytes: &[u8],
    expected: &Digest,
    payload_sha256: Option<(usize, [u8; 32])>,
) -> Result<(EntryMeta, std::ops::Range<usize>), DecodeError> {
    let header = decode_header(bytes)?;
    if header.file_len() != bytes.len() as u64 {
        return Err(Corruption::LengthMismatch {
            expected: header.file_len(),
            actual: bytes.len() as u64,
        }
        .into());
    }
    let meta_end = HEADER_LEN + header.metadata_len;
    let meta = decode_metadata(&header, &bytes[HEADER_LEN..meta_end], expected)?;
    let payload = &bytes[meta_end..];
    let digest = match payload_sha256 {
        Some((offset, digest)) if offset == meta_end => digest,
        _ => Sha256::digest(payload).into(),
    };
    if hex::encode(digest) != meta.payload_sha256 {
        return Err(Corruption::PayloadChecksum.into());
    }
    Ok((meta, meta_end..bytes.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_states_parse_by_name_and_unknown_ones_are_named() {
        for state in [EntryState::Ok, EntryState::Failed] {
            assert_eq!(state.as_str().parse::<EntryState>(), Ok(state));
        }
        let err = "running".parse::<EntryState>().unwrap_err();
        assert_eq!(err.to_string(), "unknown entry state \"running\"");
    }

    fn sample(payload: &[u8]) -> (Digest, Vec<u8>) {
        let key = CacheKey::parse(&format!("jit_f-{}", "ab".repeat(32))).unwrap();
        let meta = EntryMeta::new(
            &key,
            EntryState::Ok,
            None,
            payload,
            5,
            serde_json::json!({"b": 1, "a": [2]}),
        );
        let mut bytes = encode_prefix(&meta).unwrap();
        bytes.extend_from_slice(payload);
        (key.digest().clone(), bytes)
    }

    #[test]
    fn round_trip() {
        let (d, bytes) = sample(b"artefact");
        let (meta, range) = decode(&bytes, &d).unwrap();
        assert_eq!(&bytes[range], b"artefact");
        assert_eq!(
            meta.ingredients.to_string(),
            r#"{"b":1,"a":[2]}"#,
            "key order kept"
        );
    }

    #[test]
    fn every_single_byte_flip_is_caught() {
        let (d, bytes) = sample(b"0123456789");
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x01;
            assert!(decode(&bad, &d).is_err(), "flip at {i} not caught");
        }
    }

    #[test]
    fn every_truncation_and_extension_is_caught() {
        let (d, bytes) = sample(b"0123456789");
        for n in 0..bytes.len() {
            assert!(
                decode(&bytes[..n], &d).is_err(),
                "truncation to {n} not caught"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer, &d).is_err());
    }

    #[test]
    fn newer_version_is_not_corruption() {
        let (d, mut bytes) = sample(b"x");
        bytes[4] = 2;
        assert_eq!(
            decode(&bytes, &d).unwrap_err(),
            DecodeError::UnsupportedVersion(2)
        );
    }

    #[test]
    fn wrong_digest_is_caught() {
        let (_, bytes) = sample(b"x");
        let other = Digest::parse(&"cd".repeat(32)).unwrap();
        assert!(matches!(
            decode(&bytes, &other),
            Err(DecodeError::Corrupt(Corruption::WrongDigest { .. }))
        ));
    }
}
