//! The store's behavior in one process, on a real filesystem: lookups, failures, corruption,
//! eviction order and TTL, index repair, hostile keys and directories.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{self, T0, clock, days, files_under, fresh, key, open_at, payload};
use mck_store::{
    CacheKey, Clear, CompileLock, EntryState, Failure, ListFilter, Lookup, ManualClock, PutOutcome,
    SortBy, Store, StoreError, Streamed, format,
};
use serde_json::json;

fn hit_bytes(store: &Store, k: &CacheKey) -> Option<Vec<u8>> {
    match store.get(k).unwrap() {
        Lookup::Hit(a) => Some(a.bytes.to_vec()),
        _ => None,
    }
}

#[test]
fn miss_then_put_then_hit() {
    let (dir, _c, store) = fresh();
    let k = key("jit_f", "a");
    assert_eq!(store.get(&k).unwrap(), Lookup::Miss);
    let ingredients = json!({"computation": "abc", "flags": ["--xla_b", "--xla_a"]});
    let out = store.put(&k, b"compiled bytes", &ingredients).unwrap();
    let PutOutcome::Stored { path, size } = out else {
        panic!("not stored: {out:?}")
    };
    assert_eq!(fs::metadata(&path).unwrap().len(), size);
    assert!(path.starts_with(dir.path().join("v1/entries")));
    match store.get(&k).unwrap() {
        Lookup::Hit(a) => {
            assert_eq!(&a.bytes[..], b"compiled bytes");
            assert_eq!(a.ingredients, ingredients);
            assert_eq!(
                serde_json::to_string(&a.ingredients).unwrap(),
                r#"{"computation":"abc","flags":["--xla_b","--xla_a"]}"#,
                "ingredient key order is preserved"
            );
            assert_eq!(a.key, k);
            assert_eq!(a.created_ms, T0);
        }
        other => panic!("expected a hit, got {other:?}"),
    }
    let s = store.stats().unwrap();
    assert_eq!(
        (s.entries, s.bytes, s.hits, s.misses, s.puts),
        (1, size, 1, 1, 1)
    );
    assert_eq!(s.bytes_written, size);
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["hits"], 1);
}

/// Misses handed to a worker (`count_misses_later`) are counted when it runs them, at the
/// lookup's time; a late count drops a row whose file is gone, never one that a writer stored
/// after the lookup (in its millisecond too).
#[test]
fn a_miss_counted_later_counts_once_run_at_its_own_time_and_spares_newer_rows() {
    let (dir, c, store) = fresh();
    let jobs: Arc<std::sync::Mutex<Vec<mck_store::CountJob>>> = Arc::default();
    let queue = Arc::clone(&jobs);
    store.count_misses_later(Box::new(move |job| queue.lock().unwrap().push(job)));
    let run_jobs = |store: &Store| {
        for job in jobs.lock().unwrap().drain(..) {
            job(store)
        }
    };
    let misses_in_history = || {
        mck_store::history::read_history(&dir.path().join("v1"), 0)
            .unwrap()
            .events
            .into_iter()
            .filter(|e| matches!(e.what, mck_store::history::What::Miss { .. }))
            .map(|e| e.t)
            .collect::<Vec<_>>()
    };
    // A stale row: its file removed behind the store's back.
    let stale = key("jit_stale", "a");
    let PutOutcome::Stored { path, .. } = store.put(&stale, b"old", &json!({})).unwrap() else {
        panic!("not stored")
    };
    fs::remove_file(&path).unwrap();
    c.advance(Duration::from_secs(1));
    let raced = key("jit_raced", "b");
    assert_eq!(store.get(&stale).unwrap(), Lookup::Miss);
    assert_eq!(store.get(&raced).unwrap(), Lookup::Miss);
    let at_once = key("jit_at_once", "c");
    assert_eq!(store.get(&at_once).unwrap(), Lookup::Miss);
    assert_eq!(jobs.lock().unwrap().len(), 3, "every miss was handed off");
    assert_eq!(
        store.stats().unwrap().misses,
        0,
        "not counted on the lookup's path"
    );
    assert_eq!(misses_in_history(), Vec::<i64>::new());
    // Stored in the lookup's millisecond, then by another writer seconds later, both before
    // the worker counts the misses.
    store.put(&at_once, b"at once", &json!({})).unwrap();
    c.advance(Duration::from_secs(5));
    store.put(&raced, b"new", &json!({})).unwrap();
    run_jobs(&store);
    let s = store.stats().unwrap();
    assert_eq!(
        (s.misses, s.entries),
        (3, 2),
        "the stale row went, the newer ones stayed"
    );
    assert_eq!(hit_bytes(&store, &raced).unwrap(), b"new");
    assert_eq!(hit_bytes(&store, &at_once).unwrap(), b"at once");
    let lookup_time = T0 + 1_000;
    assert_eq!(misses_in_history(), vec![lookup_time; 3]);
}

