//! `cache show KEY|ADDRESS` and `why KEY1 KEY2` reading records from the cache.

mod common;

use common::{EX_NOINPUT, bin, corpus, failure, success, text};
use std::path::Path;

fn exec(dir: &Path, module: &Path, address: Option<&str>) {
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
        .arg(&out);
    if let Some(a) = address {
        c.args(["--address", a]);
    }
    c.arg("--")
        .arg(dir.join("compiler.sh"))
        .arg(module)
        .arg(&out);
    success(&mut c);
}

fn keys(dir: &Path) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_slice(&success(
        bin()
            .args([
                "cache",
                "entries",
                "--sort",
                "name",
                "--json",
                "--cache-dir",
            ])
            .arg(dir.join("cache")),
    ))
    .unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| e["key"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn show_by_key_and_address_and_why_between_stored_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    common::write_compiler(&dir.join("compiler.sh"), "v1");
    let a = dir.join("a.mlir");
    std::fs::copy(corpus("cpu/mlp.a.generic.mlir"), &a).unwrap();
    let b = dir.join("b.mlir");
    std::fs::copy(corpus("cpu/mlp.a_batch5.generic.mlir"), &b).unwrap();
    exec(dir, &a, None);
    exec(dir, &b, Some("t/answer"));
    let keys = keys(dir);
    assert_eq!(keys.len(), 2, "{keys:?}");

    let shown = text(success(
        bin()
            .args(["cache", "show", &keys[0], "--cache-dir"])
            .arg(dir.join("cache")),
    ));
    assert!(
        shown.starts_with(&format!("key          {}", keys[0])),
        "{shown}"
    );
    assert!(shown.contains("state        ok"), "{shown}");
    assert!(shown.contains("computation"), "{shown}");

    let by_address: serde_json::Value = serde_json::from_slice(&success(
        bin()
            .args(["cache", "show", "t/answer", "--json", "--cache-dir"])
            .arg(dir.join("cache")),
    ))
    .unwrap();
    assert_eq!(by_address["schema"], "mlir-cache-key.entry.v1");
    assert!(keys.contains(&by_address["key"].as_str().unwrap().to_owned()));
    assert!(
        by_address["ingredients"]["entries"].is_array(),
        "{by_address}"
    );

    let e = failure(
        bin()
            .args(["cache", "show", "no/such/address", "--cache-dir"])
            .arg(dir.join("cache")),
        EX_NOINPUT,
    );
    assert!(e.contains("no/such/address"), "{e}");

    let why = text(success(
        bin()
            .args(["why", &keys[0], &keys[1], "--cache-dir"])
            .arg(dir.join("cache")),
    ));
    assert!(why.contains("computation"), "{why}");
    let why_json: serde_json::Value = serde_json::from_slice(&success(
        bin()
            .args(["why", &keys[0], "t/answer", "--json", "--cache-dir"])
            .arg(dir.join("cache")),
    ))
    .unwrap();
    assert_eq!(why_json["schema"], "mlir-cache-key.why.v1");
    assert_eq!(
        why_json["differences"][0]["name"], "computation",
        "{why_json}"
    );
}
