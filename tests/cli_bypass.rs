//! The cache never breaks a build (issue 26), shown with real processes as two real users: a
//! second Unix user (`mck-other`, created if absent; the tests run as root, and outside CI they
//! are skipped when not root) runs `exec` and `wrap` against caches it cannot use. The compile
//! runs, its output and exit code are the compiler's, stderr says why the cache was bypassed;
//! `cache_errors = fail` keeps the strict behavior; with no settings each user gets a cache of
//! their own.

use crate::common::{self, EX_CACHE, EX_USAGE, Site, compile};
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const OTHER_USER: &str = "mck-other";
const BYPASSED: &str = "warning: running the compiler without the cache";

/// The second user's uid and gid, creating the user if needed; `None` (skip) outside CI when
/// this process is not root.
fn other_user() -> Option<(u32, u32)> {
    if rustix::process::geteuid().as_raw() != 0 {
        assert!(
            std::env::var_os("CI").is_none(),
            "the two-user tests need root in CI"
        );
        eprintln!("skipped: creating and becoming a second user needs root");
        return None;
    }
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, OTHER_USER]).output().ok()?;
        String::from_utf8(out.stdout).ok()?.trim().parse().ok()
    };
    if id("-u").is_none() {
        let status = Command::new("useradd")
            .args(["-M", "-N", "-s", "/bin/sh", OTHER_USER])
            .status()
            .expect("run useradd");
        // Another test may have created it meanwhile.
        assert!(status.success() || id("-u").is_some(), "useradd failed");
    }
    Some((id("-u").expect("uid"), id("-g").expect("gid")))
}

/// A site the other user can work in: the directory open to everyone (the tests own it).
fn shared_site(last_line: &str) -> Site {
    let site = Site::new(last_line);
    std::fs::set_permissions(site.dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    // Both users' compilers count their runs in one file.
    std::fs::write(site.path("runs"), "").unwrap();
    std::fs::set_permissions(site.path("runs"), std::fs::Permissions::from_mode(0o666)).unwrap();
    site
}

/// The `mlir-cache-key` binary under test (`$MCK_TEST_BIN`, or this build's).
fn program() -> std::ffi::OsString {
    std::env::var_os("MCK_TEST_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_mlir-cache-key").into())
}

/// `setpriv` running what follows as the user `(uid, gid)`, in the supplementary `groups`
/// (none when `None`).
fn setpriv((uid, gid): (u32, u32), groups: Option<&str>) -> Command {
    let mut command = Command::new("setpriv");
    command.args(["--reuid", &uid.to_string(), "--regid", &gid.to_string()]);
    match groups {
        Some(groups) => command.args(["--groups", groups, "--"]),
        None => command.args(["--clear-groups", "--"]),
    };
    command
}

/// `mlir-cache-key` as the user `(uid, gid)`, with HOME in the site, its compilers counting
/// their runs there.
fn bin_as(site: &Site, user: (u32, u32), home: &str) -> Command {
    bin_as_member(site, user, None, home)
}

/// [`bin_as`], the user in the supplementary `groups`.
fn bin_as_member(site: &Site, user: (u32, u32), groups: Option<&str>, home: &str) -> Command {
    let mut command = setpriv(user, groups);
    command.arg(program());
    command
        .env_remove("MLIR_CACHE_KEY_FLAGS")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XLA_FLAGS")
        .env_remove("LIBTPU_INIT_ARGS")
        .env("HOME", site.path(home))
        .env("RUNS", site.path("runs"));
    command
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `exec --cache-dir CACHE` of `input` to `output` with the site's compiler.
fn exec(command: &mut Command, site: &Site, cache: &Path, input: &Path, output: &Path) -> Output {
    command.arg("exec").arg("--cache-dir").arg(cache);
    run_compile(command, site, input, output)
}

/// `command` run as a compile of `input` to `output` with the site's compiler.
fn run_compile(command: &mut Command, site: &Site, input: &Path, output: &Path) -> Output {
    compile(command, &site.compiler(), input, output)
        .output()
        .unwrap()
}

/// [`exec`] as `user`, HOME `h` in the site.
fn exec_as(site: &Site, user: (u32, u32), cache: &Path, input: &Path, output: &Path) -> Output {
    exec(&mut bin_as(site, user, "h"), site, cache, input, output)
}

/// Asserts the site's compiler wrote `input` to `output` with its last line.
fn assert_compiled(input: &Path, output: &Path) {
    let mut want = std::fs::read(input).unwrap();
    want.extend_from_slice(b"// compiled\n");
    assert_eq!(std::fs::read(output).unwrap(), want);
}

/// Asserts the command succeeded and used the cache (no warning that it was bypassed); returns
/// its stderr.
fn assert_not_bypassed(out: &Output) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains(BYPASSED), "{err}");
    err
}

