//! A team's shared registry on a real PostgreSQL (`registry = postgres://…`): two "hosts" (two
//! cache directories, two processes) racing to one address, a host killed while compiling, a
//! host waiting for another's result, sealed runs the database itself keeps immutable, a
//! registry that is down, and every address and run command seen from both hosts.

use crate::common::{self, bin, failure, success, text};
use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Team {
    dir: tempfile::TempDir,
    pg: crate::postgres::Server,
    /// The program at every address, and another one (one constant changed) with the same name.
    program: PathBuf,
    other: PathBuf,
    /// Flags every command of every host gets (a shared remote tier).
    shared_flags: String,
}

impl Team {
    fn new(pg: crate::postgres::Server) -> Team {
        let dir = tempfile::tempdir().expect("tempdir");
        common::write_compiler(&dir.path().join("cc.sh"), "compiled");
        let (program, other) = crate::postgres::two_programs(dir.path());
        Team {
            dir,
            pg,
            program,
            other,
            shared_flags: String::new(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A command of host `host` (its own cache directory and compile count) on the registry.
    fn mck(&self, host: &str, extra_flags: &str) -> Command {
        let mut c = bin();
        c.env(
            "MLIR_CACHE_KEY_FLAGS",
            self.pg.flags(
                &self.path(&format!("cache-{host}")),
                &format!("{} {extra_flags}", self.shared_flags),
            ),
        )
        .env("RUNS", self.path(&format!("compiles-{host}")));
        c
    }

    /// `exec` of `module` on `host` in `run`, at `NAMESPACE/jit_mlp`.
    fn exec(&self, host: &str, module: &Path, namespace: &str, run: &str, flags: &str) -> Command {
        let out = self.path(&format!("out-{host}-{run}.bin"));
        let mut c = self.mck(host, flags);
        c.args(["exec", "--input"])
            .arg(module)
            .arg("--output")
            .arg(&out)
            .args(["--namespace", namespace, "--run", run, "--"])
            .arg(self.path("cc.sh"))
            .arg(module)
            .arg(&out);
        c
    }

    fn compiles(&self, host: &str) -> usize {
        std::fs::read_to_string(self.path(&format!("compiles-{host}")))
            .map_or(0, |s| s.lines().count())
    }

    fn json(&self, host: &str, args: &[&str]) -> Value {
        serde_json::from_slice(&success(self.mck(host, "").args(args))).expect("json")
    }

    /// A column of the test's schema, as the superuser sees it.
    fn sql(&self, query: &str) -> String {
        self.pg.admin_sql(&query.replace("{s}", &self.pg.schema))
    }

    /// Waits until some host marks an address `running` (the schema may not exist yet).
    fn wait_for_a_mark(&self) {
        let started = Instant::now();
        let query = format!("SELECT count(*) FROM {}.running", self.pg.schema);
        while self.pg.try_admin_sql(&query).as_deref() != Some("1") {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "no host marked the address"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn two_hosts_racing_one_address_with_two_programs_record_one_and_see_one_conflict() {
    let t = Team::new(postgres_or_skip!("registry_race"));
    for round in 0..20 {
        let namespace = format!("race{round}");
        let (run_a, run_b) = (format!("a{round}"), format!("b{round}"));
        let spawn = |host: &str, module: &Path, run: &str| {
            t.exec(host, module, &namespace, run, "")
                .env("SLEEP", "0.2")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
        };
        // Fresh caches each round: both hosts compile, their marks overlapping.
        let a = spawn(&format!("a{round}"), &t.program, &run_a);
        let b = spawn(&format!("b{round}"), &t.other, &run_b);
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        let codes = [a.status.code(), b.status.code()];
        let (winner, loser, loser_out) = match codes {
            [Some(0), Some(common::EX_CONFLICT)] => (&run_a, &run_b, &b),
            [Some(common::EX_CONFLICT), Some(0)] => (&run_b, &run_a, &a),
            _ => panic!(
                "round {round}: one result and one conflict expected, got {codes:?}\n{}\n{}",
                String::from_utf8_lossy(&a.stderr),
                String::from_utf8_lossy(&b.stderr)
            ),
        };
        let address = format!("{namespace}/jit_mlp");
        let held = t.sql(&format!(
            "SELECT run || ' ' || key FROM {{s}}.addresses WHERE address = '{address}'"
        ));
        let won_key = t.sql(&format!(
            "SELECT key FROM {{s}}.run_lines WHERE run = '{winner}' AND state = 'ok'"
        ));
        assert_eq!(
            held,
            format!("{winner} {won_key}"),
            "round {round}: nothing overwritten"
        );
        let lost = t.sql(&format!(
            "SELECT state || ' ' || conflict_with FROM {{s}}.run_lines WHERE run = '{loser}'"
        ));
        assert_eq!(lost, format!("conflict {won_key}"), "round {round}");
        let said = String::from_utf8_lossy(&loser_out.stderr);
        assert!(
            said.contains(&won_key),
            "the conflict names the fingerprint held: {said}"
        );
    }
    assert_eq!(
        t.sql("SELECT count(*) FROM {s}.running"),
        "0",
        "no mark left"
    );
    let compiled: usize = (0..20)
        .map(|r| t.compiles(&format!("a{r}")) + t.compiles(&format!("b{r}")))
        .sum();
    assert!(
        compiled >= 20,
        "every round compiled at least once: {compiled}"
    );
}

#[test]
fn a_host_killed_while_compiling_is_waited_for_until_its_lease_ends_then_compiled_once() {
    let t = Team::new(postgres_or_skip!("registry_killed"));
    // A lock_timeout far below the default: a dead host's mark must not hold b that long.
    let lease = "--registry_lease=2 --lock_timeout=30";
    let mut a = t
        .exec("a", &t.program, "killed", "a1", lease)
        .env("SLEEP", "120")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("spawn");
    t.wait_for_a_mark();
    // Held past a lease: host a renews its mark while it compiles.
    std::thread::sleep(Duration::from_secs(3));
    let left: i64 = t
        .sql("SELECT (extract(epoch FROM lease_until - clock_timestamp()) * 1000)::int8 FROM {s}.running")
        .parse()
        .expect("ms");
    assert!(left > 0, "the mark's lease was renewed: {left} ms left");
    // The whole process group: the wrapper and the compiler it runs.
    rustix::process::kill_process_group(
        rustix::process::Pid::from_raw(a.id() as i32).expect("pid"),
        rustix::process::Signal::KILL,
    )
    .expect("kill");
    a.wait().expect("reap");
    let killed = Instant::now();
    let out = t
        .exec(
            "b",
            &t.program,
            "killed",
            "b1",
            &format!("{lease} --log_level=INFO"),
        )
        .output()
        .expect("run");
    let waited = killed.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("waiting for its result"), "{stderr}");
    assert!(
        waited >= Duration::from_millis(500),
        "host b went on before the dead host's lease ended: {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(10),
        "host b waited past the dead host's lease: {waited:?}"
    );
    assert_eq!(
        (t.compiles("a"), t.compiles("b")),
        (1, 1),
        "compiled once on b"
    );
    let held = t.sql("SELECT run FROM {s}.addresses WHERE address = 'killed/jit_mlp'");
    assert_eq!(held, "b1");
    assert_eq!(t.sql("SELECT count(*) FROM {s}.running"), "0");
}

#[test]
fn a_host_waits_for_the_same_program_compiling_elsewhere_and_reuses_its_result() {
    let t = Team::new(postgres_or_skip!("registry_wait"));
    let redis = redis_or_skip!(crate::redis::shared("registry_wait"));
    let remote = format!("--remote={}", redis.url());
    let a = t
        .exec("a", &t.program, "wait", "a1", &remote)
        .env("SLEEP", "3")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    t.wait_for_a_mark();
    let b = t
        .exec(
            "b",
            &t.program,
            "wait",
            "b1",
            &format!("{remote} --log_level=INFO"),
        )
        .output()
        .expect("run b");
    let a = a.wait_with_output().expect("a");
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let said = String::from_utf8_lossy(&b.stderr);
    assert!(b.status.success(), "{said}");
    assert!(said.contains("waiting for its result"), "{said}");
    assert_eq!(
        (t.compiles("a"), t.compiles("b")),
        (1, 0),
        "b reused a's result: {said}"
    );
    assert_eq!(
        std::fs::read(t.path("out-a-a1.bin")).unwrap(),
        std::fs::read(t.path("out-b-b1.bin")).unwrap()
    );
    let lines = t.sql("SELECT run || ':' || state FROM {s}.run_lines ORDER BY run");
    assert_eq!(lines, "a1:ok\nb1:ok");
}

#[test]
fn sealed_runs_cannot_be_changed_by_the_tools_own_role() {
    let t = Team::new(postgres_or_skip!("registry_sealed"));
    success(&mut t.exec("a", &t.program, "sealed", "r1", ""));
    success(&mut t.exec("a", &t.program, "open", "r2", ""));
    success(t.mck("b", "").args(["runs", "close", "r1"]));
    let s = &t.pg.schema;
    let before = t.sql("SELECT count(*) FROM {s}.run_lines");
    for statement in [
        format!("UPDATE {s}.run_lines SET key = 'x' WHERE run = 'r1'"),
        format!("UPDATE {s}.run_lines SET key = 'x' WHERE run = 'r2'"),
        format!("DELETE FROM {s}.run_lines WHERE run = 'r1'"),
        format!("DELETE FROM {s}.runs WHERE run = 'r1'"),
        format!("UPDATE {s}.runs SET sealed_ms = NULL WHERE run = 'r1'"),
        format!(
            "INSERT INTO {s}.run_lines(run, address, key, digest, state, time_ms)
                 SELECT run, address, key, digest, state, time_ms FROM {s}.run_lines
                 WHERE run = 'r1'"
        ),
        format!("TRUNCATE {s}.run_lines"),
        format!("TRUNCATE {s}.runs CASCADE"),
    ] {
        let out = t.pg.tool_sql(&statement);
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{statement} succeeded as the tool's role"
        );
        assert!(
            said.contains("immutable") || said.contains("append-only"),
            "{said}"
        );
    }
    assert_eq!(t.sql("SELECT count(*) FROM {s}.run_lines"), before);
    assert_eq!(
        t.sql("SELECT count(*) FROM {s}.runs WHERE sealed_ms IS NOT NULL"),
        "1"
    );
    // The tool refuses too, naming the registry; an open run can still be pruned.
    let refused = failure(
        t.mck("a", "").args(["runs", "prune", "r1"]),
        common::EX_USAGE,
    );
    assert!(
        refused.contains("sealed") && refused.contains(&t.pg.schema),
        "{refused}"
    );
    success(t.mck("a", "").args(["runs", "prune", "r2"]));
    assert_eq!(t.sql("SELECT string_agg(run, ',') FROM {s}.runs"), "r1");
}

#[test]
fn a_registry_that_is_down_leaves_the_build_unaddressed_and_says_so() {
    let t = Team::new(postgres_or_skip!("registry_down"));
    let port = crate::redis::free_port();
    let down = format!("postgres://mck_tool@127.0.0.1:{port}/mck?schema=x");
    let exec = |run: &str, extra: &str| {
        let mut c = t.exec("a", &t.program, "down", run, "");
        c.env(
            "MLIR_CACHE_KEY_FLAGS",
            format!(
                "--cache_dir={} --registry={down} --registry_password_file={} {extra}",
                t.path("cache-a").display(),
                t.pg.password_file.display()
            ),
        );
        c
    };
    let out = exec("r1", "").output().expect("run");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!("postgres://mck_tool@127.0.0.1:{port}/mck")),
        "{said}"
    );
    assert!(said.contains("unaddressed"), "{said}");
    assert!(t.path("out-a-r1.bin").exists());
    // The result was cached all the same: the next build hits.
    success(&mut exec("r2", ""));
    assert_eq!(t.compiles("a"), 1);
    let history = std::fs::read_to_string(t.path("cache-a/v1/history.log")).expect("history");
    let downs = history
        .lines()
        .filter(|l| l.contains("\"answer\":\"down\"") && l.contains("registry postgres://"))
        .count();
    assert_eq!(downs, 2, "counted once per build: {history}");
    let strict = failure(&mut exec("r3", "--cache_errors=fail"), common::EX_CACHE);
    assert!(strict.contains(&format!("127.0.0.1:{port}")), "{strict}");
}

#[test]
fn every_address_and_run_command_sees_the_other_hosts_work() {
    let mut t = Team::new(postgres_or_skip!("registry_commands"));
    let redis = redis_or_skip!(crate::redis::shared("registry_commands"));
    t.shared_flags = format!("--remote={}", redis.url());
    success(&mut t.exec("a", &t.program, "team", "r1", ""));
    // Host b sees host a's run and address.
    let runs = t.json("b", &["runs", "list", "--json"]);
    assert!(runs.to_string().contains("\"r1\""), "{runs}");
    let listed = text(success(t.mck("b", "").args(["cache", "list"])));
    assert!(
        listed.contains("team/jit_mlp") && listed.contains("(run r1)"),
        "{listed}"
    );
    // Host b brings another program to the address: a conflict, seen by both hosts.
    failure(
        &mut t.exec("b", &t.other, "team", "r2", ""),
        common::EX_CONFLICT,
    );
    let status = t.json("a", &["runs", "status", "r2", "--json"]);
    assert_eq!(
        status["conflicts"].as_array().map(Vec::len),
        Some(1),
        "{status}"
    );
    // Cleared from host a, resumed on host b.
    success(
        t.mck("a", "")
            .args(["cache", "clear", "--conflicts-in", "r2"]),
    );
    success(&mut t.exec("b", &t.other, "team", "r2", ""));
    let listed = text(success(t.mck("a", "").args(["cache", "list"])));
    assert!(listed.contains("(run r2)"), "{listed}");
    // Sealed on one host; exported from the host that never compiled its program (its artefact
    // comes from the shared tier), imported into a third cache with a local registry.
    success(t.mck("a", "").args(["runs", "close", "r2"]));
    failure(
        &mut t.exec("b", &t.other, "team", "r2", ""),
        common::EX_USAGE,
    );
    assert_eq!(t.compiles("a"), 1, "host a compiled only the first program");
    let archive = t.path("r2.tar");
    success(t.mck("a", "").args(["runs", "export", "r2"]).arg(&archive));
    let mut local = bin();
    local
        .env(
            "MLIR_CACHE_KEY_FLAGS",
            format!("--cache_dir={}", t.path("cache-c").display()),
        )
        .args(["runs", "import", "--adopt-cache"])
        .arg(&archive);
    let imported = text(success(&mut local));
    assert!(imported.contains("1 artefacts"), "{imported}");
    assert_eq!(t.sql("SELECT count(*) FROM {s}.running"), "0");
}

#[test]
fn a_registry_over_tls_verifies_the_server_against_its_ca() {
    let t = Team::new(postgres_or_skip!("registry_tls"));
    // The role of this URL is let in over TLS only: a result recorded proves TLS was used.
    let registry = format!("{}?schema={}", t.pg.tls_url, t.pg.schema);
    let exec = |run: &str, ca: &Path, extra: &str| {
        let mut c = t.exec("a", &t.program, "tls", run, "");
        c.env(
            "MLIR_CACHE_KEY_FLAGS",
            format!(
                "--cache_dir={} --registry={registry} --registry_password_file={} \
                 --registry_ca_file={} {extra}",
                t.path("cache-a").display(),
                t.pg.password_file.display(),
                ca.display()
            ),
        );
        c
    };
    success(&mut exec("r1", &t.pg.ca, ""));
    let held = t.sql("SELECT run FROM {s}.addresses WHERE address = 'tls/jit_mlp'");
    assert_eq!(held, "r1");
    // A server whose certificate another CA signed is refused, naming the registry and why.
    let refused = failure(
        &mut exec("r2", &t.pg.other_ca, "--cache_errors=fail"),
        common::EX_CACHE,
    );
    assert!(refused.contains(&t.pg.tls_url), "{refused}");
    assert!(refused.to_lowercase().contains("certificate"), "{refused}");
    // Without it (cache_errors=warn), the build goes on unaddressed; nothing reached the
    // registry.
    let out = exec("r3", &t.pg.other_ca, "").output().expect("run");
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(t.sql("SELECT string_agg(run, ',') FROM {s}.runs"), "r1");
}

#[test]
fn a_registry_setting_that_cannot_be_used_leaves_the_build_unaddressed_and_names_it() {
    let t = Team::new(postgres_or_skip!("registry_unusable"));
    let missing_ca = t.path("no-such-ca.pem");
    let garbage_ca = t.path("garbage.pem");
    std::fs::write(&garbage_ca, "not a certificate").unwrap();
    for (registry, extra, said) in [
        (
            format!("{}?schema=Bad-Name", t.pg.url),
            String::new(),
            "schema",
        ),
        (
            format!("{}?sslmode=sometimes", t.pg.url),
            String::new(),
            "sslmode",
        ),
        (
            t.pg.registry(),
            format!("--registry_ca_file={}", missing_ca.display()),
            "no-such-ca.pem",
        ),
        (
            t.pg.registry(),
            format!("--registry_ca_file={}", garbage_ca.display()),
            "no PEM block",
        ),
    ] {
        let exec = |run: &str, strict: &str| {
            let mut c = t.exec("a", &t.program, "unusable", run, "");
            c.env(
                "MLIR_CACHE_KEY_FLAGS",
                format!(
                    "--cache_dir={} --registry={registry} --registry_password_file={} {extra} \
                     {strict}",
                    t.path("cache-a").display(),
                    t.pg.password_file.display()
                ),
            );
            c
        };
        let out = exec("r1", "").output().expect("run");
        let warned = common::stderr(&out);
        assert!(out.status.success(), "{registry} {extra}: {warned}");
        assert!(
            warned.contains(said) && warned.contains("unaddressed"),
            "{warned}"
        );
        let strict = failure(&mut exec("r2", "--cache_errors=fail"), common::EX_CACHE);
        assert!(strict.contains(said), "{strict}");
    }
    assert_eq!(t.compiles("a"), 1, "cached all the same");
}
