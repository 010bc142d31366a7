//! `mlir-cache-key key` and `why` as users run them: parity through the CLI (every release's
//! vectors), one "differs" test per ingredient with `why` naming it, and bad inputs.

use crate::common::{self, bin, corpus, data, failure, read, success, text};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const FINGERPRINT: &str = "5394184100058117601";

fn options(vector: &str) -> PathBuf {
    data(&format!("parity/{vector}/compile_options.pb"))
}

/// `key` on mlp.a with a full, fixed set of inputs; `change` edits one.
fn key_command(change: impl FnOnce(&mut Vec<String>, &mut Command)) -> Command {
    let mut args: Vec<String> = vec![
        "key".into(),
        corpus("cpu/mlp.a.generic.mlir").display().to_string(),
        "--compiler-version".into(),
        "0.12.0.1".into(),
        "--platform".into(),
        "cpu".into(),
        "--platform-version".into(),
        "cpu".into(),
        "--compile-options".into(),
        options("01_cpu_defaults").display().to_string(),
        "--topology-fingerprint".into(),
        FINGERPRINT.into(),
    ];
    let mut command = bin();
    change(&mut args, &mut command);
    command.args(args);
    command
}

fn set(args: &mut [String], flag: &str, value: &str) {
    let i = args.iter().position(|a| a == flag).expect("flag present");
    args[i + 1] = value.to_string();
}

fn key_of(mut command: Command) -> String {
    text(success(&mut command))
        .lines()
        .last()
        .expect("key line")
        .to_string()
}

/// Saves `key --json` with one edit to a file and returns its path.
fn report(
    change: impl FnOnce(&mut Vec<String>, &mut Command),
    dir: &tempfile::TempDir,
    name: &str,
) -> PathBuf {
    // --json goes before any `--`, which starts the program's own argv.
    let mut command = key_command(|a, c| {
        a.insert(2, "--json".into());
        change(a, c)
    });
    let path = dir.path().join(name);
    std::fs::write(&path, success(&mut command)).expect("write report");
    path
}

fn why(a: &PathBuf, b: &PathBuf) -> String {
    text(success(bin().arg("why").arg(a).arg(b)))
}

/// Asserts that the edit changes the key and that `why` names `entry` first,
/// with `detail` in its explanation.
fn assert_ingredient(
    entry: &str,
    detail: &str,
    change: impl FnOnce(&mut Vec<String>, &mut Command),
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = report(|_, _| {}, &dir, "a.json");
    let changed = report(change, &dir, "b.json");
    let explanation = why(&base, &changed);
    assert!(
        explanation.contains(&format!("first difference: {entry}")),
        "expected {entry} first:\n{explanation}"
    );
    assert!(
        explanation.contains(detail),
        "expected {detail:?} in:\n{explanation}"
    );
}

/// Every parity vector: tests/data/parity/<case> (JAX 0.12.0.1) and
/// tests/data/parity/<release>/<case>.
fn parity_vectors() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for entry in std::fs::read_dir(data("parity")).expect("parity") {
        let dir = entry.expect("entry").path();
        if dir.join("expected.json").exists() {
            dirs.push(dir);
        } else if dir.is_dir() {
            for case in std::fs::read_dir(&dir).expect("release") {
                let case = case.expect("entry").path();
                if case.join("expected.json").exists() {
                    dirs.push(case);
                }
            }
        }
    }
    dirs.sort();
    dirs
}

