//! Helpers shared by the integration tests: test data paths, running the real
//! `mlir-cache-key` binary and checking what it said; `site`: a directory with a counting
//! compiler for `exec` tests.
#![allow(dead_code)]

mod site;

#[allow(unused_imports)] // not every test uses every helper
pub use site::{Site, compile};

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A file under `tests/data/`.
pub fn data(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(relative)
}

/// A corpus module under `tests/data/corpus/`.
pub fn corpus(relative: &str) -> PathBuf {
    data(&format!("corpus/{relative}"))
}

pub fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// The `mlir-cache-key` binary built for these tests (or `$MCK_TEST_BIN`: another build, e.g.
/// to check that a test fails on the old behavior).
pub fn bin() -> Command {
    let program = std::env::var_os("MCK_TEST_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_mlir-cache-key").into());
    let mut command = Command::new(program);
    // Tests must not see the developer's cache settings.
    command.env_remove("MLIR_CACHE_KEY_FLAGS");
    command.env_remove("XLA_FLAGS");
    command.env_remove("LIBTPU_INIT_ARGS");
    command
}

/// Runs `command` with `stdin` bytes and returns its output.
pub fn run_with_stdin(command: &mut Command, stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {command:?}: {e}"));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

/// Runs `command`, printing its whole output when it does not match `ok`.
pub fn run(command: &mut Command) -> Output {
    command.output().expect("run mlir-cache-key")
}

/// Asserts success and returns stdout.
pub fn success(command: &mut Command) -> Vec<u8> {
    let output = run(command);
    assert!(
        output.status.success(),
        "command failed: {command:?}\nstatus: {}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// Asserts failure with `code` and returns stderr.
pub fn failure(command: &mut Command, code: i32) -> String {
    let output = run(command);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.code(),
        Some(code),
        "unexpected status for {command:?}\nstdout: {}\nstderr: {stderr}",
        String::from_utf8_lossy(&output.stdout),
    );
    stderr
}

/// Asserts success and returns stderr.
pub fn success_stderr(command: &mut Command) -> String {
    let output = run(command);
    assert!(
        output.status.success(),
        "{command:?} failed: {}\n{}",
        output.status,
        stderr(&output)
    );
    stderr(&output)
}

/// Runs `command` logging at INFO (where it tells which cache served it), asserting success;
/// returns stderr.
pub fn success_at_info(command: &mut Command) -> String {
    success_stderr(command.env("MLIR_CACHE_KEY_FLAGS", "--log_level=INFO"))
}

/// Runs `command INPUT -o OUTPUT`, asserting success; returns what it wrote to OUTPUT.
pub fn written(command: &mut Command, input: &Path, output: &Path) -> Vec<u8> {
    let status = command
        .arg(input)
        .arg("-o")
        .arg(output)
        .status()
        .unwrap_or_else(|e| panic!("run {command:?}: {e}"));
    assert!(status.success(), "{command:?}: {status}");
    read(output)
}

/// The permission bits of `path`.
pub fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("stat {}: {e}", path.display()));
    meta.permissions().mode() & 0o777
}

/// `command` run under `wrapper` (GNU time, strace, `ip netns exec` …): `wrapper`'s words, then
/// `command`'s program and arguments, with `command`'s environment changes and directory.
pub fn under(mut wrapper: Command, command: &Command) -> Command {
    wrapper.arg(command.get_program()).args(command.get_args());
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => wrapper.env(name, value),
            None => wrapper.env_remove(name),
        };
    }
    if let Some(dir) = command.get_current_dir() {
        wrapper.current_dir(dir);
    }
    wrapper
}

/// The counter `name` of a `cache stats --json` report (or of one tier's part of it).
pub fn counter(stats: &serde_json::Value, name: &str) -> u64 {
    stats[name]
        .as_u64()
        .unwrap_or_else(|| panic!("{name} in {stats}"))
}

/// Asserts that the counters `names` of `stats` are `want`, showing `stats` when not.
pub fn assert_counters<const N: usize>(
    stats: &serde_json::Value,
    names: [&str; N],
    want: [u64; N],
) {
    assert_eq!(
        names.map(|name| stats[name].as_u64()),
        want.map(Some),
        "{names:?} in {stats}"
    );
}

