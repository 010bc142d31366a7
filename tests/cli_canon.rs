//! `mlir-cache-key canon` and `kernels` as a user runs them: real processes,
//! real files, bad inputs.

use crate::common::{self, bin, corpus, failure, read, run_with_stdin, success, text};
use indoc::indoc;

fn digest(path: &std::path::Path) -> String {
    text(success(bin().args(["canon", "--digest"]).arg(path)))
}

#[test]
fn digest_equals_sha256_of_the_emitted_bytes() {
    let path = corpus("cpu/mlp.a.generic.mlir");
    let bytes = success(bin().arg("canon").arg(&path));
    use sha2::Digest;
    assert_eq!(digest(&path), hex::encode(sha2::Sha256::digest(&bytes)));
}

#[test]
fn same_bytes_across_processes_and_working_directories() {
    let path = corpus("tpu/tpu_pallas_add.a.generic.mlir");
    let here = success(bin().arg("canon").arg(&path));
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let there = success(bin().current_dir(elsewhere.path()).arg("canon").arg(&path));
    assert_eq!(here, there);
    // Relative path from another directory.
    let relative = success(
        bin()
            .current_dir(corpus("tpu"))
            .args(["canon", "tpu_pallas_add.a.generic.mlir"]),
    );
    assert_eq!(here, relative);
}

#[test]
fn stdin_and_output_file() {
    let path = corpus("cpu/conv.a.generic.mlir");
    let from_stdin = run_with_stdin(bin().args(["canon", "-"]), &read(&path));
    assert!(from_stdin.status.success());
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("conv.mlirbc");
    success(bin().arg("canon").arg(&path).arg("-o").arg(&out));
    assert_eq!(read(&out), from_stdin.stdout);
}

#[test]
fn bytecode_input_gives_the_text_inputs_bytes() {
    let path = corpus("cpu/scan_loop.b.generic.mlir");
    let dir = tempfile::tempdir().expect("tempdir");
    let bytecode = dir.path().join("scan.mlirbc");
    // mlir-opt's own bytecode, with locations and its own producer string.
    let status = std::process::Command::new("/usr/lib/llvm-22/bin/mlir-opt")
        .args(["--allow-unregistered-dialect", "--emit-bytecode"])
        .arg(&path)
        .arg("-o")
        .arg(&bytecode)
        .status()
        .expect("run mlir-opt");
    assert!(status.success());
    assert_eq!(digest(&bytecode), digest(&path));
    assert_eq!(
        digest(&bytecode),
        digest(&corpus("cpu/scan_loop.a.generic.mlir"))
    );
}

#[test]
fn emit_text_is_location_free_generic_mlir() {
    let out = text(success(
        bin()
            .args(["canon", "--emit", "text"])
            .arg(corpus("cpu/mlp.a.generic.mlir")),
    ));
    assert!(out.starts_with("\"builtin.module\"()"), "{out}");
    assert!(!out.contains("loc("), "{out}");
    assert!(!out.contains(".py"), "{out}");
}

#[test]
fn custom_partitioning_flag() {
    let a = corpus("cpu/custom_partitioning.a.generic.mlir");
    let b = corpus("cpu/custom_partitioning.a_otherpointer.generic.mlir");
    assert_ne!(digest(&a), digest(&b));
    let ignore = |p: &std::path::Path| {
        text(success(
            bin()
                .args(["canon", "--digest", "--ignore-custom-partitioning"])
                .arg(p),
        ))
    };
    assert_eq!(ignore(&a), ignore(&b));
}

#[test]
fn unparsable_mlir_names_file_line_and_column() {
    let (_dir, path) = common::scratch_file(
        "broken.mlir",
        "\"builtin.module\"() ({\n  %0 = \"x.y\"() : () -> (i32\n}) : () -> ()\n",
    );
    let stderr = failure(bin().arg("canon").arg(&path), common::EX_DATAERR);
    assert!(
        stderr.contains("broken.mlir:2:28: error: expected ')'"),
        "{stderr}"
    );
    assert!(
        stderr.starts_with("mlir-cache-key: error: cannot parse"),
        "{stderr}"
    );
}

#[test]
fn pretty_form_of_a_missing_dialect_explains_the_generic_form() {
    let stderr = failure(
        bin().arg("canon").arg(corpus("cpu/mlp.a.mlir")),
        common::EX_DATAERR,
    );
    assert!(stderr.contains("mlp.a.mlir:11:10: error:"), "{stderr}");
    assert!(stderr.contains("hint:"), "{stderr}");
    assert!(stderr.contains("print_generic_op_form=True"), "{stderr}");
}

#[test]
fn missing_file_and_empty_input() {
    let stderr = failure(
        bin().args(["canon", "/nonexistent/x.mlir"]),
        common::EX_NOINPUT,
    );
    assert!(
        stderr.contains("cannot read /nonexistent/x.mlir"),
        "{stderr}"
    );
    let out = run_with_stdin(bin().args(["canon", "-"]), b"  \n");
    assert_eq!(out.status.code(), Some(common::EX_DATAERR));
    assert!(String::from_utf8_lossy(&out.stderr).contains("<stdin>"));
}

