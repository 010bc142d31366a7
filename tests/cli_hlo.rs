//! XLA HloModuleProtos (lowered by JAX 0.12.0.1, tests/data/hlo/) through `canon`, `key`,
//! `kernels`, `why` and `exec`: location-only twins share a digest, a key and a cache entry; a
//! changed constant, shape or op does not; twins lowered in one process (other ids) share a
//! digest and a key.

use crate::common::{self, bin, data, failure, read, success, text};
use std::path::PathBuf;

fn hlo(name: &str) -> PathBuf {
    data(&format!("hlo/{name}.pb"))
}

fn digest(name: &str, extra: &[&str]) -> String {
    text(success(
        bin()
            .arg("canon")
            .arg("--digest")
            .args(extra)
            .arg(hlo(name)),
    ))
}

fn key(name: &str) -> String {
    text(success(bin().arg("key").arg(hlo(name))))
}

#[test]
fn location_twins_share_digest_and_key() {
    for (a, b) in [
        ("mlp.a", "mlp.b"),
        ("loop.a", "loop.b"),
        ("legacy.a", "legacy.b"),
    ] {
        assert_ne!(read(&hlo(a)), read(&hlo(b)));
        assert_eq!(digest(a, &[]), digest(b, &[]), "{a} vs {b}");
        assert_eq!(key(a), key(b), "{a} vs {b}");
        // Kept locations tell them apart.
        assert_ne!(
            digest(a, &["--keep-locations"]),
            digest(b, &["--keep-locations"]),
            "{a} vs {b}"
        );
    }
    assert!(key("mlp.a").starts_with("jit_f-"), "{}", key("mlp.a"));
}

#[test]
fn twins_lowered_in_one_process_share_digest_and_key() {
    // Other module ids (XLA's per-process counter), and a scan with every id moved: the CLI
    // renumbers ids by default.
    for (a, b) in [
        ("ids.mlp.a", "ids.mlp.b"),
        ("ids.scan.a", "ids.scan.b"),
        ("ids.scan.a", "ids.scan.shifted"),
        ("ids.donate.a", "ids.donate.b"),
    ] {
        assert_eq!(digest(a, &[]), digest(b, &[]), "{a} vs {b}");
        assert_eq!(key(a), key(b), "{a} vs {b}");
    }
    assert_ne!(digest("ids.mlp.const", &[]), digest("ids.mlp.a", &[]));
    assert_ne!(key("ids.mlp.const"), key("ids.mlp.a"));
}

#[test]
fn a_changed_constant_shape_or_op_changes_digest_and_key() {
    let (base_digest, base_key) = (digest("mlp.a", &[]), key("mlp.a"));
    for changed in ["mlp.const", "mlp.shape", "mlp.op"] {
        assert_ne!(digest(changed, &[]), base_digest, "{changed}");
        assert_ne!(key(changed), base_key, "{changed}");
    }
}

#[test]
fn canon_writes_the_library_bytes_and_a_text_view() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("canonical.pb");
    success(bin().arg("canon").arg(hlo("mlp.b")).arg("-o").arg(&out));
    let expected = mlir_cache_key::hlo::canonicalize(&read(&hlo("mlp.a")), &Default::default())
        .unwrap()
        .bytes;
    assert_eq!(read(&out), expected);
    // The canonical proto is itself canonical, and still an HloModuleProto.
    assert_eq!(
        digest("mlp.a", &[]),
        text(success(bin().args(["canon", "--digest"]).arg(&out)))
    );
    let view = String::from_utf8(success(
        bin().args(["canon", "--emit", "text"]).arg(hlo("mlp.a")),
    ))
    .unwrap();
    assert!(view.contains("opcode: \"tanh\""), "{view}");
    assert!(!view.contains("stack_frame"), "{view}");
    let kept = String::from_utf8(success(
        bin()
            .args(["canon", "--emit", "text", "--keep-locations"])
            .arg(hlo("mlp.a")),
    ))
    .unwrap();
    assert!(
        kept.contains("file_names: \"/home/ci/checkout-a/model.py\""),
        "{kept}"
    );
}

