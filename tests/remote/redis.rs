//! Redis for the remote-tier tests: the shared server that `scripts/test.sh` starts (its URL in
//! `MCK_TEST_REDIS_URL`; each test works under its own key prefix), or a private `redis-server`
//! that a test starts, kills and restarts itself.
//!
//! Never a silent pass: without `MCK_TEST_REDIS_URL`, a test fails under CI (`CI` set: the
//! script did not do its job); by hand it starts a private server, and fails if `redis-server`
//! is missing unless `MCK_TEST_SKIP_REDIS=1` asks to skip (then it says so on stderr).
#![allow(dead_code)]

/// The target of `shared(…)` or `private(…)`; returns from the test when skipping was asked for
/// (`#[macro_use]` on this module makes it visible to the test).
macro_rules! redis_or_skip {
    ($target:expr) => {
        match $target {
            Some(t) => t,
            None => return,
        }
    };
}

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Where a test's entries live: a server, a database and a key prefix of its own.
pub struct Target {
    pub port: u16,
    pub db: u32,
    pub prefix: String,
    /// Keeps a private server alive for the test's duration.
    server: Option<RedisServer>,
}

impl Target {
    /// The value for `--remote`.
    pub fn url(&self) -> String {
        format!(
            "redis://127.0.0.1:{}/{}/{}",
            self.port, self.db, self.prefix
        )
    }

    /// `redis-cli` on this target's database.
    pub fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-n"])
            .arg(self.db.to_string())
            .args(args)
            .output()
            .expect("run redis-cli");
        assert!(out.status.success(), "redis-cli {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim_end().to_owned()
    }

    /// Sets `key` to exactly `value` (binary-safe: `redis-cli -x` reads it from stdin).
    pub fn set_bytes(&self, key: &str, value: &[u8]) {
        let mut set = Command::new("redis-cli");
        set.args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-n"])
            .arg(self.db.to_string())
            .args(["-x", "set", key]);
        let out = crate::common::run_with_stdin(&mut set, value);
        assert!(
            out.status.success() && out.stdout.starts_with(b"OK"),
            "{out:?}"
        );
        let len: usize = self.cli(&["strlen", key]).parse().expect("strlen");
        assert_eq!(len, value.len(), "redis-cli changed the value");
    }

    /// Every key under this target's prefix, sorted.
    pub fn keys(&self) -> Vec<String> {
        let pattern = format!("{}/*", self.prefix);
        let mut keys: Vec<String> = self
            .cli(&["--scan", "--pattern", &pattern])
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        keys.sort();
        keys
    }

    /// Keys of entries (not leases).
    pub fn entry_keys(&self) -> Vec<String> {
        entries_among(self.keys())
    }

    pub fn server(&mut self) -> &mut RedisServer {
        self.server.as_mut().expect("a private server")
    }
}

/// A test's target on the shared server; `None` only when skipping was asked for.
pub fn shared(test: &str) -> Option<Target> {
    let prefix = unique_prefix(test);
    match std::env::var("MCK_TEST_REDIS_URL") {
        Ok(url) => {
            let (port, db) = parse_base(&url);
            Some(Target {
                port,
                db,
                prefix,
                server: None,
            })
        }
        Err(_) => {
            if std::env::var_os("CI").is_some() {
                panic!(
                    "{test}: MCK_TEST_REDIS_URL is not set under CI: scripts/test.sh starts \
                     redis-server and exports it"
                );
            }
            private(test)
        }
    }
}

/// A test's own server (for tests that kill it); `None` only when skipping was asked for.
pub fn private(test: &str) -> Option<Target> {
    if !available(test) {
        return None;
    }
    let server = RedisServer::start();
    Some(Target {
        port: server.port,
        db: 0,
        prefix: unique_prefix(test),
        server: Some(server),
    })
}

/// Whether `redis-server` is installed; false only when skipping was asked for (it says so),
/// and a failure of `test` otherwise.
pub fn available(test: &str) -> bool {
    if have_redis_server() {
        return true;
    }
    let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
    if !ci && std::env::var("MCK_TEST_SKIP_REDIS").as_deref() == Ok("1") {
        eprintln!("SKIPPED {test}: redis-server is not installed (MCK_TEST_SKIP_REDIS=1)");
        return false;
    }
    panic!(
        "{test}: redis-server is not installed: run scripts/setup.sh (or set \
         MCK_TEST_SKIP_REDIS=1 to skip the Redis tests, which is then reported)"
    );
}

fn have_redis_server() -> bool {
    Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The keys of entries (not leases) among `keys`, on any remote.
pub fn entries_among(keys: Vec<String>) -> Vec<String> {
    keys.into_iter()
        .filter(|k| k.contains("/entries-v1/"))
        .collect()
}

pub fn unique_prefix(test: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "mck-test/{test}-{}-{nanos}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// Port and database of `redis://127.0.0.1:PORT/DB`.
fn parse_base(url: &str) -> (u16, u32) {
    let rest = url
        .strip_prefix("redis://")
        .unwrap_or_else(|| panic!("MCK_TEST_REDIS_URL={url}: expected redis://HOST:PORT/DB"));
    let (hostport, db) = rest.split_once('/').unwrap_or((rest, "0"));
    let port = hostport
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or_else(|| panic!("MCK_TEST_REDIS_URL={url}: no port"));
    let db = db
        .trim_end_matches('/')
        .parse()
        .unwrap_or_else(|_| panic!("MCK_TEST_REDIS_URL={url}: expected a database number"));
    (port, db)
}

/// A `redis-server` child on 127.0.0.1, no persistence, killed on drop.
pub struct RedisServer {
    pub port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts a server on a free port.
    pub fn start() -> RedisServer {
        let dir = tempfile::tempdir().expect("tempdir");
        for _ in 0..5 {
            let port = free_port();
            if let Some(child) = spawn(port, dir.path()) {
                return RedisServer {
                    port,
                    dir,
                    child: Some(child),
                };
            }
        }
        panic!("could not start redis-server on a free port");
    }

    /// Kills the server (SIGKILL: no goodbye to clients) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the server with SIGSTOP: the kernel still accepts connections, nobody answers.
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
    }

    /// Lets a paused server go on (SIGCONT).
    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    fn signal(&self, signal: libc::c_int) {
        let child = self.child.as_ref().expect("a running server");
        let pid = libc::pid_t::try_from(child.id()).expect("pid");
        // SAFETY: kill(2) on our own child's pid; no memory is involved.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill -{signal}");
    }

    /// Starts a server again on the same port (empty: nothing was persisted).
    pub fn restart(&mut self) {
        self.kill();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(child) = spawn(self.port, self.dir.path()) {
                self.child = Some(child);
                return;
            }
            assert!(
                Instant::now() < deadline,
                "could not restart redis-server on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Spawns `redis-server` on `port`; `None` if it exits (port taken) or never answers.
fn spawn(port: u16, dir: &Path) -> Option<Child> {
    let mut child = Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn redis-server");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return None;
        }
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(child);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}