#[test]
fn truncated_bytecode_is_an_error_not_a_crash() {
    let bytes = success(bin().arg("canon").arg(corpus("cpu/mlp.a.generic.mlir")));
    for cut in [5, 20, bytes.len() / 2, bytes.len() - 1] {
        let out = run_with_stdin(bin().args(["canon", "-"]), &bytes[..cut]);
        assert_eq!(out.status.code(), Some(common::EX_DATAERR), "cut at {cut}");
    }
}

fn tpu_module(backend_config: &str) -> String {
    format!(
        indoc! {r#"
        "builtin.module"() <{{sym_name = "jit_bad"}}> ({{
          "func.func"() <{{function_type = () -> (), sym_name = "main"}}> ({{
            "stablehlo.custom_call"() <{{backend_config = "{}", call_target_name = "tpu_custom_call"}}> : () -> ()
            "func.return"() : () -> ()
          }}) : () -> ()
        }}) : () -> ()
        "#},
        backend_config
    )
}

fn canon_stdin_error(module: &str) -> String {
    let out = run_with_stdin(bin().args(["canon", "-"]), module.as_bytes());
    assert_eq!(
        out.status.code(),
        Some(common::EX_DATAERR),
        "stdout: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn tpu_backend_config_that_is_not_json() {
    let stderr = canon_stdin_error(&tpu_module("{not json"));
    assert!(
        stderr.contains("stablehlo.custom_call #0 (Mosaic kernel"),
        "{stderr}"
    );
    assert!(
        stderr.contains("attribute backend_config: not valid JSON"),
        "{stderr}"
    );
}

#[test]
fn tpu_backend_config_without_custom_call_config() {
    let stderr = canon_stdin_error(&tpu_module(r#"{\22other\22: 1}"#));
    assert!(
        stderr.contains("no \"custom_call_config\" object"),
        "{stderr}"
    );
}

#[test]
fn tpu_body_with_invalid_base64() {
    let stderr = canon_stdin_error(&tpu_module(
        r#"{\22custom_call_config\22: {\22body\22: \22@@@not base64\22}}"#,
    ));
    assert!(stderr.contains("custom_call_config.body"), "{stderr}");
    assert!(stderr.contains("invalid base64"), "{stderr}");
}

#[test]
fn tpu_body_that_is_not_bytecode() {
    // "aGVsbG8=" is base64 of "hello".
    let stderr = canon_stdin_error(&tpu_module(
        r#"{\22custom_call_config\22: {\22body\22: \22aGVsbG8=\22}}"#,
    ));
    assert!(stderr.contains("not MLIR bytecode"), "{stderr}");
}

#[test]
fn kernels_lists_each_embedded_kernel() {
    let out = text(success(
        bin()
            .arg("kernels")
            .arg(corpus("tpu/tpu_pallas_add.a.generic.mlir")),
    ));
    assert!(out.contains("mosaic"), "{out}");
    assert!(out.contains("MLIR24.0.0git"), "{out}");
    assert!(out.contains("dropped debug_locations"), "{out}");
    let json = success(
        bin()
            .args(["kernels", "--json"])
            .arg(corpus("gpu/cuda_pallas_triton_add.a.generic.mlir")),
    );
    let kernels: serde_json::Value = serde_json::from_slice(&json).expect("json");
    assert_eq!(kernels[0]["kind"], "triton");
    assert_eq!(kernels[0]["payload"]["version"], 6);
}

#[test]
fn no_arguments_is_a_usage_error() {
    failure(&mut bin(), common::EX_USAGE);
    failure(
        bin().args(["canon", "--emit", "pdf", "x"]),
        common::EX_USAGE,
    );
}

/// Cache and remote options belong to the commands that use the cache, not to `canon`,
/// `kernels` or `key`; `exec`, `cache`, `runs` and `why` (which reads stored keys) list them.
#[test]
fn cache_options_only_where_the_cache_is_used() {
    let help = |args: &[&str]| text(success(bin().args(args).arg("--help")));
    for command in [&["canon"][..], &["kernels"], &["key"]] {
        let shown = help(command);
        for option in ["--cache-dir", "--remote", "--no-cache", "--cache-size"] {
            assert!(
                !shown.contains(option),
                "{command:?} --help lists {option}:\n{shown}"
            );
        }
    }
    for command in [
        &["exec"][..],
        &["cache", "stats"],
        &["runs", "list"],
        &["why"],
    ] {
        let shown = help(command);
        for option in ["--cache-dir", "--remote"] {
            assert!(
                shown.contains(option),
                "{command:?} --help lacks {option}:\n{shown}"
            );
        }
    }
    // Before the command name they are refused, with a usage error.
    failure(
        bin().args(["--cache-dir", "/tmp/x", "canon", "-"]),
        common::EX_USAGE,
    );
}
