//! Suspect entries (a hit audit caught them) and the audit counters, on a real filesystem:
//! kept on disk, never served by any read path, lifted by a put of another payload.

use crate::common::{fresh, key};
use mck_store::{
    AuditCounts, AuditOutcome, CacheKey, ListFilter, Lookup, MAX_SUSPECT_REASON_LEN, Store,
    Streamed,
};
use serde_json::json;

/// A fresh store holding `payload` under `k`, marked suspect for `reason`.
fn marked(k: CacheKey, payload: &[u8], reason: &str) -> (tempfile::TempDir, Store, CacheKey) {
    let (dir, _c, store) = fresh();
    store.put(&k, payload, &json!({})).unwrap();
    store.mark_suspect(&k, reason).unwrap();
    (dir, store, k)
}

#[test]
fn a_suspect_entry_is_kept_but_never_served() {
    let (dir, store, k) = marked(
        key("jit_f", "a"),
        b"stale artefact",
        "MODEL_SCALE: set differently",
    );

    let entry = store.layout().entry_path(k.digest());
    assert!(entry.exists(), "the entry stays for inspection");
    assert_eq!(store.get(&k).unwrap(), Lookup::Miss);
    assert_eq!(store.recheck(&k).unwrap(), Lookup::Miss);
    let out = dir.path().join("out.bin");
    assert_eq!(store.get_to(&k, &out, 0o644).unwrap(), Streamed::Miss);
    assert!(!out.exists());
    let marker = store.suspect(&k).unwrap().expect("marked");
    assert_eq!(marker.reason, "MODEL_SCALE: set differently");
    let listed = store.list(&ListFilter::default()).unwrap();
    assert_eq!(
        listed[0].suspect.as_deref(),
        Some("MODEL_SCALE: set differently")
    );

    // The same payload stored again stays condemned; another one lifts the mark.
    store.put(&k, b"stale artefact", &json!({})).unwrap();
    assert_eq!(store.get(&k).unwrap(), Lookup::Miss);
    store.put(&k, b"fresh artefact", &json!({})).unwrap();
    match store.get(&k).unwrap() {
        Lookup::Hit(a) => assert_eq!(&a.bytes[..], b"fresh artefact"),
        other => panic!("the fresh put is not served: {other:?}"),
    }
    assert_eq!(store.suspect(&k).unwrap(), None);
    assert_eq!(store.list(&ListFilter::default()).unwrap()[0].suspect, None);
    assert!(!store.layout().suspect_path(k.digest()).exists());
}

#[test]
fn a_marker_is_bounded_and_gc_drops_it_with_its_entry() {
    let reason = "é".repeat(MAX_SUSPECT_REASON_LEN);
    let (_dir, store, k) = marked(key("jit_g", "b"), b"artefact", &reason);
    let reason = store.suspect(&k).unwrap().unwrap().reason;
    assert!(reason.len() <= MAX_SUSPECT_REASON_LEN + '…'.len_utf8());
    assert_eq!(
        store.gc().unwrap().suspects_removed,
        0,
        "its entry is there"
    );
    store.remove(&k).unwrap();
    assert_eq!(store.gc().unwrap().suspects_removed, 1);
    // Marking what is not stored marks nothing.
    store.mark_suspect(&key("jit_h", "c"), "none").unwrap();
    assert!(store.suspects().unwrap().is_empty());
}

#[test]
fn audits_are_counted_by_outcome() {
    let (_dir, _c, store) = fresh();
    store.record_audit(AuditOutcome::Confirmed);
    store.record_audit(AuditOutcome::Confirmed);
    store.record_audit(AuditOutcome::FalseHit);
    store.record_audit(AuditOutcome::Nondeterministic);
    assert_eq!(
        store.stats().unwrap().audits,
        AuditCounts {
            run: 4,
            confirmed: 2,
            false_hits: 1,
            nondeterministic: 1
        }
    );
    let json = serde_json::to_value(store.stats().unwrap()).unwrap();
    assert_eq!(json["audits"]["false_hits"], 1);
}
