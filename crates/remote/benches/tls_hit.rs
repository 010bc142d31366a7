//! A remote hit through `rediss://` against the same hit through plain `redis://`, on one
//! `redis-server` that listens on both (a CA and a server certificate made by openssl for the
//! run), interleaved round by round: each round a fresh cache directory (so every lookup goes to
//! the server) and a fresh process-level client (so every hit pays its connection, and TLS its
//! handshake), timed to the artefact in hand. Best and median of N rounds, and their ratio.
//!
//! Run: `cargo bench -p mck-remote --bench tls_hit` (needs `redis-server` and `openssl` on
//! PATH; `TLS_HIT_ROUNDS`, default 21; `REMOTE_HIT_BYTES`, the value's size, default 4 KiB: a
//! small value shows what the handshake adds). `cargo test --benches` runs one round.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mck_remote::{Credentials, RemoteSettings, Tiered};
use mck_store::{CacheKey, Lookup, Settings, Store};

/// The processes and files of the run, gone on drop.
struct Server {
    child: Child,
    dir: tempfile::TempDir,
    plain: u16,
    tls: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free port: {e}"))
}

fn openssl(dir: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run openssl: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("openssl {args:?}: {out:?}"))
    }
}

fn start() -> Result<Server, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let ec = "ec_paramgen_curve:prime256v1";
    openssl(
        dir.path(),
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            ec,
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=bench ca",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ],
    )?;
    openssl(
        dir.path(),
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            ec,
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
    )?;
    std::fs::write(dir.path().join("san.ext"), "subjectAltName=IP:127.0.0.1\n")
        .map_err(|e| e.to_string())?;
    openssl(
        dir.path(),
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "san.ext",
            "-out",
            "server.pem",
        ],
    )?;
    let (plain, tls) = (free_port()?, free_port()?);
    let file = |name: &str| dir.path().join(name).display().to_string();
    let child = Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--port", &plain.to_string()])
        .args([
            "--tls-port",
            &tls.to_string(),
            "--tls-cert-file",
            &file("server.pem"),
        ])
        .args([
            "--tls-key-file",
            &file("server.key"),
            "--tls-ca-cert-file",
            &file("ca.pem"),
        ])
        .args([
            "--tls-auth-clients",
            "no",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
        ])
        .arg(dir.path())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start redis-server: {e}"))?;
    let server = Server {
        child,
        dir,
        plain,
        tls,
    };
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", tls)).is_ok() {
            return Ok(server);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err("redis-server did not listen".to_owned())
}

/// A cache at `dir` with the one tier `url`, trusting the run's CA.
fn cache(dir: &Path, url: &str, ca: &Path) -> Result<Tiered, String> {
    let settings = Settings {
        cache_dir: dir.to_owned(),
        fsync: false,
        ..Settings::default()
    };
    let remote = RemoteSettings {
        tiers: vec![mck_remote::parse_tier(url).map_err(|e| e.to_string())?],
        credentials: Credentials {
            ca_file: Some(ca.to_owned()),
            ..Credentials::default()
        },
        ..RemoteSettings::default()
    };
    let store = Store::open(&settings).map_err(|e| e.to_string())?;
    Ok(Tiered::open(store, &remote))
}

/// One hit on a fresh directory: the time to the artefact in hand.
fn hit(work: &Path, url: &str, ca: &Path, key: &CacheKey, len: usize) -> Result<Duration, String> {
    let dir = tempfile::tempdir_in(work).map_err(|e| e.to_string())?;
    let tiered = cache(dir.path(), url, ca)?;
    let start = Instant::now();
    let found = tiered.get(key).map_err(|e| e.to_string())?;
    let took = start.elapsed();
    match found {
        Lookup::Hit(a) if a.bytes.len() == len => Ok(took),
        other => Err(format!("{url}: expected a hit, got {other:?}")),
    }
}

fn best_and_median(times: &mut [Duration]) -> (f64, f64) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    (ms(times[0]), ms(times[times.len() / 2]))
}

fn main() -> Result<(), String> {
    let rounds: usize = if std::env::args().any(|a| a == "--bench") {
        std::env::var("TLS_HIT_ROUNDS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(21)
    } else {
        1
    };
    let len: usize = std::env::var("REMOTE_HIT_BYTES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4096);
    let server = start()?;
    let ca = server.dir.path().join("ca.pem");
    let plain = format!("redis://127.0.0.1:{}/0/bench", server.plain);
    let tls = format!("rediss://127.0.0.1:{}/0/bench", server.tls);
    let key =
        CacheKey::parse(&format!("jit_tls-{}", "5e".repeat(32))).map_err(|e| e.to_string())?;
    let value: Vec<u8> = (0..len as u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    cache(&work.path().join("writer"), &plain, &ca)?
        .put(&key, &value, &serde_json::json!({}))
        .map_err(|e| e.to_string())?;
    let (mut over_plain, mut over_tls) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        over_plain.push(hit(work.path(), &plain, &ca, &key, len)?);
        over_tls.push(hit(work.path(), &tls, &ca, &key, len)?);
    }
    let (plain_best, plain_median) = best_and_median(&mut over_plain);
    let (tls_best, tls_median) = best_and_median(&mut over_tls);
    println!("remote hit of a {len}-byte value, {rounds} interleaved rounds, a new client each");
    println!("| tier | best (ms) | median (ms) |");
    println!("|---|---|---|");
    println!("| redis:// | {plain_best:.3} | {plain_median:.3} |");
    println!("| rediss:// | {tls_best:.3} | {tls_median:.3} |");
    println!(
        "| rediss / redis | {:.2}x | {:.2}x |",
        tls_best / plain_best,
        tls_median / plain_median
    );
    Ok(())
}
