//! The step cache and `exec` as a user meets them: each test is one promise (filters narrow
//! `--all`, failures are no conflicts, the address grammar, the running state, sealed runs,
//! `runs status`, the XLA flag filter, interpreted compilers, exit codes, logs), and one
//! scenario walks the whole workflow.

use crate::common::{
    self, EX_CONFLICT, EX_NOINPUT, EX_USAGE, Site, bin, failure, stderr, success, text,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A `common::Site` with its cache in `cache/`.
struct Bench {
    site: Site,
}

impl Bench {
    fn new() -> Bench {
        Bench {
            site: Site::new("compiled"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.site.path(name)
    }

    /// A copy of a corpus module under a short name.
    fn module(&self, corpus_file: &str, name: &str) -> PathBuf {
        self.site.module(corpus_file, name)
    }

    fn cache(&self) -> String {
        self.path("cache").display().to_string()
    }

    fn compiles(&self) -> usize {
        self.site.runs()
    }

    /// `cache …`/`runs …` on this bench's cache.
    fn manage(&self, args: &[&str]) -> Command {
        let mut c = bin();
        c.args(&args[..2.min(args.len())])
            .args(["--cache-dir", &self.cache()])
            .args(&args[2.min(args.len())..]);
        c
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.push("--json");
        serde_json::from_slice(&success(&mut self.manage(&args))).expect("json")
    }

    /// `exec` of `module` with `options` before `--` and `compiler` (default: cc.sh) after.
    fn exec(&self, module: &Path, options: &[&str], compiler: Option<&[&str]>) -> Command {
        let out = self.path("out.bin");
        let mut c = self.site.bin();
        // Counts here are of canonical entries (direct mode: tests/cli_direct.rs).
        c.args([
            "exec",
            "--no-direct",
            "--cache-dir",
            &self.cache(),
            "--input",
        ])
        .arg(module)
        .arg("--output")
        .arg(&out)
        .args(options)
        .arg("--");
        match compiler {
            Some(words) => c.args(words),
            None => c.arg(self.path("cc.sh")),
        };
        c.arg(module).arg(&out);
        c
    }

    /// `exec` at `train-v1/<step>[model:MODEL]` within `run`.
    fn step(&self, module: &Path, model: &str, run: &str, extra: &[&str]) -> Command {
        let mut options = vec!["--namespace", "train-v1", "--map"];
        let map = format!("model={model}");
        options.push(&map);
        options.extend(["--run", run]);
        options.extend(extra);
        self.exec(module, &options, None)
    }
}

fn output(command: &mut Command) -> Output {
    command.output().expect("run mlir-cache-key")
}

fn addresses(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| v["address"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn filters_narrow_clear_all() {
    let b = Bench::new();
    let m = b.module("cpu/mlp.a.generic.mlir", "m.mlir");
    let c = b.module("cpu/conv.a.generic.mlir", "c.mlir");
    success(&mut b.exec(&m, &["--address", "ns/train[k:1]", "--run", "r1"], None));
    success(&mut b.exec(&c, &["--address", "ns/eval[k:1]", "--run", "r1"], None));
    let cleared = text(success(
        &mut b.manage(&["cache", "clear", "--all", "--step", "eval"]),
    ));
    assert!(cleared.starts_with("removed 1 addresses"), "{cleared}");
    assert_eq!(addresses(&b.json(&["cache", "list"])), ["ns/train[k:1]"]);
    // `--all --state failed` with no failed address removes nothing.
    let cleared = text(success(
        &mut b.manage(&["cache", "clear", "--all", "--state", "failed"]),
    ));
    assert!(cleared.starts_with("removed 0 addresses"), "{cleared}");
    assert_eq!(addresses(&b.json(&["cache", "list"])).len(), 1);
    let entries = b.json(&["cache", "entries"]);
    assert_eq!(
        entries.as_array().unwrap().len(),
        2,
        "unaddressed entries stay: {entries}"
    );
}

#[test]
fn a_failed_result_at_an_address_is_no_conflict() {
    let b = Bench::new();
    let m = b.module("cpu/mlp.a.generic.mlir", "m.mlir");
    let out = output(b.step(&m, "small", "r1", &[]).env("FAIL", "1"));
    assert_eq!(
        out.status.code(),
        Some(3),
        "the compiler's own status: {}",
        stderr(&out)
    );
    // Another program at the same address: it simply compiles.
    let batch5 = b.module("cpu/mlp.a_batch5.generic.mlir", "m5.mlir");
    success(&mut b.step(&batch5, "small", "r2", &[]));
    let list = b.json(&["cache", "list"]);
    assert_eq!(list[0]["state"], "ok", "{list}");
    assert_eq!(list[0]["run"], "r2");
}

#[test]
fn the_documented_address_forms_are_accepted_in_order() {
    let b = Bench::new();
    let m = b.module("cpu/mlp.a.generic.mlir", "m.mlir");
    let nested = r#"qa-v1/summarize[model:"small"]/mean"#;
    success(&mut b.exec(&m, &["--address", nested, "--run", "r1"], None));
    success(&mut b.exec(
        &m,
        &[
            "--namespace",
            "eval",
            "--step",
            "sample",
            "--map",
            "sample=2",
            "--map",
            "model=big",
            "--run",
            "r1",
        ],
        None,
    ));
    let listed = addresses(&b.json(&["cache", "list"]));
    assert!(listed.contains(&nested.to_string()), "{listed:?}");
    assert!(
        listed.contains(&r#"eval/sample[sample:2,model:"big"]"#.to_string()),
        "integer value, keys in the order given: {listed:?}"
    );
    let star = b.json(&["cache", "list", "qa-v1/summarize[model:*]/mean"]);
    assert_eq!(addresses(&star), [nested]);
    let ints = b.json(&["cache", "list", "eval/sample[sample:*,model:*]"]);
    assert_eq!(ints.as_array().unwrap().len(), 1);
}

#[test]
fn a_running_address_is_listed_and_not_cleared() {
    let b = Bench::new();
    let m = b.module("cpu/mlp.a.generic.mlir", "m.mlir");
    let mut slow = b.step(&m, "small", "r1", &[]);
    let mut child = slow.env("SLEEP", "4").spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let running = loop {
        let list = b.json(&["cache", "list"]);
        if list[0]["state"] == "running" {
            break list;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never listed as running: {list}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(running[0]["run"], "r1");
    let refused = failure(&mut b.manage(&["cache", "clear", "--all"]), EX_CONFLICT);
    assert!(
        refused.contains("run r1") && refused.contains("is compiling"),
        "{refused}"
    );
    // Overwriting it with another program is refused too, naming the running run.
    let batch5 = b.module("cpu/mlp.a_batch5.generic.mlir", "m5.mlir");
    let out = output(&mut b.step(&batch5, "small", "r2", &["--overwrite-cache-conflicts"]));
    assert_eq!(out.status.code(), Some(EX_CONFLICT), "{}", stderr(&out));
    assert!(stderr(&out).contains("run r1"), "{}", stderr(&out));
    assert!(child.wait().unwrap().success());
    assert_eq!(b.json(&["cache", "list"])[0]["state"], "ok");
}

#[test]
fn a_dead_holder_does_not_block() {
    let b = Bench::new();
    let m = b.module("cpu/mlp.a.generic.mlir", "m.mlir");
    let mut child = b
        .step(&m, "small", "r1", &[])
        .env("SLEEP", "30")
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while b.json(&["cache", "list"])[0]["state"] != "running" {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The mark of a dead process is ignored: the address can be cleared and compiled.
    success(&mut b.manage(&["cache", "clear", "--all"]));
    success(&mut b.step(&m, "small", "r2", &[]));
}

#[test]
fn a_closed_run_never_changes() {
    let b = Bench::new();
    let m = b.module("cpu/mlp.a.generic.mlir", "m.mlir");
    success(&mut b.step(&m, "small", "r1", &[]));
    let before = b.json(&["runs", "show", "r1"]);
    success(&mut b.manage(&["runs", "close", "r1"]));
    let c = b.module("cpu/conv.a.generic.mlir", "c.mlir");
    let refused = failure(&mut b.step(&c, "other", "r1", &[]), EX_USAGE);
    assert!(refused.contains("run r1 is closed"), "{refused}");
    assert_eq!(b.json(&["runs", "show", "r1"]), before);
    let runs = b.json(&["runs", "list"]);
    assert!(runs[0]["sealed_ms"].is_i64(), "{runs}");
}

#[test]
fn runs_status_groups_conflicts_with_exact_commands() {
    let b = Bench::new();
    let m = b.module("cpu/mlp.a.generic.mlir", "m.mlir");
    let batch5 = b.module("cpu/mlp.a_batch5.generic.mlir", "m5.mlir");
    for model in ["small", "big"] {
        success(&mut b.step(&m, model, "r1", &[]));
    }
    for model in ["small", "big"] {
        let out = output(&mut b.step(&batch5, model, "r2", &[]));
        assert_eq!(out.status.code(), Some(EX_CONFLICT));
    }
    let status = text(success(&mut b.manage(&["runs", "status", "r2"])));
    assert!(status.contains("2 conflicts"), "{status}");
    assert!(
        status.contains("train-v1/jit_mlp[model:*] (2 addresses)"),
        "{status}"
    );
    let clear = status
        .lines()
        .find(|l| l.contains("cache clear"))
        .expect("a clear command")
        .trim()
        .split("   #")
        .next()
        .unwrap()
        .to_string();
    assert!(
        clear.contains(&format!("--cache-dir '{}'", b.cache())),
        "{clear}"
    );
    // The printed command, pasted, clears exactly those conflicts.
    let pasted = Command::new("sh")
        .arg("-c")
        .arg(clear.replace("mlir-cache-key", env!("CARGO_BIN_EXE_mlir-cache-key")))
        .output()
        .unwrap();
    assert!(pasted.status.success(), "{}", stderr(&pasted));
    assert!(b.json(&["cache", "list"]).as_array().unwrap().is_empty());
}

#[test]
fn xla_flags_jax_leaves_out_and_ignored_args_do_not_recompile() {
    let b = Bench::new();
    let m = b.module("cpu/mlp.a.generic.mlir", "m.mlir");
    let out = b.path("out.bin");
    let cc = b.path("cc.sh").display().to_string();
    let exec_with = |extra_args: &[&str], xla_flags: &str| {
        let mut c = bin();
        c.env("RUNS", b.path("runs"))
            .env("XLA_FLAGS", xla_flags)
            .args([
                "--log-level",
                "info",
                "exec",
                "--cache-dir",
                &b.cache(),
                "--input",
            ])
            .arg(&m)
            .arg("--output")
            .arg(&out)
            .args(["--ignore-arg", "--verbose=*", "--"])
            .arg(&cc)
            .arg(&m)
            .arg(&out)
            .args(extra_args);
        output(&mut c)
    };
    assert!(
        exec_with(&[], "--xla_cpu_enable_fast_math=false")
            .status
            .success()
    );
    let dumped = exec_with(
        &["--xla_dump_to=/tmp/d1", "--verbose=3"],
        "--xla_cpu_enable_fast_math=false --xla_dump_to=/tmp/d2",
    );
    assert!(dumped.status.success());
    assert_eq!(b.compiles(), 1, "dump and verbosity flags do not recompile");
    let log = stderr(&dumped);
    assert!(
        log.contains("--xla_dump_to=/tmp/d1"),
        "the log says what was left out: {log}"
    );
    assert!(log.contains("--verbose=3"), "{log}");
    // A flag JAX keys does recompile, from the environment and from the arguments.
    assert!(
        exec_with(&[], "--xla_cpu_enable_fast_math=true")
            .status
            .success()
    );
    assert_eq!(b.compiles(), 2);
    assert!(
        exec_with(
            &["--xla_cpu_use_thunk_runtime=false"],
            "--xla_cpu_enable_fast_math=true"
        )
        .status
        .success()
    );
    assert_eq!(b.compiles(), 3);
}

#[test]
fn an_interpreted_compiler_script_is_part_of_the_key() {
    let b = Bench::new();
    let m = b.module("cpu/mlp.a.generic.mlir", "m.mlir");
    let script = b.path("compile.sh");
    let write = |marker: &str| {
        std::fs::write(
            &script,
            format!("echo run >> \"$RUNS\"\ncat \"$1\" > \"$2\"\necho {marker} >> \"$2\"\n"),
        )
        .unwrap()
    };
    write("v1");
    let script_arg = script.display().to_string();
    let sh: &[&str] = &["sh", &script_arg];
    success(&mut b.exec(&m, &[], Some(sh)));
    success(&mut b.exec(&m, &[], Some(sh)));
    assert_eq!(b.compiles(), 1);
    write("v2");
    success(&mut b.exec(&m, &[], Some(sh)));
    assert_eq!(b.compiles(), 2, "an edited script is another compiler");
    assert!(
        std::fs::read_to_string(b.path("out.bin"))
            .unwrap()
            .ends_with("v2\n")
    );
    // With --compiler-check string:…, the user vouches: the script is not read.
    let vouched = ["--compiler-check", "string:release-7"];
    success(&mut b.exec(&m, &vouched, Some(sh)));
    write("v3");
    success(&mut b.exec(&m, &vouched, Some(sh)));
    assert_eq!(b.compiles(), 3);
}

#[test]
fn exit_codes_do_not_collide_with_the_compilers() {
    let b = Bench::new();
    let m = b.module("cpu/mlp.a.generic.mlir", "m.mlir");
    // The compiler's own status passes through, on a miss and on a replay.
    for _ in 0..2 {
        let out = output(b.exec(&m, &[], None).env("FAIL", "1"));
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    }
    let missing = failure(&mut b.exec(&m, &[], Some(&["/nonexistent/cc"])), EX_NOINPUT);
    assert!(
        missing.contains("command not found: /nonexistent/cc"),
        "{missing}"
    );
    let help = text(success(bin().arg("--help")));
    assert!(
        help.contains("Exit codes:") && help.contains("75"),
        "{help}"
    );
}

#[test]
fn logs_name_the_store_and_one_level_vocabulary() {
    let b = Bench::new();
    let m = b.module("cpu/mlp.a.generic.mlir", "m.mlir");
    let out = output(
        b.exec(&m, &[], None)
            .env("MLIR_CACHE_KEY_FLAGS", "--log_level=DEBUG")
            .env("XLA_FLAGS", "--xla_cpu_enable_fast_math=false"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    common::assert_contains(&stderr(&out), &["info: Stored the ok entry jit_mlp-"]);
    assert!(
        stderr(&out).contains("debug:"),
        "DEBUG is a level: {}",
        stderr(&out)
    );
    let out = output(
        bin()
            .args(["--log-level", "INFO", "canon", "--digest"])
            .arg(&m),
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_retry_counts_one_miss_and_says_so() {
    let b = Bench::new();
    let m = b.module("cpu/mlp.a.generic.mlir", "m.mlir");
    assert_eq!(
        output(b.exec(&m, &[], None).env("FAIL", "1")).status.code(),
        Some(3)
    );
    let before = b.json(&["cache", "stats"])["misses"].as_u64().unwrap();
    let out = output(&mut b.exec(
        &m,
        &["--log-level", "info", "--retry-failed-compilation"],
        None,
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let log = stderr(&out);
    assert!(log.contains("retrying the remembered failure"), "{log}");
    assert!(!log.contains("same key"), "{log}");
    assert_eq!(
        b.json(&["cache", "stats"])["misses"].as_u64().unwrap(),
        before + 1
    );
}

/// The whole workflow: run, change one mapped input, conflict, `runs status`, clear exactly
/// the conflicts, resume, overwrite, adopt, import with `--adopt-cache`; a finished run's
/// record never changes.
#[test]
fn the_whole_workflow() {
    let b = Bench::new();
    let m = b.module("cpu/mlp.a.generic.mlir", "m.mlir");
    let batch5 = b.module("cpu/mlp.a_batch5.generic.mlir", "m5.mlir");
    let conv = b.module("cpu/conv.a.generic.mlir", "c.mlir");
    // Run 1: two steps.
    success(&mut b.step(&m, "small", "r1", &[]));
    success(&mut b.step(&conv, "big", "r1", &[]));
    success(&mut b.manage(&["runs", "close", "r1"]));
    let r1 = b.json(&["runs", "show", "r1"]);
    // Run 2: one input changed: a conflict at that address only.
    let out = output(&mut b.step(&batch5, "small", "r2", &[]));
    assert_eq!(out.status.code(), Some(EX_CONFLICT));
    success(&mut b.step(&conv, "big", "r2", &[]));
    let status = b.json(&["runs", "status", "r2"]);
    assert_eq!(
        status["conflicts"][0]["addresses"][0],
        r#"train-v1/jit_mlp[model:"small"]"#
    );
    // Clear exactly the conflicts, then resume.
    let cleared = text(success(&mut b.manage(&[
        "cache",
        "clear",
        "--conflicts-in",
        "r2",
    ])));
    assert!(cleared.starts_with("removed 1 addresses"), "{cleared}");
    success(&mut b.step(&batch5, "small", "r2", &[]));
    assert_eq!(
        b.json(&["runs", "status", "r2"])["conflicts"],
        Value::Array(vec![])
    );
    // Run 3 brings the old program back: overwrite for that run.
    success(&mut b.step(&m, "small", "r3", &["--overwrite-cache-conflicts"]));
    // Adopt run 2's entries again.
    success(&mut b.manage(&["cache", "adopt", "r2"]));
    let list = b.json(&["cache", "list", r#"train-v1/jit_mlp[model:"small"]"#]);
    assert_eq!(list[0]["run"], "r2");
    // Share run 2 with a collaborator, who adopts it.
    let file = b.path("r2.tar");
    success(b.manage(&["runs", "export", "r2"]).arg(&file));
    let theirs = b.path("theirs");
    let mut import = bin();
    import
        .args(["runs", "import", "--cache-dir"])
        .arg(&theirs)
        .arg(&file)
        .arg("--adopt-cache");
    success(&mut import);
    let mut list = bin();
    list.args(["cache", "list", "--json", "--cache-dir"])
        .arg(&theirs);
    let theirs_list: Value = serde_json::from_slice(&success(&mut list)).unwrap();
    assert_eq!(theirs_list.as_array().unwrap().len(), 2, "{theirs_list}");
    // Through all of it, the closed run's record did not change.
    assert_eq!(b.json(&["runs", "show", "r1"]), r1);
}
