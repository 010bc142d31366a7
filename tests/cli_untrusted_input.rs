//! Input from outside the process, through the real binary: malformed
//! bytecode is a clear error (our reader checks it before MLIR does), what
//! MLIR's reader still crashes or hangs on is contained in a child process,
//! every input is capped in size, and Mosaic kernel configs are unambiguous.

use crate::common::{self, bin, corpus, data, failure, read, run_with_stdin, success};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `command`; kills it and fails the test after `limit`.
fn bounded(command: &mut Command, limit: Duration) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{command:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("output")
}

/// `key FILE` must fail with status 3 (never a signal) and say `expected`.
fn key_refuses(file: &Path, extra: &[&str], expected: &[&str]) -> String {
    let output = bounded(
        bin().arg("key").args(extra).arg(file),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.code(),
        Some(common::EX_DATAERR),
        "{}: {stderr}",
        file.display()
    );
    for text in expected.iter().chain([&&*file.display().to_string()]) {
        assert!(
            stderr.contains(text),
            "{}: no {text:?} in {stderr}",
            file.display()
        );
    }
    stderr
}

/// Byte mutations of corpus bytecode that crashed `key` (SIGABRT, SIGSEGV,
/// heap corruption) or hung it before our reader checked bytecode first.
#[test]
fn bytecode_that_crashed_or_hung_mlir_is_a_clear_error() {
    for (name, what) in [
        (
            "result_count",
            "result count 7113878971811073 at offset 0x2e4",
        ),
        ("attr_type_group", "dialect group of 17 entries"),
        ("truncated_op", "at offset 0x1a7 (operation name)"),
        ("region_count", "region count 201943059 at offset 0x248"),
        ("type_cycle", "a reference cycle"),
    ] {
        key_refuses(
            &data(&format!("malformed/{name}.mlirbc")),
            &[],
            &["malformed MLIR bytecode", what, " section, bytes 0x"],
        );
    }
}

/// Accepted by our reader, yet MLIR's reader crashes on it: an i1024
/// attribute whose count of 64-bit words, one byte changed, is 2^57 (MLIR
/// allocates that many before reading them). The crash happens in a child
/// process, and `key` reports it.
#[test]
fn a_crash_in_mlirs_reader_is_contained() {
    let (dir, text) = common::scratch_file(
        "wide.mlir",
        r#""builtin.module"() <{sym_name = "jit_wide"}> ({
  "test.op"() {value = -1 : i1024} : () -> ()
}) : () -> ()
"#,
    );
    let file = dir.path().join("wide.mlirbc");
    success(
        bin()
            .args(["canon", "--keep-locations"])
            .arg(&text)
            .arg("-o")
            .arg(&file),
    );
    let mut bytes = read(&file);
    // IntegerAttr (code 8), type 0, 16 words of -1: make the count a
    // nine-byte varint over the words that follow.
    let at = bytes
        .windows(4)
        .position(|w| w == [0x11, 0x01, 0x21, 0x03])
        .expect("the i1024 attribute");
    bytes[at + 2] = 0;
    std::fs::write(&file, &bytes).expect("write");
    assert!(mlir_cache_key::bytecode::validate(&bytes).is_ok());
    key_refuses(
        &file,
        &[],
        &["MLIR's bytecode reader crashed (signal 6 (SIGABRT))"],
    );
}

/// MLIR's reader gets `--parse-timeout`, then its child is stopped.
#[test]
fn mlirs_reader_is_bounded_in_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("mlp.mlirbc");
    success(
        bin()
            .arg("canon")
            .arg(corpus("cpu/mlp.a.generic.mlir"))
            .arg("-o")
            .arg(&file),
    );
    key_refuses(
        &file,
        &["--parse-timeout", "0.001"],
        &["did not finish within 0.001 s"],
    );
    success(bin().args(["key", "--parse-timeout", "30"]).arg(&file));
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes).expect("gzip");
    encoder.finish().expect("gzip")
}

