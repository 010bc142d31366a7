//! Cache keys as the store sees them: `<module name>-<64 lowercase hex digits>`.
//!
//! Only the validated digest ever builds a path, so no module name (`../x`, `a/b`, NUL) can
//! reach outside the cache. The name is kept for humans and stored inside the entry; it is still
//! checked for characters that would garble logs and listings.

use std::fmt;
use std::str::FromStr;

use super::error::StoreError;

/// Longest module name accepted (bytes). MLIR symbol names are short; this only bounds hostile input.
pub const MAX_NAME_LEN: usize = 512;

/// The 64-hex-digit SHA-256 digest of a key: the only part that builds paths.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(String);

impl Digest {
    /// Validates `hex`: exactly 64 characters from `0-9a-f`.
    pub fn parse(hex: &str) -> Result<Digest, StoreError> {
        if hex.len() != 64 {
            return Err(StoreError::InvalidKey {
                key: hex.to_owned(),
                reason: "the digest must be exactly 64 lowercase hex digits",
            });
        }
        if !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(StoreError::InvalidKey {
                key: hex.to_owned(),
                reason: "the digest may contain only lowercase hex digits 0-9a-f",
            });
        }
        Ok(Digest(hex.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The shard directory name: the first two hex digits.
    pub fn shard(&self) -> &str {
        &self.0[..2]
    }
}

/// The name of shard `i`: as [`Digest::shard`] names a digest's, `00` to `ff` (256 shards).
pub fn shard_name(i: u8) -> String {
    format!("{i:02x}")
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.0)
    }
}

/// A full key: module name plus digest.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct CacheKey {
    name: String,
    digest: Digest,
}

/// The name of direct-mode manifest keys (`direct-<64 hex>`): their lookups are not counted
/// as hits or misses.
pub const MANIFEST_NAME: &str = "direct";

impl CacheKey {
    /// Whether this is a direct-mode manifest's key.
    pub fn is_manifest(&self) -> bool {
        self.name == MANIFEST_NAME
    }

    /// Parses `<module name>-<64 hex>`; the name is everything before the LAST `-` (names may
    /// contain dashes). The name may be empty, but may not contain `/`, `\`, NUL or other control
    /// characters, nor be longer than [`MAX_NAME_LEN`] bytes.
    pub fn parse(key: &str) -> Result<CacheKey, StoreError> {
        let Some((name, hex)) = key.rsplit_once('-') else {
            return Err(StoreError::InvalidKey {
                key: key.to_owned(),
                reason: "expected <module name>-<64 lowercase hex digits>",
            });
        };
        let digest = Digest::parse(hex).map_err(|e| match e {
            StoreError::InvalidKey { reason, .. } => StoreError::InvalidKey {
                key: key.to_owned(),
                reason,
            },
            other => other,
        })?;
        Self::new(name, digest).map_err(|reason| StoreError::InvalidKey {
            key: key.to_owned(),
            reason,
        })
    }

    /// Builds a key from its parts, checking the name.
    pub fn from_parts(name: &str, digest: Digest) -> Result<CacheKey, StoreError> {
        Self::new(name, digest.clone()).map_err(|reason| StoreError::InvalidKey {
            key: format!("{name}-{digest}"),
            reason,
        })
    }

    fn new(name: &str, digest: Digest) -> Result<CacheKey, &'static str> {
        if name.len() > MAX_NAME_LEN {
            return Err("the module name is longer than 512 bytes");
        }
        if name.contains(['/', '\\']) {
            return Err("the module name may not contain a path separator");
        }
        if name.chars().any(char::is_control) {
            return Err("the module name may not contain NUL or control characters");
        }
        Ok(CacheKey {
            name: name.to_owned(),
            digest,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn digest(&self) -> &Digest {
        &self.digest
    }
}

impl fmt::Display for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.name, self.digest)
    }
}

impl FromStr for CacheKey {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CacheKey::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn parses_name_with_dashes() {
        let k = CacheKey::parse(&format!("jit-my-fn-{HEX}")).unwrap();
        assert_eq!(k.name(), "jit-my-fn");
        assert_eq!(k.digest().as_str(), HEX);
        assert_eq!(k.digest().shard(), "01");
        assert_eq!(k.to_string(), format!("jit-my-fn-{HEX}"));
    }

    #[test]
    fn shard_names_are_the_shards_digests_fall_in() {
        let names: Vec<String> = (0..=u8::MAX).map(shard_name).collect();
        for first in ["00", "0a", "7f", "a0", "ff"] {
            let digest = Digest::parse(&format!("{first}{}", &HEX[2..])).unwrap();
            assert!(names.iter().any(|n| n == digest.shard()), "{first}");
        }
        let distinct: std::collections::HashSet<&String> = names.iter().collect();
        assert_eq!(distinct.len(), 256);
    }

    #[test]
    fn hostile_keys_are_rejected() {
        let upper = HEX.to_uppercase();
        let short = &HEX[..63];
        let long = format!("{HEX}0");
        let cases = [
            "../x".to_owned(),
            format!("../x-{}", &HEX[..10]),
            format!("jit-{upper}"),
            format!("jit-{short}"),
            format!("jit-{long}"),
            format!("jit\0-{HEX}"),
            format!("jit-{}\0", &HEX[..63]),
            format!("../../etc-{HEX}"),
            format!("a\\b-{HEX}"),
            format!("x\n-{HEX}"),
            format!("{}-{HEX}", "n".repeat(MAX_NAME_LEN + 1)),
            HEX.to_owned(),
            String::new(),
            format!("jit-{}/{}", &HEX[..31], &HEX[..32]),
            format!("jit-{}..{}", &HEX[..31], &HEX[..31]),
        ];
        for case in cases {
            let err = CacheKey::parse(&case).expect_err(&format!("{case:?} must be rejected"));
            assert!(matches!(err, StoreError::InvalidKey { .. }), "{err}");
        }
    }

    #[test]
    fn empty_name_is_allowed() {
        let k = CacheKey::parse(&format!("-{HEX}")).unwrap();
        assert_eq!(k.name(), "");
    }
}
