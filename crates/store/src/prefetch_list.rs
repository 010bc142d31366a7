//! The keys each run of a program used, in order of first use, and the prefetch counters: what
//! lets a warm start (the JAX integration's `prefetch=True`) read and load the executables the
//! last run of the same program used while this one is still tracing.
//!
//! One small file per program identity (a script path and argv, or a chosen name):
//! `v1/prefetch/<sha256(identity), 32 hex>.json`, holding the newest [`RUNS_KEPT`] runs (newest
//! first) of at most [`MAX_RUN_KEYS`] keys each; at most [`MAX_PROGRAMS`] such files (the least
//! recently updated go first). Concurrent processes update a file under an advisory lock beside
//! it and publish it by temporary file + rename, so a reader sees a whole list, never a torn one,
//! and no run's update overwrites another's. A list is a prediction only: a caller uses a
//! prefetched entry only when the key it computes now is the one it was prefetched under.

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use tracing::warn;

use super::cache::Store;
use super::clock::UnixMillis;
use super::error::StoreError;
use super::key::CacheKey;
use super::{atomic, fsutil, lock};

/// Runs kept per program: the newest is what a warm start prefetches; the older ones stay so a
/// run that failed early does not erase what the last full run used.
pub const RUNS_KEPT: usize = 4;
/// Keys kept per run (the first ones used: a warm start's first steps).
pub const MAX_RUN_KEYS: usize = 512;
/// Program files kept in `v1/prefetch/`.
pub const MAX_PROGRAMS: usize = 256;
/// Prefix of the prefetch counters among the event counters.
pub const PREFETCH_COUNTER_PREFIX: &str = "prefetch.";

const SCHEMA: &str = "mlir-cache-key.prefetch-list.v1";
const TMP_PREFIX: &str = "prefetch-";
const MAX_FILE_LEN: u64 = 4 << 20;
/// Bytes of one run's context (as JSON) kept with its keys.
pub const MAX_CONTEXT_LEN: usize = 512 << 10;
const LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// The keys one run used, in order of first use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunKeys {
    /// Who recorded it (unique per process run).
    pub run: String,
    pub updated_ms: UnixMillis,
    pub keys: Vec<String>,
    /// What the caller needs to load the keys' entries ahead of time (for JAX: each key's
    /// devices and compile options), opaque here; null when larger than [`MAX_CONTEXT_LEN`].
    #[serde(default)]
    pub context: serde_json::Value,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ProgramFile {
    schema: String,
    identity: String,
    runs: Vec<RunKeys>,
}

/// What prefetching did, summed over runs: executables loaded ahead of time, those the program
/// then used, and those it never asked for (or asked for under another key). Bytes are the
/// stored (compressed) entry sizes; times are milliseconds of loading (read, decompress,
/// deserialize) on background threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrefetchCounters {
    pub prefetched: u64,
    pub prefetched_bytes: u64,
    pub prefetched_ms: u64,
    pub used: u64,
    pub used_bytes: u64,
    pub used_ms: u64,
    pub wasted: u64,
    pub wasted_bytes: u64,
    pub wasted_ms: u64,
}

impl PrefetchCounters {
    /// Each counter by its name (the JSON field's), in order.
    pub fn fields(&self) -> Vec<(String, u64)> {
        let value = serde_json::to_value(self).unwrap_or_default();
        let fields = value.as_object().into_iter().flatten();
        fields
            .map(|(name, n)| (name.clone(), n.as_u64().unwrap_or(0)))
            .collect()
    }

    /// The counters `get` gives by name (the first error stops).
    pub fn try_from_fn<E>(mut get: impl FnMut(&str) -> Result<u64, E>) -> Result<Self, E> {
        let mut map = serde_json::Map::new();
        for (name, _) in PrefetchCounters::default().fields() {
            let value = get(&name)?;
            map.insert(name, value.into());
        }
        Ok(serde_json::from_value(map.into()).unwrap_or_default())
    }

    /// The counters among the event counters `read` returns by name.
    pub(crate) fn from_counters(read: impl Fn(&str) -> u64) -> Self {
        let get = |name: &str| Ok::<_, ()>(read(&format!("{PREFETCH_COUNTER_PREFIX}{name}")));
        PrefetchCounters::try_from_fn(get).unwrap_or_default()
    }
}

fn file_name(identity: &str) -> String {
    let digest = Sha256::digest(identity.as_bytes());
    format!("{}.json", &hex::encode(digest)[..32])
}

fn bounded_context(context: &serde_json::Value) -> serde_json::Value {
    let len = serde_json::to_string(context).map_or(usize::MAX, |t| t.len());
    if len > MAX_CONTEXT_LEN {
        warn!("a run's prefetch context of {len} bytes is over {MAX_CONTEXT_LEN}; not kept");
        return serde_json::Value::Null;
    }
    context.clone()
}

