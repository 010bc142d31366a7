//! `exec` as a library, with a real compiler process and a real cache directory: no binary of
//! ours is spawned, which is the point (a library user gets exec semantics in-process).

use mck_exec::{AtAddress, ExecRequest, Finished, exec_key, run};
use mck_key::Computation;
use mck_remote::{Compiled, Served, Tiered};
use mck_runs::Address;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

struct Setup {
    dir: tempfile::TempDir,
    store: Tiered,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        // A "compiler" that counts its runs, copies its input to its output, and fails when
        // the input says so.
        let cc = dir.path().join("cc.sh");
        std::fs::write(
            &cc,
            "#!/bin/sh\necho run >> \"$(dirname \"$0\")/runs\"\n\
             if grep -q fail \"$1\"; then echo 'cc: error: bad input' >&2; exit 7; fi\n\
             cp \"$1\" \"$2\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&cc, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut settings = mck_settings::Settings::default();
        settings.store.cache_dir = dir.path().join("cache");
        let store = mck_runs::open_cache(&settings, mck_runs::Purpose::Compile)
            .unwrap()
            .expect("caching is on");
        Setup { dir, store }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn runs(&self) -> usize {
        std::fs::read_to_string(self.path("runs")).map_or(0, |s| s.lines().count())
    }

    fn request(&self, input: &Path, output: &Path, extra: &[&str]) -> ExecRequest {
        let mut command: Vec<OsString> = vec![self.path("cc.sh").into()];
        command.push(input.into());
        command.push(output.into());
        command.extend(extra.iter().map(OsString::from));
        ExecRequest {
            command,
            input: input.to_path_buf(),
            output: output.to_path_buf(),
            env: Vec::new(),
            platform: String::new(),
            platform_version: String::new(),
            custom_hook: String::new(),
            lock_timeout: Duration::from_secs(30),
            ignore_args: Vec::new(),
            compiler_check: Default::default(),
            verify_hits: 0.0,
        }
    }

    /// A request compiling `NAME.mlir`, written with `text`, to `NAME.out`.
    fn request_for(&self, name: &str, text: &str) -> ExecRequest {
        let input = self.path(&format!("{name}.mlir"));
        std::fs::write(&input, text).unwrap();
        self.request(&input, &self.path(&format!("{name}.out")), &[])
    }

    /// Keys `request` for the canonical bytes `module` and runs it through the cache.
    fn exec(&self, request: &ExecRequest, module: &[u8], at: Option<AtAddress>) -> Finished {
        let record = exec_key(
            request,
            "jit_f".into(),
            Computation::Bytes(module),
            Some(&self.path("compilers")),
        )
        .unwrap();
        run(&self.store, request, &record, at).unwrap()
    }
}

fn status(finished: &Finished) -> (i32, &Served) {
    match finished {
        Finished::Status { code, served } => (*code, served),
        Finished::Conflict(c) => panic!("unexpected conflict: {c}"),
    }
}

#[test]
fn compiles_once_then_restores_the_output_from_any_path() {
    let s = Setup::new();
    let first = s.exec(&s.request_for("a", "module A"), b"A", None);
    assert!(matches!(status(&first), (0, Served::Fresh(Compiled::Success(b))) if b == b"module A"));
    assert_eq!(s.runs(), 1);

    // Another input path and output path, the same canonical module: a hit, no compile.
    std::fs::create_dir(s.path("elsewhere")).unwrap();
    let input = s.path("elsewhere/b.mlir");
    std::fs::write(&input, "module A").unwrap();
    let output = s.path("elsewhere/b.out");
    let second = s.exec(&s.request(&input, &output, &[]), b"A", None);
    assert!(matches!(status(&second), (0, Served::Written { .. })));
    assert_eq!(s.runs(), 1);
    assert_eq!(std::fs::read(&output).unwrap(), b"module A");

    // Another argument is another key.
    let third = s.exec(&s.request(&input, &output, &["-O3"]), b"A", None);
    assert!(matches!(status(&third), (0, Served::Fresh(_))));
    assert_eq!(s.runs(), 2);
}

#[test]
fn a_failure_is_remembered_with_its_status() {
    let s = Setup::new();
    let request = s.request_for("bad", "fail");
    let first = s.exec(&request, b"bad", None);
    assert!(matches!(
        status(&first),
        (7, Served::Fresh(Compiled::Failed(_)))
    ));
    let again = s.exec(&request, b"bad", None);
    assert!(
        matches!(status(&again), (7, Served::CachedFailure(f)) if f.failure.stderr.contains("bad input"))
    );
    assert_eq!(s.runs(), 1);
}

#[test]
fn another_program_at_an_address_is_a_conflict() {
    let s = Setup::new();
    let request = s.request_for("a", "module A");
    let at = |run: &str| AtAddress {
        address: Address::parse("train-v1/step").unwrap(),
        run: run.into(),
        overwrite_conflicts: false,
        cache_args: "--cache-dir /some/dir".into(),
        registry: Default::default(),
        strict: false,
    };
    status(&s.exec(&request, b"A", Some(at("r1"))));
    match s.exec(&request, b"B", Some(at("r2"))) {
        Finished::Conflict(report) => {
            let text = report.to_string();
            assert!(text.contains("cache conflict at train-v1/step"), "{text}");
            assert!(text.contains("cache clear --cache-dir /some/dir"), "{text}");
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(s.runs(), 1, "a conflict compiles nothing");
}
