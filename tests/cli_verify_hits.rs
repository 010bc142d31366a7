//! `exec --verify-hits RATE` and `wrap --verify-hits RATE` with real processes and real
//! compilers (shell scripts): a sampled hit compiles again; a compiler that reads an undeclared
//! environment variable or a file whose contents change is caught as a false hit and named; a
//! nondeterministic one is reported as such; rates 0, 1 and a fraction; the stats, the list and
//! `cache show` of a suspect entry.

use crate::common::{self, bin, corpus, data, failure, run, stderr, write_script};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// A directory with a compiler script, a module and a cache.
struct Setup {
    dir: tempfile::TempDir,
    module: PathBuf,
}

impl Setup {
    /// `compiler.sh` counts its runs in `runs`, then runs `body` (`$1` input, `$2` output).
    fn new(body: &str) -> Setup {
        let dir = tempfile::tempdir().expect("tempdir");
        write_script(
            &dir.path().join("compiler.sh"),
            &format!("#!/bin/sh\necho run >> \"$RUNS\"\n{body}\n"),
        );
        let module = dir.path().join("mlp.mlir");
        std::fs::copy(corpus("cpu/mlp.a.generic.mlir"), &module).expect("copy");
        Setup { dir, module }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn runs(&self) -> usize {
        std::fs::read_to_string(self.path("runs")).map_or(0, |s| s.lines().count())
    }

    fn cache(&self, args: &[&str]) -> Command {
        let mut c = bin();
        c.arg("cache")
            .args(args)
            .arg("--cache-dir")
            .arg(self.path("cache"));
        c
    }

    /// `exec OPTIONS -- compiler.sh MODULE out.bin EXTRA…`.
    fn exec(&self, options: &[&str], extra: &[&str]) -> Command {
        let out = self.path("out.bin");
        let mut c = bin();
        c.env("RUNS", self.path("runs"))
            .env_remove("MLIR_CACHE_KEY_AUDIT_SEED")
            .env("MLIR_CACHE_KEY_FLAGS", "--log_level=WARNING")
            .arg("exec")
            .args(options)
            .arg("--cache-dir")
            .arg(self.path("cache"))
            .arg("--input")
            .arg(&self.module)
            .arg("--output")
            .arg(&out)
            .arg("--")
            .arg(self.path("compiler.sh"))
            .arg(&self.module)
            .arg(&out)
            .args(extra);
        c
    }

    fn output(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(self.path("out.bin")).expect("output")).into_owned()
    }

    fn stats(&self) -> Value {
        let out = run(&mut self.cache(&["stats", "--json"]));
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).expect("stats JSON")
    }

    /// The one entry that is not a direct-mode manifest.
    fn entry(&self) -> Value {
        let out = run(&mut self.cache(&["entries", "--json"]));
        assert!(out.status.success(), "{}", stderr(&out));
        let entries: Vec<Value> = serde_json::from_slice(&out.stdout).expect("entries JSON");
        let mut entries = entries.into_iter().filter(|e| e["name"] != "direct");
        let entry = entries.next().expect("an entry");
        assert!(entries.next().is_none(), "one entry");
        entry
    }
}

/// Runs `command`, asserting success; returns stderr.
fn ok(command: &mut Command) -> String {
    let output = command.output().unwrap();
    let text = stderr(&output);
    assert!(output.status.success(), "{:?}\n{text}", output.status);
    text
}

/// Copies the input and appends `scale=$MODEL_SCALE`: an ingredient the key does not hold.
const READS_MODEL_SCALE: &str = "cat \"$1\" > \"$2\" && echo \"scale=$MODEL_SCALE\" >> \"$2\"";

#[test]
fn without_the_option_or_at_rate_zero_a_hit_never_runs_the_compiler() {
    let s = Setup::new(READS_MODEL_SCALE);
    ok(s.exec(&[], &[]).env("MODEL_SCALE", "1"));
    ok(s.exec(&[], &[]).env("MODEL_SCALE", "2"));
    ok(s.exec(&["--verify-hits", "0"], &[]).env("MODEL_SCALE", "2"));
    assert_eq!(s.runs(), 1, "a hit ran the compiler");
    assert!(
        s.output().contains("scale=1"),
        "the stored artefact is served, as today"
    );
    assert_eq!(s.stats()["audits"]["run"], 0);
}

#[test]
fn rate_one_audits_every_hit_and_confirms_a_deterministic_compiler() {
    let s = Setup::new("cat \"$1\" > \"$2\"");
    ok(&mut s.exec(&[], &[]));
    let first = s.output();
    for _ in 0..2 {
        ok(&mut s.exec(&["--verify-hits", "1"], &[]));
    }
    assert_eq!(s.runs(), 3, "each audited hit compiles once");
    assert_eq!(s.output(), first);
    let audits = &s.stats()["audits"];
    common::assert_counters(audits, ["run", "confirmed"], [2, 2]);
    assert_eq!(audits["false_hits"], 0);
    let text = String::from_utf8(run(&mut s.cache(&["stats"])).stdout).unwrap();
    assert!(
        text.contains("hit audits          2 (2 confirmed, 0 false hits, 0 nondeterministic)"),
        "{text}"
    );
}

