//! `mlir_cache_key._native`: the MLIR-free crates for Python. The key library
//! (`key_from_parts`, `why`), the dialect-free kernel stripper (`strip_kernel`)
//! and the store (`Cache`, with the one compile-once API). Work that does not
//! touch Python objects runs with the interpreter detached, so other threads
//! go on while a key is hashed or a process waits for another's compile.
//! Audited hits (`verify_rate`, `mark_suspect`, `record_audit`, and the rate's check, the
//! sampling, the verdict and the outcomes' names of `mck_exec::audit`) are in `audit`; each run's keys
//! and the prefetch counters in `prefetch`; the cache's command line in `cli`.

mod audit;
mod background;
mod cli;
mod key_record;
mod prefetch;
mod recent_records;

mod remote_chain;
mod xla_build;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use key_record::{Ingredients, RecordArg};
use mck_key::flags::FlagSources;
use mck_key::{
    Accelerator, CanonicalSource, CompileOptionsInput, Computation, Detail, JaxRecipe, KeyInputs,
    KeyRecord, Readable, SourceError,
};
use mck_remote::{Attempt, Compiled, Served, Tiered};
use mck_settings::{Layer, Settings};
use mck_store::{CacheKey, Digest, ListFilter, Lookup, StoreError};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use serde_json::Value;

/// Computation bytes with their text, so the record keeps the text.
struct BytesWithText<'a> {
    bytes: &'a [u8],
    text: &'a str,
}

impl CanonicalSource for BytesWithText<'_> {
    fn write_to(&self, sink: &mut dyn FnMut(&[u8])) -> Result<(), SourceError> {
        sink(self.bytes);
        Ok(())
    }
    fn text(&self) -> String {
        self.text.to_owned()
    }
}

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A bad setting is a `ValueError`; a configuration file or cache directory that cannot be
/// read is an `OSError`, as an unusable store is (so `install()` can step aside).
fn settings_error(e: mck_settings::SettingsError) -> PyErr {
    match e.kind {
        mck_settings::ErrorKind::Invalid => value_error(e),
        mck_settings::ErrorKind::Unreadable => PyOSError::new_err(e.to_string()),
    }
}

fn store_error(e: StoreError) -> PyErr {
    match e {
        StoreError::InvalidKey { .. } => value_error(e),
        e => PyOSError::new_err(e.to_string()),
    }
}

/// How long a value made later (`compile_once(store_later=True)`) waits for the interpreter
/// to be free before taking it anyway: the key stays claimed meanwhile.
const VALUE_PATIENCE: Duration = Duration::from_millis(100);

/// The entry `make()` returns, on the worker: its bytes, or nothing to store (None, or an
/// exception, which is logged and never reaches the compile's caller).
fn value_made_later(make: Py<PyAny>, key: &str) -> Compiled {
    Python::attach(|py| {
        let made = make
            .call0(py)
            .and_then(|v| v.extract::<Option<Vec<u8>>>(py));
        drop(make);
        match made {
            Ok(Some(bytes)) => Compiled::Success(bytes),
            Ok(None) => Compiled::Abandoned(format!("nothing to store for {key}")),
            Err(e) => Compiled::Abandoned(format!("could not make the entry of {key}: {e}")),
        }
    })
}

fn runs_error(e: mck_runs::RunsError) -> PyErr {
    match e {
        mck_runs::RunsError::Store(e) => store_error(e),
        e => PyOSError::new_err(e.to_string()),
    }
}

fn to_python(py: Python<'_>, value: &impl serde::Serialize) -> PyResult<Py<PyAny>> {
    let text = serde_json::to_string(value).map_err(value_error)?;
    Ok(py.import("json")?.call_method1("loads", (text,))?.unbind())
}