#[test]
fn same_digest_other_name_is_a_miss() {
    let (_dir, _c, store) = fresh();
    let k = key("jit_f", "a");
    store.put(&k, b"x", &json!(null)).unwrap();
    let other = CacheKey::from_parts("jit_g", k.digest().clone()).unwrap();
    assert_eq!(store.get(&other).unwrap(), Lookup::Miss);
    assert_eq!(hit_bytes(&store, &k).unwrap(), b"x");
}

#[test]
fn failure_is_remembered_and_replayed() {
    let (_dir, _c, store) = fresh();
    let k = key("jit_bad", "b");
    let failure = Failure {
        exit_status: Some(3),
        stderr: "error: custom call not supported\n".to_owned(),
    };
    store.put_failure(&k, &failure, &json!({"why": 1})).unwrap();
    match store.get(&k).unwrap() {
        Lookup::Failed(f) => {
            assert_eq!(f.failure, failure);
            assert_eq!(f.ingredients, json!({"why": 1}));
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    let s = store.stats().unwrap();
    assert_eq!((s.failures_replayed, s.failed_entries, s.hits), (1, 1, 0));
    let listed = store.list(&ListFilter::default()).unwrap();
    assert_eq!(listed[0].state, EntryState::Failed);
    assert_eq!(listed[0].artefact_size, 0);
}

#[test]
fn retry_flag_reads_a_failure_as_a_miss_and_the_new_result_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let k = key("jit_flaky", "c");
    let failure = Failure {
        exit_status: None,
        stderr: "killed".to_owned(),
    };
    {
        let store = open_at(dir.path(), &c, |_| {});
        store.put_failure(&k, &failure, &json!({})).unwrap();
    }
    let store = open_at(dir.path(), &c, |s| s.retry_failed_compilation = true);
    assert_eq!(store.get(&k).unwrap(), Lookup::Miss);
    store.put(&k, b"now it works", &json!({})).unwrap();
    assert_eq!(hit_bytes(&store, &k).unwrap(), b"now it works");
    // A later failure (say, a racing compile that ran out of memory) does not replace it.
    let out = store.put_failure(&k, &failure, &json!({})).unwrap();
    assert!(matches!(out, PutOutcome::KeptExisting { .. }), "{out:?}");
    assert_eq!(hit_bytes(&store, &k).unwrap(), b"now it works");
    let s = store.stats().unwrap();
    assert_eq!((s.entries, s.failed_entries), (1, 0));
}

/// Damages the stored entry with `damage`, then expects: miss, file quarantined, counted.
fn corrupt_case(damage: impl FnOnce(&mut Vec<u8>)) {
    let (dir, _c, store) = fresh();
    let k = key("jit_c", "corrupt");
    let PutOutcome::Stored { path, .. } =
        store.put(&k, &payload(1, 4096), &json!({"a": 1})).unwrap()
    else {
        panic!()
    };
    let mut bytes = fs::read(&path).unwrap();
    damage(&mut bytes);
    fs::write(&path, &bytes).unwrap();
    assert_eq!(store.get(&k).unwrap(), Lookup::Miss);
    assert!(!path.exists(), "the corrupt file left its place");
    let q = files_under(&dir.path().join("v1/quarantine"));
    assert_eq!(q.len(), 1, "{q:?}");
    assert_eq!(
        fs::read(&q[0]).unwrap(),
        bytes,
        "quarantine keeps the evidence"
    );
    let s = store.stats().unwrap();
    assert_eq!((s.corrupt, s.misses, s.entries, s.bytes), (1, 1, 0, 0));
    assert_eq!(s.quarantined_files, 1);
    // A second lookup is a plain miss, and a new put works.
    assert_eq!(store.get(&k).unwrap(), Lookup::Miss);
    store.put(&k, b"fresh", &json!({})).unwrap();
    assert_eq!(hit_bytes(&store, &k).unwrap(), b"fresh");
}

/// A streamed hit verifies as it copies (the hash runs beside the copy): a byte flipped in
/// any chunk of a multi-chunk artefact is a miss that writes nothing, and the entry goes to
/// quarantine; the intact artefact streams out whole.
#[test]
fn a_streamed_artefact_is_verified_in_every_chunk() {
    let artefact = payload(7, (3 << 20) + 123);
    for flip in [Some(0), Some(1 << 20), Some(artefact.len() - 1), None] {
        let (dir, _c, store) = fresh();
        let k = key("jit_s", "streamed");
        let PutOutcome::Stored { path, .. } = store.put(&k, &artefact, &json!({})).unwrap() else {
            panic!()
        };
        if let Some(from_end) = flip {
            let mut bytes = fs::read(&path).unwrap();
            let at = bytes.len() - 1 - from_end;
            bytes[at] ^= 0x01;
            fs::write(&path, &bytes).unwrap();
        }
        let dest = dir.path().join("out.bin");
        let got = store.get_to(&k, &dest, 0o644).unwrap();
        match flip {
            Some(at) => {
                assert_eq!(got, Streamed::Miss, "flip {at} from the end");
                assert!(!dest.exists(), "flip {at}: a damaged artefact was written");
                assert_eq!(store.stats().unwrap().quarantined_files, 1);
            }
            None => {
                assert!(
                    matches!(got, Streamed::Written { size, .. } if size == artefact.len() as u64)
                );
                assert!(
                    fs::read(&dest).unwrap() == artefact,
                    "the artefact changed on the way"
                );
            }
        }
    }
}

#[test]
fn flipped_payload_byte_is_quarantined() {
    corrupt_case(|b| {
        let last = b.len() - 1;
        b[last] ^= 0x40;
    });
}

#[test]
fn truncated_entry_is_quarantined() {
    corrupt_case(|b| b.truncate(b.len() / 2));
}

#[test]
fn truncated_to_nothing_is_quarantined() {
    corrupt_case(|b| b.clear());
}

#[test]
fn garbage_metadata_is_quarantined() {
    corrupt_case(|b| {
        for x in &mut b[format::HEADER_LEN..format::HEADER_LEN + 20] {
            *x = b'#';
        }
    });
}

#[test]
fn garbage_metadata_with_a_matching_checksum_is_quarantined() {
    use sha2::{Digest as _, Sha256};
    corrupt_case(|b| {
        let meta_len = u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize;
        let start = format::HEADER_LEN;
        for x in &mut b[start..start + meta_len] {
            *x = b'{';
        }
        let sum = Sha256::digest(&b[start..start + meta_len]);
        b[20..52].copy_from_slice(&sum);
    });
}

#[test]
fn symlink_in_place_of_an_entry_is_not_followed() {
    let (dir, _c, store) = fresh();
    let k = key("jit_s", "s");
    let PutOutcome::Stored { path, .. } = store.put(&k, b"real", &json!({})).unwrap() else {
        panic!()
    };
    let elsewhere = dir.path().join("elsewhere");
    fs::rename(&path, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
    assert_eq!(store.get(&k).unwrap(), Lookup::Miss);
    assert!(
        fs::symlink_metadata(&path).is_err(),
        "the symlink was moved to quarantine"
    );
    assert!(
        fs::read(&elsewhere).unwrap().len() > 4,
        "its target is untouched"
    );
}

/// Equal-sized entries (same name length, same ingredients) so the cap counts entries.
fn put_sized(store: &Store, i: u32) -> u64 {
    let k = key(&format!("jit_{i:03}"), &format!("lru{i}"));
    match store
        .put(&k, &payload(u64::from(i), 1000), &json!({"i": 0}))
        .unwrap()
    {
        PutOutcome::Stored { size, .. } => size,
        other => panic!("{other:?}"),
    }
}

/// A store capped at `entries` entries of `put_sized`'s size (measured in a store of its own),
/// with `ttl`; and that size.
fn capped(entries: u64, ttl: Duration) -> (tempfile::TempDir, Arc<ManualClock>, Store, u64) {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let size = put_sized(&open_at(&dir.path().join("probe"), &c, |_| {}), 0);
    let store = open_at(dir.path(), &c, |s| {
        s.max_size = entries * size;
        s.ttl = ttl;
    });
    (dir, c, store, size)
}

fn present(store: &Store) -> Vec<String> {
    let mut names: Vec<String> = store
        .list(&ListFilter::default())
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort();
    names
}

#[test]
fn eviction_is_by_last_use_not_creation() {
    let (dir, c, store, size) = capped(3, Duration::from_secs(60));
    for i in 1..=3 {
        put_sized(&store, i);
        c.advance(Duration::from_secs(3600));
    }
    // Use the oldest-created entry: it becomes the most recently used.
    assert!(hit_bytes(&store, &key("jit_001", "lru1")).is_some());
    c.advance(Duration::from_secs(3600));
    put_sized(&store, 4);
    assert_eq!(
        present(&store),
        ["jit_001", "jit_003", "jit_004"],
        "jit_002 was least recently used"
    );
    c.advance(Duration::from_secs(3600));
    put_sized(&store, 5);
    assert_eq!(present(&store), ["jit_001", "jit_004", "jit_005"]);
    let s = store.stats().unwrap();
    assert_eq!((s.evictions, s.entries, s.bytes), (2, 3, 3 * size));
    // Size accounting agrees with the files on disk.
    let on_disk: u64 = files_under(&dir.path().join("v1/entries"))
        .iter()
        .map(|p| fs::metadata(p).unwrap().len())
        .sum();
    assert_eq!(on_disk, s.bytes);
    let listed: u64 = store
        .list(&ListFilter::default())
        .unwrap()
        .iter()
        .map(|e| e.size)
        .sum();
    assert_eq!(listed, s.bytes);
    // LRU listing order: least recently used first.
    let order: Vec<String> = store
        .list(&ListFilter {
            sort: SortBy::LeastRecentlyUsed,
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(order, ["jit_001", "jit_004", "jit_005"]);
}

#[test]
fn ttl_protects_recent_entries_even_above_the_cap() {
    let (_dir, c, store, size) = capped(2, days(1));
    for i in 1..=5 {
        put_sized(&store, i);
        c.advance(Duration::from_secs(60));
    }
    let s = store.stats().unwrap();
    assert_eq!(
        (s.entries, s.evictions),
        (5, 0),
        "all used within the TTL: none evicted"
    );
    assert!(s.bytes > s.max_size);
    let report = store.gc().unwrap();
    assert!(report.eviction.over_cap_protected);
    assert_eq!(report.eviction.evicted, 0);
    // Two days later one of them is used again: it stays protected, the rest may go.
    c.advance(days(2));
    assert!(hit_bytes(&store, &key("jit_002", "lru2")).is_some());
    let report = store.gc().unwrap();
    assert_eq!(report.eviction.evicted, 3);
    assert_eq!(present(&store), ["jit_002", "jit_005"]);
    let s = store.stats().unwrap();
    assert_eq!((s.entries, s.bytes, s.evictions), (2, 2 * size, 3));
}

/// Each entry: key, state, size, created and last used.
type Listing = Vec<(String, EntryState, u64, i64, i64)>;

fn listing(store: &Store) -> Listing {
    store
        .list(&ListFilter {
            sort: SortBy::Name,
            ..Default::default()
        })
        .unwrap()
        .into_iter()
        .map(|e| (e.key, e.state, e.size, e.created_ms, e.last_used_ms))
        .collect()
}

fn populate_for_index_tests(store: &Store, c: &mck_store::ManualClock) {
    for i in 0..20u32 {
        let k = key(&format!("m{i}"), &format!("ix{i}"));
        if i % 5 == 0 {
            let f = Failure {
                exit_status: Some(1),
                stderr: format!("e{i}"),
            };
            store.put_failure(&k, &f, &json!({"i": i})).unwrap();
        } else {
            store
                .put(
                    &k,
                    &payload(u64::from(i), 100 * i as usize),
                    &json!({"i": i}),
                )
                .unwrap();
        }
        c.advance(Duration::from_millis(1234));
    }
    for i in (0..20u32).step_by(3) {
        store
            .get(&key(&format!("m{i}"), &format!("ix{i}")))
            .unwrap();
        c.advance(Duration::from_millis(777));
    }
}

/// A populated store's directory (the store closed), its clock and its listing.
fn populated_listing() -> (
    tempfile::TempDir,
    std::sync::Arc<mck_store::ManualClock>,
    Listing,
) {
    let (dir, c, store) = fresh();
    populate_for_index_tests(&store, &c);
    let before = listing(&store);
    (dir, c, before)
}

#[test]
fn deleted_index_is_rebuilt_with_the_same_listing() {
    let (dir, c, before) = populated_listing();
    for suffix in ["", "-wal", "-shm"] {
        let _ = fs::remove_file(dir.path().join(format!("v1/index.sqlite{suffix}")));
    }
    let store = open_at(dir.path(), &c, |_| {});
    assert_eq!(
        listing(&store),
        before,
        "rebuilt from entry files, last use from mtimes"
    );
    let s = store.stats().unwrap();
    assert_eq!((s.entries, s.failed_entries), (20, 4));
}

#[test]
fn deleted_index_with_a_stale_wal_is_rebuilt() {
    let (dir, c, before) = populated_listing();
    let _ = fs::remove_file(dir.path().join("v1/index.sqlite"));
    fs::write(dir.path().join("v1/index.sqlite-wal"), payload(9, 50_000)).unwrap();
    let store = open_at(dir.path(), &c, |_| {});
    assert_eq!(listing(&store), before);
}

#[test]
fn corrupt_index_is_set_aside_and_rebuilt() {
    let (dir, c, before) = populated_listing();
    for suffix in ["-wal", "-shm"] {
        let _ = fs::remove_file(dir.path().join(format!("v1/index.sqlite{suffix}")));
    }
    fs::write(dir.path().join("v1/index.sqlite"), payload(7, 20_000)).unwrap();
    let store = open_at(dir.path(), &c, |_| {});
    assert_eq!(listing(&store), before);
    let q = files_under(&dir.path().join("v1/quarantine"));
    assert!(
        q.iter()
            .any(|p| p.to_string_lossy().contains("index.sqlite")),
        "{q:?}"
    );
}

#[test]
fn verify_repairs_an_index_that_disagrees_with_the_directory() {
    let (dir, c, store) = fresh();
    populate_for_index_tests(&store, &c);
    // A row without a file.
    let gone = key("m1", "ix1");
    fs::remove_file(store.layout().entry_path(gone.digest())).unwrap();
    // A file without a row: written by another store, copied in.
    let other_dir = tempfile::tempdir().unwrap();
    let other = open_at(other_dir.path(), &c, |_| {});
    let extra = key("extra", "extra");
    let PutOutcome::Stored { path, .. } = other.put(&extra, b"copied", &json!({})).unwrap() else {
        panic!()
    };
    let dest = store.layout().entry_path(extra.digest());
    fs::create_dir_all(dest.parent().unwrap()).unwrap();
    fs::copy(&path, &dest).unwrap();
    // A damaged file.
    let bad = key("m2", "ix2");
    let bad_path = store.layout().entry_path(bad.digest());
    let mut bytes = fs::read(&bad_path).unwrap();
    let n = bytes.len();
    bytes[n - 1] ^= 1;
    fs::write(&bad_path, bytes).unwrap();
    // A stray file.
    fs::write(dir.path().join("v1/entries/zz-not-an-entry"), b"?").unwrap();

    let mut calls = Vec::new();
    let report = store
        .verify(|done, total| calls.push((done, total)))
        .unwrap();
    assert_eq!(report.rows_added, 1, "{report:?}");
    assert_eq!(report.rows_removed, 2, "{report:?}");
    assert_eq!(report.quarantined, 2, "{report:?}");
    assert_eq!(report.entries, 19, "{report:?}");
    assert_eq!(calls.first(), Some(&(0, report.checked)));
    assert_eq!(calls.last(), Some(&(report.checked, report.checked)));
    let s = store.stats().unwrap();
    let on_disk: u64 = files_under(&dir.path().join("v1/entries"))
        .iter()
        .map(|p| fs::metadata(p).unwrap().len())
        .sum();
    assert_eq!((s.entries, s.bytes), (19, on_disk));
    assert_eq!(hit_bytes(&store, &extra).unwrap(), b"copied");
}

#[test]
fn a_file_without_a_row_heals_on_hit() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    let k = key("heal", "heal");
    {
        let store = open_at(dir.path(), &c, |_| {});
        store.put(&k, b"abc", &json!({})).unwrap();
    }
    // Drop the row behind the store's back (an index update lost to a kill).
    drop_row_behind_the_stores_back(dir.path(), &k);
    let store = open_at(dir.path(), &c, |_| {});
    assert_eq!(store.stats().unwrap().entries, 0);
    assert_eq!(hit_bytes(&store, &k).unwrap(), b"abc");
    assert_eq!(store.stats().unwrap().entries, 1);
}

/// Removes `k`'s row using only the public API: hide the entry file, rebuild the index, put the
/// file back.
fn drop_row_behind_the_stores_back(dir: &std::path::Path, k: &CacheKey) {
    let c = clock();
    let store = open_at(dir, &c, |_| {});
    let path = store.layout().entry_path(k.digest());
    let hidden = dir.join("hidden");
    fs::rename(&path, &hidden).unwrap();
    store.rebuild_index().unwrap();
    drop(store);
    fs::rename(&hidden, &path).unwrap();
}

#[test]
fn hostile_keys_are_rejected_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let hex = "0".repeat(64);
    for bad in [
        "../x".to_owned(),
        format!("../x-{}", "A".repeat(64)),
        format!("jit-{}", &hex[..63]),
        format!("jit-{}", "F".repeat(64)),
        format!("jit\0-{hex}"),
        format!("a/b-{hex}"),
        format!("jit-../../{}", &hex[..58]),
    ] {
        let err = CacheKey::parse(&bad).expect_err(&bad);
        assert!(matches!(err, StoreError::InvalidKey { .. }), "{err}");
        assert!(err.to_string().contains("invalid cache key"), "{err}");
    }
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn symlinked_cache_dir_is_refused_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    fs::create_dir(&real).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let err = Store::open(&common::settings(&link)).unwrap_err();
    assert!(matches!(err, StoreError::Insecure { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains(&link.display().to_string()) && msg.contains("symbolic link"),
        "{msg}"
    );
    assert_eq!(
        fs::read_dir(&real).unwrap().count(),
        0,
        "nothing created through the link"
    );
}

#[test]
fn cache_dir_and_files_are_private() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("a/b/cache");
    let c = clock();
    let store = open_at(&root, &c, |_| {});
    let PutOutcome::Stored { path, .. } = store.put(&key("p", "p"), b"x", &json!({})).unwrap()
    else {
        panic!()
    };
    for d in [
        &root,
        &root.join("v1"),
        &root.join("v1/entries"),
        &root.join("v1/tmp"),
    ] {
        let mode = fs::metadata(d).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", d.display());
    }
    assert_eq!(
        fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let index = fs::metadata(root.join("v1/index.sqlite")).unwrap();
    assert_eq!(index.permissions().mode() & 0o777, 0o600);
}

#[test]
fn group_mode_applies_to_dirs_and_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("shared");
    let c = clock();
    let store = open_at(&root, &c, |s| s.dir_mode = 0o750);
    let PutOutcome::Stored { path, .. } = store.put(&key("p", "p"), b"x", &json!({})).unwrap()
    else {
        panic!()
    };
    assert_eq!(
        fs::metadata(&root).unwrap().permissions().mode() & 0o777,
        0o750
    );
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o640
    );
}

#[test]
fn world_writable_cache_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("open");
    fs::create_dir(&root).unwrap();
    fs::set_permissions(&root, fs::Permissions::from_mode(0o777)).unwrap();
    let err = Store::open(&common::settings(&root)).unwrap_err();
    assert!(err.to_string().contains("writable by every user"), "{err}");
}

#[test]
fn cache_dir_owned_by_another_user_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("theirs");
    fs::create_dir(&root).unwrap();
    if fs::metadata(&root).unwrap().uid() != 0 {
        common::skip_unless_ci(
            "cache_dir_owned_by_another_user_is_refused",
            "changing a directory's owner needs root",
        );
        return;
    }
    std::os::unix::fs::chown(&root, Some(4242), Some(4242)).unwrap();
    let err = Store::open(&common::settings(&root)).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("owned by uid 4242") && msg.contains(&root.display().to_string()),
        "{msg}"
    );
}

