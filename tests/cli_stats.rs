//! `cache stats`: hit rate, miss reasons recorded by `exec`, human sizes, `--zero`, and
//! counters that survive the loss of the index.

use crate::common::{self, Site, bin, success, text};
use std::path::Path;
use std::process::Command;

/// `exec` of `module` in `site` (its compiler, its cache), `extra` passed to the compiler.
fn exec(site: &Site, module: &Path, extra: &[&str]) -> Command {
    let mut c = site.bin();
    // Entry counts below: no direct-mode manifests.
    c.args(["exec", "--no-direct", "--cache-dir"])
        .arg(site.path("cache"));
    let out = site.path("out.bin");
    common::compile(&mut c, &site.compiler(), module, &out).args(extra);
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
    let site = Site::new("v1");
    let dir = site.dir.path();
    let module = site.module("cpu/mlp.a.generic.mlir", "mlp.mlir");
    let batch5 = site.module("cpu/mlp.a_batch5.generic.mlir", "batch5.mlir");

    success(&mut exec(&site, &module, &[])); // miss: new
    success(&mut exec(&site, &module, &[])); // hit
    success(&mut exec(&site, &batch5, &[])); // miss: the computation moved
    common::write_compiler(&site.compiler(), "v2");
    success(&mut exec(&site, &batch5, &[])); // miss: the compiler moved (nearest: batch5 by v1)
    success(&mut exec(&site, &batch5, &["--fast"])); // miss: an argument moved

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

    // The index is disposable: the counters live beside it (counters.sqlite).
    let index = dir.join("cache/v1/index.sqlite");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", index.display()));
    }
    let s = stats(dir, &[]);
    assert_eq!(s["entries"], 4, "rebuilt from the entry files: {s}");
    common::assert_counters(&s, ["hits", "misses"], [1, 4]);
    assert_eq!(s["miss_reasons"]["compiler"], 1, "{s}");

    // A damaged index: the counters are not in it.
    std::fs::write(&index, b"not a database").unwrap();
    let s = stats(dir, &[]);
    assert_eq!(s["hits"], 1, "{s}");

    let s = stats(dir, &["--zero"]);
    common::assert_counters(&s, ["hits", "misses"], [0, 0]);
    assert!(s["hit_rate"].is_null(), "{s}");
    assert_eq!(s["miss_reasons"], serde_json::json!({}));
    assert_eq!(s["entries"], 4, "zeroing keeps the entries: {s}");
    assert!(s["zeroed_ms"].as_i64().unwrap() > 0, "{s}");
    success(&mut exec(&site, &batch5, &[])); // hit
    let s = stats(dir, &[]);
    assert_eq!(s["hits"], 1, "{s}");
}
