//! The mlir-opt pass plugin runs the library's canonicalizer: mlir-opt's own
//! bytecode of the plugin's result equals the CLI's canonical bytes, byte for
//! byte after the header (mlir-opt writes its own producer string).

use crate::common::{self, bin, corpus, success};
use std::path::PathBuf;
use std::process::Command;

fn plugin() -> PathBuf {
    // The cdylib sits next to the test's binary directory.
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_mlir-cache-key"));
    exe.parent()
        .expect("target dir")
        .join("libmlir_cache_key.so")
}

/// The bytes after `ML\xEFR`, the version varint and the producer's NUL.
fn body(bytes: &[u8]) -> &[u8] {
    assert!(bytes.starts_with(b"ML\xefR"), "not bytecode");
    let nul = bytes[5..].iter().position(|&b| b == 0).expect("producer") + 5;
    &bytes[nul + 1..]
}

#[test]
fn mlir_opt_with_the_plugin_writes_the_clis_canonical_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    for module in [
        "cpu/mlp.a.generic.mlir",
        "cpu/scan_loop.b.generic.mlir",
        "tpu/tpu_pallas_add.nounzip.b.generic.mlir",
        "gpu/cuda_pallas_triton_add.a.generic.mlir",
    ] {
        let mut mlir_opt = Command::new("/usr/lib/llvm-22/bin/mlir-opt");
        mlir_opt
            .arg("--allow-unregistered-dialect")
            .arg(format!("--load-pass-plugin={}", plugin().display()))
            .arg("--pass-pipeline=builtin.module(cache-key-canonicalize)")
            .args(["--emit-bytecode", "--emit-bytecode-version=6"]);
        let out = dir.path().join("plugin.mlirbc");
        let from_plugin = common::written(&mut mlir_opt, &corpus(module), &out);
        let from_cli = success(bin().arg("canon").arg(corpus(module)));
        assert_eq!(
            from_plugin[4], from_cli[4],
            "{module}: same bytecode version"
        );
        assert_eq!(body(&from_plugin), body(&from_cli), "{module}");
    }
}
