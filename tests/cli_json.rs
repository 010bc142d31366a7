//! `--json` (with a `schema`) and human output on the commands that report; progress on stderr
//! only under a terminal.

use crate::common::{self, bin, corpus, success, text};
use std::path::Path;
use std::process::Command;

fn mck(cache: &Path, args: &[&str]) -> Command {
    let mut c = bin();
    c.args(args).arg("--cache-dir").arg(cache);
    c
}

fn json(cache: &Path, args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.push("--json");
    serde_json::from_slice(&success(&mut mck(cache, &a))).expect("JSON")
}

/// One entry at address `t/answer` in run `r1`.
fn populated(dir: &Path) -> String {
    common::write_compiler(&dir.join("compiler.sh"), "v1");
    let module = dir.join("m.mlir");
    std::fs::copy(corpus("cpu/mlp.a.generic.mlir"), &module).unwrap();
    let out = dir.join("out.bin");
    success(
        bin()
            .env("RUNS", dir.join("runs"))
            .args([
                "exec",
                // Entry counts below: no direct-mode manifests.
                "--no-direct",
                "--run",
                "r1",
                "--address",
                "t/answer",
                "--cache-dir",
            ])
            .arg(dir.join("cache"))
            .arg("--input")
            .arg(&module)
            .arg("--output")
            .arg(&out)
            .arg("--")
            .arg(dir.join("compiler.sh"))
            .arg(&module)
            .arg(&out),
    );
    let entries = json(&dir.join("cache"), &["cache", "entries"]);
    entries[0]["key"].as_str().unwrap().to_owned()
}

#[test]
fn every_reporting_command_has_json_with_a_schema_and_text() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let cache = dir.join("cache");
    let key = populated(dir);

    let v = json(&cache, &["cache", "verify"]);
    assert_eq!(v["schema"], "mlir-cache-key.verify.v1");
    assert_eq!(v["entries"], 1);
    let t = text(success(&mut mck(&cache, &["cache", "verify"])));
    assert!(t.starts_with("checked 1 entry files: 1 valid"), "{t}");

    let v = json(&cache, &["cache", "gc"]);
    assert_eq!(v["schema"], "mlir-cache-key.gc.v1");
    assert_eq!(v["eviction"]["evicted"], 0);
    let t = text(success(&mut mck(&cache, &["cache", "gc"])));
    assert!(t.starts_with("evicted 0 entries (0 B)"), "{t}");

    let blob = dir.join("blob");
    std::fs::write(&blob, b"artefact").unwrap();
    let other = format!("other-{}", "ab".repeat(32));
    assert_ne!(other, key);
    let mut put = mck(&cache, &["cache", "put", &other, "--json"]);
    put.arg(&blob);
    let v: serde_json::Value = serde_json::from_slice(&success(&mut put)).unwrap();
    assert_eq!(v["schema"], "mlir-cache-key.put.v1");
    assert_eq!(v["bytes"], 8);
    let got = dir.join("got");
    let mut get = mck(&cache, &["cache", "get", &other, "--json"]);
    get.arg("-o").arg(&got);
    let v: serde_json::Value = serde_json::from_slice(&success(&mut get)).unwrap();
    assert_eq!(v["schema"], "mlir-cache-key.get.v1");
    assert_eq!(v["bytes"], 8);
    assert_eq!(std::fs::read(&got).unwrap(), b"artefact");
    // --json without --output is refused: stdout cannot carry both.
    common::failure(
        &mut mck(&cache, &["cache", "get", &other, "--json"]),
        common::EX_USAGE,
    );

    let archive = dir.join("r1.tar");
    let mut export = mck(&cache, &["runs", "export", "r1", "--json"]);
    export.arg(&archive);
    let v: serde_json::Value = serde_json::from_slice(&success(&mut export)).unwrap();
    assert_eq!(v["schema"], "mlir-cache-key.export.v1");
    assert_eq!(v["artefacts"], 1);

    let v = json(&cache, &["cache", "clear", "--all"]);
    assert_eq!(v["schema"], "mlir-cache-key.clear.v1");
    assert_eq!(v["removed_addresses"], 1);
    let v = json(&cache, &["cache", "adopt", "r1"]);
    assert_eq!(v["schema"], "mlir-cache-key.adopt.v1");
    assert_eq!(v["adopted"], 1, "{v}");

    let other_cache = dir.join("other");
    let mut import = mck(&other_cache, &["runs", "import", "--adopt-cache", "--json"]);
    import.arg(&archive);
    let v: serde_json::Value = serde_json::from_slice(&success(&mut import)).unwrap();
    assert_eq!(v["schema"], "mlir-cache-key.import.v1");
    assert_eq!(v["artefacts"], 1);
    assert_eq!(v["adopt"]["adopted"], 1, "{v}");

    let v = json(&cache, &["runs", "close", "r1"]);
    assert_eq!(v["schema"], "mlir-cache-key.close.v1");
    assert_eq!(v["closed_now"], true);
    let v = json(&cache, &["runs", "prune", "r1"]);
    assert_eq!(v["schema"], "mlir-cache-key.prune.v1");
    assert_eq!(v["pruned"][0], "r1");
}

/// Runs `command` under a pseudo-terminal (util-linux `script`), returning what it printed.
fn under_pty(command: &str) -> Option<String> {
    let out = Command::new("script")
        .args(["-q", "-e", "-c", command, "/dev/null"])
        .env_remove("CI")
        .env_remove("MLIR_CACHE_KEY_FLAGS")
        .env("MLIR_CACHE_KEY_PROGRESS_DELAY_MS", "0")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn progress_appears_under_a_terminal_and_not_in_a_pipe_or_json() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let cache = dir.join("cache");
    populated(dir);
    let exe = env!("CARGO_BIN_EXE_mlir-cache-key");
    let verify = format!("{exe} cache verify --cache-dir {}", cache.display());
    let Some(tty) = under_pty(&format!("{verify}; sleep 0.3")) else {
        eprintln!("skipped: util-linux `script` is not installed");
        return;
    };
    assert!(
        tty.contains("verifying entries"),
        "no bar under a pty: {tty:?}"
    );
    let tty_json = under_pty(&format!("{verify} --json")).unwrap();
    assert!(!tty_json.contains("verifying entries"), "{tty_json:?}");
    // A pipe: stderr is not a terminal.
    let piped = bin()
        .args(["cache", "verify", "--cache-dir"])
        .arg(&cache)
        .env("MLIR_CACHE_KEY_PROGRESS_DELAY_MS", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&piped.stderr);
    assert!(!stderr.contains("verifying"), "{stderr}");
}