/// `ListFilter::module` lists one module's entries: GLOB metacharacters in its name match only
/// themselves, and the most recently used comes first.
#[test]
fn a_module_filter_matches_the_name_literally() {
    let (_dir, c, store) = fresh();
    for (i, name) in ["jit_[a]", "jit_a", "jit_x*", "jit_xy", "jit_?", "jit_x*"]
        .iter()
        .enumerate()
    {
        store
            .put(
                &key(name, &i.to_string()),
                &payload(i as u64, 10),
                &json!({}),
            )
            .unwrap();
        c.advance(Duration::from_secs(1));
    }
    let listed = |name: &str| -> Vec<(String, String)> {
        store
            .list(&ListFilter::module(name))
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.key))
            .collect()
    };
    for name in ["jit_[a]", "jit_?", "jit_a"] {
        let found: Vec<String> = listed(name).into_iter().map(|(n, _)| n).collect();
        assert_eq!(found, [name], "{name}");
    }
    let stars = listed("jit_x*");
    assert_eq!(stars.len(), 2, "{stars:?}");
    assert!(stars.iter().all(|(name, _)| name == "jit_x*"), "{stars:?}");
    assert_eq!(
        stars[0].1,
        key("jit_x*", "5").to_string(),
        "most recently used first"
    );
}

