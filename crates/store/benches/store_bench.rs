//! Store benchmark: put + evict, get, list and stats on caches of 1k, 10k and 100k entries (half
//! of them one module's, as a test suite's lambdas are: the newest 2 of that module are what a
//! miss's explanation reads), and
//! how each grows from 1k to 100k (it must grow no worse than logarithmically: the index makes
//! every operation O(log n) in the number of entries, or O(result) for listings).
//!
//! Run: `cargo bench --bench store_bench` (sizes: `STORE_BENCH_SIZES=1000,10000,100000`,
//! operations per measurement: `STORE_BENCH_OPS=1000`, directory: `STORE_BENCH_DIR=/var/tmp`).
//! `cargo test --benches` runs a quick smoke version.
//!
//! Each cache is populated through the public `put` (real entry files and index rows, 1 KiB
//! artefacts, fsync off so populating 100k entries takes well under a minute), then reopened with
//! its cap set to its current size, so every further put evicts the least recently used entry.
//! `put+evict` is measured with fsync off (the algorithmic cost) and on (what a user pays).
//!
//! The machine may be shared, so measurements are interleaved: every operation runs in batches
//! that alternate between the cache sizes, and the fastest batch per size is kept. Load that
//! comes and goes then hits every size alike instead of skewing the ratios. Wall and CPU time
//! (user + system of this process) are both reported.

use std::hint::black_box;
use std::time::{Duration, Instant};

use mck_store::{CacheKey, ListFilter, Lookup, Settings, SortBy, Store};
use serde_json::json;
use sha2::{Digest as _, Sha256};

const BATCHES: u64 = 7;

/// Half the entries share one module name, as a test suite's many lambdas do.
const SHARED_MODULE: &str = "jit__lambda";

fn key(i: u64) -> CacheKey {
    let hex = hex::encode(Sha256::digest(i.to_le_bytes()));
    let name = match i % 2 {
        0 => SHARED_MODULE.to_owned(),
        _ => format!("jit_bench_{i}"),
    };
    match CacheKey::parse(&format!("{name}-{hex}")) {
        Ok(k) => k,
        Err(e) => panic!("{e}"),
    }
}

fn artefact(i: u64) -> Vec<u8> {
    let mut v = vec![0u8; 1024];
    v[..8].copy_from_slice(&i.to_le_bytes());
    v
}

/// CPU time (user + system) of this process: unlike wall time, it does not count waiting for a
/// core that another process holds.
fn cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// Microseconds per operation.
#[derive(Clone, Copy)]
struct Cost {
    wall: f64,
    cpu: f64,
}

impl Cost {
    const WORST: Cost = Cost {
        wall: f64::INFINITY,
        cpu: f64::INFINITY,
    };
    fn best(self, other: Cost) -> Cost {
        Cost {
            wall: self.wall.min(other.wall),
            cpu: self.cpu.min(other.cpu),
        }
    }
    fn scaled(self, by: f64) -> Cost {
        Cost {
            wall: self.wall * by,
            cpu: self.cpu * by,
        }
    }
}

/// Times `reps` calls of `f`.
fn timed(reps: u64, mut f: impl FnMut()) -> Cost {
    let (t, c) = (Instant::now(), cpu_time());
    for _ in 0..reps {
        f();
    }
    let reps = reps.max(1) as f64;
    Cost {
        wall: t.elapsed().as_secs_f64() * 1e6 / reps,
        cpu: cpu_time().saturating_sub(c).as_secs_f64() * 1e6 / reps,
    }
}

struct Cache {
    n: u64,
    _dir: tempfile::TempDir,
    store: Store,
    store_fsync: Store,
    /// The same cache opened with no lookup history (`history_size = 0`).
    store_without_history: Store,
    next: u64,
    populate_us: f64,
    probe: u64,
}

