//! `redis-cluster://`: a real 3-master Redis Cluster, each master with a replica. 200 entries
//! compiled on one host spread over every master (the cluster's own key counts say so) and hit
//! from a second cache directory; a master killed in the middle of a build fails no compile;
//! once its replica has taken over, a third directory hits every entry, those on the dead
//! master's slots included.

use std::process::Output;
use std::time::{Duration, Instant};

use crate::cluster::Cluster;
use crate::common::{self, read};
use crate::team::{Team, spawn_slow};

const MODULES: usize = 200;

/// `exec` of each of `modules` on `host`, a few at a time; each asserted a success.
fn exec_all(team: &Team, host: &str, modules: &[String]) -> Vec<Output> {
    let mut outputs = Vec::new();
    for chunk in modules.chunks(4) {
        let done: Vec<Output> = std::thread::scope(|s| {
            let running: Vec<_> = chunk
                .iter()
                .map(|m| s.spawn(|| team.exec(host, m).output().expect("run exec")))
                .collect();
            running
                .into_iter()
                .map(|t| t.join().expect("join"))
                .collect()
        });
        for (module, out) in chunk.iter().zip(&done) {
            assert!(
                out.status.success(),
                "{host} {module}: {}",
                common::stderr(out)
            );
        }
        outputs.extend(done);
    }
    outputs
}

/// Compiles one more module slowly on host `lease`: the master that holds its lease while it
/// compiles, and the one that holds its entry after.
fn lease_and_entry_nodes(
    cluster: &Cluster,
    team: &Team,
    masters: &[u16],
    prefix: &str,
) -> (u16, u16) {
    let holder = |pattern: &str| {
        masters.iter().find_map(|&p| {
            let keys = cluster.cli(p, &["--scan", "--pattern", pattern]);
            keys.lines().next().map(|k| (p, k.to_owned()))
        })
    };
    let mut slow = spawn_slow(&mut team.exec("lease", "b.mlir"), "3");
    let deadline = Instant::now() + Duration::from_secs(20);
    let (lease_node, lease) = loop {
        if let Some(found) = holder(&format!("{prefix}/leases/*")) {
            break found;
        }
        assert!(Instant::now() < deadline, "no lease seen while compiling");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(slow.wait().expect("wait").success());
    let entry = lease.replace("/leases/", "/entries-v1/");
    let (entry_node, _) = holder(&entry).unwrap_or_else(|| panic!("no master holds {entry}"));
    (lease_node, entry_node)
}

#[test]
fn a_cluster_spreads_entries_over_its_masters_and_survives_a_dead_one() {
    let Some(cluster) = Cluster::start("cluster", 3, 1) else {
        return;
    };
    let prefix = crate::redis::unique_prefix("cluster");
    let team = Team::new(format!("redis-cluster://{}/{prefix}", cluster.seeds()));
    let a = String::from_utf8(read(&team.path("a.mlir"))).expect("utf-8");
    let modules: Vec<String> = (0..MODULES)
        .map(|i| {
            let name = format!("m{i}.mlir");
            let renamed = a.replace(
                "sym_name = \"jit_mlp\"",
                &format!("sym_name = \"jit_m{i}\""),
            );
            std::fs::write(team.path(&name), renamed).expect("write module");
            name
        })
        .collect();

    exec_all(&team, "a", &modules);
    assert_eq!(team.runs(), MODULES, "every module compiled once");
    let masters = cluster.masters();
    assert_eq!(masters.len(), 3, "{masters:?}");
    let pattern = format!("{prefix}/entries-v1/*");
    let counts: Vec<usize> = masters
        .iter()
        .map(|&p| cluster.keys_on(p, &pattern))
        .collect();
    eprintln!("entries per master: {counts:?}");
    assert_eq!(counts.iter().sum::<usize>(), MODULES, "{counts:?}");
    assert!(
        counts.iter().all(|&n| n > 0),
        "every master holds entries: {counts:?}"
    );
    // An entry's compile lease was taken in the entry's slot, on the same master, and released.
    let leases: usize = masters
        .iter()
        .map(|&p| cluster.keys_on(p, &format!("{prefix}/leases/*")))
        .sum();
    assert_eq!(leases, 0, "every lease released");
    let (lease_node, entry_node) = lease_and_entry_nodes(&cluster, &team, &masters, &prefix);
    assert_eq!(
        lease_node, entry_node,
        "an entry's lease lives on its entry's master (one slot)"
    );
    let compiled = team.runs();

    // A second directory: the first half hits, then a master dies and the build goes on.
    let (first, second) = modules.split_at(MODULES / 2);
    exec_all(&team, "b", first);
    assert_eq!(team.runs(), compiled, "the first half hit");
    let victim = masters[1];
    cluster.kill(victim);
    let start = Instant::now();
    let outputs = exec_all(&team, "b", second);
    let recompiled = team.runs() - compiled;
    eprintln!(
        "after the kill: {} execs in {:?}, {recompiled} compiled again",
        second.len(),
        start.elapsed()
    );
    let warned = outputs
        .iter()
        .any(|o| common::stderr(o).contains("remote cache unavailable"));
    assert!(warned || recompiled == 0, "a miss after a failure is told");
    for m in modules.iter() {
        team.assert_same_output("a", "b", m);
    }

    // The replica of the dead master takes its slots; a third directory hits every entry.
    cluster.wait_until_whole();
    let now_masters = cluster.masters();
    assert_eq!(
        now_masters.len(),
        3,
        "a replica was promoted: {now_masters:?}"
    );
    assert!(!now_masters.contains(&victim));
    let before = team.runs();
    exec_all(&team, "c", &modules);
    assert_eq!(
        team.runs(),
        before,
        "after the failover every entry hits, those on the dead master's slots too"
    );
    for m in modules.iter() {
        team.assert_same_output("a", "c", m);
    }
    let stats = team.stats("c");
    assert_eq!(stats["remote_hits"], MODULES, "{stats}");
}