#[test]
fn list_filters_sorts_and_limits() {
    let (_dir, c, store) = fresh();
    for (i, name) in ["jit_b", "jit_a", "pmap_c", "jit_c"].iter().enumerate() {
        store
            .put(&key(name, name), &payload(i as u64, 10), &json!({}))
            .unwrap();
        c.advance(Duration::from_secs(1));
    }
    store
        .put_failure(
            &key("jit_z", "z"),
            &Failure {
                exit_status: Some(1),
                stderr: String::new(),
            },
            &json!({}),
        )
        .unwrap();
    let names = |f: ListFilter| -> Vec<String> {
        store
            .list(&f)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect()
    };
    assert_eq!(
        names(ListFilter {
            name_glob: Some("jit_*".into()),
            sort: SortBy::Name,
            ..Default::default()
        }),
        ["jit_a", "jit_b", "jit_c", "jit_z"]
    );
    assert_eq!(
        names(ListFilter {
            state: Some(EntryState::Failed),
            ..Default::default()
        }),
        ["jit_z"]
    );
    assert_eq!(
        names(ListFilter {
            limit: Some(2),
            ..Default::default()
        }),
        ["jit_z", "jit_c"]
    );
    let summary = store
        .summary_of(key("jit_a", "jit_a").digest())
        .unwrap()
        .unwrap();
    assert_eq!(summary.key, key("jit_a", "jit_a").to_string());
}

