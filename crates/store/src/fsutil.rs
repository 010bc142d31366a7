//! Small filesystem helpers with the store's safety rules built in: open without following
//! symlinks (and without blocking on a planted FIFO), accept only regular files, compare inodes,
//! fsync directories, and check who owns a directory (or shares it with us through a group).
//! No `unsafe`: `rustix` wraps the syscalls.

use std::collections::HashSet;
use std::fs::{self, File, Metadata};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use rustix::fs::{Mode, OFlags};

use super::error::StoreError;

/// The effective user id of this process.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The effective group id of this process.
pub fn egid() -> u32 {
    rustix::process::getegid().as_raw()
}

/// True when a directory of another user is a team cache we share: its group is one of ours
/// (the effective group or a supplementary one) and its mode grants that group write.
fn shared_with_us(meta: &Metadata) -> bool {
    let ours = meta.gid() == egid()
        || rustix::process::getgroups()
            .is_ok_and(|groups| groups.iter().any(|g| g.as_raw() == meta.gid()));
    ours && meta.mode() & 0o020 != 0
}

/// Opens `path` for reading without following a symlink in its last component and without
/// blocking (a FIFO in the cache would otherwise hang `open`); anything but a regular file is
/// refused with `InvalidData`.
pub fn open_regular_nofollow(path: &Path) -> io::Result<File> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let file = File::from(fd);
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// Opens (creating with `mode` if absent) a lock file read-write, not following symlinks.
/// Appends `line` to the log at `path` (created with `mode`, never through a symlink) in one
/// write under a shared `flock`: `O_APPEND` keeps concurrent short lines whole on a local
/// disk, and a log's reader takes the lock exclusively to drain or rotate it. Returns the file,
/// still locked, for a caller that looks at its length.
pub fn append_line(path: &Path, mode: u32, line: &[u8]) -> io::Result<File> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    file.lock_shared()?;
    file.write_all(line)?;
    Ok(file)
}

pub fn open_lock_file(path: &Path, mode: u32) -> io::Result<File> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )?;
    Ok(File::from(fd))
}

/// True when `a` and `b` describe the same inode.
pub fn same_inode(a: &Metadata, b: &Metadata) -> bool {
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// fsyncs a directory so a rename or unlink inside it is durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Creates `dir` with `mode` (exactly: the umask is undone) if it is missing, then checks that it
/// is a real directory (not a symlink) owned by us. Returns the error naming `dir`.
pub fn ensure_private_dir(dir: &Path, mode: u32) -> Result<(), StoreError> {
    // A directory shared with the group is set-group-ID, so what anyone creates in it belongs
    // to the team's group, not to its creator's primary group.
    let created_mode = if mode & 0o070 != 0 {
        mode | 0o2000
    } else {
        mode
    };
    match fs::DirBuilder::new().mode(mode).create(dir) {
        Ok(()) => {
            fs::set_permissions(dir, fs::Permissions::from_mode(created_mode))
                .map_err(|e| StoreError::io("set permissions of", dir, e))?;
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(StoreError::io("create directory", dir, e)),
    }
    check_dir(dir, mode)
}

/// Directories [`ensure_private_dir`] has made or checked in this process, so that a path taken
/// on every miss (a compile lock's shard, an entry's shard) pays its `mkdir` and `lstat`
/// (~50 µs) once, not each time. Bounded by its caller: a cache has 256 shards of each.
#[derive(Debug, Default)]
pub struct EnsuredDirs(Mutex<HashSet<PathBuf>>);

impl EnsuredDirs {
    /// As [`ensure_private_dir`], unless this process ensured `dir` before. True when it had:
    /// a caller that then finds `dir` gone (removed since) calls [`ensure_private_dir`] itself.
    pub fn ensure(&self, dir: &Path, mode: u32) -> Result<bool, StoreError> {
        let mut known = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if known.contains(dir) {
            return Ok(true);
        }
        ensure_private_dir(dir, mode)?;
        known.insert(dir.to_owned());
        Ok(false)
    }
}

/// Checks that `dir` is a directory, not a symlink, owned by this user (or, when `mode` shares
/// the cache with the group, shared with us: see [`shared_with_us`]), and not writable by
/// others.
pub fn check_dir(dir: &Path, mode: u32) -> Result<(), StoreError> {
    let meta = fs::symlink_metadata(dir).map_err(|e| StoreError::io("inspect", dir, e))?;
    let insecure = |reason: String| StoreError::Insecure {
        path: dir.to_owned(),
        reason,
    };
    if meta.file_type().is_symlink() {
        return Err(insecure(
            "it is a symbolic link; point --cache_dir at the real directory".to_owned(),
        ));
    }
    if !meta.is_dir() {
        return Err(insecure("it is not a directory".to_owned()));
    }
    let me = euid();
    let group_shared = mode & 0o070 != 0;
    let owner_ok = meta.uid() == me || (group_shared && shared_with_us(&meta));
    if !owner_ok {
        let share = if group_shared {
            format!(
                ", and its group (gid {}) is not one of ours with write access (g+w)",
                meta.gid()
            )
        } else {
            String::new()
        };
        return Err(insecure(format!(
            "it is owned by uid {}, not by the current user (uid {me}){share}; \
             choose a directory of your own with --cache_dir=DIR in MLIR_CACHE_KEY_FLAGS",
            meta.uid()
        )));
    }
    if meta.mode() & 0o002 != 0 {
        return Err(insecure(
            "it is writable by every user (mode has o+w)".to_owned(),
        ));
    }
    Ok(())
}
