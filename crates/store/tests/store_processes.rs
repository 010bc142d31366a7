//! The store under real concurrency: separate processes racing on one key, a lock holder killed
//! with SIGKILL, and writers killed at random instants.
//!
//! The worker processes are this test binary itself, re-executed with `STORE_TEST_WORKER` set:
//! `worker_entry` then runs one worker mode and exits. That keeps the product free of test-only
//! binaries while still exercising separate processes (separate SQLite connections, separate
//! flock owners, real kills).

use std::fs::{self, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{self, files_under, key, payload};
use mck_remote::{Compiled, Served};
use mck_settings::{Layer, Settings};
use mck_store::{CacheKey, CompileLock, Failure, Lookup, ManualClock, Store};
use rand::Rng;
use serde_json::json;
use sha2::{Digest as _, Sha256};

const WORKER: &str = "STORE_TEST_WORKER";

/// The name libtest gives `worker_entry` (its path below the test crate's root), for `--exact`.
fn worker_test() -> String {
    match module_path!().split_once("::") {
        Some((_crate, module)) => format!("{module}::worker_entry"),
        None => "worker_entry".to_owned(),
    }
}

/// Entry point of the worker processes; a no-op in a normal test run.
#[test]
fn worker_entry() {
    let Ok(mode) = std::env::var(WORKER) else {
        return;
    };
    // The log level comes from MLIR_CACHE_KEY_FLAGS, as the CLI will do it.
    let level = Settings::from_env_and(&Layer::default())
        .map(|s| s.log_level.as_tracing())
        .unwrap_or(tracing::Level::WARN);
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_ansi(false)
        .init();
    let code = match run_worker(&mode) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("worker {mode} failed: {e}");
            1
        }
    };
    std::process::exit(code);
}

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("{name} is not set"))
}

/// The store as a real tool opens it: settings from `MLIR_CACHE_KEY_FLAGS`.
fn worker_store() -> Result<Store, String> {
    let settings = Settings::from_env_and(&Layer::default()).map_err(|e| e.to_string())?;
    Store::open(&settings.store).map_err(|e| e.to_string())
}

/// Prints a result line. libtest has already written "test worker_entry ... " without a newline,
/// so our lines carry a tag and start on a fresh line.
const TAG: &str = "@@ ";

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "\n{TAG}{line}");
    let _ = out.flush();
}

fn run_worker(mode: &str) -> Result<(), String> {
    match mode {
        "compile-once" => compile_once(),
        "hold-lock" => {
            let store = worker_store()?;
            let k = CacheKey::parse(&env("STORE_TEST_KEY")?).map_err(|e| e.to_string())?;
            match store
                .lock_for_compile(&k, Duration::from_secs(30))
                .map_err(|e| e.to_string())?
            {
                CompileLock::Acquired(_guard) => {
                    say("LOCKED");
                    thread::sleep(Duration::from_secs(120));
                    Ok(())
                }
                CompileLock::TimedOut { .. } => Err("holder timed out".into()),
            }
        }
        "wait-lock" => {
            let store = worker_store()?;
            let k = CacheKey::parse(&env("STORE_TEST_KEY")?).map_err(|e| e.to_string())?;
            let ms: u64 = env("STORE_TEST_TIMEOUT_MS")?
                .parse()
                .map_err(|_| "bad timeout")?;
            say("WAITING");
            let t = Instant::now();
            match store
                .lock_for_compile(&k, Duration::from_millis(ms))
                .map_err(|e| e.to_string())?
            {
                CompileLock::Acquired(_g) => say(&format!("ACQUIRED {}", t.elapsed().as_millis())),
                CompileLock::TimedOut { waited } => {
                    say(&format!("TIMEDOUT {}", waited.as_millis()))
                }
            }
            Ok(())
        }
        "open-put-once" => {
            let store = worker_store()?;
            let k = CacheKey::parse(&env("STORE_TEST_KEY")?).map_err(|e| e.to_string())?;
            store.put(&k, b"x", &json!({})).map_err(|e| e.to_string())?;
            match store.get(&k).map_err(|e| e.to_string())? {
                Lookup::Hit(_) => Ok(()),
                other => Err(format!("read back {other:?}")),
            }
        }
        "crash-writer" => crash_writer(),
        "crash-reader" => crash_reader(),
        other => Err(format!("unknown worker mode {other}")),
    }
}

