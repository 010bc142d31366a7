//! The inode cache: an input file's raw digest ([`crate::raw_digest`]) remembered under its
//! device, inode, size, mtime and ctime, as ccache does, so a direct hit on an unchanged file
//! does not read it. It only accelerates: every doubt is a miss and a fresh hash.
//!
//! One file of fixed size, `inode-cache` in the cache's `v1/`: [`BUCKETS`] buckets of
//! [`SLOTS`] records of [`RECORD`] bytes, a file's bucket chosen by its device and inode. It is
//! bounded by construction (4 MiB, sparse) with nothing to scan or evict but the oldest record of
//! a full bucket, and a lookup is one read of one bucket, where a file per entry would cost a
//! directory walk to bound and a disk block per entry. Readers take no lock; writers take the
//! file's lock and rewrite one record in place, so concurrent processes lose nothing. Each record
//! carries its scheme tag and its own checksum: a torn, corrupt or foreign record is a miss.
//!
//! Nothing is remembered of a file whose mtime or ctime is within [`RACY`] of the start of its
//! hash (a write in the same timestamp tick would move neither), of a file that changed while it
//! was hashed, of anything but a regular file (never a pipe or stdin), or on a filesystem whose
//! ctime cannot be trusted (only local filesystems known to keep it qualify; [`trusts_ctime`]).

use std::fs::{File, Metadata, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The file's name in the cache's `v1/`.
pub const FILE_NAME: &str = "inode-cache";
/// Bytes per record: tag, file state, stamp, digest, checksum.
const RECORD: usize = 128;
/// Records per bucket (one bucket is read at once).
const SLOTS: usize = 4;
const BUCKET: usize = RECORD * SLOTS;
const BUCKETS: u64 = 8192;
const FILE_LEN: u64 = BUCKETS * BUCKET as u64;
/// A file changed this recently is not remembered.
pub const RACY: Duration = Duration::from_secs(2);

// Where each part of a record lies.
const TAG: std::ops::Range<usize> = 0..16;
const STATE: std::ops::Range<usize> = 16..72;
const STAMP: std::ops::Range<usize> = 72..80;
const DIGEST: std::ops::Range<usize> = 80..112;
const CHECKSUM: std::ops::Range<usize> = 112..128;

/// Names the record format and the digest scheme: a record of any other is foreign.
static RECORD_TAG: LazyLock<[u8; 16]> = LazyLock::new(|| {
    let tag = blake3::hash(format!("mck-inode-cache/1 {}", crate::raw_digest::SCHEME).as_bytes());
    tag.as_bytes()[..16].try_into().expect("16 bytes")
});

/// The inode cache of one cache directory.
#[derive(Debug, Clone)]
pub struct InodeCache {
    path: PathBuf,
}

/// What identifies a file's content without reading it: device, inode, size, mtime and ctime
/// (seconds and nanoseconds), as the record stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileState([u8; 56]);

impl FileState {
    fn of(metadata: &Metadata) -> FileState {
        let mut state = [0u8; 56];
        let fields = [
            metadata.dev(),
            metadata.ino(),
            metadata.size(),
            metadata.mtime() as u64,
            metadata.mtime_nsec() as u64,
            metadata.ctime() as u64,
            metadata.ctime_nsec() as u64,
        ];
        for (at, field) in state.chunks_exact_mut(8).zip(fields) {
            at.copy_from_slice(&field.to_le_bytes());
        }
        FileState(state)
    }

    /// The bucket of the file (by device and inode, so a changed file's record is replaced).
    fn bucket_offset(&self) -> u64 {
        let hash = blake3::hash(&self.0[..16]);
        let index = u64::from_le_bytes(hash.as_bytes()[..8].try_into().expect("8 bytes"));
        (index % BUCKETS) * BUCKET as u64
    }
}

impl InodeCache {
    /// The inode cache in the cache directory whose `v1/` is `base`.
    pub fn in_cache(base: &Path) -> InodeCache {
        InodeCache {
            path: base.join(FILE_NAME),
        }
    }

    /// The inode cache of `store`'s local tier, unless `settings` turn it off.
    pub fn unless_off(
        store: &mck_remote::Tiered,
        settings: &mck_settings::Settings,
    ) -> Option<InodeCache> {
        (!settings.no_inode_cache).then(|| InodeCache::in_cache(store.local().layout().base()))
    }

    /// The digest remembered for a file in `state`, if a sound record says so.
    fn lookup(&self, state: &FileState) -> Option<[u8; 32]> {
        let file = File::open(&self.path).ok()?;
        let mut bucket = [0u8; BUCKET];
        file.read_exact_at(&mut bucket, state.bucket_offset())
            .ok()?;
        bucket
            .chunks_exact(RECORD)
            .find(|record| is_sound(record) && record[STATE] == state.0)
            .map(|record| record[DIGEST].try_into().expect("32 bytes"))
    }

    /// Records `digest` for a file in `state`, in its bucket's slot for that file, or an unused
    /// slot, or the oldest.
    fn remember(&self, state: &FileState, digest: &[u8; 32]) -> std::io::Result<()> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&self.path)?;
        file.lock()?;
        if file.metadata()?.len() != FILE_LEN {
            file.set_len(FILE_LEN)?;
        }
        let offset = state.bucket_offset();
        let mut bucket = [0u8; BUCKET];
        file.read_exact_at(&mut bucket, offset)?;
        let stamp = |record: &[u8]| match is_sound(record) {
            true => u64::from_le_bytes(record[STAMP].try_into().expect("8 bytes")),
            false => 0,
        };
        let slot = bucket
            .chunks_exact(RECORD)
            .position(|r| is_sound(r) && r[STATE][..16] == state.0[..16])
            .or_else(|| (0..SLOTS).min_by_key(|&slot| stamp(&bucket[slot * RECORD..][..RECORD])))
            .expect("a bucket has slots");
        let mut record = [0u8; RECORD];
        record[TAG].copy_from_slice(&*RECORD_TAG);
        record[STATE].copy_from_slice(&state.0);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        record[STAMP].copy_from_slice(&now.as_secs().to_le_bytes());
        record[DIGEST].copy_from_slice(digest);
        let checksum = blake3::hash(&record[..CHECKSUM.start]);
        record[CHECKSUM].copy_from_slice(&checksum.as_bytes()[..16]);
        file.write_all_at(&record, offset + (slot * RECORD) as u64)
    }
}

