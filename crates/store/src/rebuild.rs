//! Keeping the index honest. The directory is the truth; this file opens the index, repairs it
//! when it is missing, damaged, of another schema or half-built (automatically, under
//! `locks/index.lock` so concurrent processes do it once), and reconciles it with the entry
//! files (`rebuild_index`, `verify`): a file without a row gets one (last use = the file's mtime,
//! which every hit touches), a row without a file is dropped, a damaged file is quarantined.

use std::collections::HashSet;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use tracing::{info, warn};

use super::clock::{Clock, UnixMillis};
use super::entry::{self, DecodeError};
use super::entry_file::{len_and_mtime, read_metadata_from};
use super::error::{Result, StoreError};
use super::fsutil;
use super::index::{Index, OpenFailure, Row};
use super::key::Digest;
use super::layout::Layout;
use super::lock;
use super::quarantine::quarantine;
use super::settings::Settings;

/// How long a process waits for another one that is building the index.
const INDEX_LOCK_TIMEOUT: Duration = Duration::from_secs(600);

/// How deeply a scan checks each entry file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Depth {
    /// Header and metadata checksum (fast: reads a few hundred bytes per entry).
    Metadata,
    /// Everything, payload checksum included.
    Full,
}

/// What a rebuild or verification did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RebuildReport {
    /// Entry files examined.
    pub checked: u64,
    /// Valid entries now in the index.
    pub entries: u64,
    /// Files that failed their check and were quarantined (or stray files in `entries/`).
    pub quarantined: u64,
    /// Rows added for files the index did not know.
    pub rows_added: u64,
    /// Rows dropped because their file was gone or bad.
    pub rows_removed: u64,
    /// The index itself was unusable and was recreated.
    pub index_recreated: bool,
}

/// Opens the index, repairing it as needed. `force` (set after a corruption error during use):
/// re-check the file and recreate it unless another process already repaired it.
pub(super) fn open_index(
    layout: &Layout,
    settings: &Settings,
    clock: &dyn Clock,
    force: bool,
) -> Result<Index> {
    let path = layout.index_path();
    let counters = layout.counter_files();
    let file_mode = settings.dir_mode & 0o666;
    let index_error = |op, source| StoreError::Index {
        op,
        path: path.to_owned(),
        source,
    };
    if !force
        && is_plain_file(path)?
        && let Ok((ix, true)) = Index::open(path, &counters, file_mode)
    {
        return Ok(ix);
    }
    // Anything else (missing, half-built, damaged, or an error racing another process that is
    // creating it) is settled under the index lock.
    // Slow path: one process at a time.
    let _guard = match lock::acquire(
        &layout.index_lock_path(),
        "the index lock (another process is building the cache index)",
        file_mode,
        INDEX_LOCK_TIMEOUT,
    )? {
        Some(g) => g,
        None => {
            return Err(StoreError::io(
                "lock",
                layout.index_lock_path(),
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    "timed out waiting for the index lock",
                ),
            ));
        }
    };
    let mut recreated = false;
    if !is_plain_file(path)? {
        // Missing (or not a regular file): stale -wal/-shm would be replayed into a new
        // database and corrupt it, so they go too.
        move_index_aside(layout, clock.now_ms())?;
    }
    let mut opened = Index::open(path, &counters, file_mode);
    if force && let Ok((ix, true)) = &opened {
        let healthy = ix.quick_check().unwrap_or(false);
        if !healthy {
            opened = Err(OpenFailure::Unusable("quick_check failed".to_owned()));
        }
    }
    let mut ix = match opened {
        Ok((ix, true)) => return Ok(ix),
        Ok((ix, false)) => ix,
        Err(OpenFailure::Unusable(reason)) => {
            warn!(
                "cache index {} is unusable ({reason}); rebuilding it from the entry files",
                path.display()
            );
            move_index_aside(layout, clock.now_ms())?;
            recreated = true;
            match Index::open(path, &counters, file_mode) {
                Ok((ix, _)) => ix,
                Err(OpenFailure::Unusable(reason)) => {
                    return Err(StoreError::Insecure {
                        path: path.to_owned(),
                        reason: format!("a freshly created index is unusable: {reason}"),
                    });
                }
                Err(OpenFailure::Error(e)) => return Err(index_error("create", e)),
            }
        }
        Err(OpenFailure::Error(e)) => return Err(index_error("open", e)),
    };
    if let Err(e) = fs::set_permissions(path, fs::Permissions::from_mode(file_mode)) {
        warn!("cannot set permissions of {}: {e}", path.display());
    }
    let report = reconcile(layout, &mut ix, clock, Depth::Metadata, &mut |_, _| {})?;
    ix.mark_populated()
        .map_err(|e| index_error("mark the index as built", e))?;
    info!(
        "Built the cache index {} from {} entry files ({} entries{})",
        path.display(),
        report.checked,
        report.entries,
        if recreated { ", index recreated" } else { "" }
    );
    Ok(ix)
}