impl Cache {
    fn new(n: u64) -> Cache {
        let base = std::env::var("STORE_BENCH_DIR").unwrap_or_else(|_| "/var/tmp".into());
        let dir = tempfile::tempdir_in(base).expect("tempdir");
        let mut settings = Settings {
            cache_dir: dir.path().join("cache"),
            fsync: false,
            max_size: u64::MAX,
            ttl: Duration::ZERO,
            ..Settings::default()
        };
        let store = Store::open(&settings).expect("open");
        let t = Instant::now();
        for i in 0..n {
            store
                .put(&key(i), &artefact(i), &json!({"i": i}))
                .expect("put");
        }
        let populate_us = t.elapsed().as_secs_f64() * 1e6 / n.max(1) as f64;
        settings.max_size = store.size().expect("size");
        drop(store);
        let store = Store::open(&settings).expect("reopen");
        let store_without_history = Store::open(&Settings {
            history_size: 0,
            ..settings.clone()
        })
        .expect("reopen without history");
        settings.fsync = true;
        let store_fsync = Store::open(&settings).expect("reopen with fsync");
        Cache {
            n,
            _dir: dir,
            store,
            store_fsync,
            store_without_history,
            next: n,
            populate_us,
            probe: 0,
        }
    }

    /// A key among the most recent half (so it survived eviction).
    fn recent_key(&mut self) -> CacheKey {
        self.probe += 1;
        key(self.next - 1 - (self.probe * 7919) % (self.n / 2).max(1))
    }
}

fn hit(store: &Store, k: &CacheKey) {
    match store.get(k).expect("get") {
        Lookup::Hit(a) => {
            black_box(a.bytes.len());
        }
        other => panic!("expected a hit for {k}: {other:?}"),
    }
}

/// What the lookup history adds to a hit: hits with and without it, paired batch by batch
/// (on, off, on, off…) so that load on a shared machine hits both alike; the fastest batch of
/// each is kept.
fn history_cost(caches: &mut [Cache], per_batch: u64) {
    println!(
        "
get (hit) with the lookup history against without it (paired batches):"
    );
    println!(
        "{:>8} {:>12} {:>12} {:>7}",
        "entries", "with (us)", "without", "ratio"
    );
    for c in caches {
        let (mut with, mut without) = (Cost::WORST, Cost::WORST);
        for _ in 0..3 * BATCHES {
            let k = c.recent_key();
            with = with.best(timed(per_batch, || hit(&c.store, &k)));
            without = without.best(timed(per_batch, || hit(&c.store_without_history, &k)));
        }
        println!(
            "{:>8} {:>12.2} {:>12.2} {:>6.2}x",
            c.n,
            with.wall,
            without.wall,
            with.wall / without.wall
        );
    }
}

/// Lists the 100 first entries by `sort`.
fn list_100(c: &mut Cache, sort: SortBy) {
    let f = ListFilter {
        sort,
        limit: Some(100),
        ..Default::default()
    };
    black_box(c.store.list(&f).expect("list").len());
}

