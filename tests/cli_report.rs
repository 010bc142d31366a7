//! `report`: a scripted history of real corpus modules through `exec` on four caches — a
//! jaxlib version change on two of three, an XLA flag added to one run, a fourth cache too
//! small for its working set, a dead remote tier — grouped under the right causes with exact
//! counts, and totals equal to `cache stats` of the caches summed.

use crate::common::{self, Site, success, text};
use std::path::PathBuf;
use std::process::Command;

const MODULES: [&str; 3] = [
    "cpu/mlp.a.generic.mlir",
    "cpu/conv.a.generic.mlir",
    "cpu/scan_loop.a.generic.mlir",
];

struct History {
    site: Site,
    modules: Vec<PathBuf>,
}

impl History {
    fn new() -> History {
        let site = Site::new("v1");
        let modules = MODULES
            .iter()
            .enumerate()
            .map(|(i, m)| site.module(m, &format!("m{i}.mlir")))
            .collect();
        History { site, modules }
    }

    fn cache(&self, name: &str) -> PathBuf {
        self.site.path(name)
    }

    /// `exec` of module `m` into cache `cache`, jaxlib `jaxlib` (the platform version JAX keys),
    /// with `options` before the compiler command.
    fn exec(&self, cache: &str, m: usize, jaxlib: &str, options: &[&str]) -> Command {
        let mut c = self.site.bin();
        c.args(["exec", "--no-direct", "--platform-version", jaxlib])
            .arg("--cache-dir")
            .arg(self.cache(cache))
            .args(options)
            .env_remove("XLA_FLAGS");
        let out = self.site.path(&format!("{cache}-out.bin"));
        common::compile(&mut c, &self.site.compiler(), &self.modules[m], &out);
        c
    }

    fn run(&self, cache: &str, m: usize, jaxlib: &str, options: &[&str]) {
        success(&mut self.exec(cache, m, jaxlib, options));
    }

    fn stats(&self, cache: &str) -> serde_json::Value {
        let out = success(
            common::bin()
                .args(["cache", "stats", "--json", "--cache-dir"])
                .arg(self.cache(cache)),
        );
        serde_json::from_slice(&out).expect("stats JSON")
    }

    fn entry_sizes(&self, cache: &str) -> Vec<u64> {
        let out = success(
            common::bin()
                .args(["cache", "entries", "--json", "--cache-dir"])
                .arg(self.cache(cache)),
        );
        let entries: serde_json::Value = serde_json::from_slice(&out).expect("entries JSON");
        let sizes = entries.as_array().expect("a list").iter();
        sizes.map(|e| e["size"].as_u64().expect("size")).collect()
    }

    /// `report` over `caches` (the first by --cache-dir, the others as arguments).
    fn report(&self, caches: &[&str], extra: &[&str]) -> Command {
        let mut c = common::bin();
        c.args(["report", "--since", "all", "--cache-dir"])
            .arg(self.cache(caches[0]))
            .args(caches[1..].iter().map(|c| self.cache(c)))
            .args(extra);
        c
    }
}

fn causes(report: &serde_json::Value) -> Vec<(String, u64)> {
    let groups = report["causes"].as_array().expect("causes");
    let mut found: Vec<(String, u64)> = groups
        .iter()
        .map(|g| {
            (
                g["cause"].as_str().unwrap().to_owned(),
                g["count"].as_u64().unwrap(),
            )
        })
        .collect();
    found.sort();
    found
}

fn sum(stats: &[serde_json::Value], counter: &str) -> u64 {
    stats.iter().map(|s| common::counter(s, counter)).sum()
}