fn spawn(mode: &str, cache_dir: &Path, extra: &[(&str, String)]) -> Child {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", &worker_test(), "--nocapture", "--test-threads=1"])
        .env(WORKER, mode)
        .env(
            "MLIR_CACHE_KEY_FLAGS",
            format!("--cache_dir='{}' --log_level=INFO", cache_dir.display()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.spawn().expect("spawn worker")
}

/// The tagged output lines of a finished worker (ours, not libtest's), its success, its stderr.
fn finish(child: Child) -> (bool, Vec<String>, String) {
    let out = child.wait_with_output().expect("wait for worker");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines = stdout
        .lines()
        .filter_map(|l| l.strip_prefix(TAG))
        .map(str::to_owned)
        .collect();
    (
        out.status.success(),
        lines,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

// ---------------------------------------------------------------------------------------------
// 8 processes, one key, one compile.

fn compile_payload(k: &CacheKey) -> Vec<u8> {
    let seed = u64::from_le_bytes(
        Sha256::digest(k.to_string())[..8]
            .try_into()
            .unwrap_or([0; 8]),
    );
    payload(seed, 300_000)
}

fn compile_once() -> Result<(), String> {
    let store = worker_store()?;
    let k = CacheKey::parse(&env("STORE_TEST_KEY")?).map_err(|e| e.to_string())?;
    let marker = PathBuf::from(env("STORE_TEST_MARKER")?);
    let go = PathBuf::from(env("STORE_TEST_GO")?);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !go.exists() {
        if Instant::now() > deadline {
            return Err("no go signal".into());
        }
        thread::sleep(Duration::from_millis(1));
    }
    let report = |bytes: &[u8], how: &str| {
        say(&format!(
            "RESULT {} {how}",
            hex::encode(Sha256::digest(bytes))
        ));
    };
    let compile = || -> Result<Vec<u8>, String> {
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&marker)
            .map_err(|e| e.to_string())?;
        writeln!(f, "compiled by {}", std::process::id()).map_err(|e| e.to_string())?;
        thread::sleep(Duration::from_millis(400)); // the "compiler" is slow
        Ok(compile_payload(&k))
    };
    if env("STORE_TEST_API")? == "compile_once" {
        let tiered = mck_remote::Tiered::local_only(store);
        let got = tiered
            .compile_once(
                &k,
                &json!({"compiler": "fake"}),
                Duration::from_secs(60),
                || -> Result<Compiled, mck_store::StoreError> {
                    Ok(match compile() {
                        Ok(bytes) => Compiled::Success(bytes),
                        Err(e) => Compiled::Failed(Failure {
                            exit_status: None,
                            stderr: e,
                        }),
                    })
                },
            )
            .map_err(|e| e.to_string())?;
        match got {
            Served::Cached(a) => report(&a.bytes, "hit"),
            Served::Fresh(Compiled::Success(bytes)) => report(&bytes, "compiled"),
            other => return Err(format!("unexpected {other:?}")),
        }
        return Ok(());
    }
    if let Lookup::Hit(a) = store.get(&k).map_err(|e| e.to_string())? {
        report(&a.bytes, "hit");
        return Ok(());
    }
    match store
        .lock_for_compile(&k, Duration::from_secs(60))
        .map_err(|e| e.to_string())?
    {
        CompileLock::Acquired(guard) => {
            // Someone may have compiled it while we waited.
            if let Lookup::Hit(a) = store.get(&k).map_err(|e| e.to_string())? {
                report(&a.bytes, "hit-after-lock");
                return Ok(());
            }
            let bytes = compile()?;
            store
                .put(&k, &bytes, &json!({"compiler": "fake"}))
                .map_err(|e| e.to_string())?;
            drop(guard);
            report(&bytes, "compiled");
            Ok(())
        }
        CompileLock::TimedOut { .. } => Err("timed out".into()),
    }
}

#[test]
fn eight_processes_compile_a_key_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let k = key("jit_race", "race");
    let marker = dir.path().join("marker");
    let go = dir.path().join("go");
    let extra = [
        ("STORE_TEST_KEY", k.to_string()),
        ("STORE_TEST_MARKER", marker.display().to_string()),
        ("STORE_TEST_GO", go.display().to_string()),
    ];
    // Half use the raw API (get, lock, get, compile, put), half `compile_once`.
    let children: Vec<Child> = (0..8)
        .map(|i| {
            let api = if i % 2 == 0 { "raw" } else { "compile_once" };
            let mut env = extra.to_vec();
            env.push(("STORE_TEST_API", api.to_owned()));
            spawn("compile-once", &cache, &env)
        })
        .collect();
    thread::sleep(Duration::from_millis(300)); // let them all start and open the store
    fs::write(&go, b"").unwrap();
    let mut results = Vec::new();
    let mut blocked = 0;
    for child in children {
        let (ok, lines, stderr) = finish(child);
        assert!(ok, "worker failed:\n{lines:?}\n{stderr}");
        if stderr.contains("Blocking waiting for the compile lock on jit_race-") {
            blocked += 1;
        }
        results.extend(lines.into_iter().filter(|l| l.starts_with("RESULT ")));
    }
    let compiles = fs::read_to_string(&marker).unwrap();
    assert_eq!(
        compiles.lines().count(),
        1,
        "compiled more than once:\n{compiles}"
    );
    assert_eq!(results.len(), 8, "{results:?}");
    let want = hex::encode(Sha256::digest(compile_payload(&k)));
    for r in &results {
        assert_eq!(r.split(' ').nth(1), Some(want.as_str()), "{results:?}");
    }
    assert_eq!(
        results.iter().filter(|r| r.ends_with(" compiled")).count(),
        1
    );
    assert!(
        blocked >= 1,
        "at least one process should have waited on the lock"
    );
    assert!(
        files_under(&cache.join("v1/locks")).is_empty(),
        "lock files are cleaned up"
    );
}

// ---------------------------------------------------------------------------------------------
// Processes creating one cache at the same moment (index creation races).

#[test]
fn processes_opening_a_new_cache_at_once_all_succeed() {
    let rounds: usize = env_or("STORE_OPEN_ROUNDS", 15);
    for round in 0..rounds {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let children: Vec<Child> = (0..6)
            .map(|i| {
                let k = key(&format!("open{i}"), &format!("open{round}-{i}"));
                spawn(
                    "open-put-once",
                    &cache,
                    &[("STORE_TEST_KEY", k.to_string())],
                )
            })
            .collect();
        for child in children {
            let (ok, lines, stderr) = finish(child);
            assert!(ok, "round {round}: a process failed:\n{lines:?}\n{stderr}");
        }
        let store = Store::open(&common::settings(&cache)).unwrap();
        assert_eq!(store.stats().unwrap().entries, 6, "round {round}");
    }
}

// ---------------------------------------------------------------------------------------------
// A killed holder.

fn wait_for_line(child: &mut Child, want: &str) {
    let stdout = child.stdout.take().expect("piped stdout");
    let mut reader = BufReader::new(stdout);
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).expect("read worker stdout");
        assert!(n > 0, "worker ended before saying {want}");
        if line.trim_end().strip_prefix(TAG) == Some(want) {
            // Keep draining in the background so the worker never blocks on a full pipe.
            thread::spawn(move || {
                let mut sink = String::new();
                while reader.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
                    sink.clear();
                }
            });
            return;
        }
    }
}