#[test]
fn clear_all_and_by_predicate() {
    let (dir, _c, store) = fresh();
    for i in 0..6u32 {
        store
            .put(&key(&format!("n{i}"), &i.to_string()), b"x", &json!({}))
            .unwrap();
    }
    let r = store
        .clear(Clear::Matching(&|e| e.name.ends_with(['0', '2', '4'])))
        .unwrap();
    assert_eq!(r.removed, 3);
    assert_eq!(present(&store), ["n1", "n3", "n5"]);
    let r = store.clear(Clear::All).unwrap();
    assert_eq!(r.removed, 3);
    assert!(files_under(&dir.path().join("v1/entries")).is_empty());
    let s = store.stats().unwrap();
    assert_eq!((s.entries, s.bytes), (0, 0));
}

#[test]
fn gc_sweeps_stale_temp_files_and_unheld_locks() {
    let (dir, c, store) = fresh();
    fs::write(dir.path().join("v1/tmp/.entry-dead"), b"partial").unwrap();
    let k = key("l", "l");
    let lock_path = store.layout().lock_path(k.digest());
    fs::create_dir_all(lock_path.parent().unwrap()).unwrap();
    fs::write(&lock_path, b"12345\n").unwrap(); // left by a killed holder
    // Files are "now" by the real clock; move the store's clock two hours past it.
    let real_now = mck_store::Clock::now_ms(&mck_store::SystemClock);
    c.set(real_now + 2 * 3600 * 1000);
    let report = store.gc().unwrap();
    assert_eq!(
        (report.tmp_removed, report.locks_removed),
        (1, 1),
        "{report:?}"
    );
    assert!(!lock_path.exists());
}

