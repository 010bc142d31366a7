//! Authenticated remote values. An entry's checksums prove it undamaged, not who wrote it:
//! anyone who can write to the remote can store a self-consistent entry with any bytes. With a
//! shared secret (`--remote_secret_file=FILE`), every value written carries an HMAC-SHA-256 tag
//! over its object key and the whole entry file, and a reader holding the secret uses no value
//! whose tag does not verify (it is a miss: counted, logged, never served nor copied locally).
//!
//! ```text
//! value = "MCKA" | version 1 (1 byte) | tag (32 bytes) | entry file
//! tag   = HMAC-SHA-256(secret, "mlir-cache-key/remote-entry/v1" 0x00 object-key 0x00 entry file)
//! ```
//!
//! The object key (`PREFIX/entries-v1/<digest>`) is inside the tag, so a value cannot be moved to
//! another key. A reader without a secret accepts sealed values without checking their tag
//! (without a secret, remote write access is trusted access anyway).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use rustix::fs::{Mode, OFlags};
use sha2::Sha256;

use mck_store::fsutil;

const MAGIC: &[u8; 4] = b"MCKA";
const VERSION: u8 = 1;
/// Length of an HMAC-SHA-256 tag.
pub const TAG_LEN: usize = 32;
/// Bytes before the entry file in a sealed value.
pub const SEAL_LEN: usize = MAGIC.len() + 1 + TAG_LEN;
const CONTEXT: &[u8] = b"mlir-cache-key/remote-entry/v1\0";
/// The context of [`Secret::tag`]s.
const PURPOSE_CONTEXT: &[u8] = b"mlir-cache-key/tag/v1\0";

/// Largest secret file read.
pub const MAX_SECRET_LEN: usize = 4096;
/// Shortest secret accepted: a guessable secret authenticates nothing.
pub const MIN_SECRET_LEN: usize = 16;

/// The shared secret, read from its file. Never printed: `Debug` and `Serialize` show the path.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    path: PathBuf,
    bytes: Vec<u8>,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({}: ***)", self.path.display())
    }
}

impl serde::Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.path.display())
    }
}

/// Why a remote value was not believed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("it carries no authentication tag")]
    Unsealed,
    #[error("its authentication tag does not match the shared secret")]
    WrongTag,
}

impl Secret {
    /// The file the secret was read from (shown by `config show`; the secret never is).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the secret in `path`: a regular file (symlinks followed), of this user or root, not
    /// readable or writable by group or others (as ssh demands of private keys), at most
    /// [`MAX_SECRET_LEN`] bytes, at least [`MIN_SECRET_LEN`] once one trailing newline is dropped.
    pub fn read(path: &Path) -> Result<Secret, String> {
        Secret::read_at_least(path, MIN_SECRET_LEN)
    }

    /// As [`Secret::read`] for a password: any length from one byte, valid UTF-8.
    pub fn read_password(path: &Path) -> Result<Secret, String> {
        let password = Secret::read_at_least(path, 1)?;
        std::str::from_utf8(&password.bytes).map_err(|_| "it is not UTF-8 text".to_owned())?;
        Ok(password)
    }

    /// The secret as text (a password read by [`Secret::read_password`]).
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.bytes).unwrap_or_default()
    }

    fn read_at_least(path: &Path, min_len: usize) -> Result<Secret, String> {
        let file = open_regular(path).map_err(|e| format!("cannot read it: {e}"))?;
        let meta = file
            .metadata()
            .map_err(|e| format!("cannot inspect it: {e}"))?;
        if meta.uid() != fsutil::euid() && meta.uid() != 0 {
            return Err(format!(
                "it is owned by uid {}, not by this user (uid {})",
                meta.uid(),
                fsutil::euid()
            ));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(format!(
                "group or others may access it (mode {:04o}); run chmod 600 on it",
                meta.mode() & 0o7777
            ));
        }
        let mut bytes = Vec::new();
        file.take(MAX_SECRET_LEN as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read it: {e}"))?;
        if bytes.len() > MAX_SECRET_LEN {
            return Err(format!("it is longer than {MAX_SECRET_LEN} bytes"));
        }
        // `echo secret > FILE` and an editor's final newline must give the same secret.
        if bytes.ends_with(b"\n") {
            bytes.pop();
            if bytes.ends_with(b"\r") {
                bytes.pop();
            }
        }
        if bytes.is_empty() {
            return Err("it is empty".to_owned());
        }
        if bytes.len() < min_len {
            return Err(format!(
                "it holds {} bytes; a secret needs at least {min_len} \
                 (e.g. head -c 32 /dev/urandom | base64 > FILE)",
                bytes.len()
            ));
        }
        Ok(Secret {
            path: path.to_owned(),
            bytes,
        })
    }

    /// The HMAC-SHA-256 tag of `bytes` for `purpose` (a fixed name, e.g.
    /// `mlir-cache-key/run-archive/v1`: a tag made for one purpose never verifies for another).
    pub fn tag(&self, purpose: &str, bytes: &[u8]) -> [u8; TAG_LEN] {
        self.mac_in(PURPOSE_CONTEXT, purpose, &[bytes])
            .finalize()
            .into_bytes()
            .into()
    }

    /// Whether `tag` is [`Secret::tag`] of `bytes` for `purpose` (compared in constant time).
    pub fn verify_tag(&self, purpose: &str, bytes: &[u8], tag: &[u8]) -> Result<(), AuthError> {
        self.mac_in(PURPOSE_CONTEXT, purpose, &[bytes])
            .verify_slice(tag)
            .map_err(|_| AuthError::WrongTag)
    }

    /// The MAC of a value at `object_key`, ready for its body (what follows the seal).
    pub fn body_mac(&self, object_key: &str) -> Hmac<Sha256> {
        self.mac(object_key, &[])
    }

    fn mac(&self, object_key: &str, parts: &[&[u8]]) -> Hmac<Sha256> {
        self.mac_in(CONTEXT, object_key, parts)
    }

    /// HMAC over `context`, `name`, a NUL and `parts`: a context per kind of tag (remote
    /// values, tags for a named purpose), so no tag of one kind verifies as another.
    fn mac_in(&self, context: &[u8], name: &str, parts: &[&[u8]]) -> Hmac<Sha256> {
        // Any key length is valid for HMAC: this cannot fail.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.bytes)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(context);
        mac.update(name.as_bytes());
        mac.update(b"\0");
        for part in parts {
            mac.update(part);
        }
        mac
    }
}

