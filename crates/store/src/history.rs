//! The lookup history, `DIR/v1/history.log`: one JSON line per event a report reads back (a
//! hit and the compile time it saved, a miss and why, an entry stored and the compile time it
//! cost, an eviction, a remote tier's answer). `cache stats` counts; the history says when,
//! where and why (`mck-report` reads it).
//!
//! Every line is written where the counter it mirrors is bumped, so a report's totals equal
//! `cache stats` over the same span. A line is one `O_APPEND` write under a shared `flock`,
//! never synced and never fatal: a full disk or a kill loses lines, never a build; a torn line
//! is skipped when read. The log is bounded by `history_size`: past half of it the file is
//! renamed to `history.1.log` (replacing the older half) under an exclusive `flock`, and by
//! `history_days`: older lines are not read, and `gc` removes a file whose newest line is
//! older.

use std::fs::{File, OpenOptions};
use std::io::Read as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::clock::UnixMillis;

/// The current log's file name, in the layout directory.
pub const HISTORY_FILE: &str = "history.log";
/// The older half, renamed from the current log when it filled.
pub const HISTORY_OLDER_FILE: &str = "history.1.log";
/// Longest text kept in a field (module names, tier names, causes' details are cut).
const MAX_FIELD_LEN: usize = 400;
/// A file longer than this is not read (a foreign or runaway file).
const MAX_READ_LEN: u64 = 1 << 30;

/// One line of the history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// When, in Unix milliseconds.
    pub t: UnixMillis,
    pub host: String,
    pub pid: u32,
    /// The run (`exec --address`) the lookup belongs to, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    #[serde(flatten)]
    pub what: What,
}

/// What happened. `key` is `<module name>-<digest>`, or the digest alone where the name is
/// unknown (an entry found damaged by a read that had no key).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
pub enum What {
    /// A stored artefact was served; `saved_ms`: the compile time its entry recorded.
    Hit {
        key: String,
        size: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        saved_ms: Option<u64>,
    },
    /// A remembered failure was replayed.
    FailureReplayed { key: String },
    /// No usable entry; `corrupt` when the entry was found damaged (and quarantined).
    Miss {
        key: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        corrupt: bool,
    },
    /// Why the miss of `key` just before it (same host and process) happened: a cause code
    /// (`new_program`, `compiler_version`, `xla_flag`, …) and what moved, in words.
    Cause {
        key: String,
        cause: String,
        detail: String,
    },
    /// An entry was stored; `compile_ms`: what compiling it took, when the caller measured it.
    Stored {
        key: String,
        size: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        compile_ms: Option<u64>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        failed: bool,
    },
    /// An entry left the cache to keep it under its cap or its time-to-live.
    Evicted { digest: String, size: u64 },
    /// A remote tier's answer to the first look-up of `key` there.
    Tier {
        tier: String,
        key: String,
        answer: TierAnswer,
    },
}

/// What a remote tier answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TierAnswer {
    Hit,
    Miss,
    /// It failed or timed out, or its breaker was open.
    Down,
}

/// The history of one cache directory, as written by this process.
#[derive(Debug)]
pub struct History {
    current: PathBuf,
    older: PathBuf,
    file_mode: u32,
    max_size: u64,
    /// A read-only cache writes nothing.
    writable: bool,
    run: OnceLock<String>,
}

impl History {
    pub fn new(dir: &Path, file_mode: u32, max_size: u64, writable: bool) -> History {
        History {
            current: dir.join(HISTORY_FILE),
            older: dir.join(HISTORY_OLDER_FILE),
            file_mode,
            max_size,
            writable,
            run: OnceLock::new(),
        }
    }

    /// Names the run this process's later events belong to (the first name given stays).
    pub fn set_run(&self, run: &str) {
        let _ = self.run.set(cut(run));
    }

    /// Appends one event, now (best effort: see the module comment).
    pub fn record(&self, t: UnixMillis, what: What) {
        if !self.writable || self.max_size == 0 {
            return;
        }
        let event = Event {
            t,
            host: this_host().to_owned(),
            pid: std::process::id(),
            run: self.run.get().cloned(),
            what: what.bounded(),
        };
        if let Err(e) = self.append(&event) {
            tracing::debug!("cannot append to {}: {e}", self.current.display());
        }
    }