/// The record is whole, of this scheme, and its checksum holds.
fn is_sound(record: &[u8]) -> bool {
    record[TAG] == *RECORD_TAG
        && record[CHECKSUM] == blake3::hash(&record[..CHECKSUM.start]).as_bytes()[..16]
}

/// The raw digest of the open file `file` (`name` in messages) of `metadata`: remembered in
/// `cache` if it is there and sound, else read and hashed (and remembered when that is safe).
pub fn digest(
    file: &File,
    metadata: &Metadata,
    name: &str,
    cache: Option<&InodeCache>,
) -> std::io::Result<[u8; 32]> {
    Ok(digest_in(file, metadata, name, cache.as_slice())?.0)
}

/// As [`digest`], remembered in the first of `caches` that has a sound record (and then copied
/// into those before it), else read, hashed and remembered in each; true when it was read.
pub fn digest_in(
    file: &File,
    metadata: &Metadata,
    name: &str,
    caches: &[&InodeCache],
) -> std::io::Result<([u8; 32], bool)> {
    let caches = if metadata.is_file() { caches } else { &[] };
    let state = FileState::of(metadata);
    for (at, cache) in caches.iter().enumerate() {
        if let Some(digest) = cache.lookup(&state) {
            tracing::debug!("inode cache: the digest of {name} is remembered; not read");
            remember_in(&caches[..at], &state, &digest);
            return Ok((digest, false));
        }
    }
    let started = SystemTime::now();
    let digest = crate::raw_digest::of_file(file, metadata.len())?;
    tracing::debug!("hashed {name} ({} bytes)", metadata.len());
    if caches.is_empty() {
        return Ok((digest, true));
    }
    let unchanged = file
        .metadata()
        .is_ok_and(|now| FileState::of(&now) == state);
    match why_not_remembered(metadata, started, unchanged, file) {
        Some(why_not) => tracing::debug!("inode cache: {name} not remembered: {why_not}"),
        None => remember_in(caches, &state, &digest),
    }
    Ok((digest, true))
}