#[test]
fn inputs_are_capped_after_decompression() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 16 MiB of spaces in a 16 KiB gzip: a small bomb.
    let bomb = dir.path().join("bomb.mlir.gz");
    std::fs::write(&bomb, gzip(&vec![b' '; 16 << 20])).expect("write");
    key_refuses(
        &bomb,
        &["--max-input-size", "1Mi"],
        &[
            "larger decompressed than the input size limit of 1048576 bytes",
            "--max-input-size",
        ],
    );
    // Raised, it reads (and finds no module in the spaces).
    let stderr = key_refuses(
        &bomb,
        &["--max-input-size", "32Mi"],
        &["the input is empty"],
    );
    assert!(!stderr.contains("limit"), "{stderr}");
    // Plain files, stdin and the other files named on the command line too.
    let module = corpus("cpu/mlp.a.generic.mlir");
    let args = ["--max-input-size", "1k"];
    key_refuses(
        &module,
        &args,
        &["larger than the input size limit of 1000 bytes"],
    );
    let out = run_with_stdin(bin().args(["canon", "-"]).args(args), &read(&module));
    assert_eq!(out.status.code(), Some(common::EX_DATAERR));
    assert!(String::from_utf8_lossy(&out.stderr).contains("<stdin> is larger than"));
    let stderr = failure(
        bin()
            .args(["key", "--module-name", "m", "--computation-bytes"])
            .arg(&module)
            .args(args),
        common::EX_DATAERR,
    );
    assert!(
        stderr.contains("larger than the input size limit"),
        "{stderr}"
    );
    // The default (4 GiB) leaves real modules alone.
    let gz = dir.path().join("mlp.mlir.gz");
    std::fs::write(&gz, gzip(&read(&module))).expect("write");
    success(bin().arg("key").arg(&gz));
}

/// A Mosaic custom call whose backend_config is `config` (JSON, in MLIR
/// string escapes).
fn tpu_module(config: &str) -> String {
    format!(
        r#""builtin.module"() <{{sym_name = "jit_k"}}> ({{
  "func.func"() <{{function_type = () -> (), sym_name = "main"}}> ({{
    "stablehlo.custom_call"() <{{backend_config = "{config}", call_target_name = "tpu_custom_call"}}> : () -> ()
    "func.return"() : () -> ()
  }}) : () -> ()
}}) : () -> ()
"#
    )
}

fn canon(module: &str) -> Output {
    run_with_stdin(bin().args(["canon", "-"]), module.as_bytes())
}

fn body() -> String {
    STANDARD.encode(read(&corpus("tpu/tpu_pallas_add.a.kernel0.body.mlirbc")))
}

#[test]
fn a_duplicate_json_key_in_a_kernel_config_is_an_error() {
    let (body, other) = (body(), STANDARD.encode(b"ML\xefR\x01x\x00"));
    let config = |inner: &str| format!(r#"{{\22custom_call_config\22: {{{inner}}}}}"#);
    let once = config(&format!(r#"\22body\22: \22{body}\22"#));
    assert!(canon(&tpu_module(&once)).status.success());
    // serde_json would keep the second body; another reader the first.
    let twice = config(&format!(
        r#"\22body\22: \22{other}\22, \22body\22: \22{body}\22"#
    ));
    let out = canon(&tpu_module(&twice));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(common::EX_DATAERR), "{stderr}");
    assert!(
        stderr.contains(r#"duplicate key "custom_call_config.body""#),
        "{stderr}"
    );
    assert!(
        stderr.contains("stablehlo.custom_call #0 (Mosaic kernel"),
        "{stderr}"
    );
}

#[test]
fn a_kernel_body_is_checked_next_to_debug_locations() {
    let debug = r#"\22debug_locations\22: \22TUzvUgA=\22"#;
    let with_body =
        |body: &str| format!(r#"{{\22custom_call_config\22: {{\22body\22: {body}, {debug}}}}}"#);
    let good = with_body(&format!(r#"\22{}\22"#, body()));
    assert!(canon(&tpu_module(&good)).status.success());
    for (body, expected) in [
        (r#"\22@@@\22"#, "invalid base64"),
        (r#"\22\22"#, "not MLIR bytecode"),
        (r#"\22aGVsbG8=\22"#, "not MLIR bytecode"),
        ("7", "missing, or not a string"),
    ] {
        let out = canon(&tpu_module(&with_body(body)));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(common::EX_DATAERR),
            "{body}: {stderr}"
        );
        assert!(stderr.contains("custom_call_config.body"), "{stderr}");
        assert!(stderr.contains(expected), "{body}: {stderr}");
    }
    let missing = format!(r#"{{\22custom_call_config\22: {{{debug}}}}}"#);
    let out = canon(&tpu_module(&missing));
    assert_eq!(out.status.code(), Some(common::EX_DATAERR));
}
