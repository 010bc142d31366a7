//! A Redis Cluster of a test's own (`scripts/redis-cluster.sh`: masters and replicas on
//! loopback, a 1 s node timeout), stopped on drop; the cluster's own view of it (roles, keys
//! per node) through `redis-cli`, and a master killed for a failover.
//!
//! Never a silent pass: without `redis-server` a test fails, unless `MCK_TEST_SKIP_REDIS=1`
//! asks to skip outside CI (then it says so on stderr).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub struct Cluster {
    dir: tempfile::TempDir,
    /// Every node's port, masters and replicas.
    pub ports: Vec<u16>,
}

impl Cluster {
    /// `masters` masters with `replicas` replicas each, every slot served and every replica
    /// synced; `None` only when skipping was asked for.
    pub fn start(test: &str, masters: usize, replicas: usize) -> Option<Cluster> {
        if !crate::redis::available(test) {
            return None;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let out = Command::new("bash")
            .arg(script())
            .arg("start")
            .arg(dir.path().join("cluster"))
            .args([masters.to_string(), replicas.to_string()])
            .output()
            .expect("run scripts/redis-cluster.sh");
        let cluster_dir = dir.path().join("cluster");
        let mut cluster = Cluster { dir, ports: vec![] };
        assert!(
            out.status.success(),
            "{test}: scripts/redis-cluster.sh start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for n in 1..=masters * (1 + replicas) {
            let port = std::fs::read_to_string(cluster_dir.join(format!("node{n}/port")))
                .expect("a node's port");
            cluster.ports.push(port.trim().parse().expect("port"));
        }
        Some(cluster)
    }

    /// The seed list of a `redis-cluster://` URL: every node.
    pub fn seeds(&self) -> String {
        let nodes: Vec<String> = self
            .ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        nodes.join(",")
    }

    /// `redis-cli` on the node at `port` (no redirects followed).
    pub fn cli(&self, port: u16, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &port.to_string()])
            .args(args)
            .output()
            .expect("run redis-cli");
        assert!(
            out.status.success(),
            "redis-cli -p {port} {args:?}: {out:?}"
        );
        String::from_utf8_lossy(&out.stdout).trim_end().to_owned()
    }

    /// The ports of the nodes that are masters now (as `ROLE` on each live node says).
    pub fn masters(&self) -> Vec<u16> {
        self.live()
            .into_iter()
            .filter(|&p| self.cli(p, &["role"]).lines().next() == Some("master"))
            .collect()
    }

    /// The ports of the nodes that answer.
    pub fn live(&self) -> Vec<u16> {
        self.ports
            .iter()
            .copied()
            .filter(|&p| {
                Command::new("redis-cli")
                    .args(["-h", "127.0.0.1", "-p", &p.to_string(), "ping"])
                    .output()
                    .is_ok_and(|o| o.stdout.starts_with(b"PONG"))
            })
            .collect()
    }

    /// The keys matching `pattern` that the node at `port` holds itself.
    pub fn keys_on(&self, port: u16, pattern: &str) -> usize {
        self.cli(port, &["--scan", "--pattern", pattern])
            .lines()
            .filter(|l| !l.is_empty())
            .count()
    }

    /// Kills the master at `port` (SIGKILL: no goodbye to clients or replicas).
    pub fn kill(&self, port: u16) {
        let n = self.ports.iter().position(|&p| p == port).expect("a node") + 1;
        let pid = std::fs::read_to_string(self.node_dir(n).join("pid")).expect("pid file");
        let pid: libc::pid_t = pid.trim().parse().expect("pid");
        // SAFETY: kill(2) on a server this cluster started; no memory is involved.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0, "kill {pid}");
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.live().contains(&port) {
            assert!(Instant::now() < deadline, "node {port} still answers");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the live nodes agree the cluster is whole again (a replica took over the
    /// dead master's slots); panics after 30 s.
    pub fn wait_until_whole(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let live = self.live();
            let whole = live.iter().all(|&p| {
                self.cli(p, &["cluster", "info"])
                    .lines()
                    .any(|l| l.trim() == "cluster_state:ok")
            });
            if whole {
                return;
            }
            assert!(Instant::now() < deadline, "no failover within 30 s");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn node_dir(&self, n: usize) -> PathBuf {
        self.dir.path().join(format!("cluster/node{n}"))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(self.dir.path().join("cluster"))
            .output();
    }
}

/// A free port for a cluster node: its cluster bus port, 10000 higher (so at most 65535), free
/// too.
pub fn node_port() -> u16 {
    for _ in 0..1000 {
        let port = crate::redis::free_port();
        if port <= 55535 && std::net::TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            return port;
        }
    }
    panic!("no free pair of ports for a cluster node");
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/redis-cluster.sh")
}
