//! The registry's file. Unlike the index it is the only copy of what it holds, so it gets the
//! index's protections and more care when damaged:
//! - never a symlink: a link or non-regular file at its path (or at its `-wal`/`-shm`) is moved
//!   into quarantine, and SQLite opens it with `SQLITE_OPEN_NOFOLLOW`;
//! - created with the cache's file mode (0600 by default), made private again if widened, and
//!   refused when owned by another user (outside a group-shared cache);
//! - damaged (not a database, corrupt): moved into quarantine with its `-wal`/`-shm`, and a fresh
//!   registry rebuilt from whatever rows can still be read from the damaged one, under
//!   `locks/registry.lock` so that one process does it.

use std::fs::{self, Metadata};
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use rustix::fs::{Mode, OFlags};
use tracing::warn;

use mck_store::sqlite::{self, BUSY_TIMEOUT, is_corruption};
use mck_store::{Layout, StoreError, UnixMillis, fsutil};

use crate::error::{Result, RunsError};

/// How long a process waits for another one repairing the registry.
const REPAIR_LOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// Opens the registry of `layout`, protecting and, if damaged, repairing it first.
pub(crate) fn open(
    layout: &Layout,
    file_mode: u32,
    now: UnixMillis,
    prepare: Prepare,
) -> Result<Connection> {
    let path = layout.registry_path();
    protect(layout, &path, file_mode, now)?;
    match connect(&path, prepare) {
        Ok(conn) => Ok(conn),
        Err(e) if is_corruption(&e) => {
            repair(layout, &path, file_mode, now, prepare, &e.to_string())?;
            connect(&path, prepare).map_err(|source| RunsError::Registry {
                op: "open",
                location: path.display().to_string(),
                unreachable: false,
                source: Box::new(source),
            })
        }
        Err(source) => Err(RunsError::Registry {
            op: "open",
            location: path.display().to_string(),
            unreachable: false,
            source: Box::new(source),
        }),
    }
}

/// Creates the tables, or brings an older registry's up to date.
pub(crate) type Prepare = fn(&Connection) -> rusqlite::Result<()>;

fn connect(path: &Path, prepare: Prepare) -> rusqlite::Result<Connection> {
    let conn =
        Connection::open_with_flags(path, OpenFlags::default() | OpenFlags::SQLITE_OPEN_NOFOLLOW)?;
    sqlite::keep_plans(&conn)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    sqlite::use_wal(&conn, "main")?;
    prepare(&conn)?;
    Ok(conn)
}

/// No links, private, ours: see the module doc.
fn protect(layout: &Layout, path: &Path, file_mode: u32, now: UnixMillis) -> mck_store::Result<()> {
    for side in sidecars(path) {
        if let Ok(m) = fs::symlink_metadata(&side)
            && !m.file_type().is_file()
        {
            move_aside(layout, &side, Some(&m), now, "not a regular file")?;
        }
    }
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return create(path, file_mode),
        Err(e) => return Err(StoreError::io("inspect", path, e)),
    };
    if !meta.file_type().is_file() {
        move_aside(layout, path, Some(&meta), now, "not a regular file")?;
        return create(path, file_mode);
    }
    let group_shared = file_mode & 0o060 != 0;
    if meta.uid() != fsutil::euid() && !(group_shared && meta.gid() == fsutil::egid()) {
        return Err(StoreError::Insecure {
            path: path.to_owned(),
            reason: format!(
                "it is owned by uid {}, not by the current user (uid {})",
                meta.uid(),
                fsutil::euid()
            ),
        });
    }
    for file in std::iter::once(path.to_owned()).chain(sidecars(path)) {
        if let Ok(m) = fs::symlink_metadata(&file)
            && m.file_type().is_file()
            && m.uid() == fsutil::euid()
            && m.mode() & 0o777 != file_mode
        {
            fs::set_permissions(&file, fs::Permissions::from_mode(file_mode))
                .map_err(|e| StoreError::io("set permissions of", &file, e))?;
        }
    }
    Ok(())
}