fn remember_in(caches: &[&InodeCache], state: &FileState, digest: &[u8; 32]) {
    for cache in caches {
        if let Err(e) = cache.remember(state, digest) {
            tracing::debug!("inode cache: cannot write {}: {e}", cache.path.display());
        }
    }
}

/// Why a file hashed from `started` on must not be remembered, if it must not.
fn why_not_remembered(
    metadata: &Metadata,
    started: SystemTime,
    unchanged: bool,
    file: &File,
) -> Option<&'static str> {
    let at = |secs: i64, nanos: i64| {
        UNIX_EPOCH.checked_add(Duration::new(
            secs.max(0) as u64,
            nanos.clamp(0, 999_999_999) as u32,
        ))
    };
    let racy = |time: Option<SystemTime>| {
        time.is_none_or(|t| started.duration_since(t).map_or(true, |age| age < RACY))
    };
    if !unchanged {
        Some("it changed while it was hashed")
    } else if racy(at(metadata.mtime(), metadata.mtime_nsec()))
        || racy(at(metadata.ctime(), metadata.ctime_nsec()))
    {
        Some("modified within the last 2 seconds")
    } else if !trusts_ctime(file) {
        Some("its filesystem's ctime cannot be trusted")
    } else {
        None
    }
}

/// Whether `file` lies on a local filesystem known to keep ctime (moved by every write and
/// change of metadata, settable by no one): ext2/3/4, XFS, Btrfs, tmpfs, F2FS, ZFS, bcachefs
/// and overlayfs (whose ctime is its layers'). Network filesystems (NFS, SMB, 9p) may report a
/// server's or a cached ctime, and FUSE whatever its daemon says: not remembered.
fn trusts_ctime(file: &File) -> bool {
    const LOCAL: &[u32] = &[
        0xEF53,      // ext2, ext3, ext4
        0x5846_5342, // XFS
        0x9123_683E, // Btrfs
        0x0102_1994, // tmpfs
        0xF2F5_2010, // F2FS
        0x2FC1_2FC1, // ZFS
        0xCA45_1A4E, // bcachefs
        0x794C_7630, // overlayfs
    ];
    rustix::fs::fstatfs(file).is_ok_and(|fs| LOCAL.contains(&(fs.f_type as u32)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn digest_of(path: &Path, cache: &InodeCache) -> [u8; 32] {
        let file = File::open(path).unwrap();
        digest(&file, &file.metadata().unwrap(), "input", Some(cache)).unwrap()
    }

    fn remembered(path: &Path, cache: &InodeCache) -> Option<[u8; 32]> {
        cache.lookup(&FileState::of(&std::fs::metadata(path).unwrap()))
    }

    #[test]
    fn a_settled_file_is_remembered_and_a_fresh_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let cache = InodeCache::in_cache(dir.path());
        let old = write_file(dir.path(), "old", b"module {}");
        std::thread::sleep(RACY + Duration::from_millis(100));
        let fresh = write_file(dir.path(), "fresh", b"module {} // fresh");
        let digest = digest_of(&old, &cache);
        assert_eq!(digest, crate::raw_digest::of_bytes(b"module {}"));
        assert_eq!(remembered(&old, &cache), Some(digest));
        digest_of(&fresh, &cache);
        assert_eq!(remembered(&fresh, &cache), None, "racy file remembered");
    }

    #[test]
    fn a_record_in_a_later_cache_is_served_and_copied_into_the_earlier_ones() {
        let dir = tempfile::tempdir().unwrap();
        let (first, second) = (dir.path().join("first"), dir.path().join("second"));
        std::fs::create_dir_all(&first).unwrap();
        std::fs::create_dir_all(&second).unwrap();
        let (first, second) = (InodeCache::in_cache(&first), InodeCache::in_cache(&second));
        let path = write_file(dir.path(), "input", b"module {}");
        let file = File::open(&path).unwrap();
        let metadata = file.metadata().unwrap();
        let (digest, read) = digest_in(&file, &metadata, "input", &[&first, &second]).unwrap();
        assert_eq!(
            (digest, read),
            (crate::raw_digest::of_bytes(b"module {}"), true)
        );
        // A planted record shows which answered: the file was not read again.
        let planted = [7u8; 32];
        second
            .remember(&FileState::of(&metadata), &planted)
            .unwrap();
        let served = digest_in(&file, &metadata, "input", &[&first, &second]).unwrap();
        assert_eq!(served, (planted, false));
        assert_eq!(
            remembered(&path, &first),
            Some(planted),
            "not copied into the first"
        );
    }

    #[test]
    fn corrupt_foreign_and_torn_records_are_misses() {
        let dir = tempfile::tempdir().unwrap();
        let cache = InodeCache::in_cache(dir.path());
        let path = write_file(dir.path(), "input", b"module {}");
        let state = FileState::of(&std::fs::metadata(&path).unwrap());
        let digest = [7u8; 32];
        cache.remember(&state, &digest).unwrap();
        assert_eq!(cache.lookup(&state), Some(digest));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&cache.path)
            .unwrap();
        let at = state.bucket_offset();
        let slot = (0..SLOTS as u64)
            .find(|s| {
                let mut r = [0u8; RECORD];
                file.read_exact_at(&mut r, at + s * RECORD as u64).is_ok() && is_sound(&r)
            })
            .unwrap_or(0);
        // One flipped bit of the digest: the checksum no longer holds.
        let mut byte = [0u8; 1];
        let digest_at = at + slot * RECORD as u64 + DIGEST.start as u64;
        file.read_exact_at(&mut byte, digest_at).unwrap();
        file.write_all_at(&[byte[0] ^ 1], digest_at).unwrap();
        assert_eq!(cache.lookup(&state), None, "corrupt record used");
        // A whole file of garbage, and a truncated file: misses, and writable again.
        std::fs::write(&cache.path, vec![0xA5u8; 1000]).unwrap();
        assert_eq!(cache.lookup(&state), None);
        cache.remember(&state, &digest).unwrap();
        assert_eq!(cache.lookup(&state), Some(digest));
        // A record of another scheme (its tag) with a checksum of its own is foreign.
        let mut foreign = [0u8; RECORD];
        foreign[STATE].copy_from_slice(&state.0);
        let checksum = blake3::hash(&foreign[..CHECKSUM.start]);
        foreign[CHECKSUM].copy_from_slice(&checksum.as_bytes()[..16]);
        std::fs::write(&cache.path, []).unwrap();
        let file = OpenOptions::new().write(true).open(&cache.path).unwrap();
        file.set_len(FILE_LEN).unwrap();
        for s in 0..SLOTS as u64 {
            file.write_all_at(&foreign, at + s * RECORD as u64).unwrap();
        }
        assert_eq!(cache.lookup(&state), None, "foreign record used");
    }

    #[test]
    fn a_file_keeps_one_record_and_a_full_bucket_evicts_its_oldest() {
        let dir = tempfile::tempdir().unwrap();
        let cache = InodeCache::in_cache(dir.path());
        let with = |inode: u64, size: u64| {
            let mut state = [0u8; 56];
            state[8..16].copy_from_slice(&inode.to_le_bytes());
            state[16..24].copy_from_slice(&size.to_le_bytes());
            FileState(state)
        };
        // A file's newest state replaces its older one.
        cache.remember(&with(1, 10), &[1; 32]).unwrap();
        cache.remember(&with(1, 11), &[2; 32]).unwrap();
        assert_eq!(cache.lookup(&with(1, 10)), None);
        assert_eq!(cache.lookup(&with(1, 11)), Some([2; 32]));
        // SLOTS + 1 files of one bucket: all but the first (the oldest) stay.
        let bucket = with(2, 0).bucket_offset();
        let inodes: Vec<u64> = (2..)
            .filter(|&inode| with(inode, 0).bucket_offset() == bucket)
            .take(SLOTS + 1)
            .collect();
        for (stamp, &inode) in inodes.iter().enumerate() {
            cache.remember(&with(inode, 0), &[inode as u8; 32]).unwrap();
            if stamp == 0 {
                // Stamps are seconds: the first record must be the oldest.
                std::thread::sleep(Duration::from_millis(1100));
            }
        }
        assert_eq!(cache.lookup(&with(inodes[0], 0)), None);
        for &inode in &inodes[1..] {
            assert_eq!(cache.lookup(&with(inode, 0)), Some([inode as u8; 32]));
        }
        assert_eq!(std::fs::metadata(&cache.path).unwrap().len(), FILE_LEN);
    }
}
