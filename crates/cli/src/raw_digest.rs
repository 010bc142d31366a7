//! The digest direct mode keys an input's raw bytes on. A large input is hashed in blocks on
//! every core (SHA-256 of one block each, then of the length and the block digests), so a big
//! text module costs a direct hit half the time a single SHA-256 pass would on two cores; an
//! input of one block is plain SHA-256. The file and the in-memory forms give the same digest.

use sha2::{Digest, Sha256};
use std::os::unix::fs::FileExt;

/// Bytes per block.
const BLOCK: usize = 4 << 20;
/// Bytes read at once within a block.
const CHUNK: usize = 1 << 20;
/// Names the scheme in the combined hash.
const TREE_TAG: &[u8] = b"mck-raw-digest/1 blocks of 4 MiB\n";

/// The digest of `bytes`.
pub fn of_bytes(bytes: &[u8]) -> [u8; 32] {
    combine(bytes.len() as u64, |block| {
        let start = block * BLOCK;
        Ok(Sha256::digest(&bytes[start..bytes.len().min(start + BLOCK)]).into())
    })
    .unwrap_or_else(|never: std::convert::Infallible| match never {})
}

/// The digest of the `len` bytes of the regular file `file`, read in bounded chunks.
pub fn of_file(file: &std::fs::File, len: u64) -> std::io::Result<[u8; 32]> {
    combine(len, |block| {
        let start = (block * BLOCK) as u64;
        let end = len.min(start + BLOCK as u64);
        let mut hasher = Sha256::new();
        let mut buffer = vec![0u8; CHUNK];
        let mut at = start;
        while at < end {
            let n = (CHUNK as u64).min(end - at) as usize;
            file.read_exact_at(&mut buffer[..n], at)?;
            hasher.update(&buffer[..n]);
            at += n as u64;
        }
        Ok(hasher.finalize().into())
    })
}

/// Plain SHA-256 for one block; else the tree, each block hashed by `hash_block` on one of
/// the threads.
fn combine<E: Send>(
    len: u64,
    hash_block: impl Fn(usize) -> Result<[u8; 32], E> + Sync,
) -> Result<[u8; 32], E> {
    let blocks = (len as usize).div_ceil(BLOCK);
    if blocks <= 1 {
        return hash_block(0);
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(blocks);
    let mut digests = vec![[0u8; 32]; blocks];
    std::thread::scope(|scope| -> Result<(), E> {
        let workers: Vec<_> = (0..threads)
            .map(|first| {
                let hash_block = &hash_block;
                scope.spawn(move || {
                    (first..blocks)
                        .step_by(threads)
                        .map(|block| hash_block(block).map(|d| (block, d)))
                        .collect::<Result<Vec<_>, E>>()
                })
            })
            .collect();
        for worker in workers {
            let done = worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
            for (block, digest) in done {
                digests[block] = digest;
            }
        }
        Ok(())
    })?;
    let mut tree = Sha256::new();
    tree.update(TREE_TAG);
    tree.update(len.to_le_bytes());
    for digest in &digests {
        tree.update(digest);
    }
    Ok(tree.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of_path(path: &std::path::Path) -> std::io::Result<[u8; 32]> {
        let file = std::fs::File::open(path)?;
        of_file(&file, file.metadata()?.len())
    }

    #[test]
    fn file_and_memory_agree_around_block_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let mut seen = std::collections::HashSet::new();
        for len in [0, 1, CHUNK + 3, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 17] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let path = dir.path().join(format!("{len}"));
            std::fs::write(&path, &bytes).unwrap();
            let digest = of_bytes(&bytes);
            assert_eq!(of_path(&path).unwrap(), digest, "{len} bytes");
            assert!(seen.insert(digest), "{len} bytes: a digest repeated");
            if len <= BLOCK {
                assert_eq!(
                    digest,
                    <[u8; 32]>::from(Sha256::digest(&bytes)),
                    "{len}: plain"
                );
            }
        }
    }

    #[test]
    fn any_byte_of_any_block_moves_the_digest() {
        let bytes: Vec<u8> = (0..2 * BLOCK + 5).map(|i| (i % 253) as u8).collect();
        let digest = of_bytes(&bytes);
        for at in [0, BLOCK - 1, BLOCK, 2 * BLOCK + 4] {
            let mut changed = bytes.clone();
            changed[at] ^= 1;
            assert_ne!(of_bytes(&changed), digest, "byte {at}");
        }
        // Moving bytes across a block boundary changes the digest too.
        let mut shorter = bytes.clone();
        shorter.remove(BLOCK - 1);
        shorter.push(0);
        assert_ne!(of_bytes(&shorter), digest);
    }

    #[test]
    fn a_shrunk_file_is_an_error_not_a_digest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; BLOCK + 10]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        std::fs::write(&path, b"short").unwrap();
        assert!(of_file(&file, (BLOCK + 10) as u64).is_err());
    }
}