/// A lock shard this process made once is not made again on each miss; one removed since
/// (by hand, by another tool) is made again, with or without a spare lock file to link in.
#[test]
fn a_compile_lock_is_taken_after_its_shard_was_removed_behind_the_stores_back() {
    let (_dir, _c, store) = fresh();
    let k = key("l", "l");
    let lock_path = store.layout().lock_path(k.digest());
    for spares in [false, false, true, true] {
        if spares {
            store.make_locks_ahead();
        }
        let taken = store
            .lock_for_compile(&k, Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("spares {spares}: {e}"));
        let CompileLock::Acquired(guard) = taken else {
            panic!("spares {spares}: not acquired")
        };
        assert_eq!(guard.path(), lock_path);
        assert!(lock_path.exists(), "spares {spares}");
        drop(guard);
        fs::remove_dir(lock_path.parent().unwrap()).unwrap();
    }
}

/// A worker's `make_locks_ahead` makes a fresh cache's lock shards a few a call, each with the
/// cache's directory mode, until all 256 exist; a claim then finds its shard made.
#[test]
fn lock_shards_are_made_ahead_a_few_at_a_time_until_all_exist() {
    let (_dir, _c, store) = fresh();
    let locks = store.layout().locks_dir().to_owned();
    let shards = || -> Vec<fs::DirEntry> {
        fs::read_dir(&locks)
            .map(|dirs| dirs.map(Result::unwrap).collect())
            .unwrap_or_default()
    };
    assert!(shards().is_empty(), "a fresh cache has none");
    store.make_locks_ahead();
    let first = shards().len();
    assert!((1..256).contains(&first), "a few a call, not all: {first}");
    for _ in 0..256 {
        store.make_locks_ahead();
    }
    let all = shards();
    assert_eq!(all.len(), 256);
    for shard in &all {
        let meta = shard.metadata().unwrap();
        assert!(meta.is_dir(), "{:?}", shard.path());
        assert_eq!(
            meta.permissions().mode() & 0o777,
            0o700,
            "{:?}",
            shard.path()
        );
    }
    let k = key("l", "l");
    let shard = store.layout().lock_shard_dir(k.digest());
    assert!(shard.is_dir(), "the shard a claim needs is one of them");
    let CompileLock::Acquired(_guard) = store.lock_for_compile(&k, Duration::ZERO).unwrap() else {
        panic!("not acquired")
    };
}