fn is_plain_file(path: &Path) -> Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(m) => Ok(m.file_type().is_file()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io("inspect", path, e)),
    }
}

/// Moves the index and its `-wal`/`-shm` files into quarantine (they are evidence, and a stale
/// WAL must never meet a new database).
fn move_index_aside(layout: &Layout, now: UnixMillis) -> Result<()> {
    let base = layout.index_path();
    for suffix in ["", "-wal", "-shm"] {
        let mut p = base.as_os_str().to_owned();
        p.push(suffix);
        let p = PathBuf::from(p);
        let dest = super::quarantine::destination(layout.quarantine_dir(), &p, now);
        match fs::rename(&p, &dest) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::io("move aside", &p, e)),
        }
    }
    Ok(())
}

/// An entry file found by a scan.
struct Found {
    digest: Digest,
    path: PathBuf,
}

/// Lists every file under `entries/`. Files whose names are not digests (or not in their
/// digest's shard) are moved to quarantine: nothing but entries lives there.
fn list_entry_files(layout: &Layout, now: UnixMillis, stray: &mut u64) -> Result<Vec<Found>> {
    let mut found = Vec::new();
    let entries = layout.entries_dir();
    let shards = fs::read_dir(entries).map_err(|e| StoreError::io("list", entries, e))?;
    for shard in shards {
        let shard = shard.map_err(|e| StoreError::io("list", entries, e))?;
        let shard_path = shard.path();
        let shard_name = shard.file_name().to_string_lossy().into_owned();
        let ft = shard
            .file_type()
            .map_err(|e| StoreError::io("inspect", &shard_path, e))?;
        let valid_shard = shard_name.len() == 2
            && shard_name
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !ft.is_dir() || !valid_shard {
            warn!(
                "unexpected {} in the cache's entries directory",
                shard_path.display()
            );
            if quarantine(
                layout.quarantine_dir(),
                &shard_path,
                None,
                now,
                "stray file",
            )?
            .is_some()
            {
                *stray += 1;
            }
            continue;
        }
        let files =
            fs::read_dir(&shard_path).map_err(|e| StoreError::io("list", &shard_path, e))?;
        for file in files {
            let file = file.map_err(|e| StoreError::io("list", &shard_path, e))?;
            let path = file.path();
            let name = file.file_name().to_string_lossy().into_owned();
            match Digest::parse(&name) {
                Ok(d) if d.shard() == shard_name => found.push(Found { digest: d, path }),
                _ => {
                    if quarantine(layout.quarantine_dir(), &path, None, now, "stray file")?
                        .is_some()
                    {
                        *stray += 1;
                    }
                }
            }
        }
    }
    found.sort_by(|a, b| a.digest.cmp(&b.digest));
    Ok(found)
}