#[test]
fn an_undeclared_environment_variable_is_a_false_hit_named_and_not_served_again() {
    let s = Setup::new(READS_MODEL_SCALE);
    ok(s.exec(&[], &[]).env("MODEL_SCALE", "1"));
    let caught = ok(s.exec(&["--verify-hits", "1"], &[]).env("MODEL_SCALE", "2"));
    assert!(
        s.output().contains("scale=2"),
        "the fresh output is delivered"
    );
    assert!(
        caught.contains("MODEL_SCALE: set differently and not in the key; add `--env MODEL_SCALE`"),
        "{caught}"
    );
    assert!(caught.contains("false hit"), "{caught}");
    assert_eq!(s.runs(), 3, "one store, two fresh compiles");
    let audits = &s.stats()["audits"];
    common::assert_counters(audits, ["run", "false_hits"], [1, 1]);

    // Listed and shown as suspect, with the reason.
    let entry = s.entry();
    let reason = entry["suspect"]
        .as_str()
        .expect("marked suspect in the list");
    assert!(reason.contains("MODEL_SCALE"), "{reason}");
    let table = String::from_utf8(run(&mut s.cache(&["entries"])).stdout).unwrap();
    assert!(table.lines().any(|l| l.starts_with("suspect")), "{table}");
    let key = entry["key"].as_str().unwrap();
    let shown = String::from_utf8(run(&mut s.cache(&["show", key])).stdout).unwrap();
    assert!(shown.contains("suspect      not served since"), "{shown}");
    assert!(shown.contains("add `--env MODEL_SCALE`"), "{shown}");
    let json = run(&mut s.cache(&["show", key, "--json"])).stdout;
    let json: Value = serde_json::from_slice(&json).unwrap();
    assert!(
        json["suspect"]["reason"]
            .as_str()
            .unwrap()
            .contains("MODEL_SCALE")
    );

    // The stored entry is never served again: the next run (no audit) compiles.
    std::fs::remove_file(s.path("out.bin")).unwrap();
    ok(s.exec(&[], &[]).env("MODEL_SCALE", "1"));
    assert_eq!(s.runs(), 4, "the suspect entry was served");
    assert!(s.output().contains("scale=1"));
}

#[test]
fn a_file_named_on_the_command_line_whose_contents_change_is_a_false_hit() {
    let s = Setup::new("cat \"$1\" \"$3\" > \"$2\"");
    let weights = s.path("weights.bin");
    std::fs::write(&weights, "weights v1").unwrap();
    let weights_arg = weights.to_str().unwrap();
    ok(&mut s.exec(&[], &[weights_arg]));
    std::fs::write(&weights, "weights v2").unwrap();
    let caught = ok(&mut s.exec(&["--verify-hits", "1"], &[weights_arg]));
    assert!(
        s.output().ends_with("weights v2"),
        "the fresh output is delivered"
    );
    assert!(
        caught.contains(&format!("{weights_arg}: its contents changed")),
        "{caught}"
    );
    assert_eq!(s.stats()["audits"]["false_hits"], 1);
}

#[test]
fn a_nondeterministic_compiler_is_reported_as_such_never_as_a_false_hit() {
    // Every compile differs: it appends how many times it ran.
    let s = Setup::new("cat \"$1\" > \"$2\" && wc -l < \"$RUNS\" >> \"$2\"");
    ok(&mut s.exec(&[], &[]));
    let said = ok(&mut s.exec(&["--verify-hits", "1"], &[]));
    assert!(said.contains("nondeterministic"), "{said}");
    assert!(!said.contains("false hit"), "{said}");
    assert_eq!(s.runs(), 3);
    let audits = &s.stats()["audits"];
    common::assert_counters(audits, ["nondeterministic", "false_hits"], [1, 0]);
    assert!(s.entry().get("suspect").is_none(), "the entry is blamed");
    // Not blamed: the next hit is served from the cache.
    ok(&mut s.exec(&[], &[]));
    assert_eq!(s.runs(), 3);
}

#[test]
fn a_fractional_rate_over_many_hits_lands_near_its_value() {
    let s = Setup::new("cat \"$1\" > \"$2\"");
    ok(&mut s.exec(&[], &[]));
    let hits = 80;
    for seed in 0..hits {
        ok(s.exec(&["--verify-hits", "0.25"], &[])
            .env("MLIR_CACHE_KEY_AUDIT_SEED", seed.to_string()));
    }
    let audited = s.stats()["audits"]["run"].as_u64().unwrap();
    assert_eq!(s.runs() as u64, 1 + audited);
    // Binomial(80, 0.25): mean 20, standard deviation ~3.9; the seeds fix the draw.
    assert!((10..=30).contains(&audited), "{audited} of {hits} audited");
}

