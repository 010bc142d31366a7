//! Remote hits read in parts and verified as they arrive (`receive.rs`), and their
//! back-fill written beside the caller (`backfill.rs`), through the real `Tiered` over a tier
//! that keeps its values in this process's memory and hands them out in small parts (a Redis or
//! a bucket would need a server: `tests/cli_remote.rs` and `tests/cli_s3.rs` use real ones).

use std::collections::BTreeMap;
use std::sync::Mutex;

use bytes::Bytes;
use mck_remote::{RemoteError, RemoteSettings, Tier, TierOptions, Tiered};
use mck_store::{CacheKey, Lookup, Settings, Store};

/// Objects by path, shared by every tier of this test binary (paths hold distinct digests).
static OBJECTS: Mutex<BTreeMap<String, Vec<u8>>> = Mutex::new(BTreeMap::new());
/// A value that replaces the one at a path between the first and the second part of a read.
static REPLACE_MID_READ: Mutex<BTreeMap<String, Vec<u8>>> = Mutex::new(BTreeMap::new());
const PART: usize = 1000;

#[derive(Debug)]
struct Memory;

fn object(path: &str) -> Option<Vec<u8>> {
    OBJECTS.lock().unwrap().get(path).cloned()
}

impl Tier for Memory {
    fn get(&self, path: &str) -> Result<Option<Bytes>, RemoteError> {
        Ok(object(path).map(Bytes::from))
    }

    fn put(&self, path: &str, value: Vec<u8>) -> Result<(), RemoteError> {
        OBJECTS.lock().unwrap().insert(path.to_owned(), value);
        Ok(())
    }

    fn get_parts(
        &self,
        path: &str,
        part: &mut dyn FnMut(Bytes) -> bool,
    ) -> Result<bool, RemoteError> {
        let Some(mut value) = object(path) else {
            return Ok(false);
        };
        let mut at = 0;
        while at < value.len() {
            let end = (at + PART).min(value.len());
            if !part(Bytes::copy_from_slice(&value[at..end])) {
                break;
            }
            if at == 0
                && let Some(newer) = REPLACE_MID_READ.lock().unwrap().remove(path)
            {
                OBJECTS
                    .lock()
                    .unwrap()
                    .insert(path.to_owned(), newer.clone());
                value = newer;
            }
            at = end;
        }
        Ok(true)
    }
}

fn open_memory(_: &url::Url, _: TierOptions) -> Result<Box<dyn Tier>, RemoteError> {
    Ok(Box::new(Memory))
}

fn tiered(dir: &std::path::Path) -> Tiered {
    let settings = Settings {
        cache_dir: dir.to_owned(),
        ..Settings::default()
    };
    let remote = RemoteSettings {
        tiers: vec![mck_remote::parse_tier("redis://127.0.0.1:1/0/memory").unwrap()],
        ..RemoteSettings::default()
    };
    Tiered::open_with(Store::open(&settings).unwrap(), &remote, Some(open_memory))
}

/// Stores `bytes` under `k` in the tier through a writer cache in `dir`.
fn put(dir: &std::path::Path, k: &CacheKey, bytes: &[u8]) {
    tiered(&dir.join("writer"))
        .put(k, bytes, &serde_json::json!({}))
        .unwrap();
}

fn key(c: char) -> CacheKey {
    CacheKey::parse(&format!("jit_f-{}", c.to_string().repeat(64))).unwrap()
}