    fn append(&self, event: &Event) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(event)?;
        line.push(b'\n');
        // A line of at most a few KiB (fields are cut): one write, whole.
        let file = super::fsutil::append_line(&self.current, self.file_mode, &line)?;
        let len = file.metadata()?.len();
        if len > self.max_size / 2 {
            file.unlock()?;
            self.rotate(&file)?;
        }
        Ok(())
    }

    /// Renames the full log to the older half, if `file` is still the current log.
    fn rotate(&self, file: &File) -> std::io::Result<()> {
        file.lock()?;
        let ours = file.metadata()?;
        match std::fs::symlink_metadata(&self.current) {
            // Another process rotated it first.
            Ok(now) if now.ino() != ours.ino() || now.dev() != ours.dev() => Ok(()),
            Ok(_) => std::fs::rename(&self.current, &self.older),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Removes each file whose newest line is older than `max_age` (by its mtime); returns how
    /// many went.
    pub fn expire(&self, now: std::time::SystemTime, max_age: Duration) -> u64 {
        let mut removed = 0;
        for path in [&self.older, &self.current] {
            let old = std::fs::symlink_metadata(path)
                .and_then(|m| m.modified())
                .is_ok_and(|at| now.duration_since(at).is_ok_and(|age| age > max_age));
            if old && std::fs::remove_file(path).is_ok() {
                removed += 1;
            }
        }
        removed
    }
}

/// What reading one cache's history found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistoryRead {
    /// The events at or after the start asked for, oldest first.
    pub events: Vec<Event>,
    /// Lines that were torn or not events of this format.
    pub unreadable: u64,
}