/// Reads `child`'s tagged output lines on a thread; returns once it has said `want`, with a
/// handle to every line it said (`want` among them) when it ends.
fn said_so_far(child: &mut Child, want: &str) -> thread::JoinHandle<Vec<String>> {
    let stdout = child.stdout.take().expect("piped stdout");
    let (said, heard) = std::sync::mpsc::channel();
    let want = want.to_owned();
    let lines = thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(line) = line.strip_prefix(TAG) {
                if line == want {
                    let _ = said.send(());
                }
                lines.push(line.to_owned());
            }
        }
        lines
    });
    heard.recv().expect("the worker ended before saying it");
    lines
}

/// `$NAME` parsed, or `default` when it is unset or does not parse.
fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    let parsed = std::env::var(name).ok().and_then(|v| v.parse().ok());
    parsed.unwrap_or(default)
}

/// In a fresh cache: a process holding the compile lock of key `name`/`seed`, and then one
/// waiting for it up to `timeout_ms`.
fn a_lock_holder_and_waiter(
    name: &str,
    seed: &str,
    timeout_ms: &str,
) -> (tempfile::TempDir, CacheKey, Child, Child) {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let k = key(name, seed);
    let mut holder = spawn("hold-lock", &cache, &[("STORE_TEST_KEY", k.to_string())]);
    wait_for_line(&mut holder, "LOCKED");
    let timeout = ("STORE_TEST_TIMEOUT_MS", timeout_ms.to_owned());
    let waiter = spawn(
        "wait-lock",
        &cache,
        &[("STORE_TEST_KEY", k.to_string()), timeout],
    );
    (dir, k, holder, waiter)
}

