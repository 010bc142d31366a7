//! The digest direct mode keys an input's raw bytes on: BLAKE3 (the manifest key is ours, not
//! JAX's, so it need not be SHA-256). A large input is hashed on every core (BLAKE3's tree,
//! split by rayon); a file is read in bounded chunks. The file and the in-memory forms give the
//! same digest. [`SCHEME`] names it wherever a digest is remembered (the inode cache), and the
//! manifest key's version (`direct/3` in mck-exec) moved with it, so manifests of the former
//! scheme (SHA-256 in 4 MiB blocks) are misses.

use std::os::unix::fs::FileExt;

/// Names the digest; a remembered digest of another scheme is foreign.
pub const SCHEME: &str = "mck-raw-digest/2 blake3";
/// From this size bytes are hashed on every core; below it the threads cost more than they save.
const PARALLEL_FROM: usize = 256 << 10;
/// Bytes read from a file at once.
const CHUNK: usize = 4 << 20;

/// The digest of `bytes`.
pub fn of_bytes(bytes: &[u8]) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    update(&mut hasher, bytes);
    hasher.finalize().into()
}

/// The digest of the `len` bytes of the regular file `file`, read in bounded chunks (a file
/// that shrinks meanwhile is an error).
pub fn of_file(file: &std::fs::File, len: u64) -> std::io::Result<[u8; 32]> {
    let mut hasher = blake3::Hasher::new();
    let mut buffer = vec![0u8; CHUNK.min(len as usize)];
    let mut at = 0u64;
    while at < len {
        let n = (CHUNK as u64).min(len - at) as usize;
        file.read_exact_at(&mut buffer[..n], at)?;
        update(&mut hasher, &buffer[..n]);
        at += n as u64;
    }
    Ok(hasher.finalize().into())
}

fn update(hasher: &mut blake3::Hasher, bytes: &[u8]) {
    if bytes.len() >= PARALLEL_FROM {
        hasher.update_rayon(bytes);
    } else {
        hasher.update(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    fn of_path(path: &std::path::Path) -> std::io::Result<[u8; 32]> {
        let file = std::fs::File::open(path)?;
        of_file(&file, file.metadata()?.len())
    }

    #[test]
    fn file_and_memory_agree_around_chunk_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let mut seen = std::collections::HashSet::new();
        for len in [
            0,
            1,
            PARALLEL_FROM - 1,
            PARALLEL_FROM,
            CHUNK - 1,
            CHUNK,
            CHUNK + 1,
            3 * CHUNK + 17,
        ] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let path = dir.path().join(format!("{len}"));
            std::fs::write(&path, &bytes).unwrap();
            let digest = of_bytes(&bytes);
            assert_eq!(of_path(&path).unwrap(), digest, "{len} bytes");
            assert!(seen.insert(digest), "{len} bytes: a digest repeated");
            assert_eq!(
                digest,
                *blake3::hash(&bytes).as_bytes(),
                "{len}: plain BLAKE3"
            );
        }
    }

    #[test]
    fn any_byte_of_any_chunk_moves_the_digest() {
        let bytes: Vec<u8> = (0..2 * CHUNK + 5).map(|i| (i % 253) as u8).collect();
        let digest = of_bytes(&bytes);
        for at in [0, CHUNK - 1, CHUNK, 2 * CHUNK + 4] {
            let mut changed = bytes.clone();
            changed[at] ^= 1;
            assert_ne!(of_bytes(&changed), digest, "byte {at}");
        }
    }

    /// The former scheme gave a one-block input its plain SHA-256: no digest of the new one
    /// can name the same manifest.
    #[test]
    fn the_former_schemes_digest_is_not_reproduced() {
        for bytes in [&b""[..], b"module {}\n"] {
            assert_ne!(of_bytes(bytes), <[u8; 32]>::from(Sha256::digest(bytes)));
        }
    }

    #[test]
    fn a_shrunk_file_is_an_error_not_a_digest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; CHUNK + 10]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        std::fs::write(&path, b"short").unwrap();
        assert!(of_file(&file, (CHUNK + 10) as u64).is_err());
    }
}