/// `key` with every input of the parity vector in `dir`; `extra` goes before the `--` argv.
fn vector_command(dir: &Path, extra: &[&str]) -> Command {
    let env: Value = serde_json::from_slice(&read(&dir.join("env.json"))).unwrap();
    let mut command = bin();
    command
        .arg("key")
        .arg("--computation-bytes")
        .arg(dir.join("computation.mlirbc"))
        .args(["--module-name", env["module_name"].as_str().unwrap()])
        .args([
            "--compiler-version",
            env["jaxlib_version"].as_str().unwrap(),
        ])
        .args(["--platform", env["platform"].as_str().unwrap()])
        .args([
            "--platform-version",
            env["platform_version"].as_str().unwrap(),
        ])
        .arg("--compile-options")
        .arg(dir.join("compile_options.pb"))
        .args(["--compression", env["compression"].as_str().unwrap()])
        .args(["--custom-hook", env["custom_hook"].as_str().unwrap_or("")])
        .args(["--runtime-type", env["runtime_type"].as_str().unwrap_or("")])
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
    for (var, key) in [
        ("XLA_FLAGS", "XLA_FLAGS"),
        ("LIBTPU_INIT_ARGS", "LIBTPU_INIT_ARGS"),
    ] {
        if let Some(value) = env[key].as_str() {
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
fn cli_reproduces_every_parity_vector() {
    // The recipe follows --compiler-version: each release's jaxlib names it.
    let dirs = parity_vectors();
    assert!(dirs.len() >= 47, "parity vectors missing: {}", dirs.len());
    for dir in dirs {
        let expected: Value = serde_json::from_slice(&read(&dir.join("expected.json"))).unwrap();
        let mut command = vector_command(&dir, &["--explain"]);
        let output = command.output().expect("run");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(
            text(output.stdout),
            expected["key"].as_str().unwrap(),
            "{}",
            dir.display()
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        let trace: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("get_cache_key"))
            .collect();
        let want = common::strings(&expected["debug_lines"]);
        assert_eq!(trace, want, "{}", dir.display());
    }
}

#[test]
fn same_key_across_processes_and_directories() {
    let here = key_of(key_command(|_, _| {}));
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let there = key_of(key_command(|_, c| {
        c.current_dir(elsewhere.path());
    }));
    assert_eq!(here, there);
    assert!(here.starts_with("jit_mlp-"), "{here}");
    assert_eq!(here.len(), "jit_mlp-".len() + 64);
    // Relocated twin: same key.
    assert_eq!(
        here,
        key_of(key_command(
            |a, _| a[1] = corpus("cpu/mlp.b.generic.mlir").display().to_string()
        ))
    );
}

#[test]
fn computation_moves() {
    assert_ingredient("entry 1 \"computation\"", "tensor<5x16xf32>", |a, _| {
        a[1] = corpus("cpu/mlp.a_batch5.generic.mlir")
            .display()
            .to_string()
    });
}

#[test]
fn compiler_version_moves() {
    assert_ingredient(
        "entry 2 \"jax_lib version\"",
        "\"0.12.0.1\" → \"0.12.0.2\"",
        |a, _| set(a, "--compiler-version", "0.12.0.2"),
    );
}

#[test]
fn platform_moves() {
    assert_ingredient(
        "entry 3 \"backend version\"",
        "platform: \"cpu\" → \"tpu\"",
        |a, _| set(a, "--platform", "tpu"),
    );
}

#[test]
fn platform_version_moves() {
    assert_ingredient(
        "entry 3 \"backend version\"",
        "platform version: \"cpu\" → \"cuda 12080\"",
        |a, _| set(a, "--platform-version", "cuda 12080"),
    );
}

#[test]
fn xla_flags_variable_moves() {
    assert_ingredient(
        "entry 4 \"XLA flags\"",
        "+ --xla_cpu_enable_fast_math=false (only in B)",
        |_, c| {
            c.env(
                "XLA_FLAGS",
                "--xla_cpu_enable_fast_math=false --xla_dump_to=/tmp/d",
            );
        },
    );
}

#[test]
fn libtpu_init_args_moves() {
    assert_ingredient(
        "entry 4 \"XLA flags\"",
        "+ --xla_tpu_x=1 (only in B)",
        |_, c| {
            c.env("LIBTPU_INIT_ARGS", "--xla_tpu_x=1");
        },
    );
}

#[test]
fn argv_flag_value_moves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = report(
        |a, _| a.extend(["--".into(), "train.py".into(), "--xla_x=1".into()]),
        &dir,
        "a",
    );
    let b = report(
        |a, _| a.extend(["--".into(), "train.py".into(), "--xla_x=2".into()]),
        &dir,
        "b",
    );
    common::assert_contains(
        &why(&a, &b),
        &[
            "first difference: entry 4 \"XLA flags\"",
            "~ --xla_x: --xla_x=1 → --xla_x=2",
        ],
    );
}

#[test]
fn flag_prefix_admits_other_arguments() {
    let plain = key_of(key_command(|a, _| {
        a.extend(["--".into(), "--my_opt=3".into()])
    }));
    assert_eq!(
        plain,
        key_of(key_command(|_, _| {})),
        "non-XLA arguments are not flags"
    );
    let prefixed = key_of(key_command(|a, _| {
        a.extend([
            "--flag-prefix=--my_".into(),
            "--".into(),
            "--my_opt=3".into(),
        ])
    }));
    assert_ne!(plain, prefixed);
}

#[test]
fn excluded_flags_do_not_move_the_key() {
    let base = key_of(key_command(|_, _| {}));
    let dumped = key_of(key_command(|a, c| {
        c.env("XLA_FLAGS", "--xla_dump_to=/tmp/x --xla_dump_hlo_as_text");
        a.extend([
            "--".into(),
            "--xla_force_host_platform_device_count=8".into(),
        ]);
    }));
    assert_eq!(base, dumped);
}

#[test]
fn compile_options_move() {
    assert_ingredient("entry 5 \"compile_options\"", "→", |a, _| {
        set(
            a,
            "--compile-options",
            &options("09_fallback_device_kinds").display().to_string(),
        )
    });
}

#[test]
fn json_compile_options_move_by_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (x, y) = (dir.path().join("x.json"), dir.path().join("y.json"));
    std::fs::write(
        &x,
        r#"{"opt": {"level": 3, "dump": "/a"}, "target": "sm_90"}"#,
    )
    .unwrap();
    std::fs::write(
        &y,
        r#"{"target": "sm_90", "opt": {"dump": "/b", "level": 2}}"#,
    )
    .unwrap();
    let json_options = |file: &PathBuf, ignore: &[&str]| {
        let (file, ignore) = (
            file.clone(),
            ignore.iter().map(|k| k.to_string()).collect::<Vec<_>>(),
        );
        move |a: &mut Vec<String>, _: &mut Command| {
            let i = a.iter().position(|s| s == "--compile-options").unwrap();
            a.drain(i..i + 2);
            a.extend(["--compile-options-json".into(), file.display().to_string()]);
            for key in ignore {
                a.extend(["--ignore-option-key".into(), key]);
            }
        }
    };
    let json_key = |file: &PathBuf, ignore: &[&str]| key_command(json_options(file, ignore));
    let a = report(json_options(&x, &["opt.dump"]), &dir, "a");
    let b = report(json_options(&y, &["opt.dump"]), &dir, "b");
    let explanation = why(&a, &b);
    assert!(
        explanation.contains("entry 5 \"compile_options\""),
        "{explanation}"
    );
    assert!(explanation.contains("opt.level: 3 → 2"), "{explanation}");
    assert!(
        !explanation.contains("dump"),
        "ignored key must not matter: {explanation}"
    );
    // Key order and spacing do not matter; only the ignored key differs here.
    std::fs::write(
        &y,
        r#"{"target": "sm_90", "opt": {"dump": "/b", "level": 3}}"#,
    )
    .unwrap();
    assert_eq!(
        key_of(json_key(&x, &["opt.dump"])),
        key_of(json_key(&y, &["opt.dump"]))
    );
}

#[test]
fn topology_moves() {
    assert_ingredient(
        "entry 6 \"accelerator_config\"",
        "topology fingerprint: 0x4adbfddc010635e1 → 0x0000000000000007",
        |a, _| set(a, "--topology-fingerprint", "7"),
    );
}

#[test]
fn device_kinds_move() {
    let dir = tempfile::tempdir().expect("tempdir");
    let devices = |kinds: &[&str]| {
        let kinds: Vec<String> = kinds.iter().map(|k| k.to_string()).collect();
        move |a: &mut Vec<String>, _: &mut Command| {
            let i = a
                .iter()
                .position(|s| s == "--topology-fingerprint")
                .unwrap();
            a.drain(i..i + 2);
            for kind in kinds {
                a.extend(["--device-kind".into(), kind]);
            }
        }
    };
    let a = report(devices(&["NVIDIA H100", "NVIDIA H100"]), &dir, "a");
    let b = report(devices(&["NVIDIA H100", "NVIDIA A100"]), &dir, "b");
    common::assert_contains(
        &why(&a, &b),
        &[
            "entry 6 \"accelerator_config\"",
            "device 1 kind: \"NVIDIA H100\" → \"NVIDIA A100\"",
        ],
    );
}

#[test]
fn compression_moves() {
    assert_ingredient(
        "entry 7 \"compression\"",
        "\"zstandard\" → \"zlib\"",
        |a, _| a.extend(["--compression".into(), "zlib".into()]),
    );
}

#[test]
fn custom_hook_moves() {
    assert_ingredient(
        "entry 8 \"custom_hook\"",
        "\"\" → \"tenant-42\"",
        |a, _| a.extend(["--custom-hook".into(), "tenant-42".into()]),
    );
}

#[test]
fn trimmed_strings_do_not_move_the_key() {
    let base = key_of(key_command(|_, _| {}));
    let padded = key_of(key_command(|a, _| {
        set(a, "--platform", " cpu\t");
        a.extend(["--compression".into(), "zstandard\n".into()]);
    }));
    assert_eq!(base, padded);
    // The compiler version is hashed untrimmed, as JAX does.
    assert_ne!(
        base,
        key_of(key_command(|a, _| set(
            a,
            "--compiler-version",
            "0.12.0.1 "
        )))
    );
}

#[test]
fn why_on_two_modules_and_on_the_same_key() {
    let out = text(success(
        bin()
            .arg("why")
            .arg(corpus("cpu/mlp.a.generic.mlir"))
            .arg(corpus("cpu/mlp.b.generic.mlir")),
    ));
    assert!(out.starts_with("same key: jit_mlp-"), "{out}");
    let json = success(
        bin()
            .args(["why", "--json"])
            .arg(corpus("cpu/conv.a.generic.mlir"))
            .arg(corpus("cpu/mlp.a.generic.mlir")),
    );
    let explanation: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(explanation["differences"][0]["name"], "computation");
}

#[test]
fn bad_inputs_are_clear_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let truncated = dir.path().join("truncated.pb");
    let full = read(&options("01_cpu_defaults"));
    std::fs::write(&truncated, &full[..full.len() / 2]).unwrap();
    let stderr = failure(
        &mut key_command(|a, _| set(a, "--compile-options", &truncated.display().to_string())),
        common::EX_DATAERR,
    );
    assert!(
        stderr.contains("compile options") && stderr.contains("truncated.pb"),
        "{stderr}"
    );

    let garbage = dir.path().join("garbage.pb");
    std::fs::write(&garbage, b"this is not a protobuf at all \xff\xff\xff").unwrap();
    let stderr = failure(
        &mut key_command(|a, _| set(a, "--compile-options", &garbage.display().to_string())),
        common::EX_DATAERR,
    );
    assert!(stderr.contains("garbage.pb"), "{stderr}");

    let stderr = failure(
        &mut key_command(|a, _| set(a, "--topology-fingerprint", "18446744073709551616")),
        common::EX_USAGE,
    );
    assert!(
        stderr.contains("is not an unsigned 64-bit integer"),
        "{stderr}"
    );
    failure(
        &mut key_command(|a, _| set(a, "--topology-fingerprint", "-1")),
        common::EX_USAGE,
    );

    use std::os::unix::ffi::OsStrExt;
    let stderr = failure(
        &mut key_command(|_, c| {
            c.env("XLA_FLAGS", std::ffi::OsStr::from_bytes(b"--xla_a=\xff"));
        }),
        common::EX_DATAERR,
    );
    assert!(stderr.contains("XLA_FLAGS is not valid UTF-8"), "{stderr}");

    let stderr = failure(
        bin()
            .arg("key")
            .arg("--computation-bytes")
            .arg(data("parity/01_cpu_defaults/computation.mlirbc")),
        common::EX_USAGE,
    );
    assert!(stderr.contains("--module-name"), "{stderr}");

    let nameless = dir.path().join("nameless.mlir");
    std::fs::write(&nameless, "\"builtin.module\"() ({\n}) : () -> ()\n").unwrap();
    let module = "\"builtin.module\"() ({\n  \"x.y\"() : () -> ()\n}) : () -> ()\n";
    std::fs::write(&nameless, module).unwrap();
    let stderr = failure(bin().arg("key").arg(&nameless), common::EX_DATAERR);
    assert!(
        stderr.contains("no sym_name") && stderr.contains("--module-name"),
        "{stderr}"
    );
    let key = text(success(
        bin()
            .arg("key")
            .arg(&nameless)
            .args(["--module-name", "named"]),
    ));
    assert!(key.starts_with("named-"), "{key}");

    let not_report = dir.path().join("not-report.json");
    std::fs::write(&not_report, "{\"key\": 1}").unwrap();
    let stderr = failure(
        bin().arg("why").arg(&not_report).arg(&not_report),
        common::EX_DATAERR,
    );
    assert!(stderr.contains("is not a `key --json` report"), "{stderr}");
}

