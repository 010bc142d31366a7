//! Entries published without fsync (the Python package's choice, as JAX's own cache makes it):
//! a rename publishes each whole or not at all whatever kills the process, and what a power
//! loss can leave instead — a file cut short, or blocks of zeros where data was — is caught on
//! read at any offset: a miss (the file quarantined), never wrong bytes.

use std::fs;

use crate::common::{fresh, key, payload};
use mck_store::Lookup;
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
