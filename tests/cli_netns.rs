//! Hosts as network namespaces: each host (`ip netns`, a veth into a bridge of the test's own)
//! has its own cache directory and reaches the servers — a private Garage cluster and a private
//! Redis bound to the bridge's address — only over its link. Host B hits what A compiled
//! through S3 and then locally; 3 processes on each of 2 hosts compile a key once (the lease is
//! Redis's: S3 has none, see docs/remote-and-trust.md); a link cut mid-put, a link rate-limited
//! below what the timeout allows (`tc … tbf`) and a link made slow by a delaying proxy (this
//! kernel has no netem) all deliver the compile result, leave no damaged entry anywhere, and
//! count the tier's failure.
//!
//! Needs root (namespaces, links, qdiscs): by hand a non-root run skips and says so; under CI
//! it fails instead.

use crate::{common, garage, redis, team};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::common::{counter, read};
use crate::garage::Bucket;
use crate::team::Team;
use serde_json::Value;

/// A bridge and the namespaces plugged into it; all removed on drop, even when a test fails.
struct Net {
    bridge: String,
    /// `10.X.Y`: the bridge is `.1`, host `i` is `.(2 + i)`.
    subnet: String,
    hosts: Vec<String>,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        common::stderr(&out)
    );
}

impl Net {
    fn new(hosts: usize) -> Net {
        static N: AtomicU32 = AtomicU32::new(0);
        let id = (std::process::id() % 5_000) * 10 + N.fetch_add(1, Ordering::SeqCst) % 10;
        let mut net = Net {
            bridge: format!("mckbr{id}"),
            subnet: format!("10.{}.{}", 150 + id / 250 % 100, id % 250),
            hosts: Vec::new(),
        };
        ip(&["link", "add", &net.bridge, "type", "bridge"]);
        ip(&[
            "addr",
            "add",
            &format!("{}/24", net.server()),
            "dev",
            &net.bridge,
        ]);
        ip(&["link", "set", &net.bridge, "up"]);
        for i in 0..hosts {
            let ns = format!("mck{id}h{i}");
            let outside = format!("mckv{id}h{i}");
            ip(&["netns", "add", &ns]);
            net.hosts.push(ns.clone());
            ip(&[
                "link", "add", &outside, "type", "veth", "peer", "name", "eth0", "netns", &ns,
            ]);
            ip(&["link", "set", &outside, "master", &net.bridge, "up"]);
            let addr = format!("{}.{}/24", net.subnet, 2 + i);
            for args in [
                vec!["addr", "add", &addr, "dev", "eth0"],
                vec!["link", "set", "eth0", "up"],
                vec!["link", "set", "lo", "up"],
            ] {
                let mut all = vec!["netns", "exec", &ns, "ip"];
                all.extend(args);
                ip(&all);
            }
        }
        net
    }

    /// The servers' address (the bridge's, in the test's own namespace).
    fn server(&self) -> String {
        format!("{}.1", self.subnet)
    }

    /// `command` run inside host `host`'s namespace.
    fn on(&self, host: usize, command: &Command) -> Command {
        let mut ip = Command::new("ip");
        ip.args(["netns", "exec", &self.hosts[host]]);
        common::under(ip, command)
    }

    /// Limits what host `host` sends to `rate` (`tc … tbf`; no netem in this kernel).
    fn limit(&self, host: usize, rate: &str, burst: &str) {
        self.run_on(
            host,
            &[
                "tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", rate, "burst", burst,
                "latency", "400ms",
            ],
        );
    }

    /// Runs `args` (a command line) inside host `host`.
    fn run_on(&self, host: usize, args: &[&str]) {
        let mut all = vec!["netns", "exec", &self.hosts[host]];
        all.extend_from_slice(args);
        ip(&all);
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for ns in &self.hosts {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = Command::new("ip")
            .args(["link", "del", &self.bridge])
            .status();
    }
}

/// True when namespaces can be made here; false (a reported skip) only outside CI.
fn can_run(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false") {
        panic!("{test}: network namespaces need root, and CI must run this test");
    }
    eprintln!("SKIPPED {test}: network namespaces need root");
    false
}

/// Two hosts, a Garage cluster bound to their bridge, a bucket and a team using it; `None`
/// when the test is skipped (see [`can_run`]).
fn s3_hosts(test: &str) -> Option<(Net, garage::Cluster, Bucket, Team)> {
    if !can_run(test) {
        return None;
    }
    let net = Net::new(2);
    let (cluster, bucket) = garage::private(test, &net.server());
    let team = Team::new(bucket.url());
    Some((net, cluster, bucket, team))
}

