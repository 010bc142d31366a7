//! The front binary users run does not load MLIR: a direct hit pays neither libMLIR/libLLVM's
//! start-up nor their resident memory; every other command is handed to the MLIR binary beside
//! it, with the same arguments and the same results.

mod common;

use common::{EX_SOFTWARE, EX_USAGE, bin, corpus};
use std::process::Command;

fn mlir_binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mlir-cache-key-mlir"))
}

#[test]
fn the_front_binary_links_no_mlir_and_the_other_does() {
    let libraries = |path: &str| {
        let out = Command::new("ldd").arg(path).output().expect("ldd");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let front = libraries(env!("CARGO_BIN_EXE_mlir-cache-key"));
    assert!(front.contains("libc.so"), "ldd said: {front}");
    assert!(
        !front.contains("libMLIR") && !front.contains("libLLVM"),
        "the front binary links MLIR:\n{front}"
    );
    let full = libraries(env!("CARGO_BIN_EXE_mlir-cache-key-mlir"));
    assert!(full.contains("libMLIR"), "ldd said: {full}");
}

#[test]
fn other_commands_are_handed_over_unchanged() {
    let module = corpus("cpu/mlp.a.generic.mlir");
    for args in [
        vec!["key".into(), module.display().to_string()],
        vec!["--version".into()],
        vec![
            "canon".into(),
            "--digest".into(),
            module.display().to_string(),
        ],
        vec!["exec".into(), "--no-such-flag".into()],
        vec!["no-such-command".into()],
    ] {
        let front = bin().args(&args).output().expect("front");
        let full = mlir_binary().args(&args).output().expect("mlir binary");
        assert_eq!(front.status.code(), full.status.code(), "{args:?}");
        assert_eq!(front.stdout, full.stdout, "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&front.stderr).replace("mlir-cache-key-mlir", "mlir-cache-key"),
            String::from_utf8_lossy(&full.stderr).replace("mlir-cache-key-mlir", "mlir-cache-key"),
            "{args:?}"
        );
    }
    let usage = bin().arg("no-such-command").output().expect("front");
    assert_eq!(usage.status.code(), Some(EX_USAGE));
}

#[test]
fn a_missing_mlir_binary_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let alone = dir.path().join("mlir-cache-key");
    std::fs::copy(env!("CARGO_BIN_EXE_mlir-cache-key"), &alone).expect("copy");
    let out = Command::new(&alone).arg("--version").output().expect("run");
    assert_eq!(out.status.code(), Some(EX_SOFTWARE));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot run") && stderr.contains("mlir-cache-key-mlir"),
        "{stderr}"
    );
}