/// stderr as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts that `text` contains every one of `needles`, showing `text` when not.
pub fn assert_contains(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "no {needle:?} in:\n{text}");
    }
}

/// The strings of a JSON array.
pub fn strings(array: &serde_json::Value) -> Vec<&str> {
    let items = array.as_array().expect("a JSON array");
    items
        .iter()
        .map(|v| v.as_str().expect("a string"))
        .collect()
}

/// Writes `text` to `path` as an executable script.
pub fn write_script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
}

/// A temporary directory holding one file, `name`, with `contents`.
pub fn scratch_file(name: &str, contents: impl AsRef<[u8]>) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    std::fs::write(&path, contents).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    (dir, path)
}

/// Trimmed stdout as text.
pub fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .expect("UTF-8 output")
        .trim_end()
        .to_string()
}

/// A small real "compiler" for `exec` tests: appends a line to `$RUNS` (so
/// tests count compilations), sleeps `$SLEEP`, fails with status 3 and an
/// error on stderr when `$FAIL` is set, else copies its input `$1` to its
/// output `$2` and appends `last_line`.
pub fn write_compiler(path: &Path, last_line: &str) {
    let script = format!(
        "#!/bin/sh\n\
         echo run >> \"$RUNS\"\n\
         if [ -n \"$SLEEP\" ]; then sleep \"$SLEEP\"; fi\n\
         if [ -n \"$FAIL\" ]; then echo \"error: cannot compile $1\" >&2; exit 3; fi\n\
         cat \"$1\" > \"$2\" && echo \"{last_line}\" >> \"$2\"\n"
    );
    write_script(path, &script);
}

/// The tool's exit codes (sysexits), as README.md documents them.
pub const EX_USAGE: i32 = 64;
pub const EX_DATAERR: i32 = 65;
pub const EX_NOINPUT: i32 = 66;
pub const EX_SOFTWARE: i32 = 70;
pub const EX_CACHE: i32 = 74;
pub const EX_CONFLICT: i32 = 75;

/// `exec --no-direct` of `module` through `dir`'s compiler.sh ([`write_compiler`]; its
/// arguments: the module, the output, then `extra`), with `options` before the command; the
/// cache is `dir`'s `cache`. No direct-mode manifests, so entry counts are the keys'.
pub fn exec_through_compiler_sh(
    dir: &Path,
    module: &Path,
    options: &[&str],
    extra: &[&str],
) -> Command {
    let out = dir.join("out.bin");
    let mut c = bin();
    c.env("RUNS", dir.join("runs"))
        .arg("exec")
        .arg("--no-direct")
        .args(options)
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .arg("--input")
        .arg(module)
        .arg("--output")
        .arg(&out)
        .arg("--")
        .arg(dir.join("compiler.sh"))
        .arg(module)
        .arg(&out)
        .args(extra);
    c
}

/// Runs `command` to completion (no stdin; stdout and stderr discarded) and returns its exit
/// code (128 + the signal's number when a signal ended it) and its peak RSS in KiB.
///
/// GNU time takes the measure, not `wait4` here: a child spawned by this process begins in
/// this process's memory (vfork/posix_spawn share it until exec), and Linux keeps that memory's
/// high-water mark in the child's `ru_maxrss` — libMLIR's relocated pages and whatever the
/// other tests of this binary hold, ~100 MB. GNU time is a small process: what it reports for
/// its child is the command's own peak.
pub fn peak_rss_kib(command: &Command) -> (i32, i64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("maxrss");
    let mut time = Command::new("/usr/bin/time");
    time.args(["--quiet", "--format=%M", "--output"])
        .arg(&report);
    let status = under(time, command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("run /usr/bin/time (Debian package `time`): {e}"));
    let text = std::fs::read_to_string(&report).expect("GNU time's report");
    let kib = text
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("GNU time's report {text:?}: expected %M, KiB"));
    (status.code().expect("GNU time exits"), kib)
}