/// The key of JAX's eight entries: `computation` is the canonical module's
/// bytes; the rest as `mlir-cache-key key --computation-bytes` takes them
/// (`compile_options` raw, normalized here as JAX does; `jax_version` picks the release's
/// recipe, default the newest). Returns `key`, JAX's
/// 16 `trace` lines and the JSON `record` (with `computation_text` when given). With
/// `lazy_record`, `record` is a `KeyRecordHandle` (JSON on demand, `trace()` from it) and leaves
/// out the compile options' text view (`why` reads their hashed bytes): what a JAX lookup keeps.
#[pyfunction]
#[pyo3(signature = (
    computation, module_name, *, compiler_version = String::new(), platform = String::new(),
    platform_version = String::new(), xla_flags = None, libtpu_init_args = None,
    argv = Vec::new(), flag_prefixes = Vec::new(), compile_options = None,
    topology_fingerprint = None, topology_serialized = None, device_kinds = Vec::new(),
    compression = "zstandard".to_owned(), custom_hook = String::new(), computation_text = None,
    jax_version = None, runtime_type = String::new(), lazy_record = false,
))]
#[allow(clippy::too_many_arguments)]
fn key_from_parts<'py>(
    py: Python<'py>,
    computation: &[u8],
    module_name: String,
    compiler_version: String,
    platform: String,
    platform_version: String,
    xla_flags: Option<String>,
    libtpu_init_args: Option<String>,
    argv: Vec<String>,
    flag_prefixes: Vec<String>,
    compile_options: Option<Vec<u8>>,
    topology_fingerprint: Option<u64>,
    topology_serialized: Option<Vec<u8>>,
    device_kinds: Vec<String>,
    compression: String,
    custom_hook: String,
    computation_text: Option<String>,
    jax_version: Option<String>,
    runtime_type: String,
    lazy_record: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let recipe = match jax_version.as_deref() {
        Some(version) => JaxRecipe::for_version(version).map_err(value_error)?,
        None => JaxRecipe::newest(),
    };
    let inputs = KeyInputs {
        module_name,
        compiler_version,
        platform,
        platform_version,
        runtime_type,
        flags: FlagSources {
            xla_flags,
            libtpu_init_args,
            argv,
            extra_prefixes: flag_prefixes,
        },
        compile_options: match compile_options {
            Some(bytes) => CompileOptionsInput::Proto {
                name: "compile_options".to_owned(),
                bytes,
            },
            None => CompileOptionsInput::None,
        },
        accelerator: match (topology_fingerprint, topology_serialized) {
            (Some(fingerprint), _) => Accelerator::TopologyFingerprint(fingerprint),
            (None, Some(bytes)) => Accelerator::TopologySerialized(bytes),
            (None, None) => Accelerator::DeviceKinds(device_kinds),
        },
        compression,
        custom_hook,
    };
    let detail = match lazy_record {
        true => Detail::WithoutOptionsText,
        false => Detail::Full,
    };
    let record = py
        .detach(|| {
            let with_text;
            let computation = match &computation_text {
                Some(text) => {
                    with_text = BytesWithText {
                        bytes: computation,
                        text,
                    };
                    Computation::Module {
                        module: &with_text,
                        record_text: true,
                    }
                }
                None => Computation::Bytes(computation),
            };
            mck_key::compute_with(computation, &inputs, recipe, detail)
        })
        .map_err(value_error)?;
    let out = PyDict::new(py);
    out.set_item("key", &record.key)?;
    if lazy_record {
        out.set_item("record", key_record::KeyRecordHandle::new(record))?;
        return Ok(out);
    }
    out.set_item("trace", record.trace_lines())?;
    out.set_item(
        "record",
        serde_json::to_string(&record).map_err(value_error)?,
    )?;
    Ok(out)
}

fn parse_record(name: &str, json: &str) -> PyResult<KeyRecord> {
    serde_json::from_str(json).map_err(|e| value_error(format!("{name} is not a key record: {e}")))
}

/// What moved between two key records (`record_a` the old one), as
/// `mlir-cache-key why` prints it.
#[pyfunction]
fn why(record_a: &str, record_b: &str) -> PyResult<String> {
    let a = parse_record("record_a", record_a)?;
    let b = parse_record("record_b", record_b)?;
    Ok(mck_key::explain::explain(&a, &b)
        .to_string()
        .trim_end()
        .to_owned())
}

/// `record` (a key record, JSON) with the canonical module text `text` kept for its
/// computation, as `key_from_parts(..., computation_text=text)` would give it, without hashing
/// anything again.
#[pyfunction]
fn record_with_text(record: &str, text: &str) -> PyResult<String> {
    let mut record = parse_record("record", record)?;
    keep_computation_text(&mut record, text)?;
    serde_json::to_string(&record).map_err(value_error)
}