/// A `redis-server` of the test's own on `addr`, killed on drop.
struct Redis(Child, u16);

impl Redis {
    fn start(addr: &str) -> Redis {
        let port = TcpListener::bind((addr, 0))
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new("redis-server")
            .args(["--bind", addr, "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect((addr, port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not start on {addr}:{port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Redis(child, port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `exec` of `module` on host `host` with the bucket's AWS variables.
fn exec_on(
    net: &Net,
    team: &Team,
    bucket: &Bucket,
    host: usize,
    name: &str,
    module: &str,
) -> Command {
    let mut c = team.exec(name, module);
    bucket.aws_env(&mut c);
    net.on(host, &c)
}

fn stats(net: &Net, team: &Team, bucket: &Bucket, host: usize, name: &str) -> Value {
    let mut c = team.mck(name, &["cache", "stats", "--json"]);
    bucket.aws_env(&mut c);
    serde_json::from_slice(&common::success(&mut net.on(host, &c))).expect("stats json")
}

#[test]
fn host_b_hits_what_host_a_compiled_through_s3_then_locally() {
    let Some((net, _cluster, bucket, team)) = s3_hosts("netns_s3_hit") else {
        return;
    };
    common::success_stderr(&mut exec_on(&net, &team, &bucket, 0, "a", "a.mlir"));
    assert_eq!(team.runs(), 1);
    assert_eq!(bucket.entry_keys().len(), 1);
    common::success_stderr(&mut exec_on(&net, &team, &bucket, 1, "b", "a.mlir"));
    assert_eq!(team.runs(), 1, "host b compiled instead of using a's entry");
    team.assert_same_output("a", "b", "a.mlir");
    assert_eq!(
        counter(&stats(&net, &team, &bucket, 1, "b"), "remote_hits"),
        1
    );

    // B's next hit is local: with B's link down it still hits, and no remote hit is added.
    net.run_on(1, &["ip", "link", "set", "eth0", "down"]);
    std::fs::remove_file(team.out("b", "a.mlir")).expect("remove");
    common::success_stderr(&mut exec_on(&net, &team, &bucket, 1, "b", "a.mlir"));
    assert_eq!(team.runs(), 1);
    team.assert_same_output("a", "b", "a.mlir");
    assert_eq!(
        counter(&stats(&net, &team, &bucket, 1, "b"), "remote_hits"),
        1
    );
}

#[test]
fn three_processes_on_each_of_two_hosts_compile_once_through_the_redis_lease() {
    if !can_run("netns_racing") {
        return;
    }
    let net = Net::new(2);
    let redis = Redis::start(&net.server());
    let prefix = redis::unique_prefix("netns_racing");
    let team = Team::new(format!("redis://{}:{}/0/{prefix}", net.server(), redis.1));
    let names = ["a1", "a2", "a3", "b1", "b2", "b3"];
    let children: Vec<Child> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut c = team.exec(name, "a.mlir");
            c.env("SLEEP", "2").stderr(Stdio::piped());
            net.on(i / 3, &c).spawn().expect("spawn exec")
        })
        .collect();
    team::wait_all_succeed(children);
    assert_eq!(team.runs(), 1, "six processes on two hosts, one compile");
    let stats = team.stats("a1");
    let lease_tier = stats["lease_tier"].as_str().unwrap_or_default().to_owned();
    assert!(lease_tier.starts_with("redis://"), "{stats}");
    assert!(team.stats_text("a1").contains(&format!(
        "remote lease        {lease_tier} (one compile per key"
    )));
    let first = read(&team.out("a1", "a.mlir"));
    for name in names {
        assert_eq!(read(&team.out(name, "a.mlir")), first, "{name}");
    }
}

/// A compiler writing a 16 MiB artefact (its input, then a fixed pattern), touching `$DONE`
/// once the output is complete (the remote put starts then).
fn big_compiler(dir: &Path) -> PathBuf {
    let path = dir.join("big.sh");
    common::write_script(
        &path,
        "#!/bin/sh\necho run >> \"$RUNS\"\n\
         { cat \"$1\"; head -c 16777216 /dev/zero | tr '\\0' 'x'; } > \"$2\"\n\
         touch \"$DONE\"\n",
    );
    path
}

/// `exec` of a.mlir through [`big_compiler`] on host `host` (cache directory `name`).
fn exec_big(
    net: &Net,
    team: &Team,
    bucket: &Bucket,
    host: usize,
    name: &str,
    flags: &str,
) -> Command {
    let compiler = big_compiler(&team.path(""));
    let mut c = team.mck(name, &["exec", "--no-direct"]);
    common::compile(
        &mut c,
        &compiler,
        &team.path("a.mlir"),
        &team.out(name, "big"),
    );
    c.env("DONE", team.path(&format!("{name}.done")))
        .env("MLIR_CACHE_KEY_FLAGS", flags);
    bucket.aws_env(&mut c);
    net.on(host, &c)
}

/// Asserts that every entry object in `bucket` is byte-identical to host `name`'s local entry
/// file (or absent): nothing damaged anywhere.
fn assert_no_damaged_entry(team: &Team, bucket: &Bucket, name: &str) {
    for key in bucket.entry_keys() {
        let digest = key.rsplit('/').next().expect("digest");
        let local = team
            .cache(name)
            .join("v1/entries")
            .join(&digest[..2])
            .join(digest);
        assert_eq!(
            bucket.get(&key),
            Some(read(&local)),
            "a damaged object at {key}"
        );
    }
}

fn expected_big(team: &Team) -> Vec<u8> {
    let mut want = read(&team.path("a.mlir"));
    want.extend(std::iter::repeat_n(b'x', 16 << 20));
    want
}

#[test]
fn a_link_cut_mid_put_delivers_the_result_and_damages_nothing() {
    let Some((net, _cluster, bucket, team)) = s3_hosts("netns_cut") else {
        return;
    };
    // 8 Mbit/s: the 16 MiB put takes ~16 s, so it is surely under way when the link goes.
    net.limit(0, "8mbit", "64kb");
    let child = exec_big(&net, &team, &bucket, 0, "a", "--remote_timeout=5")
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn exec");
    let done = team.path("a.done");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done.exists() {
        assert!(Instant::now() < deadline, "the compile never finished");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1_500));
    net.run_on(0, &["ip", "link", "set", "eth0", "down"]);
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(
        read(&team.out("a", "big")),
        expected_big(&team),
        "the result"
    );
    net.run_on(0, &["ip", "link", "set", "eth0", "up"]);
    let a = stats(&net, &team, &bucket, 0, "a");
    assert!(
        counter(&a, "remote_errors") >= 1,
        "the failed put is counted: {a}"
    );
    assert_eq!(counter(&a, "remote_writes"), 0, "{a}");
    assert_no_damaged_entry(&team, &bucket, "a");
    // Host B compiles (nothing usable was stored) or hits a whole entry: right bytes either way.
    common::success_stderr(&mut exec_big(&net, &team, &bucket, 1, "b", ""));
    assert_eq!(read(&team.out("b", "big")), expected_big(&team));
}

#[test]
fn a_link_slower_than_the_timeout_allows_is_skipped_and_counted() {
    let Some((net, _cluster, bucket, team)) = s3_hosts("netns_slow") else {
        return;
    };
    // 1 Mbit/s: a 16 MiB put needs over two minutes; the timeout is 2 s.
    net.limit(0, "1mbit", "32kb");
    let t = Instant::now();
    let stderr = common::success_stderr(&mut exec_big(
        &net,
        &team,
        &bucket,
        0,
        "a",
        "--remote_timeout=2",
    ));
    let took = t.elapsed();
    assert!(stderr.contains("no answer within"), "{stderr}");
    assert!(
        took < Duration::from_secs(20),
        "the slow link cost {took:?}"
    );
    assert_eq!(read(&team.out("a", "big")), expected_big(&team));
    let a = stats(&net, &team, &bucket, 0, "a");
    assert!(counter(&a, "remote_errors") >= 1, "{a}");
    assert_no_damaged_entry(&team, &bucket, "a");

    // Latency: host B reaches Garage through a proxy that holds every chunk 3 s (past the 2 s
    // timeout); B compiles, counts the failure, and the next process skips the tier.
    let proxy = DelayingProxy::start(&net.server(), &bucket.endpoint, Duration::from_secs(3));
    let mut slow = bucket.clone();
    slow.endpoint = proxy.url();
    common::success_stderr(&mut exec_on(&net, &team, &slow, 1, "b", "c.mlir"));
    let b = stats(&net, &team, &slow, 1, "b");
    assert!(counter(&b, "remote_errors") >= 1, "{b}");
    common::success_stderr(&mut exec_on(&net, &team, &slow, 1, "b", "d.mlir"));
    let b = stats(&net, &team, &slow, 1, "b");
    assert!(
        counter(&b, "remote_skipped") >= 1,
        "the tier is skipped after the failure: {b}"
    );
    assert_no_damaged_entry(&team, &bucket, "b");
}

/// A TCP proxy that forwards to `target` (`http://HOST:PORT`) after holding each chunk `delay`.
struct DelayingProxy {
    addr: std::net::SocketAddr,
}

impl DelayingProxy {
    fn start(bind: &str, target: &str, delay: Duration) -> DelayingProxy {
        let listener = TcpListener::bind((bind, 0)).expect("bind proxy");
        let addr = listener.local_addr().expect("addr");
        let target = target.trim_start_matches("http://").to_owned();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                for (from, to) in [
                    (client.try_clone(), server.try_clone()),
                    (server.try_clone(), client.try_clone()),
                ] {
                    let (Ok(mut from), Ok(mut to)) = (from, to) else {
                        continue;
                    };
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16 << 10];
                        while let Ok(n) = from.read(&mut buf) {
                            if n == 0 {
                                break;
                            }
                            std::thread::sleep(delay);
                            if to.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                        let _ = to.shutdown(std::net::Shutdown::Write);
                    });
                }
            }
        });
        DelayingProxy { addr }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// `exec` of `module` at `net/jit_mlp` in `run`, on host `host`, its cache and compile count its
