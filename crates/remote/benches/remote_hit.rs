//! A remote hit of a value (16 MiB unless told) against plain GETs of the same value with the
//! same client, in one run, interleaved: the tier's one-`GET` read on an open client and on a new
//! one (what a new process pays), and a whole remote hit (`Tiered::get` on an empty local cache:
//! the value read in parts and verified as they arrive, the artefact handed back), timed to the
//! artefact in hand and again once its back-fill (the local copy, written beside the caller,
//! fsync on) is settled. On Redis also the `redis` crate's own `GET`, open and new connection
//! (the floor). Best and median of N rounds.
//!
//! Run: `cargo bench -p mck-remote --bench remote_hit` (a `redis-server` on PATH is started on a
//! free loopback port; `MCK_BENCH_REDIS_URL` uses another; `REMOTE_HIT_ROUNDS`, default 15;
//! `REMOTE_HIT_BYTES`, the value's size, default 16 MiB: a small one shows the round trips).
//! With `MCK_BENCH_S3_URL=s3://BUCKET/PREFIX` (and the AWS variables) an S3 store too:
//! `bash bench/s3_hit.sh` starts a Garage cluster and runs it so. `cargo test --benches` runs
//! one round.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mck_remote::Tiered;
use mck_store::{CacheKey, Lookup, Settings, Store};

/// The value's size: `REMOTE_HIT_BYTES`, else 16 MiB.
fn value_bytes() -> usize {
    std::env::var("REMOTE_HIT_BYTES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(16 << 20)
}

/// The value's size as the tables say it.
fn size_label() -> String {
    match value_bytes() {
        n if n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n => format!("{n}-byte"),
    }
}

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

/// A cache at `dir` with the chain `url` (tiers separated by spaces, fastest first).
fn tiered_at(dir: &std::path::Path, url: &str, fsync: bool) -> Result<Tiered, String> {
    let settings = Settings {
        cache_dir: dir.to_owned(),
        fsync,
        ..Settings::default()
    };
    let remote = mck_remote::RemoteSettings {
        tiers: url
            .split_whitespace()
            .map(|u| mck_remote::parse_tier(u).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?,
        ..Default::default()
    };
    let store = Store::open(&settings).map_err(|e| e.to_string())?;
    Ok(Tiered::open(store, &remote))
}

/// A value of [`value_bytes`] stored under a key named `name` through a writer cache on `url`.
struct Stored {
    work: tempfile::TempDir,
    key: CacheKey,
    value: Vec<u8>,
    writer: Tiered,
}

fn stored(url: &str, name: &str, mix: u32) -> Result<Stored, String> {
    let work = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let key =
        CacheKey::parse(&format!("{name}-{}", hex_of(mix).repeat(8))).map_err(|e| e.to_string())?;
    let value: Vec<u8> = (0..value_bytes() as u32)
        .map(|i| (i.wrapping_mul(mix) >> 24) as u8)
        .collect();
    let writer = tiered_at(&work.path().join("writer"), url, false)?;
    writer
        .put(&key, &value, &serde_json::json!({}))
        .map_err(|e| e.to_string())?;
    Ok(Stored {
        work,
        key,
        value,
        writer,
    })
}

/// Eight hex digits of `n` (eight of them make a digest).
fn hex_of(n: u32) -> String {
    format!("{n:08x}")
}

/// Prints a Markdown table of the labelled times (`rounds` says how they were taken): best and
/// median, and the best as a ratio of the first row's (`first` names it).
fn print_table<'a>(
    rounds: &str,
    first: &str,
    rows: impl Iterator<Item = (&'a str, &'a mut Vec<Duration>)>,
) {
    println!(
        "| {} value, {rounds} | wall | ÷ {first} (best) |",
        size_label()
    );
    println!("|---|---|---|");
    let mut first_best = None;
    for (label, t) in rows {
        let (best, median) = best_and_median(t);
        let first_best = *first_best.get_or_insert(best);
        println!(
            "| {label} | {best:.3} / {median:.3} ms | {:.2}x |",
            best / first_best
        );
    }
}

fn best_and_median(times: &mut [Duration]) -> (f64, f64) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    (ms(times[0]), ms(times[times.len() / 2]))
}

/// What one timing of a round does.
#[derive(Clone, Copy, PartialEq)]
enum Variant {
    RedisGetOpen,
    RedisGetNew,
    TierReadOpen,
    TierReadNew,
    Hit,
    HitSettled,
}

impl Variant {
    fn label(self) -> &'static str {
        match self {
            Variant::RedisGetOpen => "GET, `redis` crate, open connection (the floor)",
            Variant::RedisGetNew => "GET, `redis` crate, new connection",
            Variant::TierReadOpen => "the tier's one-GET read, open client",
            Variant::TierReadNew => "the tier's one-GET read, new client",
            Variant::Hit => "remote hit: the artefact in hand",
            Variant::HitSettled => "remote hit: and its back-fill settled",
        }
    }
}