impl Store {
    fn prefetch_dir(&self) -> PathBuf {
        self.layout().base().join("prefetch")
    }

    fn read_program(&self, identity: &str) -> ProgramFile {
        let path = self.prefetch_dir().join(file_name(identity));
        let text = match fsutil::open_regular_nofollow(&path) {
            Ok(file) => {
                let mut text = String::new();
                use std::io::Read as _;
                match file.take(MAX_FILE_LEN).read_to_string(&mut text) {
                    Ok(_) => text,
                    Err(e) => {
                        warn!("cannot read the run list {}: {e}", path.display());
                        return ProgramFile::default();
                    }
                }
            }
            Err(_) => return ProgramFile::default(), // no run recorded yet
        };
        match serde_json::from_str::<ProgramFile>(&text) {
            Ok(file) if file.schema == SCHEMA && file.identity == identity => file,
            Ok(_) => ProgramFile::default(), // another schema, or a digest collision
            Err(e) => {
                warn!(
                    "the run list {} is damaged ({e}); ignoring it",
                    path.display()
                );
                ProgramFile::default()
            }
        }
    }

    /// The newest recorded run of `identity` other than `except_run`, with its valid keys.
    pub fn last_run_keys(&self, identity: &str, except_run: &str) -> Option<RunKeys> {
        let mut run = self
            .read_program(identity)
            .runs
            .into_iter()
            .find(|r| r.run != except_run && !r.keys.is_empty())?;
        run.keys.retain(|k| CacheKey::parse(k).is_ok());
        Some(run)
    }

    /// Records that run `run` of `identity` used `keys` (in order of first use; the first
    /// [`MAX_RUN_KEYS`] are kept) with the caller's `context`, replacing what `run` recorded
    /// before and keeping the newest [`RUNS_KEPT`] runs. A read-only cache records nothing.
    pub fn record_run_keys(
        &self,
        identity: &str,
        run: &str,
        keys: &[String],
        context: &serde_json::Value,
    ) -> Result<(), StoreError> {
        if self.is_read_only() {
            return Ok(());
        }
        let dir = self.prefetch_dir();
        fsutil::ensure_private_dir(&dir, self.settings().dir_mode)?;
        let name = file_name(identity);
        let path = dir.join(&name);
        let lock_path = dir.join(format!("{name}.lock"));
        let what = format!("the run list of {identity:?}");
        let Some(_guard) = lock::acquire(&lock_path, &what, self.file_mode(), LOCK_TIMEOUT)? else {
            warn!("{what} stayed locked for {LOCK_TIMEOUT:?}; not recording this run's keys");
            return Ok(());
        };
        let existed = path.exists();
        let mut program = self.read_program(identity);
        program.schema = SCHEMA.to_owned();
        program.identity = identity.to_owned();
        program.runs.retain(|r| r.run != run);
        program.runs.insert(
            0,
            RunKeys {
                run: run.to_owned(),
                updated_ms: self.now(),
                keys: keys.iter().take(MAX_RUN_KEYS).cloned().collect(),
                context: bounded_context(context),
            },
        );
        program.runs.truncate(RUNS_KEPT);
        let bytes = serde_json::to_vec(&program).map_err(|e| StoreError::Encode {
            key: identity.to_owned(),
            reason: e.to_string(),
        })?;
        atomic::publish(
            self.layout().tmp_dir(),
            TMP_PREFIX,
            &path,
            &[&bytes],
            self.file_mode(),
            SystemTime::now(),
            false, // a list lost to a power cut costs one warm start its prefetch
        )?;
        if !existed {
            self.drop_oldest_programs(&dir);
        }
        Ok(())
    }