/// Creates an empty registry file with exactly `file_mode` (SQLite would use 0644 − umask);
/// another process creating it first is fine.
fn create(path: &Path, file_mode: u32) -> mck_store::Result<()> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::open(path, flags, Mode::from_raw_mode(file_mode)) {
        Ok(fd) => rustix::fs::fchmod(&fd, Mode::from_raw_mode(file_mode))
            .map_err(|e| StoreError::io("set permissions of", path, e.into())),
        Err(rustix::io::Errno::EXIST) => Ok(()),
        Err(e) => Err(StoreError::io("create", path, e.into())),
    }
}

/// Moves the damaged registry aside and rebuilds it from what can be read.
fn repair(
    layout: &Layout,
    path: &Path,
    file_mode: u32,
    now: UnixMillis,
    prepare: Prepare,
    why: &str,
) -> Result<()> {
    let lock_path = layout.registry_lock_path();
    let Some(_guard) = mck_store::lock_file(
        &lock_path,
        "the registry lock (another process is repairing the registry)",
        file_mode,
        REPAIR_LOCK_TIMEOUT,
    )?
    else {
        return Err(StoreError::io(
            "lock",
            lock_path,
            io::Error::new(io::ErrorKind::TimedOut, "timed out"),
        )
        .into());
    };
    // Another process may have repaired it while we waited.
    if connect(path, prepare).is_ok() {
        return Ok(());
    }
    let Some(moved) = move_aside(layout, path, None, now, why)? else {
        return Ok(());
    };
    for side in sidecars(path) {
        move_aside(layout, &side, None, now, why)?;
    }
    create(path, file_mode)?;
    let fresh = connect(path, prepare).map_err(|source| RunsError::Registry {
        op: "create",
        location: path.display().to_string(),
        unreachable: false,
        source: Box::new(source),
    })?;
    let salvaged = salvage(&moved, &fresh);
    warn!(
        "cache registry {} was damaged ({why}): moved to {}; rebuilt with the rows that could \
         still be read ({salvaged} rows)",
        path.display(),
        moved.display()
    );
    Ok(())
}

/// Copies every row that can still be read from `damaged` into `fresh`; returns how many.
fn salvage(damaged: &Path, fresh: &Connection) -> u64 {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let Ok(old) = Connection::open_with_flags(damaged, flags) else {
        return 0;
    };
    // (from, to, columns): this layout's tables, and the first layout's run_entries.
    let tables = [
        ("runs", "runs", "run, created_ms, sealed_ms"),
        ("runs", "runs", "run, created_ms"),
        (
            "run_lines",
            "run_lines",
            "run, address, key, digest, state, time_ms, conflict_with",
        ),
        (
            "run_entries",
            "run_lines",
            "run, address, key, digest, state, time_ms, conflict_with",
        ),
        (
            "addresses",
            "addresses",
            "address, local_name, key, digest, state, run, updated_ms, record",
        ),
    ];
    let mut copied = 0;
    for (from, table, columns) in tables {
        let n = columns.split(',').count();
        let insert = format!(
            "INSERT OR IGNORE INTO {table}({columns}) VALUES ({})",
            vec!["?"; n].join(",")
        );
        let Ok(mut select) = old.prepare(&format!("SELECT {columns} FROM {from}")) else {
            continue;
        };
        let Ok(mut rows) = select.query([]) else {
            continue;
        };
        // Up to the first unreadable row: what follows it is lost.
        while let Ok(Some(row)) = rows.next() {
            let values: rusqlite::Result<Vec<rusqlite::types::Value>> =
                (0..n).map(|i| row.get(i)).collect();
            if let Ok(values) = values
                && fresh
                    .execute(&insert, rusqlite::params_from_iter(values))
                    .is_ok()
            {
                copied += 1;
            }
        }
    }
    copied
}

/// Renames `path` into the quarantine (unless it is no longer the inode `seen`); the new path.
fn move_aside(
    layout: &Layout,
    path: &Path,
    seen: Option<&Metadata>,
    now: UnixMillis,
    why: &str,
) -> mck_store::Result<Option<PathBuf>> {
    let moved = mck_store::move_into_quarantine(layout.quarantine_dir(), path, seen, now)?;
    if let Some(dest) = &moved {
        warn!(
            "moved {} into quarantine ({why}): {}",
            path.display(),
            dest.display()
        );
    }
    Ok(moved)
}

fn sidecars(path: &Path) -> [PathBuf; 2] {
    ["-wal", "-shm"].map(|suffix| {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        PathBuf::from(p)
    })
}
