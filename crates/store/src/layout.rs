//! The on-disk layout, versioned so a future incompatible format lives beside this one (`v2/`)
//! instead of misreading it (cacache's `content-v2/`):
//!
//! ```text
//! DIR/                        the cache directory (mode 0700 by default, owned by the user)
//!   v1/
//!     entries/<hh>/<64-hex>   one file per entry; hh = first two hex digits of the digest
//!     tmp/                    in-progress writes, renamed into entries/ when complete
//!     quarantine/             entries that failed verification, kept for inspection
//!     suspect/<64-hex>        why an entry a hit audit caught is no longer served (suspect.rs)
//!     locks/<hh>/<64-hex>.lock  advisory compile locks (one per key being compiled)
//!     locks/index.lock        serializes creating and repairing the index
//!     index.sqlite            the index (a cache of the directory's truth)
//!     counters.sqlite         the event counters (durable: they outlive an index rebuild)
//!     uses.log                hits not yet folded into the index and counters (uses.rs)
//!     registry.sqlite         addresses and run records (durable: not rebuildable)
//!     *-down.json             state files of the layers above the store (Layout::state_dir)
//! ```
//!
//! Only a validated [`Digest`] builds an entry or lock path.

use std::path::{Path, PathBuf};

use super::error::StoreError;
use super::fsutil;
use super::key::Digest;

/// Name of the layout version directory.
pub const LAYOUT_VERSION_DIR: &str = "v1";
/// Addresses and run records (`mck-runs`), in the layout directory.
pub const REGISTRY_FILE: &str = "registry.sqlite";

/// Paths of one cache directory.
#[derive(Clone, Debug)]
pub struct Layout {
    root: PathBuf,
    base: PathBuf,
    entries: PathBuf,
    tmp: PathBuf,
    quarantine: PathBuf,
    locks: PathBuf,
    index: PathBuf,
}

impl Layout {
    pub fn new(cache_dir: &Path) -> Layout {
        let base = cache_dir.join(LAYOUT_VERSION_DIR);
        Layout {
            root: cache_dir.to_owned(),
            entries: base.join("entries"),
            tmp: base.join("tmp"),
            quarantine: base.join("quarantine"),
            locks: base.join("locks"),
            index: base.join("index.sqlite"),
            base,
        }
    }

    /// Creates the cache directory (its missing parents with default permissions, itself with
    /// `dir_mode`) and the layout directories, and checks each: no symlinks, owned by us.
    pub fn ensure(&self, dir_mode: u32) -> Result<(), StoreError> {
        // Refuse a symlinked cache dir before creating anything beneath it.
        if let Ok(meta) = std::fs::symlink_metadata(&self.root)
            && meta.file_type().is_symlink()
        {
            return fsutil::check_dir(&self.root, dir_mode);
        }
        if let Some(parent) = self.root.parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent)
                .map_err(|e| StoreError::io("create directory", parent, e))?;
        }
        for dir in [
            &self.root,
            &self.base,
            &self.entries,
            &self.tmp,
            &self.quarantine,
            &self.locks,
        ] {
            fsutil::ensure_private_dir(dir, dir_mode)?;
        }
        Ok(())
    }

    /// The cache directory as configured.
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// `DIR/v1`.
    pub fn base(&self) -> &Path {
        &self.base
    }
    pub fn entries_dir(&self) -> &Path {
        &self.entries
    }
    pub fn tmp_dir(&self) -> &Path {
        &self.tmp
    }
    pub fn quarantine_dir(&self) -> &Path {
        &self.quarantine
    }
    pub fn locks_dir(&self) -> &Path {
        &self.locks
    }
    pub fn index_path(&self) -> &Path {
        &self.index
    }
    /// The event counters, and the snapshot an older cache kept them in.
    pub fn counter_files(&self) -> super::events::CounterFiles {
        super::events::CounterFiles {
            db: self.base.join(super::events::COUNTERS_FILE),
            legacy_snapshot: self.root.join(super::events::LEGACY_STATS_FILE),
        }
    }
    /// True when the cache directory, or the directory of its index, exists and cannot be
    /// written by this process (its mode, or a read-only file system): the cache is then used
    /// read-only. A directory that does not exist yet is not read-only: it is to be created.
    pub fn is_read_only(&self) -> bool {
        let index_dir = self.index_path().parent().unwrap_or(self.root());
        [self.root(), index_dir].into_iter().any(|dir| {
            matches!(
                rustix::fs::access(dir, rustix::fs::Access::WRITE_OK),
                Err(e) if e == rustix::io::Errno::ACCESS || e == rustix::io::Errno::ROFS
                    || e == rustix::io::Errno::PERM
            )
        })
    }

    /// Where layers above the store keep small state files of their own, one per name (the
    /// versioned directory, beside the index).
    pub fn state_dir(&self) -> &Path {
        &self.base
    }
    /// Addresses and run records.
    pub fn registry_path(&self) -> PathBuf {
        self.base.join(REGISTRY_FILE)
    }
    /// The lock that serializes repairing the registry.
    pub fn registry_lock_path(&self) -> PathBuf {
        self.locks.join("registry.lock")
    }
    /// Remembered compiler digests (by the compiler file's state), so `exec` does not re-read
    /// a large compiler on every call.
    pub fn compilers_dir(&self) -> PathBuf {
        self.base.join("compilers")
    }

    /// Markers of entries a hit audit caught serving a false hit (created on the first).
    pub fn suspect_dir(&self) -> PathBuf {
        self.base.join("suspect")
    }
    pub fn suspect_path(&self, digest: &Digest) -> PathBuf {
        self.suspect_dir().join(digest.as_str())
    }

    /// The lock that serializes creating or repairing the index.
    pub fn index_lock_path(&self) -> PathBuf {
        self.locks.join("index.lock")
    }
    pub fn entry_shard_dir(&self, digest: &Digest) -> PathBuf {
        self.entries.join(digest.shard())
    }
    pub fn entry_path(&self, digest: &Digest) -> PathBuf {
        self.entry_shard_dir(digest).join(digest.as_str())
    }
    pub fn lock_shard_dir(&self, digest: &Digest) -> PathBuf {
        self.locks.join(digest.shard())
    }
    pub fn lock_path(&self, digest: &Digest) -> PathBuf {
        self.lock_shard_dir(digest)
            .join(format!("{}.lock", digest.as_str()))
    }
}
