//! A remote hit through `redis-cluster://` (3 masters on loopback, `scripts/redis-cluster.sh`)
//! against the same hit on one `redis-server`, interleaved round by round: each round a fresh
//! cache directory (so every lookup goes to the server) and a fresh process-level client (so
//! every hit pays its connections: a cluster client reads the slot map from a seed, then
//! connects to the master of the entry's slot). Best and median of N rounds, and their ratio.
//!
//! Run: `cargo bench -p mck-remote --bench cluster_hit` (needs `redis-server`, `redis-cli` and
//! `python3` on PATH; `CLUSTER_HIT_ROUNDS`, default 21; `REMOTE_HIT_BYTES`, default 4 KiB).
//! `cargo test --benches` runs one round.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use mck_remote::Credentials;
use mck_store::CacheKey;
use support::{RedisChild, free_port, hit, print_pair};

/// A cluster started by the script; stopped on drop.
struct Cluster {
    dir: tempfile::TempDir,
    seeds: String,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/redis-cluster.sh")
}

impl Cluster {
    fn start(masters: usize) -> Result<Cluster, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = Command::new("bash")
            .arg(script())
            .arg("start")
            .arg(dir.path().join("cluster"))
            .args([masters.to_string(), "0".to_owned()])
            .output()
            .map_err(|e| format!("cannot run scripts/redis-cluster.sh: {e}"))?;
        let mut cluster = Cluster {
            dir,
            seeds: String::new(),
        };
        if !out.status.success() {
            return Err(format!(
                "scripts/redis-cluster.sh start: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        cluster.seeds = String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("MCK_TEST_CLUSTER_NODES="))
            .ok_or("scripts/redis-cluster.sh printed no nodes")?
            .to_owned();
        Ok(cluster)
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

fn main() -> Result<(), String> {
    let rounds = support::rounds("CLUSTER_HIT_ROUNDS", 21);
    let len: usize = std::env::var("REMOTE_HIT_BYTES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4096);
    let port = free_port()?;
    let _single = RedisChild::start(&["--port", &port.to_string()], port)?;
    let cluster = Cluster::start(3)?;
    let one = format!("redis://127.0.0.1:{port}/0/bench");
    let sharded = format!("redis-cluster://{}/bench", cluster.seeds);
    let none = Credentials::default();
    let key =
        CacheKey::parse(&format!("jit_cluster-{}", "c3".repeat(32))).map_err(|e| e.to_string())?;
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    for url in [&one, &sharded] {
        support::cache(&work.path().join("writer"), url, &none)?
            .put(&key, &support::value(len), &serde_json::json!({}))
            .map_err(|e| e.to_string())?;
    }
    let (mut over_one, mut over_cluster) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        over_one.push(hit(work.path(), &one, &none, &key, len)?);
        over_cluster.push(hit(work.path(), &sharded, &none, &key, len)?);
    }
    println!("remote hit of a {len}-byte value, {rounds} interleaved rounds, a new client each");
    print_pair(
        ("one redis-server", &mut over_one),
        ("3-master cluster", &mut over_cluster),
    );
    Ok(())
}
