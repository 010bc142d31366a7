//! The lookup history (`history.rs`) as a real cache writes it: one line per counted event,
//! hits served on a full disk with the history lost (never the hit), and a history that reads
//! whole again once there is space.

use std::fs;
use std::io::Write as _;

use crate::common::{self, clock, key, open_at, payload};
use mck_store::history::{What, read_history};
use mck_store::{Lookup, Store};
use serde_json::json;

fn hits_in_history(dir: &std::path::Path) -> usize {
    let read = read_history(&dir.join("v1"), 0).unwrap();
    read.events
        .iter()
        .filter(|e| matches!(e.what, What::Hit { .. }))
        .count()
}

fn is_hit(store: &Store, k: &mck_store::CacheKey) -> bool {
    matches!(store.get(k).unwrap(), Lookup::Hit(_))
}

#[test]
fn every_counted_lookup_leaves_one_line_with_what_its_entry_saved() {
    let c = clock();
    let dir = tempfile::tempdir().unwrap();
    let store = open_at(dir.path(), &c, |_| {});
    let k = key("jit_f", "a");
    assert_eq!(store.get(&k).unwrap(), Lookup::Miss);
    store
        .put(&k, b"artefact", &json!({"compile_ms": 1234}))
        .unwrap();
    assert!(is_hit(&store, &k) && is_hit(&store, &k));
    let read = read_history(&dir.path().join("v1"), 0).unwrap();
    let kinds: Vec<&What> = read.events.iter().map(|e| &e.what).collect();
    assert!(
        matches!(
            kinds[..],
            [
                What::Miss { .. },
                What::Stored {
                    compile_ms: Some(1234),
                    ..
                },
                What::Hit {
                    saved_ms: Some(1234),
                    ..
                },
                What::Hit { .. }
            ]
        ),
        "{kinds:?}"
    );
    let stats = store.stats().unwrap();
    assert_eq!((stats.hits, stats.misses, stats.puts), (2, 1, 1));
}

#[test]
fn a_full_disk_loses_history_lines_never_a_hit() {
    // A real full filesystem: a 512 KiB tmpfs.
    common::on_small_tmpfs(
        "a_full_disk_loses_history_lines_never_a_hit",
        "512k",
        |mnt| {
            let c = clock();
            let cache = mnt.join("cache");
            let store = open_at(&cache, &c, |_| {});
            let k = key("jit_f", "a");
            store.put(&k, &payload(1, 1000), &json!({})).unwrap();
            assert!(is_hit(&store, &k));
            let before = hits_in_history(&cache);
            // Fill the disk to the last byte.
            let filler = mnt.join("filler");
            let mut f = fs::File::create(&filler).unwrap();
            let chunk = vec![0u8; 4096];
            while f.write(&chunk).is_ok_and(|n| n > 0) {}
            while f.write(&chunk[..1]).is_ok_and(|n| n > 0) {}
            drop(f);
            // Enough hits to need more pages than the history's last one had left.
            for _ in 0..100 {
                assert!(is_hit(&store, &k), "a full disk must not cost a hit");
            }
            fs::remove_file(&filler).unwrap();
            assert!(is_hit(&store, &k) && is_hit(&store, &k));
            let read = read_history(&cache.join("v1"), 0).unwrap();
            // At most one line torn by the full disk; the lines after it read whole.
            assert!(read.unreadable <= 1, "{read:?}");
            assert!(hits_in_history(&cache) >= before + 2, "{read:?}");
            assert!(matches!(read.events.last().unwrap().what, What::Hit { .. }));
        },
    );
}
