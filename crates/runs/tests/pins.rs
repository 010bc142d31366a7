//! Eviction never removes an artefact a run record references: the store asks [`RunPins`]
//! (through `mck_store::Pins`), and a store opened without them keeps everything of a cache
//! that has run records.

use std::sync::Arc;
use std::time::Duration;

use mck_runs::{Registry, RunEntry, RunState, with_pins};
use mck_settings::RegistrySettings;
use mck_store::{CacheKey, EvictReport, ManualClock, Settings, Store};
use serde_json::json;

const T0: i64 = 1_700_000_000_000;
const DAY: Duration = Duration::from_secs(86_400);

fn key(i: usize) -> CacheKey {
    CacheKey::parse(&format!("jit_m{i}-{:064x}", i + 1)).expect("valid key")
}

fn settings(dir: &std::path::Path) -> Settings {
    Settings {
        cache_dir: dir.to_owned(),
        fsync: false,
        max_size: 4 * 1400,
        ttl: DAY,
        ..Settings::default()
    }
}

/// A cache with pins whose cap (see [`settings`]) holds about four 1 KiB entries, and `n` entries stored
/// two days ago (so all of them may be evicted now).
fn cache(dir: &std::path::Path, n: usize) -> (Store, Arc<ManualClock>) {
    cache_on(dir, n, &RegistrySettings::default())
}

/// [`cache`], its pins read from `registry`.
fn cache_on(
    dir: &std::path::Path,
    n: usize,
    registry: &RegistrySettings,
) -> (Store, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(T0));
    let store = with_pins(
        Store::open_with_clock(&settings(dir), clock.clone()).unwrap(),
        registry,
    );
    for i in 0..n {
        store.put(&key(i), &[i as u8; 1024], &json!({})).unwrap();
        clock.advance(Duration::from_millis(1));
    }
    clock.advance(2 * DAY);
    (store, clock)
}

/// Records run `run` with an `ok` line for each of `keys`.
fn record_run(store: &Store, run: &str, keys: impl Iterator<Item = CacheKey>) {
    record_run_on(store, &RegistrySettings::default(), run, keys);
}

fn record_run_on(
    store: &Store,
    registry: &RegistrySettings,
    run: &str,
    keys: impl Iterator<Item = CacheKey>,
) {
    let lines: Vec<RunEntry> = keys
        .enumerate()
        .map(|(i, k)| RunEntry {
            address: format!("proj/step{i}"),
            key: k.to_string(),
            digest: k.digest().to_string(),
            state: RunState::Ok,
            time_ms: T0,
            conflict_with: None,
        })
        .collect();
    Registry::open(store, registry)
        .unwrap()
        .import_run(run, T0, &lines)
        .unwrap();
}

/// `n` entries whose `pinned` oldest a run record references; the cache is then gc'ed.
fn gc_with_oldest_pinned(n: usize, pinned: usize) -> (tempfile::TempDir, Store, EvictReport) {
    let dir = tempfile::tempdir().unwrap();
    let (store, _clock) = cache(dir.path(), n);
    record_run(&store, "r1", (0..pinned).map(key));
    let report = store.gc().unwrap().eviction;
    (dir, store, report)
}

fn present(store: &Store, k: &CacheKey) -> bool {
    store.read_metadata(k.digest()).unwrap().is_some()
}

#[test]
fn eviction_spares_what_run_records_reference() {
    // The oldest two are referenced: plain LRU would evict them first.
    let (_dir, store, report) = gc_with_oldest_pinned(10, 2);
    assert!(report.evicted > 0, "{report:?}");
    assert!(present(&store, &key(0)) && present(&store, &key(1)));
    assert!(
        !present(&store, &key(2)),
        "the oldest unreferenced entry goes"
    );
    assert!(present(&store, &key(9)), "the newest stays under the cap");
}

#[test]
fn eviction_goes_past_more_pinned_entries_than_one_batch() {
    // The 70 oldest are pinned: more than the 64 rows one eviction step looks at.
    let (_dir, store, report) = gc_with_oldest_pinned(80, 70);
    assert_eq!(report.evicted, 10, "{report:?}");
    assert!((0..70).all(|i| present(&store, &key(i))));
    assert!(
        report.over_cap_protected,
        "pinned entries keep it above its cap"
    );
}

