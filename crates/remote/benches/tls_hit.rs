//! A remote hit through `rediss://` against the same hit through plain `redis://`, on one
//! `redis-server` that listens on both (a CA and a server certificate made by openssl for the
//! run), interleaved round by round: each round a fresh cache directory (so every lookup goes to
//! the server) and a fresh process-level client (so every hit pays its connection, and TLS its
//! handshake), timed to the artefact in hand. Best and median of N rounds, and their ratio.
//!
//! Run: `cargo bench -p mck-remote --bench tls_hit` (needs `redis-server` and `openssl` on
//! PATH; `TLS_HIT_ROUNDS`, default 21; `REMOTE_HIT_BYTES`, the value's size, default 4 KiB: a
//! small value shows what the handshake adds). `cargo test --benches` runs one round.

mod support;

use std::path::Path;
use std::process::Command;

use mck_remote::Credentials;
use mck_store::CacheKey;
use support::{RedisChild, free_port, hit, print_pair};

/// The server and its files (certificates), gone on drop.
struct Server {
    redis: RedisChild,
    plain: u16,
    tls: u16,
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
    let (plain_port, tls_port) = (plain.to_string(), tls.to_string());
    let (cert, key, ca) = (file("server.pem"), file("server.key"), file("ca.pem"));
    let args = [
        "--port",
        &plain_port,
        "--tls-port",
        &tls_port,
        "--tls-cert-file",
        &cert,
        "--tls-key-file",
        &key,
        "--tls-ca-cert-file",
        &ca,
        "--tls-auth-clients",
        "no",
    ];
    let redis = RedisChild::start_in(dir, &args, tls)?;
    Ok(Server { redis, plain, tls })
}

fn main() -> Result<(), String> {
    let rounds = support::rounds("TLS_HIT_ROUNDS", 21);
    let len: usize = std::env::var("REMOTE_HIT_BYTES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4096);
    let server = start()?;
    let credentials = Credentials {
        ca_file: Some(server.redis.dir.path().join("ca.pem")),
        ..Credentials::default()
    };
    let plain = format!("redis://127.0.0.1:{}/0/bench", server.plain);
    let tls = format!("rediss://127.0.0.1:{}/0/bench", server.tls);
    let key =
        CacheKey::parse(&format!("jit_tls-{}", "5e".repeat(32))).map_err(|e| e.to_string())?;
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    support::cache(&work.path().join("writer"), &plain, &credentials)?
        .put(&key, &support::value(len), &serde_json::json!({}))
        .map_err(|e| e.to_string())?;
    let (mut over_plain, mut over_tls) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        over_plain.push(hit(work.path(), &plain, &credentials, &key, len)?);
        over_tls.push(hit(work.path(), &tls, &credentials, &key, len)?);
    }
    println!("remote hit of a {len}-byte value, {rounds} interleaved rounds, a new client each");
    print_pair(("redis://", &mut over_plain), ("rediss://", &mut over_tls));
    Ok(())
}