#[test]
fn a_rate_outside_zero_to_one_is_a_clear_error() {
    let s = Setup::new("cat \"$1\" > \"$2\"");
    for bad in ["1.5", "-0.1", "often", "NaN"] {
        let option = format!("--verify-hits={bad}");
        let said = failure(&mut s.exec(&[&option], &[]), common::EX_USAGE);
        assert!(said.contains("expected a rate between 0 and 1"), "{said}");
    }
    assert_eq!(s.runs(), 0);
}

#[test]
fn wrap_audits_a_hit_too() {
    let s = Setup::new("");
    let shim = s.path("shim");
    std::fs::create_dir(&shim).unwrap();
    // A stand-in for the Neuron compiler that reads MODEL_SCALE: INPUT after
    // `compile --framework X`, the output after --output.
    write_script(
        &shim.join("neuronx-cc"),
        "#!/bin/sh\necho run >> \"$RUNS\"\nin=$4; while [ \"$1\" != --output ]; do shift; done\n\
         cp \"$in\" \"$2\" && echo \"scale=$MODEL_SCALE\" >> \"$2\"\n",
    );
    std::fs::copy(data("hlo/mlp.a.pb"), s.path("mlp.pb")).unwrap();
    let path = std::env::join_paths(
        std::iter::once(shim).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let wrap = |scale: &str, options: &[&str]| {
        let mut c = bin();
        c.current_dir(s.dir.path())
            .env("PATH", &path)
            .env("RUNS", s.path("runs"))
            .env("MODEL_SCALE", scale)
            .env_remove("XLA_FLAGS")
            .arg("wrap")
            .args(options)
            .arg("--cache-dir")
            .arg(s.path("cache"))
            .args([
                "--",
                "neuronx-cc",
                "compile",
                "--framework",
                "XLA",
                "mlp.pb",
            ])
            .args(["--output", "out.bin"]);
        ok(&mut c)
    };
    wrap("1", &[]);
    let caught = wrap("2", &["--verify-hits", "1"]);
    assert!(caught.contains("add `--env MODEL_SCALE`"), "{caught}");
    assert!(s.output().ends_with("scale=2\n"));
    assert_eq!(s.stats()["audits"]["false_hits"], 1);
}

#[test]
fn cache_list_marks_the_suspect_entry_at_its_address() {
    let s = Setup::new(READS_MODEL_SCALE);
    let at = |run: &str| ["--address", "t/answer", "--run", run].map(str::to_owned);
    ok(s.exec(&at("r1").each_ref().map(String::as_str), &[])
        .env("MODEL_SCALE", "1"));
    let mut audited = at("r2").to_vec();
    audited.extend(["--verify-hits".to_owned(), "1".to_owned()]);
    let audited: Vec<&str> = audited.iter().map(String::as_str).collect();
    ok(s.exec(&audited, &[]).env("MODEL_SCALE", "2"));
    let listed = String::from_utf8(run(&mut s.cache(&["list"])).stdout).unwrap();
    assert!(
        listed.contains("suspect: false hit found by a hit audit: MODEL_SCALE: set differently"),
        "{listed}"
    );
    let json: Value =
        serde_json::from_slice(&run(&mut s.cache(&["list", "--json"])).stdout).unwrap();
    assert!(
        json[0]["suspect"]
            .as_str()
            .unwrap()
            .contains("--env MODEL_SCALE"),
        "{json}"
    );
    // The address's record keeps what the audit found.
    let settings = mlir_cache_key::store::Settings {
        cache_dir: s.path("cache"),
        ..Default::default()
    };
    let store = mlir_cache_key::store::Store::open(&settings).unwrap();
    let registry = mlir_cache_key::runs::Registry::open(&store, &Default::default()).unwrap();
    let record = registry
        .address("t/answer")
        .unwrap()
        .expect("the address")
        .record;
    assert_eq!(record["audit"]["outcome"], "false hit", "{record}");
    let explanation = record["audit"]["explanation"].as_str().unwrap();
    assert!(
        explanation.contains("add `--env MODEL_SCALE`"),
        "{explanation}"
    );
}

#[test]
fn an_audit_whose_compile_fails_serves_the_stored_artefact_unaudited() {
    // With FAIL set, the compiler empties its output and fails.
    let s = Setup::new("if [ -n \"$FAIL\" ]; then : > \"$2\"; exit 3; fi; cat \"$1\" > \"$2\"");
    ok(&mut s.exec(&[], &[]));
    let stored = s.output();
    let said = ok(s.exec(&["--verify-hits", "1"], &[]).env("FAIL", "1"));
    assert!(
        said.contains("serving the stored artefact unaudited"),
        "{said}"
    );
    assert_eq!(s.output(), stored);
    assert_eq!(s.stats()["audits"]["run"], 0);
}