/// An entry shard this process made once is not made again on each store; one removed since,
/// with its entries, is made again and the entry stored in it.
#[test]
fn an_entry_is_stored_after_its_shard_was_removed_behind_the_stores_back() {
    let (_dir, _c, store) = fresh();
    let k = key("s", "s");
    let shard = store.layout().entry_shard_dir(k.digest());
    for round in 0..3u8 {
        let bytes = [round; 3];
        store
            .put(&k, &bytes, &json!({}))
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(hit_bytes(&store, &k).as_deref(), Some(&bytes[..]));
        fs::remove_dir_all(&shard).unwrap();
        assert_eq!(hit_bytes(&store, &k), None, "round {round}");
    }
}

#[test]
fn full_disk_is_an_error_naming_the_path_and_leaves_nothing() {
    // A real full filesystem: a 256 KiB tmpfs.
    common::on_small_tmpfs(
        "full_disk_is_an_error_naming_the_path_and_leaves_nothing",
        "256k",
        |mnt| {
            let c = clock();
            let store = open_at(&mnt.join("cache"), &c, |_| {});
            let k = key("big", "big");
            let err = store.put(&k, &payload(1, 1 << 20), &json!({})).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains("v1/tmp"), "{msg}");
            assert!(msg.to_lowercase().contains("no space"), "{msg}");
            assert!(
                files_under(&mnt.join("cache/v1/tmp")).is_empty(),
                "temp file removed"
            );
            assert_eq!(store.get(&k).unwrap(), Lookup::Miss);
            store.put(&k, b"small fits", &json!({})).unwrap();
            assert_eq!(hit_bytes(&store, &k).unwrap(), b"small fits");
        },
    );
}

