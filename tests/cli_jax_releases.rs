//! `mlir-cache-key key --jax-version`: the release's recipe (tests/cli_key.rs checks every
//! release's vectors, whose recipe follows --compiler-version), a topology in the wrong form or
//! an unknown release refused by name, and `why` saying that two keys followed different
//! recipes.

mod common;

use common::{bin, data, failure, success, text};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn json(path: &Path) -> Value {
    serde_json::from_slice(&common::read(path)).expect("json")
}

/// `key` with every input of the vector in `dir`; `extra` goes before the `--` argv.
fn key_command(dir: &Path, extra: &[&str]) -> Command {
    let env = json(&dir.join("env.json"));
    let text_of = |k: &str| env[k].as_str().unwrap_or("").to_string();
    let mut command = bin();
    command
        .arg("key")
        .arg("--computation-bytes")
        .arg(dir.join("computation.mlirbc"))
        .args(["--module-name", &text_of("module_name")])
        .args(["--compiler-version", &text_of("jaxlib_version")])
        .args(["--platform", &text_of("platform")])
        .args(["--platform-version", &text_of("platform_version")])
        .args(["--runtime-type", &text_of("runtime_type")])
        .arg("--compile-options")
        .arg(dir.join("compile_options.pb"))
        .args(["--compression", &text_of("compression")])
        .args(["--custom-hook", &text_of("custom_hook")])
        .args(extra);
    match env["topology_fingerprint"].as_u64() {
        Some(f) => {
            command.args(["--topology-fingerprint", &f.to_string()]);
        }
        None if dir.join("topology.bin").exists() => {
            command
                .arg("--topology-serialized")
                .arg(dir.join("topology.bin"));
        }
        None => {
            for kind in env["device_kinds"].as_array().unwrap() {
                command.args(["--device-kind", kind.as_str().unwrap()]);
            }
        }
    }
    command
        .env_remove("XLA_FLAGS")
        .env_remove("LIBTPU_INIT_ARGS");
    for var in ["XLA_FLAGS", "LIBTPU_INIT_ARGS"] {
        if let Some(value) = env[var].as_str() {
            command.env(var, value);
        }
    }
    command.arg("--");
    for arg in env["argv"].as_array().unwrap() {
        command.arg(arg.as_str().unwrap());
    }
    command
}

#[test]
fn jax_version_picks_the_recipe_and_why_names_both() {
    let dir = data("parity/0.10.2/jit_mlp");
    let expected = json(&dir.join("expected.json"));
    let own = text(success(&mut key_command(
        &dir,
        &["--jax-version", "0.10.1"],
    )));
    assert_eq!(own, expected["key"].as_str().unwrap());

    // The same inputs under 0.12's recipe: two flags of this vector are excluded there.
    let records = tempfile::tempdir().expect("tempdir");
    let record = |version: &str, name: &str| {
        let path = records.path().join(name);
        let json = success(&mut key_command(
            &dir,
            &["--json", "--jax-version", version],
        ));
        std::fs::write(&path, json).expect("write record");
        path
    };
    let old = record("0.10.2", "old.json");
    let new = record("0.12.0.1", "new.json");
    assert_eq!(json(&old)["recipe"], "jax-0.10.0");
    assert_eq!(json(&new)["recipe"], "jax-0.12.0");
    let why = text(success(bin().arg("why").arg(&old).arg(&new)));
    assert!(
        why.contains("made with different JAX recipes: jax-0.10.0 → jax-0.12.0"),
        "{why}"
    );
    assert!(why.contains("--xla_tpu_compiler_variant added"), "{why}");

    // ≤ 0.9 hashes the serialized topology, so a fingerprint is refused there, by name.
    let stderr = failure(
        bin().args([
            "key",
            "--computation-bytes",
            &dir.join("computation.mlirbc").display().to_string(),
            "--module-name",
            "m",
            "--jax-version",
            "0.9.2",
            "--topology-fingerprint",
            "7",
        ]),
        common::EX_DATAERR,
    );
    assert!(
        stderr.contains("jax-0.8.2") && stderr.contains("Serialized"),
        "{stderr}"
    );

    let stderr = failure(
        bin()
            .args(["key", "--module-name", "m", "--jax-version", "0.7.2"])
            .arg("--computation-bytes")
            .arg(dir.join("computation.mlirbc")),
        common::EX_DATAERR,
    );
    assert!(
        stderr.contains("\"0.7.2\"") && stderr.contains("0.12.0.1"),
        "{stderr}"
    );
}
