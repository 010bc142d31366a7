//! The use log, `DIR/v1/uses.log`: what a hit records (the entry's last use and its hit
//! counter), and a plain miss (its counter and its reason's), without writing the index or
//! `counters.sqlite`. A SQLite write on a hit created and fsynced a WAL, its directory and, on
//! close, both databases; an append here is one `write` and never synced. The next writer of
//! the index folds the log into its transaction, and a read of counters (or of rows, when a
//! line names an entry) folds it first (`index::fold_into`).
//!
//! One line per use, `<digest or -> <unix ms> <counter>\n`, appended with `O_APPEND` under a
//! shared `flock`; the folder takes the lock exclusively, so it never truncates a line away
//! while an appender writes it. A crash may lose the lines not yet folded, or tear the last
//! one: a torn or foreign line is skipped. Losing a use only makes an entry look older. A
//! read-only cache neither appends (it records no use) nor folds (it cannot write the index).

use std::fs::{File, OpenOptions};
use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use super::clock::UnixMillis;

/// The log's file name, in the layout directory.
pub const USES_FILE: &str = "uses.log";
/// A log longer than this is not read whole (a runaway or foreign file): it is dropped.
const MAX_LOG_LEN: u64 = 64 << 20;

/// One folded line: an entry used at a time (none for a counter-only use), and its counter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Use {
    pub digest: Option<String>,
    pub at_ms: UnixMillis,
    pub counter: String,
}

/// The use log of one cache directory.
#[derive(Clone, Debug)]
pub struct UseLog {
    path: PathBuf,
    file_mode: u32,
}

impl UseLog {
    pub fn new(path: PathBuf, file_mode: u32) -> UseLog {
        UseLog { path, file_mode }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one use (no sync: see the module comment).
    pub fn append(
        &self,
        digest: Option<&str>,
        at_ms: UnixMillis,
        counter: &str,
    ) -> std::io::Result<()> {
        let line = format!("{} {at_ms} {counter}\n", digest.unwrap_or("-"));
        super::fsutil::append_line(&self.path, self.file_mode, line.as_bytes()).map(drop)
    }

    /// True when there may be uses to fold (a `stat`, no open).
    pub fn has_uses(&self) -> bool {
        std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.is_file() && m.len() > 0)
    }

    /// True when a whole line of the log names an entry (a hit's last use): a read of the rows
    /// must fold the log first. Lines that only count (misses, their reasons, hits of no
    /// entry) wait for the next writer or read of the counters. Read without the lock: a line
    /// still being appended is not whole yet, and names nothing.
    pub fn names_entries(&self) -> bool {
        match self.open(false) {
            Ok(file) => match read_uses(&file) {
                Ok(Some(uses)) => uses.iter().any(|u| u.digest.is_some()),
                // Too long (the fold drops it) or unreadable (the fold says why): fold.
                _ => true,
            },
            Err(_) => false,
        }
    }

    /// Locks the log exclusively and reads every whole line. The caller applies them, then
    /// [`Drain::finish`] empties the log; dropping the drain instead leaves it as it was.
    pub fn drain(&self) -> std::io::Result<Option<Drain>> {
        let file = match self.open(true) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        file.lock()?;
        let uses = read_uses(&file)?.unwrap_or_else(|| {
            tracing::warn!(
                "the use log {} is over {MAX_LOG_LEN} bytes; dropping it",
                self.path.display()
            );
            Vec::new()
        });
        Ok(Some(Drain { file, uses }))
    }

    /// The log, never through a symlink.
    fn open(&self, write: bool) -> std::io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(write)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&self.path)
    }
}

/// Every whole line of `file`; `None` when it is [`MAX_LOG_LEN`] or longer.
fn read_uses(file: &File) -> std::io::Result<Option<Vec<Use>>> {
    let mut bytes = Vec::new();
    file.take(MAX_LOG_LEN).read_to_end(&mut bytes)?;
    Ok(((bytes.len() as u64) < MAX_LOG_LEN).then(|| parse(&bytes)))
}

/// The uses read by [`UseLog::drain`], the log still locked.
#[derive(Debug)]
pub struct Drain {
    file: File,
    pub uses: Vec<Use>,
}

impl Drain {
    /// Empties the log (the lock goes with the file).
    pub fn finish(self) -> std::io::Result<()> {
        self.file.set_len(0)
    }
}

/// The whole, well-formed lines of `bytes` (a torn last line or a foreign one is skipped).
fn parse(bytes: &[u8]) -> Vec<Use> {
    let text = String::from_utf8_lossy(bytes);
    let mut lines: Vec<&str> = text.split('\n').collect();
    // What follows the last newline is a line still being written or torn by a crash.
    lines.pop();
    lines.into_iter().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Use> {
    let mut fields = line.split(' ');
    let (digest, at_ms, counter) = (fields.next()?, fields.next()?, fields.next()?);
    if fields.next().is_some() {
        return None;
    }
    let digest = match digest {
        "-" => None,
        d if d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()) => Some(d.to_owned()),
        _ => return None,
    };
    let counter_ok = !counter.is_empty()
        && counter
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.');
    if !counter_ok {
        return None;
    }
    Some(Use {
        digest,
        at_ms: at_ms.parse().ok()?,
        counter: counter.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn appended_uses_drain_once_and_torn_or_foreign_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let log = UseLog::new(dir.path().join(USES_FILE), 0o600);
        assert!(!log.has_uses());
        assert!(log.drain().unwrap().is_none());
        let digest = "ab".repeat(32);
        log.append(Some(&digest), 7, "hits").unwrap();
        log.append(None, 8, "direct_hits").unwrap();
        let mut file = OpenOptions::new().append(true).open(log.path()).unwrap();
        file.write_all(b"not a use\nabc 9 hits\n- x hits\n- 10 hits")
            .unwrap();
        assert!(log.has_uses());
        let drain = log.drain().unwrap().unwrap();
        assert_eq!(
            drain.uses,
            vec![
                Use {
                    digest: Some(digest),
                    at_ms: 7,
                    counter: "hits".into()
                },
                Use {
                    digest: None,
                    at_ms: 8,
                    counter: "direct_hits".into()
                },
            ]
        );
        drain.finish().unwrap();
        assert!(!log.has_uses());
        assert!(log.drain().unwrap().unwrap().uses.is_empty());
    }
}
