//! `cache stats`: hit rate, miss reasons recorded by `exec`, human sizes, `--zero`, and
//! counters that survive the loss of the index.

mod common;

use common::{bin, corpus, success, text};
use std::path::Path;
use std::process::Command;

fn exec(dir: &Path, module: &Path, extra: &[&str]) -> Command {
    let out = dir.join("out.bin");
    let mut c = bin();
    c.env("RUNS", dir.join("runs"))
        .arg("exec")
        // Entry counts below: no direct-mode manifests.
        .arg("--no-direct")
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .arg("--input")
        .arg(module)
        .arg("--output")
        .arg(&out)
        .arg("--")
        .arg(dir.join("compiler.sh"))
        .arg(module)
        .arg(&out)
        .args(extra);
    c
}

fn stats(dir: &Path, extra: &[&str]) -> serde_json::Value {
    serde_json::from_slice(&success(
        bin()
            .args(["cache", "stats", "--json", "--cache-dir"])
            .arg(dir.join("cache"))
            .args(extra),
    ))
    .expect("JSON")
}

#[test]
fn hit_rate_reasons_zero_and_survival_of_an_index_rebuild() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    common::write_compiler(&dir.join("compiler.sh"), "v1");
    let module = dir.join("mlp.mlir");
    std::fs::copy(corpus("cpu/mlp.a.generic.mlir"), &module).unwrap();
    let batch5 = dir.join("batch5.mlir");
    std::fs::copy(corpus("cpu/mlp.a_batch5.generic.mlir"), &batch5).unwrap();

    success(&mut exec(dir, &module, &[])); // miss: new
    success(&mut exec(dir, &module, &[])); // hit
    success(&mut exec(dir, &batch5, &[])); // miss: the computation moved
    common::write_compiler(&dir.join("compiler.sh"), "v2");
    success(&mut exec(dir, &batch5, &[])); // miss: the compiler moved (nearest: batch5 by v1)
    success(&mut exec(dir, &batch5, &["--fast"])); // miss: an argument moved

    let s = stats(dir, &[]);
    assert_eq!(s["schema"], "mlir-cache-key.stats.v1");
    assert_eq!(s["hits"], 1, "{s}");
    assert_eq!(s["misses"], 4, "{s}");
    assert_eq!(s["hit_rate"], 0.2, "{s}");
    assert_eq!(s["miss_reasons"]["option"], 1, "{s}");
    assert_eq!(s["miss_reasons"]["new"], 1, "{s}");
    assert_eq!(s["miss_reasons"]["computation"], 1, "{s}");
    assert_eq!(s["miss_reasons"]["compiler"], 1, "{s}");

    let human = text(success(
        bin()
            .args(["cache", "stats", "--cache-dir"])
            .arg(dir.join("cache")),
    ));
    assert!(human.contains("hit rate            20.0%"), "{human}");
    assert!(human.contains("of 100.0 GB"), "{human}");
    assert!(
        human.contains("misses by reason    compiler 1, computation 1, new 1, option 1"),
        "{human}"
    );

    // The index is disposable: the counters come back from the snapshot.
    let index = dir.join("cache/v1/index.sqlite");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", index.display()));
    }
    let s = stats(dir, &[]);
    assert_eq!(s["entries"], 4, "rebuilt from the entry files: {s}");
    assert_eq!(
        (s["hits"].as_u64(), s["misses"].as_u64()),
        (Some(1), Some(4))
    );
    assert_eq!(s["miss_reasons"]["compiler"], 1, "{s}");

    // A damaged index: its counters are salvaged or the snapshot restores them.
    std::fs::write(&index, b"not a database").unwrap();
    let s = stats(dir, &[]);
    assert_eq!(s["hits"], 1, "{s}");

    let s = stats(dir, &["--zero"]);
    assert_eq!(
        (s["hits"].as_u64(), s["misses"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(s["hit_rate"].is_null(), "{s}");
    assert_eq!(s["miss_reasons"], serde_json::json!({}));
    assert_eq!(s["entries"], 4, "zeroing keeps the entries: {s}");
    assert!(s["zeroed_ms"].as_i64().unwrap() > 0, "{s}");
    success(&mut exec(dir, &batch5, &[])); // hit
    let s = stats(dir, &[]);
    assert_eq!(s["hits"], 1, "{s}");
}
