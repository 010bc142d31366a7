//! `mlir-cache-key exec` and `cache …` with real processes and a real cache
//! directory: miss then hit, remembered failures, concurrency, placeholders,
//! the compiler's identity, settings and hostile inputs.

use crate::common::{self, Site, bin, corpus, failure, success, text};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A site (`common::Site`) with the counting compiler, version 1, and a module.
struct Setup {
    site: Site,
    module: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let site = Site::new("compiled-by-1");
        let module = site.module("cpu/mlp.a.generic.mlir", "mlp.mlir");
        Setup { module, site }
    }

    fn cache(&self) -> PathBuf {
        self.site.path("cache")
    }

    fn runs(&self) -> usize {
        self.site.runs()
    }

    /// `exec` compiling `module` to `output` with the test compiler.
    fn exec(&self, module: &Path, output: &Path) -> Command {
        let mut command = self.site.bin();
        command
            .arg("exec")
            // The counts below are of canonical entries (direct mode: tests/cli_direct.rs).
            .arg("--no-direct")
            .arg("--cache-dir")
            .arg(self.cache());
        common::compile(&mut command, &self.site.compiler(), module, output);
        command
    }
}

fn write_compiler(path: &Path, version: &str) {
    common::write_compiler(path, &format!("compiled-by-{version}"));
}

#[test]
fn miss_then_hit_runs_the_compiler_once() {
    let s = Setup::new();
    let out = s.site.path("out.bin");
    success(&mut s.exec(&s.module, &out));
    let first = std::fs::read(&out).expect("output");
    std::fs::remove_file(&out).expect("remove");
    let mut again = s.exec(&s.module, &out);
    again.env("MLIR_CACHE_KEY_FLAGS", "--log_level=INFO");
    let stderr = String::from_utf8_lossy(&again.output().expect("run").stderr).into_owned();
    assert!(stderr.contains("Using a cached artefact at"), "{stderr}");
    assert_eq!(std::fs::read(&out).expect("output"), first);
    assert_eq!(s.runs(), 1, "the compiler ran again on a hit");
}

#[test]
fn other_output_paths_and_relocated_modules_share_the_entry() {
    let s = Setup::new();
    success(&mut s.exec(&s.module, &s.site.path("a.bin")));
    // Another output name, and the relocated twin of the module.
    let twin = s.site.path("twin.mlir");
    std::fs::copy(corpus("cpu/mlp.b.generic.mlir"), &twin).expect("copy");
    success(&mut s.exec(&twin, &s.site.path("sub-b.bin")));
    assert_eq!(s.runs(), 1);
}

#[test]
fn another_program_or_compiler_is_a_miss() {
    let s = Setup::new();
    let out = s.site.path("out.bin");
    success(&mut s.exec(&s.module, &out));
    let batch5 = s.site.path("batch5.mlir");
    std::fs::copy(corpus("cpu/mlp.a_batch5.generic.mlir"), &batch5).expect("copy");
    success(&mut s.exec(&batch5, &out));
    assert_eq!(s.runs(), 2);
    // Same name, other binary: its digest is part of the key.
    write_compiler(&s.site.compiler(), "2");
    success(&mut s.exec(&s.module, &out));
    assert_eq!(s.runs(), 3);
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .ends_with("compiled-by-2\n")
    );
    // An extra argument is a miss too.
    success(s.exec(&s.module, &out).arg("--fast"));
    assert_eq!(s.runs(), 4);
}

#[test]
fn failures_are_remembered_replayed_and_retried_on_request() {
    let s = Setup::new();
    let out = s.site.path("out.bin");
    let first = s
        .exec(&s.module, &out)
        .env("FAIL", "1")
        .output()
        .expect("run");
    assert_eq!(first.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&first.stderr).contains("error: cannot compile"));
    // Replayed without compiling: same status, same stderr.
    let replay = s.exec(&s.module, &out).output().expect("run");
    assert_eq!(replay.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&replay.stderr);
    assert!(stderr.contains("error: cannot compile"), "{stderr}");
    assert!(
        stderr.contains("replaying the remembered failure"),
        "{stderr}"
    );
    assert_eq!(s.runs(), 1);
    // --retry_failed_compilation compiles again and stores the success.
    success(
        s.exec(&s.module, &out)
            .env("MLIR_CACHE_KEY_FLAGS", "--retry_failed_compilation"),
    );
    assert_eq!(s.runs(), 2);
    success(&mut s.exec(&s.module, &out));
    assert_eq!(s.runs(), 2, "the new success is reused");
}

