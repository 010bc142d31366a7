//! Publishing an entry atomically (ccache's `atomicfile`, tempfile's `persist`): write to a
//! temporary file in `v1/tmp/` (same filesystem as `entries/`), fsync it, rename it over the
//! destination, fsync the destination directory. Readers see the old file or the complete new
//! one, never a prefix. A writer dropped before `persist` deletes its temporary file; a writer
//! killed before it leaves a stray file in `tmp/`, never a visible entry: [`sweep_stale`]
//! removes it after an hour (on the next open of the store, or `gc`).
//! [`write_file`] does the same for a file outside the cache (a compiler's output restored on a
//! hit), with its temporary file beside the destination.

use std::fs::{self, Permissions};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, SystemTime};

use tracing::debug;

use super::error::StoreError;
use super::fsutil;

/// Prefix of the temporary files [`write_file`] leaves beside a destination if killed.
pub const OUTPUT_TMP_PREFIX: &str = ".mlir-cache-key-tmp-";

/// A temporary file untouched for this long belongs to a dead writer: live writers touch
/// theirs continuously and rename it within seconds.
pub const STALE_TMP_AGE: Duration = Duration::from_secs(60 * 60);

/// Writes `bytes` to `dest` (outside the cache) atomically and durably: a temporary file in
/// the same directory, fsynced, renamed over `dest`. A reader never sees a partial file.
/// Temporary files of killed writers in that directory (older than [`STALE_TMP_AGE`]) go first.
pub fn write_file(dest: &Path, bytes: &[u8], file_mode: u32) -> Result<u64, StoreError> {
    write_beside(dest, bytes, file_mode, true)
}

/// As [`write_file`] for the output of a hit: not synced (a hit performs no fsync, as a
/// compiler writing the output would not; the entry it copies is durable, and a lost output
/// is a hit again on the next run: `stream.rs` does the same for a local hit).
pub fn write_hit_output(dest: &Path, bytes: &[u8], file_mode: u32) -> Result<u64, StoreError> {
    write_beside(dest, bytes, file_mode, false)
}

fn write_beside(dest: &Path, bytes: &[u8], file_mode: u32, fsync: bool) -> Result<u64, StoreError> {
    let dir = dest
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    sweep_stale(dir, OUTPUT_TMP_PREFIX, SystemTime::now());
    publish(
        dir,
        OUTPUT_TMP_PREFIX,
        dest,
        &[bytes],
        file_mode,
        SystemTime::now(),
        fsync,
    )
}

/// Writes `parts` (concatenated) to `dest` atomically, through a temporary file named `prefix…`
/// in `tmp_dir`, with modification time `mtime` (the store's clock: the mtime is the entry's last
/// use for a rebuilt index); returns the number of bytes written.
pub fn publish(
    tmp_dir: &Path,
    prefix: &str,
    dest: &Path,
    parts: &[&[u8]],
    file_mode: u32,
    mtime: SystemTime,
    fsync: bool,
) -> Result<u64, StoreError> {
    let mut tmp = tempfile::Builder::new()
        .prefix(prefix)
        .permissions(Permissions::from_mode(file_mode))
        .tempfile_in(tmp_dir)
        .map_err(|e| StoreError::io("create a temporary file in", tmp_dir, e))?;
    let mut written = 0u64;
    for part in parts {
        tmp.write_all(part)
            .map_err(|e| StoreError::io("write temporary file", tmp.path(), e))?;
        written += part.len() as u64;
    }
    tmp.as_file()
        .set_modified(mtime)
        .map_err(|e| StoreError::io("set the modification time of", tmp.path(), e))?;
    if fsync {
        tmp.as_file()
            .sync_all()
            .map_err(|e| StoreError::io("fsync temporary file", tmp.path(), e))?;
    }
    tmp.persist(dest)
        .map_err(|e| StoreError::io("rename a temporary file into place at", dest, e.error))?;
    if fsync {
        // A bare file name's directory is the current one (its parent is "").
        let dir = dest
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        fsutil::sync_dir(dir).map_err(|e| StoreError::io("fsync directory", dir, e))?;
    }
    Ok(written)
}

/// Publishes a complete temporary file (created in the same filesystem as `dest`, e.g. an
/// import staged in `v1/tmp/`) at `dest`: mode, mtime, fsync, rename, fsync the directory.
pub fn persist(
    tmp: tempfile::NamedTempFile,
    dest: &Path,
    file_mode: u32,
    mtime: SystemTime,
    fsync: bool,
) -> Result<(), StoreError> {
    let file = tmp.as_file();
    file.set_permissions(Permissions::from_mode(file_mode))
        .map_err(|e| StoreError::io("set permissions of", tmp.path(), e))?;
    file.set_modified(mtime)
        .map_err(|e| StoreError::io("set the modification time of", tmp.path(), e))?;
    if fsync {
        file.sync_all()
            .map_err(|e| StoreError::io("fsync temporary file", tmp.path(), e))?;
    }
    tmp.persist(dest)
        .map_err(|e| StoreError::io("rename a temporary file into place at", dest, e.error))?;
    if fsync && let Some(dir) = dest.parent() {
        fsutil::sync_dir(dir).map_err(|e| StoreError::io("fsync directory", dir, e))?;
    }
    Ok(())
}

/// Removes the regular files of ours in `dir` whose names start with `prefix` and that were
/// last modified [`STALE_TMP_AGE`] before `now`; returns how many. Best effort: a file that a
/// concurrent sweep removed first, or that cannot be inspected, is skipped. Symlinks are never
/// followed (at worst the link itself goes).
pub fn sweep_stale(dir: &Path, prefix: &str, now: SystemTime) -> u64 {
    let Some(cutoff) = now.checked_sub(STALE_TMP_AGE) else {
        return 0;
    };
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        if !entry.file_name().as_bytes().starts_with(prefix.as_bytes()) {
            continue;
        }
        let path = entry.path();
        let stale = fs::symlink_metadata(&path).is_ok_and(|m| {
            m.file_type().is_file()
                && m.uid() == fsutil::euid()
                && m.modified().is_ok_and(|t| t < cutoff)
        });
        if stale && fs::remove_file(&path).is_ok() {
            debug!("removed the stale temporary file {}", path.display());
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publishes_whole_file_with_mode_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let dest = dir.path().join("out");
        let now = SystemTime::now();
        let n = publish(&tmp, ".t-", &dest, &[b"ab", b"cd"], 0o600, now, true).unwrap();
        assert_eq!(n, 4);
        assert_eq!(std::fs::read(&dest).unwrap(), b"abcd");
        let mode = std::fs::metadata(&dest).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    }

    #[test]
    fn failed_publish_leaves_no_temp_and_names_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let dest = dir.path().join("missing-dir").join("out");
        let now = SystemTime::now();
        let err = publish(&tmp, ".t-", &dest, &[b"x"], 0o600, now, false).unwrap_err();
        assert!(err.to_string().contains("missing-dir/out"), "{err}");
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    }
}
