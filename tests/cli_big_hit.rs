//! A hit streams its artefact: a direct hit writing a 1 GiB artefact stays under 64 MB of peak
//! RSS (the front binary, without MLIR), and a canonical hit adds as little to what the MLIR
//! binary starts with (~90 MB: libMLIR/libLLVM mapped and relocated, as its `--version` shows).

use crate::common::{self, bin, corpus};

/// Peak RSS of a direct hit, and what a canonical hit may add to the MLIR binary's start-up
/// RSS, whatever the artefact's size.
const MAX_HIT_RSS_KB: i64 = 64 * 1024;
const ARTEFACT: u64 = 1 << 30;

#[test]
fn a_hit_on_a_1_gib_artefact_keeps_rss_small() {
    let dir = tempfile::tempdir().expect("tempdir");
    let compiler = dir.path().join("big.sh");
    let script = format!("#!/bin/sh\ntruncate -s {ARTEFACT} \"$2\"\n");
    common::write_script(&compiler, &script);
    let module = dir.path().join("m.mlir");
    std::fs::copy(corpus("cpu/mlp.a.generic.mlir"), &module).expect("copy");
    let out = dir.path().join("out.bin");
    let exec = |extra: &[&str]| {
        let mut c = bin();
        c.arg("exec")
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .args(extra)
            .arg("--input")
            .arg(&module)
            .arg("--output")
            .arg(&out)
            .arg("--")
            .arg(&compiler)
            .arg(&module)
            .arg(&out);
        c
    };
    // The MLIR binary's start-up (the front serves `--version` itself, without MLIR).
    let mlir_binary = env!("CARGO_BIN_EXE_mlir-cache-key-mlir");
    let (_, start_kb) =
        common::peak_rss_kib(std::process::Command::new(mlir_binary).arg("--version"));
    assert_eq!(common::peak_rss_kib(&exec(&[])).0, 0, "the miss");
    for (extra, base_kb) in [(&[][..], 0), (&["--no-direct"][..], start_kb)] {
        std::fs::remove_file(&out).expect("remove output");
        let (code, rss_kb) = common::peak_rss_kib(&exec(extra));
        assert_eq!(code, 0, "the hit {extra:?}");
        assert_eq!(std::fs::metadata(&out).expect("output").len(), ARTEFACT);
        assert!(
            rss_kb - base_kb < MAX_HIT_RSS_KB,
            "a hit {extra:?} peaked at {rss_kb} KiB of RSS ({start_kb} KiB at the MLIR binary's \
             start-up)"
        );
    }
}

/// `cache put` and `cache get -o` stream a multi-chunk file through the cache unchanged, and
/// the stored entry verifies.
#[test]
fn put_and_get_stream_a_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("in.bin");
    let bytes: Vec<u8> = (0..(3 << 20) + 17)
        .map(|i: u32| (i * 7 % 251) as u8)
        .collect();
    std::fs::write(&file, &bytes).expect("write");
    let key = format!("big-{}", "ab".repeat(32));
    let cache = |args: &[&str]| {
        let mut c = bin();
        c.args(["cache", "--cache-dir"])
            .arg(dir.path().join("cache"))
            .args(args);
        c
    };
    common::success(cache(&["put", &key]).arg(&file));
    let out = dir.path().join("out.bin");
    common::success(cache(&["get", &key, "-o"]).arg(&out));
    assert!(std::fs::read(&out).expect("output") == bytes, "round trip");
    let verify = common::text(common::success(&mut cache(&["verify"])));
    assert!(verify.contains("1 valid, 0 quarantined"), "{verify}");
}