/// own, addresses in the shared registry at `registry` (the password from `password_file`).
fn exec_addressed(
    dir: &Path,
    host: usize,
    module: &Path,
    run: &str,
    registry: &str,
    pw: &Path,
) -> Command {
    let out = dir.join(format!("out-{run}"));
    let mut c = common::bin();
    c.env(
        "MLIR_CACHE_KEY_FLAGS",
        format!(
            "--cache_dir={} --registry={registry} --registry_password_file={}",
            dir.join(format!("cache-{host}")).display(),
            pw.display()
        ),
    )
    .env("RUNS", dir.join(format!("compiles-{host}")))
    .env("SLEEP", "0.3")
    .args(["exec", "--input"])
    .arg(module)
    .arg("--output")
    .arg(&out)
    .args(["--namespace", "net", "--run", run, "--"])
    .arg(dir.join("cc.sh"))
    .arg(module)
    .arg(&out);
    c
}

#[test]
fn two_hosts_on_their_own_links_share_one_registry_and_a_cut_link_builds_unaddressed() {
    if !can_run("netns_registry") {
        return;
    }
    let pg = postgres_or_skip!("netns_registry");
    let net = Net::new(2);
    // The database listens on loopback only: the hosts reach it over their links, through a
    // forwarder on the bridge's address.
    let forwarder = DelayingProxy::start(
        &net.server(),
        &format!("127.0.0.1:{}", pg.port),
        Duration::ZERO,
    );
    let registry = format!(
        "postgres://mck_tool@{}/mck?schema={}",
        forwarder.addr, pg.schema
    );
    let dir = tempfile::tempdir().expect("tempdir");
    common::write_compiler(&dir.path().join("cc.sh"), "compiled");
    let (p, q) = crate::postgres::two_programs(dir.path());
    let spawn = |host: usize, module: &Path, run: &str| {
        let c = exec_addressed(dir.path(), host, module, run, &registry, &pg.password_file);
        net.on(host, &c)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn")
    };
    let (a, b) = (spawn(0, &p, "ra"), spawn(1, &q, "rb"));
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let mut codes = [a.status.code(), b.status.code()];
    codes.sort();
    assert_eq!(
        codes,
        [Some(0), Some(common::EX_CONFLICT)],
        "{}\n{}",
        common::stderr(&a),
        common::stderr(&b)
    );
    let winner = if a.status.success() { "ra" } else { "rb" };
    let held = pg.admin_sql(&format!(
        "SELECT run FROM {}.addresses WHERE address = 'net/jit_mlp'",
        pg.schema
    ));
    assert_eq!(held, winner);
    // Host b's link cut: its next build goes on unaddressed, saying which registry it missed.
    net.run_on(1, &["ip", "link", "set", "eth0", "down"]);
    let cut = net
        .on(
            1,
            &exec_addressed(dir.path(), 1, &p, "rc", &registry, &pg.password_file),
        )
        .output()
        .expect("run");
    let said = common::stderr(&cut);
    assert!(cut.status.success(), "{said}");
    assert!(
        said.contains(&forwarder.addr.to_string()) && said.contains("unaddressed"),
        "{said}"
    );
}
