//! Moving damaged files out of the way. A corrupt entry is never returned and never deleted
//! outright: it is renamed into `v1/quarantine/` (same filesystem, atomic) for inspection, and
//! `gc` removes quarantined files once they are older than the TTL.
//!
//! The inode check guards a race: between our read of a corrupt file and the rename, another
//! process may have published a good entry at the same path; we must not quarantine that one.

use std::fs::{self, Metadata};
use std::io;
use std::path::{Path, PathBuf};

use tracing::warn;

use super::clock::UnixMillis;
use super::error::StoreError;
use super::fsutil;

/// Where `path` goes in `quarantine_dir`: its name, the time and this process, so files moved
/// aside at different times (or by racing processes) never overwrite each other.
pub fn destination(quarantine_dir: &Path, path: &Path, now: UnixMillis) -> PathBuf {
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "unnamed".to_owned());
    quarantine_dir.join(format!("{file_name}.{now}.{}", std::process::id()))
}

/// Moves a corrupt entry at `path` into `quarantine_dir` (see [`move_into`]), saying so.
pub fn quarantine(
    quarantine_dir: &Path,
    path: &Path,
    seen: Option<&Metadata>,
    now: UnixMillis,
    reason: &str,
) -> Result<Option<PathBuf>, StoreError> {
    let moved = move_into(quarantine_dir, path, seen, now)?;
    if let Some(dest) = &moved {
        warn!(
            "Corrupt cache entry {} ({reason}): moved to {} and treated as a miss",
            path.display(),
            dest.display()
        );
    }
    Ok(moved)
}

/// Moves `path` into `quarantine_dir` unless it is no longer the inode described by `seen`.
/// Returns the new path, or `None` when the file was already gone or replaced.
pub fn move_into(
    quarantine_dir: &Path,
    path: &Path,
    seen: Option<&Metadata>,
    now: UnixMillis,
) -> Result<Option<PathBuf>, StoreError> {
    if let Some(seen) = seen {
        match fs::symlink_metadata(path) {
            Ok(current) if fsutil::same_inode(seen, &current) => {}
            Ok(_) => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io("inspect", path, e)),
        }
    }
    let dest = destination(quarantine_dir, path, now);
    match fs::rename(path, &dest) {
        Ok(()) => Ok(Some(dest)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(StoreError::io("move into quarantine", path, e)),
    }
}
