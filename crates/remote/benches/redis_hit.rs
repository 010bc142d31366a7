//! A remote hit of a 16 MiB value against plain GETs of the same value, in one run, interleaved:
//! a `GET` through the `redis` crate (the floor), the tier's own read (opendal, what a hit
//! sends), and a whole remote hit (`Tiered::get` on an empty local cache: read, verify, back-fill
//! the local cache, refresh the expiry), with the back-fill's fsync on (what a user pays) and off.
//! Best and median of N rounds.
//!
//! Run: `cargo bench -p mck-remote --bench redis_hit` (a `redis-server` on PATH is started on a
//! free loopback port; `MCK_BENCH_REDIS_URL` uses another; `REDIS_HIT_ROUNDS`, default 15).
//! `cargo test --benches` runs one round.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mck_store::{CacheKey, Lookup, Settings, Store, Tiered};

const VALUE_BYTES: usize = 16 << 20;

/// A redis-server of our own, stopped on drop.
struct Server(Child, #[allow(dead_code)] tempfile::TempDir);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server() -> Result<(String, Option<Server>), String> {
    if let Ok(url) = std::env::var("MCK_BENCH_REDIS_URL") {
        return Ok((url, None));
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("cannot find a free port: {e}"))?
        .port();
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let child = Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--save", "", "--appendonly", "no", "--dir"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start redis-server: {e}"))?;
    let server = Server(child, dir);
    let url = format!("redis://127.0.0.1:{port}/0");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok((url, Some(server)));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("redis-server did not listen on port {port}"))
}

fn tiered_at(dir: &std::path::Path, url: &str, fsync: bool) -> Result<Tiered, String> {
    let mut settings = Settings {
        cache_dir: dir.to_owned(),
        fsync,
        ..Settings::default()
    };
    settings.remote.tiers = vec![mck_remote::parse_tier(url).map_err(|e| e.to_string())?];
    let store = Store::open(&settings).map_err(|e| e.to_string())?;
    Ok(mck_remote::tiered(store))
}

fn best_and_median(times: &mut [Duration]) -> (f64, f64) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    (ms(times[0]), ms(times[times.len() / 2]))
}

fn main() -> Result<(), String> {
    let quick = std::env::args().any(|a| a == "--test" || a == "--list")
        || !std::env::args().any(|a| a == "--bench");
    let rounds: usize = match quick {
        true => 1,
        false => std::env::var("REDIS_HIT_ROUNDS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(15),
    };
    let (url, _server) = start_server()?;
    let work = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let key =
        CacheKey::parse(&format!("jit_bench-{}", "ab".repeat(32))).map_err(|e| e.to_string())?;
    let value: Vec<u8> = (0..VALUE_BYTES as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let writer = tiered_at(&work.path().join("writer"), &url, false)?;
    writer
        .put(&key, &value, &serde_json::json!({}))
        .map_err(|e| e.to_string())?;
    let remote = writer.remotes().first().ok_or("no remote tier")?;
    let path = remote.entry_path(key.digest());
    let mut floor = redis::Client::open(url.as_str())
        .and_then(|c| c.get_connection())
        .map_err(|e| format!("redis client: {e}"))?;

    let labels = [
        "GET, `redis` crate (the floor)",
        "the tier's read (opendal GET)",
        "remote hit, back-fill fsync off",
        "remote hit, back-fill fsync on",
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); labels.len()];
    for round in 0..rounds {
        for (which, slot) in times.iter_mut().enumerate() {
            let local = work.path().join(format!("local-{round}-{which}"));
            let reader = match which {
                2 | 3 => Some(tiered_at(&local, &url, which == 3)?),
                _ => None,
            };
            let start = Instant::now();
            let bytes = match (which, &reader) {
                (0, _) => redis::cmd("GET")
                    .arg(&path)
                    .query::<Vec<u8>>(&mut floor)
                    .map_err(|e| format!("GET {path}: {e}"))?
                    .len(),
                (1, _) => remote
                    .get(key.digest())
                    .map_err(|e| e.to_string())?
                    .ok_or("the remote lost the value")?
                    .len(),
                (_, Some(reader)) => match reader.get(&key).map_err(|e| e.to_string())? {
                    Lookup::Hit(a) => a.bytes.len(),
                    other => return Err(format!("expected a remote hit, got {other:?}")),
                },
                _ => unreachable!("every variant has its reader"),
            };
            slot.push(start.elapsed());
            std::hint::black_box(bytes);
        }
    }
    let floor_best = best_and_median(&mut times[0]).0;
    println!(
        "| 16 MiB value, best / median of {rounds} interleaved | wall | ÷ the GET floor (best) |"
    );
    println!("|---|---|---|");
    for (label, t) in labels.iter().zip(times.iter_mut()) {
        let (best, median) = best_and_median(t);
        println!(
            "| {label} | {best:.1} / {median:.1} ms | {:.2}x |",
            best / floor_best
        );
    }
    Ok(())
}