fn artefact(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

/// The path the tier stores `key` at (the only object under its digest).
fn path_of(key: &CacheKey) -> String {
    let objects = OBJECTS.lock().unwrap();
    let mut paths = objects
        .keys()
        .filter(|p| p.ends_with(key.digest().as_str()));
    let path = paths.next().expect("the put reached the tier").clone();
    assert!(paths.next().is_none());
    path
}

/// A remote holding `artefact(seed, len)` under `key(c)`, put from a writer in the directory.
fn stored(c: char, seed: u8, len: usize) -> (tempfile::TempDir, CacheKey, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let k = key(c);
    let bytes = artefact(seed, len);
    put(dir.path(), &k, &bytes);
    (dir, k, bytes)
}

/// The local store in `dir`, on its own.
fn local(dir: std::path::PathBuf) -> Store {
    Store::open(&Settings {
        cache_dir: dir,
        ..Settings::default()
    })
    .unwrap()
}

/// The reader's remote hits and corrupt values.
fn hits_and_corrupt(reader: &Tiered) -> (u64, u64) {
    let stats = reader.stats().unwrap().remote;
    (stats.remote_hits, stats.remote_corrupt)
}

fn hit(lookup: Lookup) -> Vec<u8> {
    match lookup {
        Lookup::Hit(a) => a.bytes.to_vec(),
        other => panic!("expected a hit, got {other:?}"),
    }
}

#[test]
fn a_value_in_many_parts_is_served_whole_and_its_backfill_lands_before_drop_returns() {
    let (dir, k, bytes) = stored('a', 1, 100_000);
    assert!(object(&path_of(&k)).unwrap().len() > 50 * PART);

    let reader_dir = dir.path().join("reader");
    let reader = tiered(&reader_dir);
    assert_eq!(hit(reader.get(&k).unwrap()), bytes);
    assert_eq!(hits_and_corrupt(&reader), (1, 0));
    drop(reader);
    // Dropping joined the back-fill: the local store alone has the entry now.
    assert_eq!(hit(local(reader_dir).get(&k).unwrap()), bytes);
}

#[test]
fn a_second_lookup_in_the_same_process_waits_for_the_backfill_and_hits_locally() {
    let (dir, k, bytes) = stored('b', 2, 30_000);
    let reader = tiered(&dir.path().join("reader"));
    assert_eq!(hit(reader.get(&k).unwrap()), bytes);
    let path = path_of(&k);
    OBJECTS.lock().unwrap().remove(&path);
    assert_eq!(
        hit(reader.get(&k).unwrap()),
        bytes,
        "served by the local copy"
    );
    assert_eq!(reader.stats().unwrap().remote.remote_hits, 1);
}

/// Redis reads a value in several `GETRANGE`s: one replaced between two of them (another host
/// storing the same key) gives a mix that fails its checks. It is read again whole, and the
/// newer value is served; nothing is counted as corrupt.
#[test]
fn a_value_replaced_between_two_parts_is_read_again_whole() {
    let dir = tempfile::tempdir().unwrap();
    let k = key('c');
    let (older, newer) = (artefact(3, 20_000), artefact(4, 20_000));
    put(dir.path(), &k, &older);
    let path = path_of(&k);
    let older_value = object(&path).unwrap();
    put(dir.path(), &k, &newer);
    let newer_value = object(&path).unwrap();
    OBJECTS.lock().unwrap().insert(path.clone(), older_value);
    REPLACE_MID_READ.lock().unwrap().insert(path, newer_value);

    let reader = tiered(&dir.path().join("reader"));
    assert_eq!(hit(reader.get(&k).unwrap()), newer);
    assert_eq!(hits_and_corrupt(&reader), (1, 0));
}

/// A flipped byte anywhere in the payload is refused (read in parts, then whole), counted
/// once, and nothing reaches the local store.
#[test]
fn a_damaged_value_read_in_parts_is_refused_and_never_copied() {
    let (dir, k, _) = stored('d', 5, 20_000);
    let path = path_of(&k);
    for at in [0usize, 10, 5_000, 19_999] {
        let mut value = object(&path).unwrap();
        let len = value.len();
        value[len - 20_000 + at] ^= 0x40;
        OBJECTS.lock().unwrap().insert(path.clone(), value);
        let reader_dir = dir.path().join(format!("reader-{at}"));
        let reader = tiered(&reader_dir);
        assert!(matches!(reader.get(&k).unwrap(), Lookup::Miss), "byte {at}");
        assert_eq!(hits_and_corrupt(&reader), (0, 1), "byte {at}");
        drop(reader);
        assert_eq!(local(reader_dir).stats().unwrap().entries, 0);
    }
}