type Op = (&'static str, u64, fn(&mut Cache));

fn ops(per_batch: u64) -> Vec<Op> {
    vec![
        ("put+evict", per_batch, |c| {
            let i = c.next;
            c.store
                .put(&key(i), &artefact(i), &json!({"i": i}))
                .expect("put");
            c.next += 1;
        }),
        ("put+evict, fsync on", (per_batch / 4).max(5), |c| {
            let i = c.next;
            c.store_fsync
                .put(&key(i), &artefact(i), &json!({"i": i}))
                .expect("put");
            c.next += 1;
        }),
        ("a miss, counted+stored", per_batch, |c| {
            // What a miss leaves for the worker in JAX: count it, explain it (read its module's
            // newest entries, count its reason), store it.
            let i = c.next;
            let k = key(i);
            assert!(matches!(c.store.get(&k).expect("get"), Lookup::Miss));
            let f = ListFilter {
                limit: Some(2),
                ..ListFilter::module(SHARED_MODULE)
            };
            black_box(c.store.list(&f).expect("list").len());
            c.store.count_miss_reason("computation");
            c.store
                .put(&k, &artefact(i), &json!({"i": i}))
                .expect("put");
            c.next += 1;
        }),
        ("get (hit)", per_batch, |c| {
            let k = c.recent_key();
            hit(&c.store, &k);
        }),
        ("  its file part", per_batch, |c| {
            let k = c.recent_key();
            black_box(c.store.read_metadata(k.digest()).expect("read").is_some());
        }),
        ("  its index part", per_batch, |c| {
            let k = c.recent_key();
            black_box(c.store.summary_of(k.digest()).expect("row").is_some());
        }),
        ("list 100 by last use", per_batch / 4, |c| {
            list_100(c, SortBy::LastUsed)
        }),
        ("list 100 by name", per_batch / 4, |c| {
            list_100(c, SortBy::Name)
        }),
        ("newest 2 of a module", per_batch, |c| {
            // What explaining a miss reads first: the module's most recently used entries.
            let f = ListFilter {
                limit: Some(2),
                ..ListFilter::module(SHARED_MODULE)
            };
            black_box(c.store.list(&f).expect("list").len());
        }),
        ("stats", per_batch * 2, |c| {
            black_box(c.store.stats().expect("stats"));
        }),
    ]
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs a quick smoke version.
    let quick = std::env::args().all(|a| a != "--bench");
    let sizes: Vec<u64> = std::env::var("STORE_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| {
            if quick {
                vec![100, 300]
            } else {
                vec![1_000, 10_000, 100_000]
            }
        });
    let total_ops: u64 = std::env::var("STORE_BENCH_OPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if quick { 70 } else { 1_000 });
    let per_batch = (total_ops / BATCHES).max(4);

    let mut caches: Vec<Cache> = sizes.iter().map(|&n| Cache::new(n)).collect();
    for c in &caches {
        println!("populated {} entries at {:.1} us/put", c.n, c.populate_us);
    }
    let ops = ops(per_batch);
    // results[op][cache]
    let mut results = vec![vec![Cost::WORST; caches.len()]; ops.len() + 1];
    for (o, (_, reps, f)) in ops.iter().enumerate() {
        for _ in 0..BATCHES {
            for (ci, c) in caches.iter_mut().enumerate() {
                let cost = timed(*reps, || f(c));
                results[o][ci] = results[o][ci].best(cost);
            }
        }
    }
    // A full listing, per entry listed.
    let full = ops.len();
    for _ in 0..3 {
        for (ci, c) in caches.iter_mut().enumerate() {
            let cost = timed(1, || {
                black_box(c.store.list(&ListFilter::default()).expect("list").len());
            });
            results[full][ci] = results[full][ci].best(cost.scaled(1.0 / c.n as f64));
        }
    }
    let names: Vec<&str> = ops
        .iter()
        .map(|o| o.0)
        .chain(["list all, per entry"])
        .collect();

    print!("\n{:<22}", "us per operation");
    for c in &caches {
        print!(" {:>9} {:>9}", format!("{}:wall", c.n), "cpu");
    }
    println!();
    for (o, name) in names.iter().enumerate() {
        print!("{name:<22}");
        for r in &results[o] {
            print!(" {:>9.2} {:>9.2}", r.wall, r.cpu);
        }
        println!();
    }
    history_cost(&mut caches, per_batch);
    if let Ok(path) = std::env::var("STORE_BENCH_JSON") {
        let rows: Vec<_> = caches
            .iter()
            .enumerate()
            .map(|(ci, c)| {
                let ops: serde_json::Map<String, serde_json::Value> = names
                    .iter()
                    .enumerate()
                    .map(|(o, name)| {
                        let r = results[o][ci];
                        (
                            name.to_string(),
                            json!({"wall_us": r.wall, "cpu_us": r.cpu}),
                        )
                    })
                    .collect();
                json!({"entries": c.n, "ops": ops})
            })
            .collect();
        if let Err(e) = std::fs::write(&path, serde_json::to_vec_pretty(&rows).unwrap_or_default())
        {
            eprintln!("cannot write {path}: {e}");
        }
    }
    if let (Some(a), Some(b)) = (caches.first(), caches.last())
        && b.n > a.n
    {
        let last = caches.len() - 1;
        let log_bound = (b.n as f64).ln() / (a.n as f64).ln();
        println!(
            "\nratio {}/{} entries (logarithmic growth allows up to {log_bound:.2}x):",
            b.n, a.n
        );
        println!("{:<22} {:>8} {:>8}", "operation", "wall", "cpu");
        for (o, name) in names.iter().enumerate() {
            let (ra, rb) = (results[o][0], results[o][last]);
            println!(
                "{name:<22} {:>7.2}x {:>7.2}x",
                rb.wall / ra.wall,
                rb.cpu / ra.cpu
            );
        }
    }
}