/// Checks one entry file at `depth`. `Ok(None)`: gone, quarantined or of a newer version.
fn check_file(
    layout: &Layout,
    found: &Found,
    depth: Depth,
    now: UnixMillis,
    quarantined: &mut u64,
) -> Result<Option<Row>> {
    let path = &found.path;
    let mut file = match fsutil::open_regular_nofollow(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            let m = fs::symlink_metadata(path).map_err(|e2| StoreError::io("inspect", path, e2))?;
            if !m.file_type().is_file() {
                if quarantine(
                    layout.quarantine_dir(),
                    path,
                    Some(&m),
                    now,
                    "not a regular file",
                )?
                .is_some()
                {
                    *quarantined += 1;
                }
                return Ok(None);
            }
            return Err(StoreError::io("open", path, e));
        }
    };
    let seen = file
        .metadata()
        .map_err(|e| StoreError::io("inspect", path, e))?;
    let (len, mtime) = len_and_mtime(&seen);
    let decoded = match depth {
        Depth::Metadata => read_metadata_from(&mut file, len, &found.digest)
            .map_err(|e| StoreError::io("read", path, e))?,
        Depth::Full => {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)
                .map_err(|e| StoreError::io("read", path, e))?;
            entry::decode(&bytes, &found.digest).map(|(m, _)| m)
        }
    };
    match decoded {
        Ok(meta) => Ok(Some(Row {
            digest: meta.digest,
            name: meta.name,
            state: meta.state,
            size: len,
            artefact_size: meta.artefact_size,
            created_ms: meta.created_ms,
            last_used_ms: mtime,
        })),
        Err(DecodeError::UnsupportedVersion(v)) => {
            info!(
                "leaving {} alone: entry format version {v} is newer",
                path.display()
            );
            Ok(None)
        }
        Err(DecodeError::Corrupt(c)) => {
            if quarantine(
                layout.quarantine_dir(),
                path,
                Some(&seen),
                now,
                &c.to_string(),
            )?
            .is_some()
            {
                *quarantined += 1;
            }
            Ok(None)
        }
    }
}

/// Scans the entry files at `depth` and makes the index agree with them.
pub(super) fn reconcile(
    layout: &Layout,
    ix: &mut Index,
    clock: &dyn Clock,
    depth: Depth,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RebuildReport> {
    let index_error = |op, source| StoreError::Index {
        op,
        path: layout.index_path().to_owned(),
        source,
    };
    let now = clock.now_ms();
    let mut report = RebuildReport::default();
    let files = list_entry_files(layout, now, &mut report.quarantined)?;
    let total = files.len() as u64;
    progress(0, total);
    let known = ix
        .last_uses()
        .map_err(|e| index_error("read the entries", e))?;
    let mut rows = Vec::with_capacity(files.len());
    for (i, found) in files.iter().enumerate() {
        if let Some(mut row) = check_file(layout, found, depth, now, &mut report.quarantined)? {
            match known.get(&row.digest) {
                // The index's last use is exact; the mtime only approximates it.
                Some(&last) => row.last_used_ms = last,
                None => report.rows_added += 1,
            }
            rows.push(row);
        }
        report.checked += 1;
        progress(i as u64 + 1, total);
    }
    let valid: HashSet<&str> = rows.iter().map(|r| r.digest.as_str()).collect();
    let checked: HashSet<&str> = files.iter().map(|f| f.digest.as_str()).collect();
    let mut stale = Vec::new();
    for digest in known.keys() {
        if valid.contains(digest.as_str()) {
            continue;
        }
        // A file published after the scan began is not stale: look again before dropping.
        let still_there = Digest::parse(digest)
            .map(|d| layout.entry_path(&d).exists())
            .unwrap_or(false);
        let was_checked = checked.contains(digest.as_str());
        if !still_there || was_checked {
            stale.push(digest.clone());
        }
    }
    report.rows_removed = stale.len() as u64;
    report.entries = rows.len() as u64;
    ix.reconcile(&rows, &stale)
        .map_err(|e| index_error("write the rebuilt entries", e))?;
    Ok(report)
}