#[test]
fn a_scripted_history_is_grouped_by_cause_and_its_totals_equal_cache_stats() {
    let h = History::new();
    let (old, new) = ("jaxlib-0.4.30", "jaxlib-0.4.31");
    // Three hosts' caches compile the three programs (new), then a and b upgrade jaxlib.
    for cache in ["a", "b", "c"] {
        for m in 0..3 {
            h.run(cache, m, old, &[]);
        }
    }
    for cache in ["a", "b"] {
        for m in 0..3 {
            h.run(cache, m, new, &[]);
        }
    }
    for m in 0..3 {
        h.run("c", m, old, &[]); // hits
    }
    // One run on c adds an XLA flag.
    success(
        h.exec("c", 1, old, &[])
            .env("XLA_FLAGS", "--xla_cpu_enable_fast_math=true"),
    );
    // A dead remote tier beside b, for a program b has not compiled under the new jaxlib yet:
    // the miss is the tier's, which could not be asked.
    h.run(
        "b",
        0,
        "jaxlib-0.4.32",
        &["--remote", "redis://127.0.0.1:1/0"],
    );

    // Cache d holds any two of the three entries, not all three: cycling evicts each in turn.
    for m in 0..3 {
        h.run("sizing", m, old, &[]);
    }
    let sizes = h.entry_sizes("sizing");
    let all: u64 = sizes.iter().sum();
    let cap = all - sizes.iter().min().unwrap() / 2;
    let small = ["--cache-size", &cap.to_string(), "--cache-ttl", "0"];
    for m in [0, 1, 2, 0, 1, 2] {
        h.run("d", m, old, &small);
    }

    let caches = ["a", "b", "c", "d"];
    let report: serde_json::Value =
        serde_json::from_slice(&success(&mut h.report(&caches, &["--json"]))).expect("JSON");
    assert_eq!(report["schema"], "mlir-cache-key.report.v1");
    let expected: Vec<(String, u64)> = [
        ("compiler_version", 6),
        ("evicted", 3),
        ("new_program", 12),
        ("remote_down", 1),
        ("xla_flag", 1),
    ]
    .into_iter()
    .map(|(c, n)| (c.to_owned(), n))
    .collect();
    assert_eq!(causes(&report), expected, "{report:#}");

    let stats: Vec<_> = caches.iter().map(|c| h.stats(c)).collect();
    let totals = &report["totals"];
    for counter in ["hits", "misses", "failures_replayed", "puts", "evictions"] {
        assert_eq!(totals[counter], sum(&stats, counter), "{counter}: {totals}");
    }
    assert_eq!(
        (&totals["hits"], &totals["misses"]),
        (&3.into(), &23.into())
    );
    let compiler = report["causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["cause"] == "compiler_version")
        .unwrap();
    assert_eq!(compiler["details"][0]["count"], 6, "{compiler}");
    let detail = compiler["details"][0]["detail"].as_str().unwrap();
    assert!(detail.contains(old) && detail.contains(new), "{detail}");
    let flag = report["causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["cause"] == "xla_flag")
        .unwrap();
    assert_eq!(
        flag["details"][0]["detail"],
        "XLA flag added: --xla_cpu_enable_fast_math=true"
    );

    // Eviction churn: each re-compiled entry needed all three to stay.
    let churn = &report["eviction"];
    assert_eq!(churn["recompiled_after_eviction"], 3, "{churn}");
    assert_eq!(churn["evictions"], sum(&stats[3..], "evictions"));
    let needed = churn["size_to_keep_them"].as_u64().unwrap();
    assert!(
        needed > cap && needed <= all + 64,
        "{needed} vs cap {cap}, all {all}"
    );
    let tiers = report["tiers"].as_array().unwrap();
    assert_eq!(tiers.len(), 1, "{tiers:?}");
    assert_eq!(
        (&tiers[0]["lookups"], &tiers[0]["down"]),
        (&1.into(), &1.into())
    );

    // A cache's own view: two of its misses were jaxlib's, and compile time was both spent
    // (on misses) and saved (by c's hits).
    let one: serde_json::Value =
        serde_json::from_slice(&success(&mut h.report(&["c"], &["--json"]))).expect("JSON");
    assert_eq!(
        causes(&one),
        [("new_program".to_owned(), 3), ("xla_flag".to_owned(), 1)]
    );
    assert!(
        one["totals"]["compile_ms_saved"].as_u64().unwrap() > 0,
        "{one:#}"
    );
    let text = text(success(&mut h.report(&caches, &[])));
    common::assert_contains(
        &text,
        &[
            "Lookups 26: hits 3, misses 23",
            "compiler version changed (jaxlib/XLA) [compiler_version]",
            "evicted earlier",
            "redis://127.0.0.1:1/0: 1 lookups",
        ],
    );
}

#[test]
fn a_report_needs_a_cache_and_says_which_path_is_not_one() {
    let h = History::new();
    h.run("a", 0, "x", &[]);
    let missing = h.cache("nowhere");
    let stderr = common::failure(
        common::bin()
            .args(["report", "--cache-dir"])
            .arg(h.cache("a"))
            .arg(&missing),
        common::EX_NOINPUT,
    );
    assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
    let bad = common::failure(
        common::bin().args(["report", "--since", "a week"]),
        common::EX_USAGE,
    );
    assert!(bad.contains("--since"), "{bad}");
}