/// The value to store at `object_key` for an entry file (`parts` concatenated): sealed with the
/// secret, or the entry file itself without one.
pub fn seal(secret: Option<&Secret>, object_key: &str, parts: &[&[u8]]) -> Vec<u8> {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let mut out = Vec::with_capacity(SEAL_LEN + len);
    if let Some(secret) = secret {
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&secret.mac(object_key, parts).finalize().into_bytes());
    }
    for part in parts {
        out.extend_from_slice(part);
    }
    out
}

/// True when `value` starts with a seal (what [`unseal`] decides from its first bytes).
pub fn looks_sealed(value: &[u8]) -> bool {
    value.len() >= SEAL_LEN && value.starts_with(MAGIC) && value[4] == VERSION
}

/// Where the entry file starts in `value` read from `object_key`. With a secret, only a value
/// whose tag verifies (in constant time) is accepted. `body_mac`: the MAC of the value's body
/// already computed while it arrived (`receive.rs`: [`Secret::body_mac`] fed everything after
/// the seal); `None`: computed here.
pub fn unseal(
    secret: Option<&Secret>,
    object_key: &str,
    value: &[u8],
    body_mac: Option<Hmac<Sha256>>,
) -> Result<usize, AuthError> {
    match (secret, looks_sealed(value)) {
        (None, true) => Ok(SEAL_LEN),
        (None, false) => Ok(0),
        (Some(_), false) => Err(AuthError::Unsealed),
        (Some(secret), true) => body_mac
            .unwrap_or_else(|| secret.mac(object_key, &[&value[SEAL_LEN..]]))
            .verify_slice(&value[MAGIC.len() + 1..SEAL_LEN])
            .map(|()| SEAL_LEN)
            .map_err(|_| AuthError::WrongTag),
    }
}

/// Opens `path` for reading, following symlinks, without blocking on a FIFO; only a regular file.
fn open_regular(path: &Path) -> io::Result<File> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let file = File::from(fd);
    if !file.metadata()?.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn secret_file(dir: &Path, name: &str, text: &[u8], mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn sealed_values_verify_only_with_the_same_secret_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let a = Secret::read(&secret_file(dir.path(), "a", b"0123456789abcdef\n", 0o600)).unwrap();
        let b = Secret::read(&secret_file(dir.path(), "b", b"0123456789abcdeX", 0o400)).unwrap();
        let value = seal(Some(&a), "p/entries-v1/x", &[b"MCKE", b"rest"]);
        assert_eq!(
            unseal(Some(&a), "p/entries-v1/x", &value, None),
            Ok(SEAL_LEN)
        );
        assert_eq!(&value[SEAL_LEN..], b"MCKErest");
        assert_eq!(
            unseal(Some(&b), "p/entries-v1/x", &value, None),
            Err(AuthError::WrongTag)
        );
        assert_eq!(
            unseal(Some(&a), "p/entries-v1/y", &value, None),
            Err(AuthError::WrongTag),
            "moved to another key"
        );
        let mut flipped = value.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(
            unseal(Some(&a), "p/entries-v1/x", &flipped, None),
            Err(AuthError::WrongTag)
        );
        assert_eq!(
            unseal(Some(&a), "p/entries-v1/x", b"MCKErest", None),
            Err(AuthError::Unsealed)
        );
        assert_eq!(unseal(None, "k", &value, None), Ok(SEAL_LEN));
        assert_eq!(unseal(None, "k", b"MCKErest", None), Ok(0));
        assert_eq!(seal(None, "k", &[b"MCKE", b"rest"]), b"MCKErest");
        assert!(!format!("{a:?}").contains("0123"));
        assert!(!serde_json::to_string(&a).unwrap().contains("0123"));
    }

    #[test]
    fn bad_secret_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let cases = [
            (secret_file(d, "empty", b"", 0o600), "empty"),
            (secret_file(d, "newline", b"\n", 0o600), "empty"),
            (secret_file(d, "short", b"hunter2", 0o600), "at least 16"),
            (
                secret_file(d, "shared", b"0123456789abcdef", 0o640),
                "chmod 600",
            ),
            (
                secret_file(d, "world", b"0123456789abcdef", 0o604),
                "chmod 600",
            ),
            (
                secret_file(d, "huge", &[b'x'; 5000], 0o600),
                "longer than 4096",
            ),
            (d.join("missing"), "cannot read"),
            (d.to_owned(), "cannot read"),
        ];
        for (path, want) in cases {
            let e = Secret::read(&path).unwrap_err();
            assert!(e.contains(want), "{}: {e}", path.display());
            assert!(!e.contains("hunter2"), "{e}");
        }
    }
}