#[test]
fn a_holder_killed_with_sigkill_releases_the_lock() {
    let (_dir, k, mut holder, mut waiter) = a_lock_holder_and_waiter("jit_kill", "kill", "30000");
    // The waiter has opened the store and is about to wait (however loaded the machine).
    let said = said_so_far(&mut waiter, "WAITING");
    thread::sleep(Duration::from_millis(300));
    let killed_at = Instant::now();
    holder.kill().unwrap(); // SIGKILL
    holder.wait().unwrap();
    let (ok, _, stderr) = finish(waiter);
    let lines = said.join().unwrap();
    let after_kill = killed_at.elapsed();
    assert!(ok, "{lines:?}\n{stderr}");
    assert!(
        lines.iter().any(|l| l.starts_with("ACQUIRED")),
        "{lines:?}\n{stderr}"
    );
    assert!(
        after_kill < Duration::from_secs(3),
        "waiter took {after_kill:?} after the holder died"
    );
    let holder_pid = holder.id();
    assert!(
        stderr.contains(&format!(
            "Blocking waiting for the compile lock on {k} (held by pid {holder_pid})"
        )),
        "{stderr}"
    );
}

#[test]
fn a_hung_holder_makes_waiters_time_out() {
    let t = Instant::now();
    let (_dir, _, mut holder, waiter) = a_lock_holder_and_waiter("jit_hung", "hung", "400");
    let (ok, lines, stderr) = finish(waiter);
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(ok, "{stderr}");
    let waited: u64 = lines
        .iter()
        .find_map(|l| l.strip_prefix("TIMEDOUT "))
        .unwrap_or_else(|| panic!("{lines:?}\n{stderr}"))
        .parse()
        .unwrap();
    assert!(waited >= 400, "{waited}");
    assert!(t.elapsed() < Duration::from_secs(10));
}

// ---------------------------------------------------------------------------------------------
// Writers killed at random instants.

const CRASH_KEYS: u64 = 24;

fn crash_key(i: u64) -> CacheKey {
    key(&format!("crash_{i}"), &format!("crash{i}"))
}

/// Key i's artefact: deterministic bytes, sizes from 0 to ~1 MiB.
fn crash_payload(i: u64) -> Vec<u8> {
    let len = match i % 4 {
        0 => 1_000_000 + (i as usize) * 977,
        1 => 0,
        _ => (i as usize) * 12_345,
    };
    payload(i + 1, len)
}

fn crash_failure(i: u64) -> Failure {
    Failure {
        exit_status: Some(i32::try_from(i).unwrap_or(1)),
        stderr: format!("error in crash_{i}\n").repeat(50),
    }
}

/// Keys with i % 6 == 5 are remembered failures; the rest artefacts.
fn is_failure_key(i: u64) -> bool {
    i % 6 == 5
}

fn crash_writer() -> Result<(), String> {
    let store = worker_store()?;
    let mut rng = rand::thread_rng();
    loop {
        let i = rng.gen_range(0..CRASH_KEYS);
        let k = crash_key(i);
        let ingredients = json!({"i": i});
        if is_failure_key(i) {
            store
                .put_failure(&k, &crash_failure(i), &ingredients)
                .map_err(|e| e.to_string())?;
        } else {
            store
                .put(&k, &crash_payload(i), &ingredients)
                .map_err(|e| e.to_string())?;
        }
        if rng.gen_bool(0.3) {
            check_one(&store, i)?;
        }
    }
}

/// Reads key i; any hit must be exactly what was written.
fn check_one(store: &Store, i: u64) -> Result<bool, String> {
    match store.get(&crash_key(i)).map_err(|e| e.to_string())? {
        Lookup::Hit(a) => {
            if is_failure_key(i) || a.bytes != crash_payload(i) {
                return Err(format!("BAD artefact for key {i}: {} bytes", a.bytes.len()));
            }
            Ok(true)
        }
        Lookup::Failed(f) => {
            if !is_failure_key(i) || f.failure != crash_failure(i) {
                return Err(format!("BAD failure for key {i}"));
            }
            Ok(true)
        }
        Lookup::Miss => Ok(false),
    }
}