#[test]
fn an_entry_exported_from_one_cache_imports_into_another() {
    let c = clock();
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = open_at(a_dir.path(), &c, |_| {});
    let b = open_at(b_dir.path(), &c, |_| {});
    let k = key("jit_share", "share");
    a.put(&k, b"shared artefact", &json!({"flags": ["x"]}))
        .unwrap();
    let bytes = a.export_entry(&k).unwrap().unwrap();
    c.advance(Duration::from_secs(10));
    assert_eq!(b.import_entry(&bytes).unwrap(), k);
    match b.get(&k).unwrap() {
        Lookup::Hit(h) => {
            assert_eq!(&h.bytes[..], b"shared artefact");
            assert_eq!(h.ingredients, json!({"flags": ["x"]}));
            assert_eq!(h.created_ms, T0, "creation time travels with the entry");
        }
        other => panic!("{other:?}"),
    }
    let mut damaged = bytes.clone();
    let n = damaged.len();
    damaged[n - 1] ^= 1;
    let err = b.import_entry(&damaged).unwrap_err();
    assert!(
        err.to_string().contains("payload checksum mismatch"),
        "{err}"
    );
    assert!(b.import_entry(b"MCKE").is_err());
    assert!(a.export_entry(&key("jit_none", "none")).unwrap().is_none());
}

#[test]
fn a_runaway_stderr_keeps_its_tail() {
    let (_dir, _c, store) = fresh();
    let k = key("jit_loud", "loud");
    let stderr = format!("{}\nerror: the real problem\n", "noise ".repeat(1_500_000));
    let f = Failure {
        exit_status: Some(1),
        stderr,
    };
    store.put_failure(&k, &f, &json!({})).unwrap();
    let Lookup::Failed(got) = store.get(&k).unwrap() else {
        panic!()
    };
    assert!(got.failure.stderr.len() <= (4 << 20) + 100);
    assert!(
        got.failure
            .stderr
            .starts_with("[mlir-cache-key: the first ")
    );
    assert!(got.failure.stderr.ends_with("error: the real problem\n"));
}

#[test]
fn the_store_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Store>();
}

#[test]
fn a_peek_counts_nothing_until_its_hit_is_counted() {
    let (_dir, clock, store) = fresh();
    let (stored, absent, failed) = (key("jit_f", "p1"), key("jit_f", "p2"), key("jit_f", "p3"));
    store.put(&stored, b"artefact", &json!({})).unwrap();
    let failure = Failure {
        exit_status: Some(1),
        stderr: "error".to_owned(),
    };
    store.put_failure(&failed, &failure, &json!({})).unwrap();
    let counters = |s: &Store| {
        let st = s.stats().unwrap();
        (st.hits, st.misses, st.failures_replayed)
    };
    let used_at = |s: &Store| {
        let listed = s.list(&ListFilter::default()).unwrap();
        listed
            .into_iter()
            .find(|e| e.key == stored.to_string())
            .unwrap()
            .last_used_ms
    };
    let before = (counters(&store), used_at(&store));
    clock.advance(std::time::Duration::from_secs(60));

    match store.peek(&stored).unwrap() {
        Lookup::Hit(a) => assert_eq!(&a.bytes[..], b"artefact"),
        other => panic!("a peek does not read the entry: {other:?}"),
    }
    assert_eq!(store.peek(&absent).unwrap(), Lookup::Miss);
    assert_eq!(
        store.peek(&failed).unwrap(),
        Lookup::Miss,
        "a failure is not replayed"
    );
    assert_eq!(
        (counters(&store), used_at(&store)),
        before,
        "a peek counted"
    );

    assert!(store.count_hit(&stored).unwrap());
    assert_eq!(counters(&store), (before.0.0 + 1, before.0.1, before.0.2));
    assert!(used_at(&store) > before.1, "the use time did not move");
    assert!(!store.count_hit(&absent).unwrap());
    assert!(
        !store.count_hit(&failed).unwrap(),
        "a failure counted as a hit"
    );
    assert_eq!(counters(&store).0, before.0.0 + 1);
}

/// A prefetch that meets a damaged entry leaves it where it is: the lookup that follows (if
/// any) quarantines it and counts it as corrupt, as it would without the prefetch.
#[test]
fn a_peek_leaves_a_damaged_entry_for_the_lookup_that_counts_it() {
    let (dir, _c, store) = fresh();
    let k = key("jit_c", "peeked");
    let PutOutcome::Stored { path, .. } = store.put(&k, &payload(3, 4096), &json!({})).unwrap()
    else {
        panic!()
    };
    let mut bytes = fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    fs::write(&path, &bytes).unwrap();

    assert_eq!(store.peek(&k).unwrap(), Lookup::Miss);
    assert_eq!(fs::read(&path).unwrap(), bytes, "the peek moved the entry");
    let s = store.stats().unwrap();
    assert_eq!((s.corrupt, s.misses, s.quarantined_files), (0, 0, 0));

    assert_eq!(store.get(&k).unwrap(), Lookup::Miss);
    assert!(!path.exists(), "the lookup left the damaged entry in place");
    assert_eq!(files_under(&dir.path().join("v1/quarantine")).len(), 1);
    let s = store.stats().unwrap();
    assert_eq!((s.corrupt, s.misses, s.entries), (1, 1, 0));
}
