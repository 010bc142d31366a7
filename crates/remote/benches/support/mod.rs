//! What the remote benchmarks share: a `redis-server` of their own, a cache on a tier, one hit
//! timed on a fresh directory, and best/median of the rounds. (A folder, not a file, so cargo
//! does not take it for a benchmark.)
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mck_remote::{Credentials, RemoteSettings, Tiered};
use mck_store::{CacheKey, Lookup, Settings, Store};

/// A `redis-server` started with `args` in a directory of its own; killed on drop.
pub struct RedisChild {
    child: Child,
    pub dir: tempfile::TempDir,
}

impl RedisChild {
    /// Starts it (no persistence; `args` name its port(s)) and waits until `port` answers.
    pub fn start(args: &[&str], port: u16) -> Result<RedisChild, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
        Self::start_in(dir, args, port)
    }

    /// As [`RedisChild::start`], in `dir` (which may hold its certificates).
    pub fn start_in(dir: tempfile::TempDir, args: &[&str], port: u16) -> Result<Self, String> {
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(args)
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start redis-server: {e}"))?;
        let server = RedisChild { child, dir };
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(server);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!("redis-server did not listen on port {port}"))
    }
}

impl Drop for RedisChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free port: {e}"))
}

/// A cache at `dir` with the one tier `url`.
pub fn cache(dir: &Path, url: &str, credentials: &Credentials) -> Result<Tiered, String> {
    let settings = Settings {
        cache_dir: dir.to_owned(),
        fsync: false,
        ..Settings::default()
    };
    let remote = RemoteSettings {
        tiers: vec![mck_remote::parse_tier(url).map_err(|e| e.to_string())?],
        credentials: credentials.clone(),
        ..RemoteSettings::default()
    };
    let store = Store::open(&settings).map_err(|e| e.to_string())?;
    Ok(Tiered::open(store, &remote))
}

/// One hit on a fresh directory under `work` (so the lookup goes to the server, through a
/// client of its own): the time to the artefact in hand.
pub fn hit(
    work: &Path,
    url: &str,
    credentials: &Credentials,
    key: &CacheKey,
    len: usize,
) -> Result<Duration, String> {
    let dir = tempfile::tempdir_in(work).map_err(|e| e.to_string())?;
    let tiered = cache(dir.path(), url, credentials)?;
    let start = Instant::now();
    let found = tiered.get(key).map_err(|e| e.to_string())?;
    let took = start.elapsed();
    match found {
        Lookup::Hit(a) if a.bytes.len() == len => Ok(took),
        other => Err(format!("{url}: expected a hit, got {other:?}")),
    }
}

/// `len` bytes that do not compress.
pub fn value(len: usize) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect()
}

/// Rounds to time: `var` (default `default`) under `cargo bench`, one under `cargo test`.
pub fn rounds(var: &str, default: usize) -> usize {
    if std::env::args().any(|a| a == "--bench") {
        std::env::var(var)
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(default)
    } else {
        1
    }
}

/// Best and median, in milliseconds.
pub fn best_and_median(times: &mut [Duration]) -> (f64, f64) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    (ms(times[0]), ms(times[times.len() / 2]))
}

/// Prints the table of two interleaved series, `base` first, and their ratio.
pub fn print_pair(base: (&str, &mut [Duration]), other: (&str, &mut [Duration])) {
    let (base_best, base_median) = best_and_median(base.1);
    let (best, median) = best_and_median(other.1);
    println!("| tier | best (ms) | median (ms) |");
    println!("|---|---|---|");
    println!("| {} | {base_best:.3} | {base_median:.3} |", base.0);
    println!("| {} | {best:.3} | {median:.3} |", other.0);
    println!(
        "| {} / {} | {:.2}x | {:.2}x |",
        other.0,
        base.0,
        best / base_best,
        median / base_median
    );
}