fn crash_reader() -> Result<(), String> {
    let store = worker_store()?;
    let stop = PathBuf::from(env("STORE_TEST_STOP")?);
    let (mut reads, mut found) = (0u64, 0u64);
    while !stop.exists() {
        for i in 0..CRASH_KEYS {
            reads += 1;
            if check_one(&store, i)? {
                found += 1;
            }
        }
    }
    say(&format!("READER reads={reads} found={found}"));
    Ok(())
}

#[test]
fn writers_killed_at_random_instants_never_leave_a_wrong_entry() {
    let iterations: u64 = env_or("STORE_KILL_ITERATIONS", 200);
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    // A small cap and no TTL so eviction runs (and gets killed) all the time; fsync on, as in
    // production. Workers read these settings from MLIR_CACHE_KEY_FLAGS.
    let spawn_with_cap = |mode: &str| -> Child {
        let exe = std::env::current_exe().expect("test binary");
        Command::new(exe)
            .args(["--exact", &worker_test(), "--nocapture", "--test-threads=1"])
            .env(WORKER, mode)
            .env(
                "MLIR_CACHE_KEY_FLAGS",
                format!(
                    "--cache_dir='{}' --cache_size=6M --cache_ttl=0",
                    cache.display()
                ),
            )
            .env("STORE_TEST_STOP", dir.path().join("stop"))
            .stdin(Stdio::null())
            .stdout(if mode == "crash-reader" {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn worker")
    };
    let reader = spawn_with_cap("crash-reader");
    let mut rng = rand::thread_rng();
    let started = Instant::now();
    for _ in 0..iterations {
        let mut a = spawn_with_cap("crash-writer");
        let mut b = spawn_with_cap("crash-writer");
        thread::sleep(Duration::from_micros(rng.gen_range(2_000..40_000)));
        a.kill().unwrap();
        thread::sleep(Duration::from_micros(rng.gen_range(0..20_000)));
        b.kill().unwrap();
        for mut w in [a, b] {
            let status = w.wait().unwrap();
            // Killed (no exit code), or it failed on its own: then show why.
            if status.code().is_some() {
                let mut err = String::new();
                if let Some(mut e) = w.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                panic!("writer exited by itself ({status}):\n{err}");
            }
        }
    }
    fs::write(dir.path().join("stop"), b"").unwrap();
    let (ok, lines, stderr) = finish(reader);
    assert!(ok, "reader saw a wrong entry:\n{lines:?}\n{stderr}");
    eprintln!(
        "{iterations} kill iterations in {:?}; {}",
        started.elapsed(),
        lines.join(" ")
    );

    // Every entry that reads back is byte-exact, and no file in the cache is damaged.
    let clock = Arc::new(ManualClock::new(
        mck_store::Clock::now_ms(&mck_store::SystemClock) + 2 * 3_600_000,
    ));
    let mut settings = common::settings(&cache);
    settings.max_size = 6_000_000;
    settings.ttl = Duration::ZERO;
    let store = Store::open_with_clock(&settings, clock).unwrap();
    let report = store.verify(|_, _| {}).unwrap();
    assert_eq!(
        report.quarantined, 0,
        "a damaged entry file was published: {report:?}"
    );
    let stats = store.stats().unwrap();
    assert_eq!(
        stats.corrupt, 0,
        "some reader met a damaged entry: {stats:?}"
    );
    // The history the killed processes wrote reads whole: a line is one write(2) of a few
    // hundred bytes, which a SIGKILL cannot cut on a local disk.
    let history = mck_store::history::read_history(&cache.join("v1"), 0).unwrap();
    assert_eq!(history.unreadable, 0, "a torn history line");
    assert!(
        history.events.len() as u64 > iterations,
        "{}",
        history.events.len()
    );
    assert_eq!(stats.quarantined_files, 0);
    let mut present = 0;
    for i in 0..CRASH_KEYS {
        if check_one(&store, i).unwrap_or_else(|e| panic!("{e}")) {
            present += 1;
        }
    }
    assert!(
        present > 0,
        "no writer ever finished a put: the harness is not exercising anything"
    );
    // (Counters are best-effort statistics: an index rebuilt after a kill
    // starts them again, so `present` above is the harness's real check.)
    // What the killed writers left behind is swept.
    let gc = store.gc().unwrap();
    assert!(files_under(&cache.join("v1/tmp")).is_empty(), "{gc:?}");
    eprintln!("verify: {report:?}; present keys: {present}; gc: {gc:?}; stats: {stats:?}");
}