/// A cache of root's, made by a real exec (mode 0700, so the other user cannot even look in).
fn roots_cache(site: &Site) -> PathBuf {
    let cache = site.path("roots-cache");
    let input = site.module("cpu/mlp.a.generic.mlir", "root.mlir");
    let out = exec(
        &mut common::bin(),
        site,
        &cache,
        &input,
        &site.path("root.out"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::metadata(&cache).unwrap().uid(), 0);
    cache
}

/// The other user, a site both can work in, root's cache there and an input module; `None`
/// (skip) as [`other_user`].
fn roots_cache_and_input() -> Option<((u32, u32), Site, PathBuf, PathBuf)> {
    let other = other_user()?;
    let site = shared_site("// compiled");
    let cache = roots_cache(&site);
    let input = site.module("cpu/mlp.a.generic.mlir", "in.mlir");
    Some((other, site, cache, input))
}

/// Asserts the compile ran once more, as if the wrapper were not there, and stderr said why.
fn assert_compiled_past_the_cache(site: &Site, out: &Output, runs_before: usize, why: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(site.runs(), runs_before + 1, "the compiler ran: {err}");
    common::assert_contains(&err, &[BYPASSED, why, "--cache_dir=DIR"]);
    assert_eq!(err.matches(BYPASSED).count(), 1, "warned once: {err}");
}

#[test]
fn another_users_cache_is_bypassed_and_the_compile_runs() {
    let Some((other, site, cache, input)) = roots_cache_and_input() else {
        return;
    };
    let output = site.path("out.mlir");
    // 0700: not even the configuration file can be read (this was a usage error, 64).
    let before = site.runs();
    let out = exec_as(&site, other, &cache, &input, &output);
    assert_compiled_past_the_cache(&site, &out, before, "Permission denied");
    assert_compiled(&input, &output);
    assert_eq!(std::fs::metadata(&output).unwrap().uid(), other.0);
    // Readable but root's: refused for safety, bypassed all the same.
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = site.runs();
    let out = exec_as(&site, other, &cache, &input, &output);
    assert_compiled_past_the_cache(&site, &out, before, "owned by uid 0");
}

#[test]
fn the_compilers_failure_and_stderr_come_through_untouched() {
    let Some((other, site, cache, input)) = roots_cache_and_input() else {
        return;
    };
    let mut command = bin_as(&site, other, "h");
    command.env("FAIL", "1");
    let out = exec(&mut command, &site, &cache, &input, &site.path("out.mlir"));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    common::assert_contains(&err, &[BYPASSED, "error: cannot compile"]);
}

#[test]
fn an_uncreatable_cache_directory_is_bypassed() {
    let Some(other) = other_user() else { return };
    let site = shared_site("// compiled");
    let roots = site.path("roots");
    std::fs::create_dir(&roots).unwrap();
    std::fs::set_permissions(&roots, std::fs::Permissions::from_mode(0o755)).unwrap();
    let input = site.module("cpu/mlp.a.generic.mlir", "in.mlir");
    let out = exec_as(
        &site,
        other,
        &roots.join("cache"),
        &input,
        &site.path("out.mlir"),
    );
    assert_compiled_past_the_cache(&site, &out, 0, "cannot create directory");
    assert!(!roots.join("cache").exists());
}

#[test]
fn wrap_bypasses_an_unusable_cache_too() {
    let Some((other, site, cache, input)) = roots_cache_and_input() else {
        return;
    };
    let output = site.path("out.mlir");
    // A compiler symlink named mlir-opt, as a build would run it (its argument shape is
    // in the table, so the cache is opened).
    let bin_dir = site.path("bin");
    std::fs::create_dir(&bin_dir).unwrap();
    std::fs::set_permissions(&bin_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let real = site.path("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
    common::write_script(
        &real.join("mlir-opt"),
        "#!/bin/sh\necho run >> \"$RUNS\"\nwhile [ $# -gt 0 ]; do\n  case \"$1\" in\n    -o) out=\"$2\"; shift 2;;\n    *) in=\"$1\"; shift;;\n  esac\ndone\ncat \"$in\" > \"$out\"\n",
    );
    std::os::unix::fs::symlink(program(), bin_dir.join("mlir-opt")).unwrap();
    let before = site.runs();
    let mut command = setpriv(other, None);
    command
        .arg(bin_dir.join("mlir-opt"))
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .env(
            "MLIR_CACHE_KEY_FLAGS",
            format!("--cache_dir={}", cache.display()),
        )
        .env("HOME", site.path("h"))
        .env("RUNS", site.path("runs"))
        .env(
            "PATH",
            format!("{}:{}:/usr/bin:/bin", bin_dir.display(), real.display()),
        );
    let out = command.output().unwrap();
    assert_compiled_past_the_cache(&site, &out, before, "Permission denied");
    assert_eq!(
        std::fs::read(&output).unwrap(),
        std::fs::read(&input).unwrap()
    );
}

#[test]
fn cache_errors_fail_keeps_the_strict_behavior() {
    let Some((other, site, cache, input)) = roots_cache_and_input() else {
        return;
    };
    let before = site.runs();
    for flags in [None, Some("--cache_errors=fail")] {
        let mut command = bin_as(&site, other, "h");
        command.arg("exec");
        match flags {
            Some(flags) => command.env("MLIR_CACHE_KEY_FLAGS", flags),
            None => command.arg("--cache-errors=fail"),
        };
        command.arg("--cache-dir").arg(&cache);
        let out = run_compile(&mut command, &site, &input, &site.path("out.mlir"));
        let err = stderr(&out);
        // Permission problems are the cache's (74), never a usage error (64).
        assert_eq!(out.status.code(), Some(EX_CACHE), "{flags:?}: {err}");
        assert!(err.contains("Permission denied"), "{err}");
        assert!(!err.contains(BYPASSED), "{err}");
    }
    assert_eq!(site.runs(), before, "nothing compiled");
    // A usage error is never bypassed.
    let mut command = bin_as(&site, other, "h");
    command.args(["exec", "--cache-size=lots"]);
    let out = run_compile(&mut command, &site, &input, &site.path("out.mlir"));
    assert_eq!(out.status.code(), Some(EX_USAGE), "{}", stderr(&out));
    assert_eq!(site.runs(), before);
}

#[test]
fn with_no_settings_two_users_each_get_a_cache_of_their_own() {
    let Some(other) = other_user() else { return };
    let site = shared_site("// compiled");
    let input = site.module("cpu/mlp.a.generic.mlir", "in.mlir");
    for home in ["root-home", "other-home"] {
        std::fs::create_dir(site.path(home)).unwrap();
    }
    std::os::unix::fs::chown(site.path("other-home"), Some(other.0), Some(other.1)).unwrap();
    let users = [((0, 0), "root-home"), (other, "other-home")];
    for round in 0..2 {
        for (i, (user, home)) in users.into_iter().enumerate() {
            let output = site.path(&format!("{home}.out"));
            let mut command = bin_as(&site, user, home);
            command.arg("exec");
            let out = run_compile(&mut command, &site, &input, &output);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(0), "{home}: {err}");
            assert!(!err.contains(BYPASSED), "{home}: {err}");
            let cache = site.path(home).join(".cache/mlir-cache-key");
            assert_eq!(std::fs::metadata(&cache).unwrap().uid(), user.0, "{home}");
            assert_eq!(common::mode(&cache), 0o700);
            // Each user compiles once, then hits their own cache.
            let compiled = if round == 0 { i + 1 } else { users.len() };
            assert_eq!(site.runs(), compiled, "round {round}, {home}");
        }
    }
}

/// The number of files under `dir`, recursively.
fn files_under(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| if p.is_dir() { files_under(&p) } else { 1 })
        .sum()
}

#[test]
fn a_read_only_cache_serves_hits_and_compiles_misses_without_storing() {
    let Some(other) = other_user() else { return };
    let site = shared_site("// compiled");
    let cache = site.path("others-cache");
    let hit = site.module("cpu/mlp.a.generic.mlir", "hit.mlir");
    let miss = site.module("cpu/conv.a.generic.mlir", "miss.mlir");
    let first = site.path("first.out");
    let out = exec_as(&site, other, &cache, &hit, &first);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(site.runs(), 1);
    // As the user (root ignores modes): the whole cache made read-only.
    let status = Command::new("chmod")
        .args(["-R", "a-w"])
        .arg(&cache)
        .status()
        .unwrap();
    assert!(status.success());
    let files = files_under(&cache);
    for (round, output) in ["again.out", "direct.out"].into_iter().enumerate() {
        let output = site.path(output);
        let mut command = bin_as(&site, other, "h");
        if round == 1 {
            command.env("MLIR_CACHE_KEY_FLAGS", "--no_direct");
        }
        let out = exec(&mut command, &site, &cache, &hit, &output);
        let err = assert_not_bypassed(&out);
        assert_eq!(site.runs(), 1, "a hit, not compiled: {err}");
        assert_eq!(
            std::fs::read(&output).unwrap(),
            std::fs::read(&first).unwrap()
        );
    }
    for round in 1..=2 {
        let out = exec_as(&site, other, &cache, &miss, &site.path("miss.out"));
        let err = assert_not_bypassed(&out);
        assert_eq!(site.runs(), 1 + round, "a miss compiles, every time: {err}");
    }
    assert_eq!(files_under(&cache), files, "nothing written to the cache");
    let stats = bin_as(&site, other, "h")
        .args(["cache", "stats", "--cache-dir"])
        .arg(&cache)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&stats.stdout);
    assert!(stats.status.success(), "{}", stderr(&stats));
    assert!(text.contains("(read-only)"), "{text}");
}