    /// Keeps the newest [`MAX_PROGRAMS`] run lists (best effort).
    fn drop_oldest_programs(&self, dir: &std::path::Path) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        let mut lists: Vec<(SystemTime, PathBuf)> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        if lists.len() <= MAX_PROGRAMS {
            return;
        }
        lists.sort();
        for (_, path) in &lists[..lists.len() - MAX_PROGRAMS] {
            let _ = fs::remove_file(path);
            let lock_path = path.with_extension("json.lock");
            let _ = lock::remove_if_unlocked(&lock_path, self.file_mode());
        }
    }

    /// Adds what one run's prefetching did to the event counters (best effort, as every
    /// counter: statistics never fail a run).
    pub fn record_prefetch(&self, counts: &PrefetchCounters) {
        self.index_best_effort("count prefetches", |ix| {
            for (name, value) in counts.fields() {
                if value > 0 {
                    let by = i64::try_from(value).unwrap_or(i64::MAX);
                    ix.add_named(&format!("{PREFETCH_COUNTER_PREFIX}{name}"), by)?;
                }
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Settings;
    use serde_json::Value::Null;

    fn store(dir: &std::path::Path) -> Store {
        Store::open(&Settings {
            cache_dir: dir.to_owned(),
            fsync: false,
            ..Settings::default()
        })
        .unwrap()
    }

    fn key(n: u8) -> String {
        format!("jit_f-{}", hex::encode([n; 32]))
    }

    #[test]
    fn the_last_other_run_is_returned_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        assert_eq!(s.last_run_keys("prog a", "r2"), None);
        let context = serde_json::json!({"devices": [0, 1]});
        s.record_run_keys("prog a", "r1", &[key(2), key(1)], &context)
            .unwrap();
        s.record_run_keys("prog b", "r9", &[key(9)], &Null).unwrap();
        let last = s.last_run_keys("prog a", "r2").unwrap();
        assert_eq!((last.run.as_str(), last.keys), ("r1", vec![key(2), key(1)]));
        assert_eq!(last.context, context);
        // The asking run's own record is not a prediction of itself.
        s.record_run_keys("prog a", "r2", &[key(3)], &Null).unwrap();
        assert_eq!(s.last_run_keys("prog a", "r2").unwrap().run, "r1");
        assert_eq!(s.last_run_keys("prog a", "r3").unwrap().keys, vec![key(3)]);
    }

    #[test]
    fn runs_and_keys_are_bounded_and_updates_replace() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let many: Vec<String> = (0..=255u8).chain(0..=255u8).chain(0..9).map(key).collect();
        s.record_run_keys("p", "r0", &many, &Null).unwrap();
        assert_eq!(s.last_run_keys("p", "").unwrap().keys.len(), MAX_RUN_KEYS);
        for run in 1..=RUNS_KEPT + 2 {
            s.record_run_keys("p", &format!("r{run}"), &[key(1)], &Null)
                .unwrap();
            s.record_run_keys("p", &format!("r{run}"), &[key(1), key(2)], &Null)
                .unwrap();
        }
        let huge = serde_json::json!("x".repeat(MAX_CONTEXT_LEN));
        s.record_run_keys("p", "big", &[key(3)], &huge).unwrap();
        assert_eq!(s.last_run_keys("p", "").unwrap().context, Null);
        s.record_run_keys("p", "big", &[key(1), key(2)], &Null)
            .unwrap();
        let mut program = s.read_program("p");
        assert_eq!(program.runs.len(), RUNS_KEPT);
        assert_eq!(program.runs[0].run, "big");
        program.runs.remove(0);
        assert_eq!(program.runs[0].run, format!("r{}", RUNS_KEPT + 2));
        assert!(program.runs.iter().all(|r| r.keys == vec![key(1), key(2)]));
    }

    #[test]
    fn a_damaged_list_or_bad_key_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        s.record_run_keys("p", "r1", &[key(1), "not a key".to_owned()], &Null)
            .unwrap();
        assert_eq!(s.last_run_keys("p", "").unwrap().keys, vec![key(1)]);
        fs::write(s.prefetch_dir().join(file_name("p")), b"{\"runs\": [").unwrap();
        assert_eq!(s.last_run_keys("p", ""), None);
        s.record_run_keys("p", "r2", &[key(2)], &Null).unwrap();
        assert_eq!(s.last_run_keys("p", "").unwrap().keys, vec![key(2)]);
    }

    #[test]
    fn concurrent_runs_keep_every_update() {
        let dir = tempfile::tempdir().unwrap();
        std::thread::scope(|scope| {
            for run in 0..RUNS_KEPT {
                let path = dir.path().to_owned();
                scope.spawn(move || {
                    let s = store(&path);
                    for n in 0..20u8 {
                        s.record_run_keys("p", &format!("r{run}"), &[key(n)], &Null)
                            .unwrap();
                    }
                });
            }
        });
        let program = store(dir.path()).read_program("p");
        assert_eq!(program.runs.len(), RUNS_KEPT);
        assert!(program.runs.iter().all(|r| r.keys == vec![key(19)]));
    }

    #[test]
    fn counters_have_their_field_names() {
        let c = PrefetchCounters::try_from_fn(|name| Ok::<_, ()>(name.len() as u64)).unwrap();
        assert_eq!((c.prefetched, c.used_ms, c.wasted_bytes), (10, 7, 12));
        assert_eq!(c.fields().len(), 9);
        assert_eq!(c.fields()[0], ("prefetched".to_owned(), 10));
    }

    #[test]
    fn counters_add_up_in_stats() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let one = PrefetchCounters {
            prefetched: 2,
            prefetched_bytes: 300,
            used: 1,
            wasted: 1,
            wasted_ms: 7,
            ..PrefetchCounters::default()
        };
        s.record_prefetch(&one);
        s.record_prefetch(&one);
        let stats = s.stats().unwrap();
        assert_eq!(stats.prefetch.prefetched, 4);
        assert_eq!(stats.prefetch.prefetched_bytes, 600);
        assert_eq!((stats.prefetch.used, stats.prefetch.wasted_ms), (2, 14));
    }
}