/// Keeps the canonical module text `text` in `record`'s computation entry.
fn keep_computation_text(record: &mut KeyRecord, text: &str) -> PyResult<()> {
    match record.entries.first_mut().map(|e| &mut e.readable) {
        Some(Readable::Computation { text: kept, .. }) => {
            *kept = Some(text.to_owned());
            Ok(())
        }
        _ => Err(value_error(
            "record: its first entry is not the computation",
        )),
    }
}

/// An embedded kernel's MLIR bytecode (Mosaic, Triton) without debug
/// locations, by the dialect-free stripper. Returns the payload unchanged
/// when no lossless rewrite can be proven; raises ValueError on bytes that
/// are not MLIR bytecode of a supported version.
#[pyfunction]
fn strip_kernel<'py>(py: Python<'py>, payload: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let report = py
        .detach(|| mck_bytecode::strip_locations(payload))
        .map_err(value_error)?;
    Ok(match report.output {
        mck_bytecode::StripOutput::Stripped(bytes) => PyBytes::new(py, &bytes),
        mck_bytecode::StripOutput::Unchanged { .. } => PyBytes::new(py, payload),
    })
}

fn parse_key(key: &str) -> PyResult<CacheKey> {
    CacheKey::parse(key).map_err(store_error)
}

fn ingredients(record: Option<&str>) -> PyResult<Value> {
    match record {
        None => Ok(Value::Null),
        Some(text) => {
            serde_json::from_str(text).map_err(|e| value_error(format!("record is not JSON: {e}")))
        }
    }
}

/// What an entry keeps of its key: the record, and the XLA build that compiled it when named.
struct EntryIngredients {
    record: Ingredients,
    xla_build: Option<String>,
}

impl EntryIngredients {
    /// The ingredients as stored: the record, with the build written into it.
    fn into_value(self) -> Value {
        let record = self.record.value();
        match (self.xla_build, record.is_object()) {
            (Some(build), true) => xla_build::with_build(record, &build),
            _ => record,
        }
    }
}

/// Errors of a compile run through the store: the store's, or the compile
/// function's own exception (re-raised as it is).
enum CompileError {
    Store(StoreError),
    Python(PyErr),
}

impl From<StoreError> for CompileError {
    fn from(e: StoreError) -> Self {
        CompileError::Store(e)
    }
}

/// The persistent cache: `MLIR_CACHE_KEY_FLAGS` and the arguments, as the
/// CLI's `--cache_dir`, `--cache_size`, `--cache_ttl`, `--remote` (a str, or a list: a
/// chain of tiers, fastest first), `--remote_read_only`, `--lock_timeout` (seconds; arguments
/// win). The same directory layout as the CLI.
#[pyclass(frozen, module = "mlir_cache_key")]
struct Cache {
    /// `None` when the settings turn the cache off (`--no_cache`). Shared with the worker
    /// that stores what a compile produced.
    tiered: Option<Arc<Tiered>>,
    settings: mck_store::Settings,
    lock_timeout: Duration,
    /// The XLA build this process runs, once `set_xla_build` named it (`xla_build.rs`).
    xla_build: std::sync::OnceLock<String>,
    /// How many of its library files naming it read (`xla_build_files_read`).
    xla_build_files_read: std::sync::atomic::AtomicUsize,
    /// Misses being counted and explained and entries being stored, off the compile's path.
    background: Arc<background::Background>,
    /// The records of the misses explained lately, to explain the next ones against.
    recent: Arc<recent_records::RecentRecords>,
}

/// A size: a byte count (int) or a string such as "10G".
fn size_text(size: &Bound<'_, PyAny>) -> PyResult<String> {
    match size.extract::<u64>() {
        Ok(n) => Ok(n.to_string()),
        Err(_) => size.extract::<String>(),
    }
}

/// A number of days or seconds (int or float) or a string.
fn number_text(days: &Bound<'_, PyAny>) -> PyResult<String> {
    match days.extract::<f64>() {
        Ok(days) => Ok(days.to_string()),
        Err(_) => days.extract::<String>(),
    }
}