/// Reads the history kept in `dir` (a layout directory), from `since` on: the older half, then
/// the current log. A missing file is an empty history.
pub fn read_history(dir: &Path, since: UnixMillis) -> std::io::Result<HistoryRead> {
    let mut read = HistoryRead::default();
    for name in [HISTORY_OLDER_FILE, HISTORY_FILE] {
        let path = dir.join(name);
        let file = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
        {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        if !meta.is_file() || meta.len() > MAX_READ_LEN {
            tracing::warn!(
                "skipping the history file {}: not a regular file of at most {MAX_READ_LEN} bytes",
                path.display()
            );
            continue;
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(MAX_READ_LEN).read_to_end(&mut bytes)?;
        parse_into(&bytes, since, &mut read);
    }
    read.events.sort_by_key(|e| e.t);
    Ok(read)
}

fn parse_into(bytes: &[u8], since: UnixMillis, read: &mut HistoryRead) {
    let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    // What follows the last newline is a line still being written, or torn by a kill.
    if lines.pop().is_some_and(|rest| !rest.is_empty()) {
        read.unreadable += 1;
    }
    for line in lines.into_iter().filter(|l| !l.is_empty()) {
        let event = match serde_json::from_slice::<Event>(line) {
            Ok(event) => event,
            Err(_) => {
                read.unreadable += 1;
                // A line torn by a full disk or a kill, then continued by the next append:
                // the whole event after the fragment still reads.
                match recover_tail(line) {
                    Some(event) => event,
                    None => continue,
                }
            }
        };
        if event.t >= since {
            read.events.push(event);
        }
    }
}

/// The event that starts after a fragment in `line` (every event starts with `{"t":`).
fn recover_tail(line: &[u8]) -> Option<Event> {
    const START: &[u8] = b"{\"t\":";
    let at = line.windows(START.len()).rposition(|w| w == START)?;
    (at > 0).then(|| serde_json::from_slice(&line[at..]).ok())?
}

impl What {
    /// The event with every text field cut to [`MAX_FIELD_LEN`] (a line stays one short write).
    fn bounded(self) -> What {
        match self {
            What::Hit {
                key,
                size,
                saved_ms,
            } => What::Hit {
                key: cut(&key),
                size,
                saved_ms,
            },
            What::FailureReplayed { key } => What::FailureReplayed { key: cut(&key) },
            What::Miss { key, corrupt } => What::Miss {
                key: cut(&key),
                corrupt,
            },
            What::Cause { key, cause, detail } => What::Cause {
                key: cut(&key),
                cause: cut(&cause),
                detail: cut(&detail),
            },
            What::Stored {
                key,
                size,
                compile_ms,
                failed,
            } => What::Stored {
                key: cut(&key),
                size,
                compile_ms,
                failed,
            },
            What::Evicted { digest, size } => What::Evicted {
                digest: cut(&digest),
                size,
            },
            What::Tier { tier, key, answer } => What::Tier {
                tier: cut(&tier),
                key: cut(&key),
                answer,
            },
        }
    }
}

/// `text` cut to at most [`MAX_FIELD_LEN`] bytes, on a character boundary.
fn cut(text: &str) -> String {
    if text.len() <= MAX_FIELD_LEN {
        return text.to_owned();
    }
    let mut end = MAX_FIELD_LEN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The field of an entry's ingredients (opaque to the store otherwise) where the caller that
/// compiled it records how long that took, in milliseconds: what each hit saves.
pub const COMPILE_MS_FIELD: &str = "compile_ms";

/// The compile time recorded in `ingredients`, if any.
pub fn compile_ms_of(ingredients: &serde_json::Value) -> Option<u64> {
    ingredients.get(COMPILE_MS_FIELD)?.as_u64()
}

/// `ingredients` with the compile time `took` recorded (unless they are not a JSON object).
pub fn with_compile_time(ingredients: &serde_json::Value, took: Duration) -> serde_json::Value {
    let mut ingredients = ingredients.clone();
    if let serde_json::Value::Object(fields) = &mut ingredients {
        let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        fields.insert(COMPILE_MS_FIELD.into(), ms.into());
    }
    ingredients
}

/// This machine's name, read once per process.
pub fn this_host() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| cut(h.trim()))
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "unknown-host".to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn miss(key: &str) -> What {
        What::Miss {
            key: key.into(),
            corrupt: false,
        }
    }

    #[test]
    fn events_read_back_in_order_and_torn_or_foreign_lines_are_counted_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let history = History::new(dir.path(), 0o600, 1 << 20, true);
        history.record(20, miss("m-b"));
        history.record(10, miss("m-a"));
        let mut file = OpenOptions::new()
            .append(true)
            .open(dir.path().join(HISTORY_FILE))
            .unwrap();
        file.write_all(b"not json\n{\"t\":5,\"ev\":\"unknown\"}\n{\"t\":30,\"ho")
            .unwrap();
        drop(file);
        // A fragment torn by a full disk, continued by the next whole line: that line reads.
        history.record(40, miss("m-c"));
        let read = read_history(dir.path(), 0).unwrap();
        let keys: Vec<_> = read.events.iter().map(|e| e.what.clone()).collect();
        assert_eq!(keys, vec![miss("m-a"), miss("m-b"), miss("m-c")]);
        assert_eq!(read.unreadable, 3);
        assert_eq!(read.events[0].host, this_host());
        assert_eq!(read_history(dir.path(), 15).unwrap().events.len(), 2);
    }

    #[test]
    fn a_full_log_rotates_into_its_older_half_and_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let max = 4096;
        let history = History::new(dir.path(), 0o600, max, true);
        for i in 0..500 {
            history.record(i, miss(&format!("m-{i}")));
        }
        let size = |name| std::fs::metadata(dir.path().join(name)).map_or(0, |m| m.len());
        assert!(size(HISTORY_OLDER_FILE) > 0, "rotated");
        assert!(size(HISTORY_FILE) + size(HISTORY_OLDER_FILE) <= max + 200);
        let read = read_history(dir.path(), 0).unwrap();
        assert_eq!(read.unreadable, 0);
        assert_eq!(read.events.last().unwrap().t, 499, "the newest kept");
        let times: Vec<_> = read.events.iter().map(|e| e.t).collect();
        assert!(times.windows(2).all(|w| w[1] == w[0] + 1), "no gap");
    }

    #[test]
    fn files_whose_newest_line_is_past_the_age_bound_expire() {
        let dir = tempfile::tempdir().unwrap();
        let history = History::new(dir.path(), 0o600, 1 << 20, true);
        history.record(1, miss("m-a"));
        let now = std::time::SystemTime::now();
        let day = Duration::from_secs(86_400);
        assert_eq!(history.expire(now, 90 * day), 0, "a fresh line stays");
        let file = File::options()
            .write(true)
            .open(dir.path().join(HISTORY_FILE))
            .unwrap();
        file.set_modified(now - 91 * day).unwrap();
        assert_eq!(history.expire(now, 90 * day), 1);
        assert!(read_history(dir.path(), 0).unwrap().events.is_empty());
    }

    #[test]
    fn long_fields_are_cut_and_a_read_only_or_zero_sized_history_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        History::new(dir.path(), 0o600, 1 << 20, true).record(1, miss(&"é".repeat(1000)));
        let read = read_history(dir.path(), 0).unwrap();
        let What::Miss { key, .. } = &read.events[0].what else {
            panic!("{read:?}")
        };
        assert!(key.len() <= MAX_FIELD_LEN + 3 && key.ends_with('…'));
        let other = tempfile::tempdir().unwrap();
        History::new(other.path(), 0o600, 1 << 20, false).record(1, miss("m-a"));
        History::new(other.path(), 0o600, 0, true).record(1, miss("m-a"));
        assert!(!other.path().join(HISTORY_FILE).exists());
    }
}
