//! The one compile-once API over the local tier: compile once, then replay the result or the
//! remembered failure; an abandoned compile is neither stored nor remembered.

use std::sync::Arc;
use std::time::Duration;

use mck_remote::{Compiled, Served, Tiered};
use mck_store::{CacheKey, EntryState, Failure, Lookup, ManualClock, Settings, Store, StoreError};
use serde_json::json;

fn key(name: &str, seed: &str) -> CacheKey {
    let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(seed.as_bytes()));
    CacheKey::parse(&format!("{name}-{digest}")).unwrap()
}

#[test]
fn the_chain_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Tiered>();
}

#[test]
fn compile_once_compiles_once_then_replays() {
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        cache_dir: dir.path().to_owned(),
        ..Settings::default()
    };
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let store = Tiered::local_only(Store::open_with_clock(&settings, clock).unwrap());
    let t = Duration::from_secs(5);
    let k = key("jit_goc", "goc");
    let mut calls = 0;
    let first = store
        .compile_once(&k, &json!({}), t, || -> Result<_, StoreError> {
            calls += 1;
            Ok(Compiled::Success(b"out".to_vec()))
        })
        .unwrap();
    assert_eq!(first, Served::Fresh(Compiled::Success(b"out".to_vec())));
    assert_eq!(first.state(), Some(EntryState::Ok));
    let second = store
        .compile_once(&k, &json!({}), t, || -> Result<Compiled, StoreError> {
            panic!("must not compile again")
        })
        .unwrap();
    assert!(matches!(second, Served::Cached(a) if a.bytes[..] == b"out"[..]));
    assert_eq!(calls, 1);

    let bad = key("jit_goc_bad", "goc_bad");
    let f = Failure {
        exit_status: Some(2),
        stderr: "nope".into(),
    };
    let r = store
        .compile_once(&bad, &json!({}), t, || -> Result<_, StoreError> {
            Ok(Compiled::Failed(f.clone()))
        })
        .unwrap();
    assert_eq!(r, Served::Fresh(Compiled::Failed(f.clone())));
    let r = store
        .compile_once(&bad, &json!({}), t, || -> Result<Compiled, StoreError> {
            panic!("the failure is remembered")
        })
        .unwrap();
    assert!(matches!(&r, Served::CachedFailure(cf) if cf.failure == f));
    assert_eq!(r.state(), Some(EntryState::Failed));

    // An abandoned compile (a killed compiler) is neither stored nor remembered.
    let killed = key("jit_goc_killed", "goc_killed");
    let r = store
        .compile_once(&killed, &json!({}), t, || -> Result<_, StoreError> {
            Ok(Compiled::Abandoned("killed".into()))
        })
        .unwrap();
    assert_eq!(r.state(), None);
    assert_eq!(store.get(&killed).unwrap(), Lookup::Miss);
}
