//! Entries published without fsync (the Python package's choice, as JAX's own cache makes it):
//! a rename publishes each whole or not at all whatever kills the process, and what a power
//! loss can leave instead — a file cut short, or blocks of zeros where data was — is caught on
//! read at any offset: a miss (the file quarantined), never wrong bytes.

use std::fs;

use crate::common::{self, fresh, key, payload};
use mck_store::Lookup;
use mck_store::Store;
use serde_json::json;

#[test]
fn a_cut_or_zero_filled_entry_is_never_served_at_any_offset() {
    let (_dir, _clock, store) = fresh();
    assert!(
        !store.settings().fsync,
        "the shape under test: published without a sync"
    );
    let k = key("jit_torn", "torn");
    let artefact = payload(7, 9000);
    let ingredients = json!({"format": 1, "key": k.to_string(), "compile_ms": 12});
    store.put(&k, &artefact, &ingredients).unwrap();
    let path = store.layout().entry_path(k.digest());
    let whole = fs::read(&path).unwrap();
    // Every byte of the header and the metadata's start, then every 64th to the end, and the
    // last: each region's boundaries fall among them.
    let mut offsets: Vec<usize> = (0..128).chain((128..whole.len()).step_by(64)).collect();
    offsets.push(whole.len() - 1);
    let (mut served, mut refused) = (0, 0);
    for &at in &offsets {
        let cut = whole[..at].to_vec();
        let mut zeroed_block = whole.clone();
        zeroed_block[at..(at + 4096).min(whole.len())].fill(0);
        let mut zeroed_tail = whole.clone();
        zeroed_tail[at..].fill(0);
        for (damage, bytes) in [
            ("cut", cut),
            ("zeroed block", zeroed_block),
            ("zeroed tail", zeroed_tail),
        ] {
            fs::write(&path, &bytes).unwrap();
            match store.get(&k).unwrap() {
                Lookup::Hit(hit) => {
                    // Not assert_eq!: 9 kB of bytes in a failure message say nothing.
                    assert!(
                        hit.bytes.as_ref() == artefact.as_slice(),
                        "{damage} at {at}: wrong bytes served"
                    );
                    served += 1;
                }
                Lookup::Miss => refused += 1,
                Lookup::Failed(f) => panic!("{damage} at {at}: read as a failure {f:?}"),
            }
            // Publish it whole again for the next damage (a refused file was quarantined).
            store.put(&k, &artefact, &ingredients).unwrap();
        }
    }
    // Only damage that changed nothing (zeros written over zeros) may be served.
    assert!(
        served < offsets.len() / 10,
        "served {served} of {}",
        3 * offsets.len()
    );
    assert_eq!(served + refused, 3 * offsets.len());
    match store.get(&k).unwrap() {
        Lookup::Hit(hit) => assert!(hit.bytes.as_ref() == artefact.as_slice()),
        other => panic!("the whole entry reads back: {other:?}"),
    }
}

/// A new cache's databases are set up without a sync (`mck_store::sqlite::set_up`): a power
/// loss then may leave the index or the counters cut short or zero-filled, with or without
/// their write-ahead log. Every such state opens, the entry stored meanwhile (published as
/// usual) is still served, and the cache stores and serves again.
#[test]
fn a_new_cache_whose_databases_a_power_loss_damaged_opens_and_serves() {
    let (dir, clock, store) = fresh();
    let k = key("jit_new", "stored first");
    store.put(&k, &payload(5, 3000), &json!({})).unwrap();
    // The files as a power loss could find them: the store still open, its WAL not folded in.
    let pristine = tempfile::tempdir().unwrap();
    copy_files(&dir.path().join("v1"), &pristine.path().join("v1"));
    drop(store);
    for db in ["index.sqlite", "counters.sqlite"] {
        let whole = fs::read(pristine.path().join("v1").join(db)).unwrap();
        let page = 4096.min(whole.len());
        for at in [0, 1, 16, 99, 100, 512, page - 1, page, whole.len() - 1] {
            for (damage, zero_fill) in [("cut", false), ("zero-filled", true)] {
                for keep_wal in [true, false] {
                    let case = format!("{db} {damage} at {at}, WAL kept: {keep_wal}");
                    let copy = tempfile::tempdir().unwrap();
                    let v1 = copy.path().join("v1");
                    copy_files(&pristine.path().join("v1"), &v1);
                    let mut bytes = whole.clone();
                    match zero_fill {
                        true => bytes[at..].fill(0),
                        false => bytes.truncate(at),
                    }
                    fs::write(v1.join(db), &bytes).unwrap();
                    if !keep_wal {
                        let _ = fs::remove_file(v1.join(format!("{db}-wal")));
                    }
                    let reopened =
                        Store::open_with_clock(&common::settings(copy.path()), clock.clone())
                            .unwrap_or_else(|e| panic!("{case}: {e}"));
                    match reopened.get(&k).unwrap() {
                        Lookup::Hit(hit) => assert!(
                            hit.bytes.as_ref() == payload(5, 3000).as_slice(),
                            "{case}: wrong bytes"
                        ),
                        other => panic!("{case}: the stored entry was lost: {other:?}"),
                    }
                    let again = key("jit_new", &case);
                    reopened.put(&again, b"after", &json!({})).unwrap();
                    assert!(
                        matches!(reopened.get(&again).unwrap(), Lookup::Hit(h) if h.bytes.as_ref() == b"after"),
                        "{case}: no longer stores"
                    );
                    reopened
                        .stats()
                        .unwrap_or_else(|e| panic!("{case}: stats: {e}"));
                }
            }
        }
    }
}

/// Copies the regular files under `from` to `to`, keeping the tree.
fn copy_files(from: &std::path::Path, to: &std::path::Path) {
    fs::create_dir_all(to).unwrap();
    for item in fs::read_dir(from).unwrap() {
        let item = item.unwrap();
        let kind = item.file_type().unwrap();
        if kind.is_dir() {
            copy_files(&item.path(), &to.join(item.file_name()));
        } else if kind.is_file() {
            fs::copy(item.path(), to.join(item.file_name())).unwrap();
        }
    }
}