/// `key` of a `tests/data/symbols` module, with `extra` flags before the inputs.
fn symbols_key(tag: &str, extra: &[&str]) -> String {
    key_of(key_command(|args, _| {
        args[1] = data(&format!("symbols/clip.{tag}.mlir"))
            .display()
            .to_string();
        for (i, flag) in extra.iter().enumerate() {
            args.insert(2 + i, flag.to_string());
        }
    }))
}

#[test]
fn canonical_symbols_merges_renumbered_private_functions_only_on_request() {
    // JAX issue 38828: @clip_fn_0 in a, @clip_fn_1 in b, the same program.
    assert_ne!(symbols_key("a", &[]), symbols_key("b", &[]));
    let canonical = ["--canonical-symbols"];
    assert_eq!(symbols_key("a", &canonical), symbols_key("b", &canonical));
    // c calls a different private function: never merged.
    assert_ne!(symbols_key("a", &canonical), symbols_key("c", &canonical));
    // The default is JAX's module: the flag changes the key.
    assert_ne!(symbols_key("a", &[]), symbols_key("a", &canonical));
}

/// A JSON file's value.
fn json_of(path: &Path) -> Value {
    serde_json::from_slice(&read(path)).expect("json")
}

/// --jax-version picks the release's recipe, a topology in the wrong form or an unknown release
/// is refused by name, and `why` says that two keys followed different recipes.
#[test]
fn jax_version_picks_the_recipe_and_why_names_both() {
    let dir = data("parity/0.10.2/jit_mlp");
    let expected = json_of(&dir.join("expected.json"));
    let own = text(success(&mut vector_command(
        &dir,
        &["--jax-version", "0.10.1"],
    )));
    assert_eq!(own, expected["key"].as_str().unwrap());

    // The same inputs under 0.12's recipe: two flags of this vector are excluded there.
    let records = tempfile::tempdir().expect("tempdir");
    let record = |version: &str, name: &str| {
        let path = records.path().join(name);
        let json = success(&mut vector_command(
            &dir,
            &["--json", "--jax-version", version],
        ));
        std::fs::write(&path, json).expect("write record");
        path
    };
    let old = record("0.10.2", "old.json");
    let new = record("0.12.0.1", "new.json");
    assert_eq!(json_of(&old)["recipe"], "jax-0.10.0");
    assert_eq!(json_of(&new)["recipe"], "jax-0.12.0");
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