#[test]
fn eight_concurrent_execs_compile_once() {
    let s = Setup::new();
    let children: Vec<_> = (0..8)
        .map(|i| {
            let out = s.site.path(&format!("out{i}.bin"));
            let child = s
                .exec(&s.module, &out)
                .env("SLEEP", "1")
                .spawn()
                .expect("spawn");
            (child, out)
        })
        .collect();
    let mut outputs = Vec::new();
    for (child, out) in children {
        let result = child.wait_with_output().expect("wait");
        assert!(result.status.success());
        outputs.push(std::fs::read(out).expect("output"));
    }
    assert_eq!(s.runs(), 1, "one compile for eight processes");
    assert!(outputs.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn real_mlir_opt_as_the_compiler() {
    let s = Setup::new();
    let out = s.site.path("module.mlirbc");
    let run = || {
        let mut command = bin();
        command
            .args(["exec", "--no-direct", "--cache-dir"])
            .arg(s.cache())
            .arg("--input")
            .arg(&s.module)
            .arg("--output")
            .arg(&out)
            .args([
                "--",
                "/usr/lib/llvm-22/bin/mlir-opt",
                "--allow-unregistered-dialect",
                "--emit-bytecode",
            ])
            .arg(&s.module)
            .arg("-o")
            .arg(&out);
        command
    };
    success(&mut run());
    let compiled = std::fs::read(&out).expect("output");
    std::fs::remove_file(&out).expect("remove");
    success(&mut run());
    assert_eq!(std::fs::read(&out).expect("output"), compiled);
    let stats: serde_json::Value = serde_json::from_slice(&success(
        bin()
            .args(["cache", "stats", "--json", "--cache-dir"])
            .arg(s.cache()),
    ))
    .expect("json");
    assert_eq!(stats["entries"], 1);
    assert_eq!(stats["hits"], 1);
    assert_eq!(stats["misses"], 1);
}

#[test]
fn no_cache_runs_the_compiler_every_time() {
    let s = Setup::new();
    let out = s.site.path("out.bin");
    for _ in 0..2 {
        success(
            s.exec(&s.module, &out)
                .env("MLIR_CACHE_KEY_FLAGS", "--no_cache"),
        );
    }
    assert_eq!(s.runs(), 2);
    assert!(!s.cache().exists());
}

#[test]
fn cache_management_commands() {
    let s = Setup::new();
    success(&mut s.exec(&s.module, &s.site.path("out.bin")));
    let cache = |args: &[&str]| {
        let mut c = bin();
        c.arg("cache").arg("--cache-dir").arg(s.cache()).args(args);
        c
    };
    let list = text(success(&mut cache(&["entries"])));
    assert!(list.contains("jit_mlp-"), "{list}");
    assert_eq!(text(success(&mut cache(&["list"]))), "no addresses");
    let entries: serde_json::Value = serde_json::from_slice(&success(&mut cache(&[
        "entries", "--json", "--name", "jit_*",
    ])))
    .unwrap();
    assert_eq!(entries.as_array().unwrap().len(), 1);
    let key = entries[0]["key"].as_str().unwrap().to_string();
    let fetched = success(&mut cache(&["get", &key]));
    assert_eq!(fetched, std::fs::read(s.site.path("out.bin")).unwrap());
    let verify = text(success(&mut cache(&["verify", "--json"])));
    assert!(verify.contains("\"entries\": 1"), "{verify}");
    success(&mut cache(&["gc"]));
    assert!(text(success(&mut cache(&["clear", "--name", "other_*"]))).contains("and 0 entries"));
    failure(&mut cache(&["clear"]), common::EX_USAGE);
    assert!(text(success(&mut cache(&["clear", "--name", "jit_*"]))).contains("and 1 entries"));
    let stderr = failure(&mut cache(&["get", &key]), common::EX_SOFTWARE);
    assert!(stderr.contains("is not in the cache"), "{stderr}");
    // put/get round trip with a hostile key refused.
    let file = s.site.path("blob");
    std::fs::write(&file, b"artefact").unwrap();
    success(cache(&["put", &key]).arg(&file));
    assert_eq!(success(&mut cache(&["get", &key])), b"artefact");
    let stderr = failure(
        cache(&["put", "../../etc-0000"]).arg(&file),
        common::EX_CACHE,
    );
    assert!(stderr.contains("../../etc-0000"), "{stderr}");
}

#[test]
fn bad_settings_and_hostile_cache_directories() {
    let s = Setup::new();
    let out = s.site.path("out.bin");
    let stderr = failure(
        s.exec(&s.module, &out)
            .env("MLIR_CACHE_KEY_FLAGS", "--cache_size=lots"),
        common::EX_USAGE,
    );
    assert!(
        stderr.contains("MLIR_CACHE_KEY_FLAGS") && stderr.contains("--cache_size=lots"),
        "{stderr}"
    );
    let stderr = failure(
        s.exec(&s.module, &out)
            .env("MLIR_CACHE_KEY_FLAGS", "--cache_colour=red"),
        common::EX_USAGE,
    );
    assert!(stderr.contains("unknown flag"), "{stderr}");
    // A symlinked cache directory is refused.
    let real = s.site.path("real");
    std::fs::create_dir(&real).unwrap();
    let link = s.site.path("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let stderr = failure(
        bin()
            .env(
                "MLIR_CACHE_KEY_FLAGS",
                format!("--cache_dir={}", link.display()),
            )
            .args(["cache", "stats"]),
        common::EX_CACHE,
    );
    assert!(stderr.contains("link: it is a symbolic link"), "{stderr}");
    assert_eq!(s.runs(), 0);
}

#[test]
fn module_names_cannot_build_paths() {
    let s = Setup::new();
    let hostile = s.site.path("hostile.mlir");
    let module = std::fs::read_to_string(&s.module)
        .unwrap()
        .replace("sym_name = \"jit_mlp\"", "sym_name = \"../../evil\"");
    std::fs::write(&hostile, module).unwrap();
    let stderr = failure(
        &mut s.exec(&hostile, &s.site.path("out.bin")),
        common::EX_CACHE,
    );
    assert!(stderr.contains("path separator"), "{stderr}");
    assert_eq!(s.runs(), 0);
}