/// Sets `name` in `layer` through the settings table; a bad value is a ValueError saying
/// what was expected.
fn set_setting(layer: &mut Layer, name: &str, text: &str) -> PyResult<()> {
    layer
        .set("arguments", name, text)
        .map_err(|e| PyValueError::new_err(e.message))
}

impl Cache {
    /// Where the store keeps `key` (JAX's, or canonical mode's): the key itself, or once the
    /// process's XLA build is named, that build's own place for it (`xla_build.rs`).
    fn stored_key(&self, key: &str) -> PyResult<CacheKey> {
        let key = parse_key(key)?;
        match self.xla_build.get() {
            Some(build) => xla_build::stored_key(&key, build).map_err(store_error),
            None => Ok(key),
        }
    }

    /// The ingredients an entry keeps: the key's `record`, and this process's XLA build.
    fn ingredients(&self, record: Option<&RecordArg>) -> PyResult<EntryIngredients> {
        let record = match record {
            Some(record) => record.ingredients()?,
            None => Ingredients::Parsed(Value::Null),
        };
        Ok(EntryIngredients {
            record,
            xla_build: self.xla_build.get().cloned(),
        })
    }
}

#[pymethods]
impl Cache {
    #[new]
    #[pyo3(signature = (cache_dir = None, size = None, ttl_days = None, remote = None,
                        remote_read_only = None, lock_timeout = None))]
    fn new(
        py: Python<'_>,
        cache_dir: Option<PathBuf>,
        size: Option<&Bound<'_, PyAny>>,
        ttl_days: Option<&Bound<'_, PyAny>>,
        remote: Option<&Bound<'_, PyAny>>,
        remote_read_only: Option<bool>,
        lock_timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut overrides = Layer::default();
        if let Some(dir) = cache_dir {
            let dir = dir
                .to_str()
                .ok_or_else(|| PyValueError::new_err("cache_dir is not valid UTF-8"))?;
            set_setting(&mut overrides, "cache_dir", dir)?;
        }
        if let Some(size) = size {
            set_setting(&mut overrides, "cache_size", &size_text(size)?)?;
        }
        if let Some(ttl) = ttl_days {
            set_setting(&mut overrides, "cache_ttl", &number_text(ttl)?)?;
        }
        for url in remote
            .map(remote_chain::remote_urls)
            .transpose()?
            .unwrap_or_default()
        {
            set_setting(&mut overrides, "remote", &url)?;
        }
        if let Some(on) = remote_read_only {
            set_setting(&mut overrides, "remote_read_only", &on.to_string())?;
        }
        if let Some(wait) = lock_timeout {
            set_setting(&mut overrides, "lock_timeout", &number_text(wait)?)?;
        }
        let mut all = Settings::from_env_and(&overrides).map_err(settings_error)?;
        // As JAX's own cache: entries are not fsynced. A rename publishes each whole or not at
        // all whatever kills the process; what a power loss may tear, the entry's checksums
        // catch on read (a miss, compiled again), so a sync buys no correctness, only ~ms a miss.
        all.store.fsync = false;
        let lock_timeout = all.lock_timeout;
        // Opened with the run records' pins: a put may evict, and must spare what they reference.
        let tiered = py
            .detach(|| mck_runs::open_cache(&all, mck_runs::Purpose::Compile))
            .map_err(runs_error)?
            .map(Arc::new);
        let background = Arc::new(background::Background::default());
        if let Some(tiered) = &tiered {
            // A miss is counted on the worker, as a prefetched hit is: the lookup only reads.
            // `settle()` (and so `stats()`, `report()`) waits for the counts.
            let store = Arc::downgrade(&tiered.local_shared());
            let worker = Arc::clone(&background);
            tiered.local().count_misses_later(Box::new(move |count| {
                let store = store.clone();
                worker.submit(move || {
                    if let Some(store) = store.upgrade() {
                        count(&store)
                    }
                })
            }));
        }
        Ok(Cache {
            tiered,
            settings: all.store,
            lock_timeout,
            xla_build: std::sync::OnceLock::new(),
            xla_build_files_read: std::sync::atomic::AtomicUsize::new(0),
            background,
            recent: Arc::default(),
        })
    }

    /// The cache directory.
    #[getter]
    fn path(&self) -> String {
        self.settings.cache_dir.display().to_string()
    }

    /// False when `MLIR_CACHE_KEY_FLAGS` says `--no_cache`.
    #[getter]
    fn enabled(&self) -> bool {
        self.tiered.is_some()
    }

    /// Names the XLA build this process runs: `libraries` are its shared library files, each
    /// as (name relative to the site directory, path). From then on each build's entries are
    /// kept apart (`xla_build.rs`). Returns the build, `sha256:…`; a second call returns the
    /// first's. Raises OSError when a file cannot be read.
    fn set_xla_build(&self, py: Python<'_>, libraries: Vec<(String, PathBuf)>) -> PyResult<String> {
        if let Some(build) = self.xla_build.get() {
            return Ok(build.clone());
        }
        let base = self.tiered.as_ref().map(|t| t.local().layout().base());
        let (build, read) = py
            .detach(|| {
                let own = base.map(mck_cli::inode_cache::InodeCache::in_cache);
                let user = xla_build::user_inode_cache(base);
                let remembered: Vec<_> = own.iter().chain(user.iter()).collect();
                xla_build::digest(&libraries, &remembered)
            })
            .map_err(|e| PyOSError::new_err(format!("cannot identify the XLA build: {e}")))?;
        self.xla_build_files_read
            .store(read, std::sync::atomic::Ordering::Relaxed);
        Ok(self.xla_build.get_or_init(|| build).clone())
    }

    /// How many library files `set_xla_build` read and hashed (the others' digests were
    /// remembered by file identity).
    #[getter]
    fn xla_build_files_read(&self) -> usize {
        self.xla_build_files_read
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The XLA build named by `set_xla_build`, or None.
    #[getter]
    fn xla_build(&self) -> Option<String> {
        self.xla_build.get().cloned()
    }

    /// Waits for the misses being explained and the entries being stored on the cache's worker,
    /// and for the local copies of earlier remote hits (written beside the caller, so a hit
    /// returns as soon as it is verified); `mlir_cache_key.jax.install()` calls it at exit and
    /// before a fork.
    fn settle(&self, py: Python<'_>) {
        py.detach(|| self.background.settle());
        if let Some(tiered) = &self.tiered {
            py.detach(|| tiered.settle());
        }
    }

    /// Before a fork: `settle`, then close the compile lock files made ahead, so that no
    /// child holds a copy of one (and its lock) that this process links in later.
    fn before_fork(&self, py: Python<'_>) {
        self.settle(py);
        if let Some(tiered) = &self.tiered {
            tiered.local().drop_spare_locks();
        }
    }

    /// The stored artefact, or None (a miss, or a remembered failure). A hit from a remote
    /// tier is copied into the local cache beside the caller (see `settle`).
    fn get<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let key = self.stored_key(key)?;
        let Some(tiered) = &self.tiered else {
            return Ok(None);
        };
        let found = py.detach(|| {
            self.background.settle_store(&key.to_string());
            tiered.get(&key)
        });
        match found.map_err(store_error)? {
            Lookup::Hit(artefact) => Ok(Some(PyBytes::new(py, &artefact.bytes))),
            Lookup::Failed(_) | Lookup::Miss => Ok(None),
        }
    }

    /// The locally stored value of `key`, read ahead of a lookup that may never come (a
    /// prefetch): verified as `get` is, but counted nowhere until `count_hit(key)`.
    fn peek<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let key = self.stored_key(key)?;
        let Some(tiered) = &self.tiered else {
            return Ok(None);
        };
        match py
            .detach(|| {
                self.background.settle_store(&key.to_string());
                tiered.local().peek(&key)
            })
            .map_err(store_error)?
        {
            Lookup::Hit(artefact) => Ok(Some(PyBytes::new(py, &artefact.bytes))),
            Lookup::Failed(_) | Lookup::Miss => Ok(None),
        }
    }

    /// Counts a hit of the value `peek(key)` read, now used (its use time, `stats()`, the
    /// history), on the thread that explains misses: the lookup does not wait for it, and
    /// `settle()` does.
    fn count_hit(&self, py: Python<'_>, key: &str) -> PyResult<()> {
        let key = self.stored_key(key)?;
        let Some(tiered) = &self.tiered else {
            return Ok(());
        };
        let store = tiered.local_shared();
        py.detach(|| {
            self.background.submit(move || {
                // Statistics are best effort: an unusable index never fails a lookup.
                let _ = store.count_hit(&key);
            })
        });
        Ok(())
    }

    /// Stores `value` under `key`, with the key's `record` (JSON, or the handle
    /// `key_from_parts` made) to explain later misses.
    #[pyo3(signature = (key, value, record = None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &str,
        value: &[u8],
        record: Option<RecordArg>,
    ) -> PyResult<()> {
        let key = self.stored_key(key)?;
        let ingredients = self.ingredients(record.as_ref())?;
        if let Some(tiered) = &self.tiered {
            py.detach(|| {
                // After any store of the key still queued: the last put wins.
                self.background.settle_store(&key.to_string());
                tiered.put(&key, value, &ingredients.into_value())
            })
            .map_err(store_error)?;
        }
        Ok(())
    }

    /// The stored value of `key`, or `compile_fn()`'s, run by one process at
    /// a time per key: others wait (up to `lock_timeout`) and get what it
    /// stored. `compile_fn` returns bytes (stored), or None (nothing stored;
    /// None is returned); its exception propagates and nothing is stored.
    /// `verify_rate` (0 to 1) is the share of hits audited: `compile_fn` runs
    /// again and a false hit serves its bytes and stops serving the entry.
    /// `looked_up`: the caller's own `get(key)` just missed (JAX's read), so the
    /// miss is not looked up and counted twice; the store still looks again
    /// under the lock, uncounted. `store_later`: what `compile_fn` returned is
    /// stored on the cache's worker, after this returns; the key stays claimed
    /// until it is (other processes wait for the entry, as this one's lookups
    /// of the key do), and `settle()` waits for every such store: a process
    /// that ends without it (`os._exit`) loses them. With `store_later`,
    /// `compile_fn` may return a function instead of bytes: the worker calls it
    /// for the bytes (or None: nothing stored) when the interpreter is free,
    /// during this process's next `compile_once` compile, a `settle`, or within
    /// `VALUE_PATIENCE`; None is returned here.
    #[pyo3(signature = (key, compile_fn, record = None, verify_rate = 0.0, looked_up = false,
                        store_later = false))]
    #[allow(clippy::too_many_arguments)]
    fn compile_once<'py>(
        slf: &Bound<'py, Self>,
        key: &str,
        compile_fn: Py<PyAny>,
        record: Option<RecordArg>,
        verify_rate: f64,
        looked_up: bool,
        store_later: bool,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let py = slf.py();
        let this = slf.get();
        let verify_rate = audit::check_rate(verify_rate, "verify_rate")?;
        let key = this.stored_key(key)?;
        let ingredients = this.ingredients(record.as_ref())?;
        let Some(tiered) = &this.tiered else {
            let value = compile_fn.call0(py)?.into_bound(py);
            // No cache: a value to be made later is never made.
            return if value.is_none() || (store_later && value.is_callable()) {
                Ok(None)
            } else {
                Ok(Some(value.cast_into::<PyBytes>()?))
            };
        };
        // The compile's own bytes object, returned as it is (no copy back).
        let mut returned: Option<Py<PyBytes>> = None;
        // Or the function that makes them, called on the worker.
        let mut value_later: Option<Py<PyAny>> = None;
        let attempt = py.detach(|| {
            let compile = || {
                this.background.while_compiling(|| {
                    Python::attach(|py| {
                        let value = compile_fn.call0(py).map_err(CompileError::Python)?;
                        if value.is_none(py) {
                            return Ok(Compiled::Abandoned(format!(
                                "the compile function for {key} returned None"
                            )));
                        }
                        if store_later && value.bind(py).is_callable() {
                            value_later = Some(value);
                            // A stand-in: the worker stores what `value_later` returns.
                            return Ok(Compiled::Success(Vec::new()));
                        }
                        let bytes: Vec<u8> = value.extract(py).map_err(CompileError::Python)?;
                        returned = value
                            .cast_bound::<PyBytes>(py)
                            .ok()
                            .map(|b| b.clone().unbind());
                        Ok(Compiled::Success(bytes))
                    })
                })
            };
            match looked_up {
                true => tiered.compile_unstored(&key, this.lock_timeout, compile),
                false => {
                    this.background.settle_store(&key.to_string());
                    tiered.compile_once_unstored(&key, this.lock_timeout, compile)
                }
            }
        });
        let served = match attempt {
            Ok(Attempt::Served(served)) => served,
            Ok(Attempt::Compiled(compiled, unstored)) => {
                let out = match (&compiled, returned) {
                    _ if value_later.is_some() => None,
                    (Compiled::Success(_), Some(own)) => Some(own.into_bound(py)),
                    (Compiled::Success(bytes), None) => Some(PyBytes::new(py, bytes)),
                    _ => None,
                };
                let tiered = Arc::clone(tiered);
                let gate = this.background.gate();
                let stored_key = key.to_string();
                let store = move || {
                    let compiled = match value_later {
                        Some(make) => {
                            gate.wait(VALUE_PATIENCE);
                            value_made_later(make, &stored_key)
                        }
                        None => compiled,
                    };
                    tiered.store_compiled(unstored, &compiled, &ingredients.into_value());
                    // Lock files and shards for the next misses, made here, off their compiling threads.
                    if store_later {
                        tiered.local().make_locks_ahead();
                    }
                };
                // Later: on the worker, the claim held until it is stored, so the caller goes
                // on now; other processes wait for the entry, and this one's lookups of the key.
                py.detach(|| match store_later {
                    true => this.background.submit_store(key.to_string(), store),
                    false => store(),
                });
                return Ok(out);
            }
            Err(CompileError::Store(e)) => return Err(store_error(e)),
            Err(CompileError::Python(e)) => return Err(e),
        };
        match served {
            Served::Cached(artefact) if verify_rate > 0.0 => Ok(Some(audit::audit_hit(
                slf.as_any(),
                &key.to_string(),
                &artefact.bytes,
                &compile_fn,
                verify_rate,
            )?)),
            Served::Cached(artefact) => Ok(Some(PyBytes::new(py, &artefact.bytes))),
            _ => Ok(None),
        }
    }

    /// Stops serving the entry under `key` (an audit found a false hit): it
    /// stays on disk, reads as a miss, and `reason` is shown by `cache show`.
    fn mark_suspect(&self, py: Python<'_>, key: &str, reason: &str) -> PyResult<()> {
        let key = self.stored_key(key)?;
        let Some(tiered) = &self.tiered else {
            return Ok(());
        };
        py.detach(|| {
            self.background.settle_store(&key.to_string());
            tiered.local().mark_suspect(&key, reason)
        })
        .map_err(store_error)
    }

    /// Counts one hit audit in `cache stats`: an outcome named as in `AUDIT_OUTCOMES`.
    fn record_audit(&self, py: Python<'_>, outcome: &str) -> PyResult<()> {
        let outcome = audit::parse_outcome(outcome)?;
        if let Some(tiered) = &self.tiered {
            py.detach(|| tiered.local().record_audit(outcome));
        }
        Ok(())
    }

    /// The record stored with the most recently used other entry of the same
    /// module as `key`, to explain a miss of `key`; None when there is none.
    fn nearest_record(&self, py: Python<'_>, key: &str) -> PyResult<Option<String>> {
        let key = self.stored_key(key)?;
        let Some(tiered) = &self.tiered else {
            return Ok(None);
        };
        let store = tiered.local();
        let filter = ListFilter {
            limit: Some(2),
            ..ListFilter::module(key.name())
        };
        py.detach(|| {
            self.background.settle();
            for entry in store.list(&filter)? {
                if entry.digest == key.digest().as_str() {
                    continue;
                }
                let Some(meta) = store.read_metadata(&Digest::parse(&entry.digest)?)? else {
                    continue;
                };
                if meta.ingredients.is_null() {
                    continue;
                }
                return Ok(Some(meta.ingredients.to_string()));
            }
            Ok(None)
        })
        .map_err(store_error)
    }

    /// Explains the miss of `key` (whose key record, JSON or handle, is `record`) against the nearest
    /// stored entry of its module, as `exec` does: counted by reason in `stats()`, and left in
    /// the lookup history with its cause for `report()`. Returns the explanation (or the
    /// cause in one line when there was nothing to compare), None when it cannot be told. With
    /// `wait=False` it is explained on a thread (nobody is waiting to read it: the compile goes
    /// on) and None is returned; `settle()` waits for those.
    #[pyo3(signature = (key, record, wait = true))]
    fn explain_miss(
        &self,
        py: Python<'_>,
        key: &str,
        record: RecordArg,
        wait: bool,
    ) -> PyResult<Option<String>> {
        let key = self.stored_key(key)?;
        let record = record.record("record")?;
        let build = self.xla_build.get().cloned();
        let Some(tiered) = &self.tiered else {
            return Ok(None);
        };
        // The record is copied (to name the build) where it is explained, off the caller's path.
        let recent = Arc::clone(&self.recent);
        let explain = move |store: &mck_store::Store| {
            let mut record = Arc::unwrap_or_clone(record);
            record.xla_build = build;
            let cause = mck_exec::explain::explain_miss_recalling(store, &key, &record, |d| {
                recent.recall(d)
            });
            // What this miss's entry will hold, once its compile has stored it.
            recent.remember(key.digest().as_str(), Arc::new(record));
            cause
        };
        if !wait {
            let store = tiered.local_shared();
            py.detach(|| {
                self.background.submit(move || {
                    explain(&store);
                })
            });
            return Ok(None);
        }
        // Against every entry this process stored before.
        let cause = py.detach(|| {
            self.background.settle();
            explain(tiered.local())
        });
        Ok(cause.map(|c| c.explanation.unwrap_or(c.detail)))
    }

    /// Why this cache recompiled: the report `mlir-cache-key report --json` gives, as a dict,
    /// over the lookup history from `since` ago (`7d`, `12h`, `90min` or `all`) to now, merged
    /// with the histories of the cache directories `caches` (other hosts'); `html` also writes
    /// it as a self-contained page to that file.
    #[pyo3(signature = (since = "7d", caches = Vec::new(), html = None))]
    fn report(
        &self,
        py: Python<'_>,
        since: &str,
        caches: Vec<PathBuf>,
        html: Option<PathBuf>,
    ) -> PyResult<Py<PyAny>> {
        let since = mck_cli::manage::report::parse_since(since)
            .map_err(|e| value_error(format!("since: {e}")))?;
        self.settle(py);
        let report = py
            .detach(|| {
                let report = mck_cli::manage::report::report_of(&self.settings, caches, since)?;
                if let Some(path) = &html {
                    mck_cli::manage::report::write_html(&report, path)?;
                }
                Ok::<_, mck_cli::error::CliError>(report)
            })
            .map_err(|e| PyOSError::new_err(format!("{:#}", e.error)))?;
        to_python(py, &report)
    }

    /// Counters and sizes, as `mlir-cache-key cache stats --json` gives them.
    fn stats(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let Some(tiered) = &self.tiered else {
            return to_python(py, &serde_json::json!({ "enabled": false }));
        };
        // Misses being explained and copies of remote hits still being written are part of
        // what is reported.
        self.settle(py);
        let stats = py.detach(|| tiered.stats()).map_err(store_error)?;
        to_python(py, &stats)
    }

    fn __repr__(&self) -> String {
        format!("mlir_cache_key.Cache({:?})", self.settings.cache_dir)
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(key_from_parts, m)?)?;
    m.add_function(wrap_pyfunction!(why, m)?)?;
    m.add_function(wrap_pyfunction!(record_with_text, m)?)?;
    m.add_function(wrap_pyfunction!(strip_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(prefetch::last_run_keys, m)?)?;
    m.add_function(wrap_pyfunction!(prefetch::record_run_keys, m)?)?;
    m.add_function(wrap_pyfunction!(prefetch::record_prefetch, m)?)?;
    m.add_class::<Cache>()?;
    m.add_class::<key_record::KeyRecordHandle>()?;
    audit::register(m)?;
    cli::register(m)?;
    Ok(())
}
