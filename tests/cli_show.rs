//! `cache show KEY|ADDRESS` and `why KEY1 KEY2` reading records from the cache.

use crate::common::{
    self, EX_NOINPUT, bin, corpus, exec_through_compiler_sh, failure, success, text,
};
use std::path::Path;

fn exec(dir: &Path, module: &Path, address: Option<&str>) {
    let options = match address {
        Some(a) => vec!["--address", a],
        None => Vec::new(),
    };
    success(&mut exec_through_compiler_sh(dir, module, &options, &[]));
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
    // The key not at t/answer (the listing's order follows the digests).
    let at_answer = by_address["key"].as_str().unwrap();
    let other = keys.iter().find(|k| *k != at_answer).unwrap();
    let why_json: serde_json::Value = serde_json::from_slice(&success(
        bin()
            .args(["why", other, "t/answer", "--json", "--cache-dir"])
            .arg(dir.join("cache")),
    ))
    .unwrap();
    assert_eq!(why_json["schema"], "mlir-cache-key.why.v1");
    assert_eq!(
        why_json["differences"][0]["name"], "computation",
        "{why_json}"
    );
}

/// `cache put KEY ARTEFACT --record` into `dir`'s cache, with `record` as the record.
fn put(dir: &Path, key: &str, artefact: &Path, record: &serde_json::Value) {
    let path = dir.join(format!("{key}.json"));
    std::fs::write(&path, record.to_string()).unwrap();
    success(
        bin()
            .args(["cache", "put", key])
            .arg(artefact)
            .arg("--record")
            .arg(&path)
            .arg("--cache-dir")
            .arg(dir.join("cache")),
    );
}

/// The stored entry's `cache show --json`, and its text.
fn show(cache: &Path, key: &str) -> (serde_json::Value, String) {
    let json = serde_json::from_slice(&success(
        bin()
            .args(["cache", "show", key, "--json", "--cache-dir"])
            .arg(cache),
    ))
    .unwrap();
    let shown = text(success(
        bin().args(["cache", "show", key, "--cache-dir"]).arg(cache),
    ));
    (json, shown)
}

#[test]
fn show_of_an_exec_entry_names_its_compiler_arguments_environment_and_input() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let compiler = dir.join("compiler.sh");
    common::write_compiler(&compiler, "v1");
    let module = dir.join("a.mlir");
    std::fs::copy(corpus("cpu/mlp.a.generic.mlir"), &module).unwrap();
    let out = dir.join("out.bin");
    let cache = dir.join("cache");
    let options = [
        "--env",
        "DECLARED",
        "--env",
        "UNSET_ONE",
        "--compiler-check",
        "command:echo mycc 1.2.3; echo second line",
    ];
    success(
        exec_through_compiler_sh(dir, &module, &options, &["-O2"])
            .env("DECLARED", "on")
            .env_remove("UNSET_ONE")
            .env(
                "XLA_FLAGS",
                "--xla_cpu_enable_fast_math=true --xla_dump_to=/tmp/d",
            ),
    );
    let key = keys(dir).pop().expect("one entry");
    let canonical = text(success(bin().args(["canon", "--digest"]).arg(&module)));
    let canonical = canonical.trim();

    let (json, shown) = show(&cache, &key);
    let exec = &json["exec"];
    let resolved = std::fs::canonicalize(&compiler).unwrap();
    assert_eq!(
        std::fs::canonicalize(exec["compiler"]["path"].as_str().expect("a path")).unwrap(),
        resolved,
        "{exec}"
    );
    assert_eq!(exec["compiler"]["version"], "mycc 1.2.3", "{exec}");
    assert!(
        exec["compiler"]["identity"]
            .as_str()
            .unwrap()
            .starts_with("command:")
    );
    assert_eq!(
        exec["arguments"],
        serde_json::json!(["{input}", "{output}", "-O2"])
    );
    assert_eq!(
        exec["environment"],
        serde_json::json!({"DECLARED": "on", "UNSET_ONE": null})
    );
    assert_eq!(
        exec["xla_flags"],
        serde_json::json!(["--xla_cpu_enable_fast_math=true"])
    );
    assert_eq!(
        exec["xla_flags_left_out"],
        serde_json::json!(["--xla_dump_to=/tmp/d"])
    );
    assert_eq!(exec["input"]["canonical_sha256"], canonical, "{exec}");
    for line in [
        format!(
            "compiler     {}",
            exec["compiler"]["path"].as_str().unwrap()
        ),
        "  version    mycc 1.2.3".to_string(),
        "arguments    {input} {output} -O2".to_string(),
        "environment  DECLARED=on, UNSET_ONE unset".to_string(),
        "XLA flags    --xla_cpu_enable_fast_math=true".to_string(),
        "  left out   --xla_dump_to=/tmp/d".to_string(),
        format!("input        canonical sha256 {canonical} ("),
    ] {
        assert!(shown.contains(&line), "no {line:?} in:\n{shown}");
    }

    // An entry stored before the compiler's path and version were recorded still shows the
    // rest, from its key record.
    let mut old = json["ingredients"].clone();
    old.as_object_mut().unwrap().remove("exec");
    let old_key = format!("old-{}", "ab".repeat(32));
    put(dir, &old_key, &out, &old);
    let (old_json, old_shown) = show(&cache, &old_key);
    assert_eq!(
        old_json["exec"]["compiler"]["path"],
        serde_json::Value::Null
    );
    assert_eq!(old_json["exec"]["arguments"], exec["arguments"]);
    assert!(
        old_shown.contains("compiler     (path not recorded)"),
        "{old_shown}"
    );
    assert!(old_shown.contains("  version    not known"), "{old_shown}");

    // Not an exec entry: no exec part.
    let plain_key = format!("plain-{}", "cd".repeat(32));
    put(dir, &plain_key, &out, &serde_json::json!({}));
    let (plain_json, plain_shown) = show(&cache, &plain_key);
    assert!(plain_json.get("exec").is_none(), "{plain_json}");
    assert!(!plain_shown.contains("compiler "), "{plain_shown}");
}