fn main() -> Result<(), String> {
    let quick = std::env::args().any(|a| a == "--test" || a == "--list")
        || !std::env::args().any(|a| a == "--bench");
    let rounds: usize = match quick {
        true => 1,
        false => std::env::var("REMOTE_HIT_ROUNDS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(15),
    };
    use Variant::*;
    // `MCK_BENCH_REDIS_URL=off`: only the S3 store.
    let (redis_url, _server) = match std::env::var("MCK_BENCH_REDIS_URL").as_deref() {
        Ok("off") => (None, None),
        _ => start_server().map(|(url, server)| (Some(url), server))?,
    };
    if let Some(redis_url) = &redis_url {
        measure(
            redis_url,
            rounds,
            &[
                RedisGetOpen,
                RedisGetNew,
                TierReadOpen,
                TierReadNew,
                Hit,
                HitSettled,
            ],
        )?;
    }
    if let Ok(s3) = std::env::var("MCK_BENCH_S3_URL") {
        measure(&s3, rounds, &[TierReadOpen, TierReadNew, Hit, HitSettled])?;
        if let Some(redis_url) = &redis_url {
            chain(redis_url, &s3, rounds)?;
        }
    }
    Ok(())
}

/// The chain Redis → S3 on a host whose Redis prefix starts empty each round: the first hit
/// comes from S3 (and back-fills Redis and the local cache), the host's second hit is local,
/// another host's first hit stops at Redis; against a plain local hit of the same entry.
fn chain(redis_url: &str, s3: &str, rounds: usize) -> Result<(), String> {
    let Stored {
        work,
        key,
        value,
        writer,
    } = stored(s3, "jit_chain", 2_246_822_519)?;
    let labels = [
        "local hit (the writer's own cache)",
        "chain, first hit: from S3",
        "chain, the same host's second hit: local",
        "chain, another host's first hit: from Redis",
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); labels.len()];
    let served = |lookup: Lookup| match lookup {
        Lookup::Hit(a) if a.bytes[..] == value[..] => Ok(()),
        other => Err(format!("expected a hit of the value, got {other:?}")),
    };
    let timed = |slot: &mut Vec<Duration>, tiered: &Tiered| -> Result<(), String> {
        let start = Instant::now();
        let lookup = tiered.get(&key).map_err(|e| e.to_string())?;
        slot.push(start.elapsed());
        served(lookup)
    };
    for round in 0..rounds {
        let chain = format!(
            "{redis_url}/bench-chain-{}-{round} {s3}",
            std::process::id()
        );
        timed(&mut times[0], &writer)?;
        let host = tiered_at(&work.path().join(format!("host-{round}")), &chain, true)?;
        timed(&mut times[1], &host)?;
        host.settle();
        timed(&mut times[2], &host)?;
        let other = tiered_at(&work.path().join(format!("other-{round}")), &chain, true)?;
        timed(&mut times[3], &other)?;
    }
    println!(
        "\n{} → {}\n",
        mck_remote::redact(redis_url),
        mck_remote::redact(s3)
    );
    print_table(
        &format!("best / median of {rounds}"),
        "the local hit",
        labels.into_iter().zip(&mut times),
    );
    Ok(())
}

/// Times `variants` on the remote at `url`, interleaved, and prints a table (ratios against the
/// first variant's best).
fn measure(url: &str, rounds: usize, variants: &[Variant]) -> Result<(), String> {
    let Stored {
        work,
        key,
        value,
        writer,
    } = stored(url, "jit_bench", 2_654_435_761)?;
    let remote = writer.remotes().first().ok_or("no remote tier")?;
    let path = remote.entry_path(key.digest());
    let redis_client = || redis::Client::open(url).and_then(|c| c.get_connection());
    let mut open_connection = match variants.contains(&Variant::RedisGetOpen) {
        true => Some(redis_client().map_err(|e| format!("redis client: {e}"))?),
        false => None,
    };
    let redis_get = |c: &mut redis::Connection| {
        redis::cmd("GET")
            .arg(&path)
            .query::<Vec<u8>>(c)
            .map(|v| v.len())
            .map_err(|e| format!("GET {path}: {e}"))
    };

    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    for round in 0..rounds {
        for (which, (&variant, slot)) in variants.iter().zip(times.iter_mut()).enumerate() {
            let local = work.path().join(format!("local-{round}-{which}"));
            let reader = match variant {
                Variant::RedisGetOpen | Variant::RedisGetNew | Variant::TierReadOpen => None,
                _ => Some(tiered_at(&local, url, true)?),
            };
            let mut served = None;
            let start = Instant::now();
            let bytes = match (variant, &reader, &mut open_connection) {
                (Variant::RedisGetOpen, _, Some(c)) => redis_get(c)?,
                (Variant::RedisGetNew, _, _) => {
                    redis_get(&mut redis_client().map_err(|e| format!("redis client: {e}"))?)?
                }
                (Variant::TierReadOpen, _, _) => {
                    tier_read(remote, &key).map_err(|e| format!("open: {e}"))?
                }
                (Variant::TierReadNew, Some(reader), _) => {
                    tier_read(reader.remotes().first().ok_or("no remote tier")?, &key)?
                }
                (_, Some(reader), _) => match reader
                    .get(&key)
                    .map_err(|e| format!("{}: {e}", variant.label()))?
                {
                    Lookup::Hit(a) => {
                        if variant == Variant::HitSettled {
                            reader.settle();
                        }
                        let len = a.bytes.len();
                        served = Some(a.bytes);
                        len
                    }
                    other => return Err(format!("expected a remote hit, got {other:?}")),
                },
                _ => unreachable!("every variant has what it reads with"),
            };
            slot.push(start.elapsed());
            if served.is_some_and(|b| b[..] != value[..]) {
                return Err("the remote hit served other bytes".to_owned());
            }
            std::hint::black_box(bytes);
        }
    }
    println!("\n{}\n", mck_remote::redact(url));
    print_table(
        &format!("best / median of {rounds} interleaved"),
        "the first row",
        variants.iter().map(|v| v.label()).zip(&mut times),
    );
    Ok(())
}

/// One plain read of `key`'s value through the tier's own client.
fn tier_read(remote: &mck_remote::Remote, key: &CacheKey) -> Result<usize, String> {
    Ok(remote
        .get(key.digest())
        .map_err(|e| e.to_string())?
        .ok_or("the remote lost the value")?
        .len())
}