#[test]
fn the_read_only_setting_stores_nothing_even_for_root() {
    if other_user().is_none() {
        return;
    }
    let site = shared_site("// compiled");
    let cache = site.path("cache");
    let input = site.module("cpu/mlp.a.generic.mlir", "in.mlir");
    let out = exec(
        &mut site.bin(),
        &site,
        &cache,
        &input,
        &site.path("made.out"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(site.runs(), 1);
    let files = files_under(&cache);
    let other = site.module("cpu/conv.a.generic.mlir", "other.mlir");
    for round in 1..=2 {
        let mut command = site.bin();
        command.env("MLIR_CACHE_KEY_FLAGS", "--read_only");
        let out = exec(&mut command, &site, &cache, &other, &site.path("o.out"));
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(site.runs(), 1 + round);
    }
    assert_eq!(files_under(&cache), files);
}

/// The gid of the team group `mck-team`, created if absent.
fn team_group() -> u32 {
    let gid = || -> Option<u32> {
        let out = Command::new("getent")
            .args(["group", "mck-team"])
            .output()
            .ok()?;
        String::from_utf8(out.stdout)
            .ok()?
            .split(':')
            .nth(2)?
            .trim()
            .parse()
            .ok()
    };
    if gid().is_none() {
        let status = Command::new("groupadd").arg("mck-team").status().unwrap();
        assert!(status.success() || gid().is_some(), "groupadd failed");
    }
    gid().expect("the team's gid")
}

#[test]
fn a_team_cache_is_shared_through_a_supplementary_group() {
    let Some(other) = other_user() else { return };
    let team = team_group();
    let site = shared_site("// compiled");
    let cache = site.path("team");
    std::fs::create_dir(&cache).unwrap();
    std::os::unix::fs::chown(&cache, None, Some(team)).unwrap();
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o2770)).unwrap();
    let input = site.module("cpu/mlp.a.generic.mlir", "in.mlir");
    let shared = "--cache_dir_mode=0770";
    let mut root = site.bin();
    root.env("MLIR_CACHE_KEY_FLAGS", shared);
    let out = exec(&mut root, &site, &cache, &input, &site.path("root.out"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(site.runs(), 1);
    // The other user is in the team only through a supplementary group (not its egid).
    let as_member = |groups: &str| {
        let mut command = bin_as_member(&site, other, Some(groups), "h");
        command.env("MLIR_CACHE_KEY_FLAGS", shared);
        command
    };
    let out = exec(
        &mut as_member(&team.to_string()),
        &site,
        &cache,
        &input,
        &site.path("member.out"),
    );
    let err = assert_not_bypassed(&out);
    assert_eq!(site.runs(), 1, "a team member hits the team's entry: {err}");
    // Not in the group: refused for safety, and the compile runs past it.
    let out = exec(
        &mut as_member(&other.1.to_string()),
        &site,
        &cache,
        &input,
        &site.path("stranger.out"),
    );
    assert_compiled_past_the_cache(&site, &out, 1, "Permission denied");
}

#[test]
fn a_corrupt_index_never_fails_the_compile() {
    let Some(other) = other_user() else { return };
    let site = shared_site("// compiled");
    let cache = site.path("others-cache");
    let first = site.module("cpu/mlp.a.generic.mlir", "first.mlir");
    let out = exec_as(&site, other, &cache, &first, &site.path("1.out"));
    assert!(out.status.success(), "{}", stderr(&out));
    let index = cache.join("v1/index.sqlite");
    for path in std::fs::read_dir(cache.join("v1")).unwrap() {
        let path = path.unwrap().path();
        if path.to_string_lossy().contains("index.sqlite-") {
            std::fs::remove_file(path).unwrap();
        }
    }
    std::fs::write(&index, b"this is not an SQLite database").unwrap();
    let input = site.module("cpu/conv.a.generic.mlir", "in.mlir");
    let output = site.path("out.mlir");
    // The compiler's failure comes through as it is: status and stderr.
    let mut failing = bin_as(&site, other, "h");
    failing.env("FAIL", "1");
    let out = exec(&mut failing, &site, &cache, &input, &output);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("error: cannot compile"));
    let before = site.runs();
    let mut retry = bin_as(&site, other, "h");
    retry.env("MLIR_CACHE_KEY_FLAGS", "--retry_failed_compilation");
    let out = exec(&mut retry, &site, &cache, &input, &output);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(site.runs(), before + 1);
    assert_compiled(&input, &output);
}