#[test]
fn kernels_has_none_to_list() {
    let out = text(success(bin().arg("kernels").arg(hlo("mlp.a"))));
    assert!(out.starts_with("no kernels: HLO input"), "{out}");
    assert_eq!(
        text(success(bin().args(["kernels", "--json"]).arg(hlo("mlp.a")))),
        "[]"
    );
}

#[test]
fn why_names_the_changed_instruction() {
    let out = text(success(
        bin().arg("why").arg(hlo("mlp.a")).arg(hlo("mlp.op")),
    ));
    assert!(
        out.contains("first difference: entry 1 \"computation\""),
        "{out}"
    );
    assert!(out.contains("-       opcode: \"tanh\""), "{out}");
    assert!(out.contains("+       opcode: \"sine\""), "{out}");
}

#[test]
fn damaged_or_mistyped_input_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.pb");
    let bytes = read(&hlo("mlp.a"));
    std::fs::write(&cut, &bytes[..100]).unwrap();
    let err = failure(bin().arg("key").arg(&cut), common::EX_DATAERR);
    assert!(
        err.contains("runs past the end of the message") && err.contains("HloModuleProto"),
        "{err}"
    );
    // Told it is HLO, MLIR text is refused as HLO.
    let mlir = data("corpus/cpu/mlp.a.generic.mlir");
    let err = failure(
        bin().args(["canon", "--input-format", "hlo"]).arg(&mlir),
        common::EX_DATAERR,
    );
    assert!(err.contains("in HloModuleProto"), "{err}");
    // Told it is MLIR, a proto is refused by the MLIR parser.
    let err = failure(
        bin()
            .args(["canon", "--input-format", "mlir"])
            .arg(hlo("mlp.a")),
        common::EX_DATAERR,
    );
    assert!(err.contains("cannot parse"), "{err}");
    // A module without a name needs --module-name.
    let unnamed = dir.path().join("unnamed.pb");
    let proto = [0x1a, 0x03, 0x0a, 0x01, b'c'];
    std::fs::write(&unnamed, proto).unwrap();
    let err = failure(
        bin().args(["key", "--input-format", "hlo"]).arg(&unnamed),
        common::EX_DATAERR,
    );
    assert!(err.contains("pass --module-name"), "{err}");
    let named = text(success(
        bin()
            .args(["key", "--input-format", "hlo", "--module-name", "m"])
            .arg(&unnamed),
    ));
    assert!(named.starts_with("m-"), "{named}");
}

#[test]
fn exec_serves_a_location_twin_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let compiler = dir.path().join("compiler.sh");
    common::write_compiler(&compiler, "compiled");
    let runs = dir.path().join("runs");
    let exec = |module: &str, out: &str| {
        let (input, output) = (dir.path().join(module), dir.path().join(out));
        std::fs::copy(hlo(module.trim_end_matches(".pb")), &input).unwrap();
        let mut command = bin();
        command
            .env("RUNS", &runs)
            .env("MLIR_CACHE_KEY_FLAGS", "--log_level=INFO")
            .arg("exec")
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .arg("--input")
            .arg(&input)
            .arg("--output")
            .arg(&output)
            .arg("--")
            .arg(&compiler)
            .arg(&input)
            .arg(&output);
        let output = command.output().unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let count = || std::fs::read_to_string(&runs).map_or(0, |s| s.lines().count());
    let first = exec("mlp.a.pb", "a.out");
    assert!(first.contains("No candidate found under"), "{first}");
    assert_eq!(count(), 1);
    let twin = exec("mlp.b.pb", "b.out");
    assert!(twin.contains("Using a cached artefact at"), "{twin}");
    assert_eq!(count(), 1, "the location twin compiled again");
    // The artefact is the first compile's (mlp.a's bytes), restored for the twin.
    assert_eq!(
        read(&dir.path().join("b.out")),
        read(&dir.path().join("a.out"))
    );
    exec("mlp.const.pb", "c.out");
    assert_eq!(count(), 2, "a changed constant was served from the cache");
}