#[test]
fn a_store_opened_without_pins_keeps_a_cache_that_has_run_records() {
    let dir = tempfile::tempdir().unwrap();
    let (store, clock) = cache(dir.path(), 10);
    record_run(&store, "r1", (0..2).map(key));
    drop(store);
    let bare = Store::open_with_clock(&settings(dir.path()), clock).unwrap();
    assert_eq!(bare.gc().unwrap().eviction.evicted, 0);
    assert!((0..10).all(|i| present(&bare, &key(i))));
}

/// The one opener: a compile with caching off (`--no_cache`) opens nothing and creates
/// nothing; managing the cache opens it anyway.
#[test]
fn no_cache_opens_nothing_for_a_compile() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = mck_settings::Settings::default();
    s.store.cache_dir = dir.path().join("c");
    s.store.enabled = false;
    let opened = mck_runs::open_cache(&s, mck_runs::Purpose::Compile).unwrap();
    assert!(opened.is_none());
    assert!(!dir.path().join("c").exists());
    let managed = mck_runs::open_cache(&s, mck_runs::Purpose::Manage).unwrap();
    assert!(managed.is_some());
    assert!(dir.path().join("c").exists());
}

/// A team's shared registry (the PostgreSQL `scripts/test.sh` starts): what its run records
/// reference is spared by every host's eviction, not only by the host that recorded it.
#[test]
fn eviction_spares_what_a_shared_registrys_run_records_reference() {
    let Ok(url) = std::env::var("MCK_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "MCK_TEST_POSTGRES_URL is not set under CI: scripts/test.sh starts PostgreSQL"
        );
        eprintln!("skipped: no PostgreSQL (run scripts/test.sh)");
        return;
    };
    let password = std::env::var("MCK_TEST_POSTGRES_PASSWORD_FILE").expect("password file");
    let schema = format!("pins_{}", std::process::id());
    let registry = RegistrySettings {
        shared: Some(format!("{url}?schema={schema}")),
        password: Some(mck_remote::Secret::read_password(std::path::Path::new(&password)).unwrap()),
        ..RegistrySettings::default()
    };
    // Another host recorded the run: its registry is the shared one, its cache another.
    let elsewhere = tempfile::tempdir().unwrap();
    let (other_host, _) = cache_on(elsewhere.path(), 0, &registry);
    record_run_on(&other_host, &registry, "r1", (0..2).map(key));
    let dir = tempfile::tempdir().unwrap();
    let (store, _clock) = cache_on(dir.path(), 10, &registry);
    let report = store.gc().unwrap().eviction;
    let mut admin = {
        let mut config: postgres::Config = url.parse().unwrap();
        config.password(std::fs::read(&password).unwrap());
        config.connect(postgres::NoTls).unwrap()
    };
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
    assert!(report.evicted > 0, "{report:?}");
    assert!(present(&store, &key(0)) && present(&store, &key(1)));
    assert!(
        !present(&store, &key(2)),
        "the oldest unreferenced entry goes"
    );
}

/// A cache without run records gets no registry file until one is recorded: opening it with
/// its pins (what every compile, every JAX process does) creates none, eviction still works,
/// the first run record creates it private, and a later open keeps what it references.
#[test]
fn a_cache_gets_its_registry_with_its_first_run_record() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let (store, clock) = cache(dir.path(), 10);
    let registry = store.layout().registry_path();
    assert!(!registry.exists(), "opening created the registry");
    assert!(store.gc().unwrap().eviction.evicted > 0);
    assert!(!registry.exists(), "eviction created the registry");

    let kept: Vec<usize> = (0..10).filter(|&i| present(&store, &key(i))).collect();
    record_run(&store, "r1", kept.iter().copied().map(key));
    let mode = std::fs::metadata(&registry).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    drop(store);
    clock.advance(2 * DAY);
    let again = with_pins(
        Store::open_with_clock(&settings(dir.path()), clock).unwrap(),
        &RegistrySettings::default(),
    );
    assert_eq!(again.gc().unwrap().eviction.evicted, 0);
    assert!(kept.iter().all(|&i| present(&again, &key(i))));
}
