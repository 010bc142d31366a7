//! The remote tier with real processes and a real Redis: cache directories standing for hosts
//! share one server through `exec --remote`. A host reuses what another compiled; a remote that
//! dies, hangs, or holds junk never fails a compile nor yields wrong bytes; a read-only client
//! never writes; racing hosts compile a key once.
//!
//! See `remote/redis.rs` for where the server comes from (never a silent pass).

use crate::common::{bin, failure, read, success, success_at_info, success_stderr};
use crate::team::{Team, spawn_slow, timed_success};
use crate::{common, redis};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

#[test]
fn a_second_host_gets_a_hit_without_compiling() {
    let (target, team) = redis_or_skip!(Team::shared("second_host_hit"));
    success_stderr(&mut team.exec("a", "a.mlir"));
    assert_eq!(team.runs(), 1);
    let entries = target.entry_keys();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let ttl: i64 = target.cli(&["ttl", &entries[0]]).parse().expect("ttl");
    assert!(
        (29 * 86_400..=30 * 86_400).contains(&ttl),
        "remote expiry is the cache TTL (30 days), got {ttl}s"
    );
    assert!(
        target.keys().iter().all(|k| !k.contains("/leases/")),
        "the lease is released: {:?}",
        target.keys()
    );

    let stderr = success_at_info(&mut team.exec("b", "a.mlir"));
    assert!(
        stderr.contains("Using a cached artefact from redis://"),
        "{stderr}"
    );
    assert_eq!(
        team.runs(),
        1,
        "host b compiled instead of using host a's result"
    );
    team.assert_same_output("a", "b", "a.mlir");
    let b = team.stats("b");
    common::assert_counters(&b, ["remote_hits", "remote_writes"], [1, 0]);
    assert_eq!(b["entries"], 1, "the remote hit is back-filled locally");
    let a = team.stats("a");
    common::assert_counters(&a, ["remote_misses", "remote_writes"], [1, 1]);
    assert_eq!(a["remote_fallbacks"], 0);

    // Back-filled: host b hits locally now, even with the remote gone.
    std::fs::remove_file(team.out("b", "a.mlir")).expect("remove");
    let mut local_only = team.exec("b", "a.mlir");
    local_only.env("MLIR_CACHE_KEY_FLAGS", "--remote=redis://127.0.0.1:1/0");
    success_stderr(&mut local_only);
    assert_eq!(team.runs(), 1);
    team.assert_same_output("a", "b", "a.mlir");
}

#[test]
fn failures_are_shared_and_replayed_without_compiling() {
    let (_target, team) = redis_or_skip!(Team::shared("shared_failure"));
    let first = team
        .exec("a", "a.mlir")
        .env("FAIL", "1")
        .output()
        .expect("run");
    assert_eq!(first.status.code(), Some(3));
    let replay = team.exec("b", "a.mlir").output().expect("run");
    assert_eq!(replay.status.code(), Some(3), "{}", common::stderr(&replay));
    common::assert_contains(
        &common::stderr(&replay),
        &["error: cannot compile", "replaying the remembered failure"],
    );
    assert_eq!(team.runs(), 1);
    // --retry_failed_compilation compiles again, and the success replaces the failure remotely.
    success_stderr(
        team.exec("c", "a.mlir")
            .env("MLIR_CACHE_KEY_FLAGS", "--retry_failed_compilation"),
    );
    assert_eq!(team.runs(), 2);
    success_stderr(&mut team.exec("d", "a.mlir"));
    assert_eq!(team.runs(), 2, "host d uses host c's success");
}

#[test]
fn a_killed_remote_never_fails_a_compile_and_is_retried_later() {
    let mut target = redis_or_skip!(redis::private("killed_remote"));
    let team = Team::new(target.url());
    // Long enough for the steps below to run inside it on a loaded machine; the wait for it
    // to pass reads the mark's own time.
    let flags = "--remote_retry_after=10";
    success_stderr(team.exec("a", "a.mlir").env("MLIR_CACHE_KEY_FLAGS", flags));
    success_stderr(team.exec("b", "a.mlir").env("MLIR_CACHE_KEY_FLAGS", flags));
    assert_eq!(team.runs(), 1);

    // Killed mid-run: while host a compiles (holding the lease), the server dies.
    let child = spawn_slow(
        team.exec("a", "b.mlir").env("MLIR_CACHE_KEY_FLAGS", flags),
        "1",
    );
    std::thread::sleep(Duration::from_millis(400));
    target.server().kill();
    let a = child.wait_with_output().expect("wait");
    assert!(a.status.success(), "{}", common::stderr(&a));
    common::assert_contains(
        &common::stderr(&a),
        &["remote cache unavailable, using the local cache only"],
    );
    assert_eq!(
        common::stderr(&a)
            .matches("remote cache unavailable")
            .count(),
        1,
        "warned once"
    );
    assert!(read(&team.out("a", "b.mlir")).ends_with(b"compiled\n"));

    // Host b, remote down: compiles locally, quickly (a refused connection is no timeout).
    let (_, took) = timed_success(team.exec("b", "b.mlir").env("MLIR_CACHE_KEY_FLAGS", flags));
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert_eq!(team.runs(), 3);
    // Local hits keep working without the remote.
    success_stderr(team.exec("a", "a.mlir").env("MLIR_CACHE_KEY_FLAGS", flags));
    assert_eq!(team.runs(), 3);
    // The next process on host a skips the remote at once (breaker recorded in the cache dir).
    let c = team
        .exec("a", "c.mlir")
        .env("MLIR_CACHE_KEY_FLAGS", flags)
        .output()
        .expect("run");
    assert!(c.status.success());
    assert!(
        common::stderr(&c).contains("is marked down until"),
        "{}",
        common::stderr(&c)
    );
    assert_eq!(team.runs(), 4);

    let sa = team.stats("a");
    assert!(sa["remote_errors"].as_u64() >= Some(1), "{sa}");
    assert!(sa["remote_skipped"].as_u64() >= Some(1), "{sa}");
    assert_eq!(
        sa["remote_fallbacks"].as_u64(),
        Some(sa["remote_errors"].as_u64().unwrap() + sa["remote_skipped"].as_u64().unwrap())
    );
    let down_until_ms = sa["remote_down_until_ms"]
        .as_i64()
        .unwrap_or_else(|| panic!("no mark: {sa}"));
    let text = team.stats_text("a");
    assert!(text.contains("remote down until"), "{text}");
    assert!(text.contains("remote fallbacks"), "{text}");
    let sb = team.stats("b");
    assert!(sb["remote_fallbacks"].as_u64() >= Some(1), "{sb}");

    // Back up (empty) and past retry_after: the remote is used again and the mark is gone.
    target.server().restart();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    std::thread::sleep(Duration::from_millis(
        (down_until_ms - now_ms).max(0) as u64 + 200,
    ));
    success_stderr(team.exec("a", "d.mlir").env("MLIR_CACHE_KEY_FLAGS", flags));
    assert_eq!(team.runs(), 5);
    assert_eq!(target.entry_keys().len(), 1, "{:?}", target.keys());
    let sa = team.stats("a");
    assert!(sa["remote_down_until_ms"].is_null(), "{sa}");
    success_stderr(team.exec("b", "d.mlir").env("MLIR_CACHE_KEY_FLAGS", flags));
    assert_eq!(
        team.runs(),
        5,
        "host b hits what host a wrote after the restart"
    );
}

#[test]
fn corrupt_remote_values_are_counted_and_never_used() {
    let (target, team) = redis_or_skip!(Team::shared("corrupt_value"));
    success_stderr(&mut team.exec("a", "a.mlir"));
    success_stderr(&mut team.exec("a", "c.mlir"));
    let good = read(&team.out("a", "a.mlir"));
    // The remote holds the entry files' exact bytes: at first, host a's local files.
    let entry_file_of = |host: &str, key: &str| {
        let digest = key.rsplit('/').next().expect("digest");
        read(
            &team
                .cache(host)
                .join("v1/entries")
                .join(&digest[..2])
                .join(digest),
        )
    };
    let entry_file = |key: &str| entry_file_of("a", key);
    let keys = target.entry_keys();
    assert_eq!(keys.len(), 2);
    let a_key = {
        let mut found = None;
        for k in &keys {
            assert_eq!(
                target.cli(&["strlen", k]).parse::<usize>().ok(),
                Some(entry_file(k).len())
            );
            let file = entry_file(k);
            if file.windows(b"jit_mlp-".len()).any(|w| w == b"jit_mlp-") {
                found = Some(k.clone());
            }
        }
        found.expect("the entry of a.mlir")
    };
    let c_key = keys
        .iter()
        .find(|k| **k != a_key)
        .expect("the other entry")
        .clone();
    let valid = entry_file(&a_key);
    let mut flipped = valid.clone();
    let last = flipped.len() - 3;
    flipped[last] ^= 0x20;
    let junk: Vec<(&str, Vec<u8>)> = vec![
        ("junk", b"junk".to_vec()),
        ("truncated", valid[..valid.len() / 2].to_vec()),
        ("flipped", flipped),
        ("another key's entry", entry_file(&c_key)),
    ];
    for (i, (what, value)) in junk.iter().enumerate() {
        target.set_bytes(&a_key, value);
        let host = format!("fresh{i}");
        let stderr = success_stderr(&mut team.exec(&host, "a.mlir"));
        assert!(stderr.contains("is corrupt"), "{what}: {stderr}");
        assert_eq!(read(&team.out(&host, "a.mlir")), good, "{what}");
        let s = team.stats(&host);
        assert_eq!(s["remote_corrupt"], 1, "{what}: {s}");
        assert_eq!(s["remote_hits"], 0, "{what}: {s}");
        assert_eq!(
            team.runs(),
            3 + i,
            "{what}: host {host} compiled instead of using it"
        );
    }
    // The last host that compiled rewrote a good value, its own entry (whose recorded compile
    // time may differ from host a's, in length too): the next host hits it.
    let last_host = format!("fresh{}", junk.len() - 1);
    assert_eq!(
        target.cli(&["strlen", &a_key]).parse::<usize>().ok(),
        Some(entry_file_of(&last_host, &a_key).len())
    );
    success_stderr(&mut team.exec("z", "a.mlir"));
    assert_eq!(team.runs(), 2 + junk.len());
    // Host a keeps using its local copy whatever the remote holds.
    target.set_bytes(&a_key, b"junk again");
    success_stderr(&mut team.exec("a", "a.mlir"));
    assert_eq!(team.runs(), 2 + junk.len());
    assert_eq!(team.stats("a")["remote_corrupt"], 0);
}

/// A value of several parts (Redis reads 1 MiB `GETRANGE`s, checked as they arrive) comes back
/// whole, and its back-fill is in the local cache when the command returns; a byte flipped in
/// any part but the first is still refused.
#[test]
fn an_artefact_of_several_parts_comes_back_whole_and_a_flip_in_a_later_part_is_refused() {
    let (target, team) = redis_or_skip!(Team::shared("several_parts"));
    let bytes: Vec<u8> = (0..(3 << 20) + (1 << 19) + 11)
        .map(|i: u32| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let file = team.path("big.bin");
    std::fs::write(&file, &bytes).expect("write");
    let key = format!("big-{}", "cd".repeat(32));
    success(team.mck("a", &["cache", "put", &key]).arg(&file));
    let out = team.path("big.out");
    let output = format!("--output={}", out.display());
    let stderr = success_at_info(&mut team.mck("b", &["cache", "get", &key, &output]));
    assert!(read(&out) == bytes, "the artefact came back changed");
    assert!(
        stderr.contains("Using a cached artefact from redis://")
            && !stderr.contains("reading it whole"),
        "the parts did not verify as they came: {stderr}"
    );
    let b = team.stats("b");
    common::assert_counters(&b, ["remote_hits", "entries"], [1, 1]);

    let entry = target.entry_keys().pop().expect("the entry");
    let len: usize = target.cli(&["strlen", &entry]).parse().expect("strlen");
    let at = (len - 5).to_string();
    let was = target.cli(&["getrange", &entry, &at, &at]);
    target.cli(&["setrange", &entry, &at, if was == "Z" { "Y" } else { "Z" }]);
    let output = format!("--output={}", team.path("c.out").display());
    let missed = team.mck("c", &["cache", "get", &key, &output]).output();
    let missed = missed.expect("run cache get");
    assert!(
        !missed.status.success(),
        "a damaged value was served: {missed:?}"
    );
    let c = team.stats("c");
    common::assert_counters(&c, ["remote_corrupt", "entries"], [1, 0]);
}

/// Redis values a byte short of one part, of exactly one part, and a byte over it (the first
/// part comes back with the length, the rest after it): each comes back whole, verified as
/// it arrives.
#[test]
fn values_at_the_edge_of_one_part_come_back_whole() {
    const PART: usize = mck_remote::PART_BYTES;
    let (target, team) = redis_or_skip!(Team::shared("part_edges"));
    let artefact = |len: usize, seed: u32| -> Vec<u8> {
        (0..len as u32)
            .map(|i| (i.wrapping_add(seed).wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect()
    };
    // What an entry adds to its artefact, from one stored first (of about the same size: the
    // entry's length fields are as long).
    let probe = team.path("probe.bin");
    std::fs::write(&probe, artefact(PART - 500, 0)).expect("write");
    success(
        team.mck(
            "w",
            &["cache", "put", &format!("probe-{}", "ab".repeat(32))],
        )
        .arg(&probe),
    );
    let stored = |target: &redis::Target| -> Vec<usize> {
        let mut lens: Vec<usize> = target
            .entry_keys()
            .iter()
            .map(|k| target.cli(&["strlen", k]).parse().expect("strlen"))
            .collect();
        lens.sort_unstable();
        lens
    };
    let overhead = stored(&target)[0] - (PART - 500);
    for (i, entry_len) in [PART - 1, PART, PART + 1].into_iter().enumerate() {
        let bytes = artefact(entry_len - overhead, i as u32 + 1);
        let file = team.path(&format!("edge{i}.bin"));
        std::fs::write(&file, &bytes).expect("write");
        let key = format!("edge{i}-{}", "ef".repeat(32));
        success(team.mck("w", &["cache", "put", &key]).arg(&file));
        assert!(
            stored(&target).contains(&entry_len),
            "no entry of {entry_len} bytes: {:?}",
            stored(&target)
        );
        let out = team.path(&format!("edge{i}.out"));
        let stderr = success_at_info(
            team.mck(&format!("r{i}"), &["cache", "get", &key])
                .arg(format!("--output={}", out.display())),
        );
        assert!(
            read(&out) == bytes,
            "the {entry_len}-byte value came back changed"
        );
        assert!(
            stderr.contains("Using a cached artefact from redis://")
                && !stderr.contains("reading it whole"),
            "the {entry_len}-byte value did not verify as it came: {stderr}"
        );
    }
}

#[test]
fn a_read_only_client_never_writes() {
    let (target, team) = redis_or_skip!(Team::shared("read_only"));
    // The command-line option and the variable's flag.
    success_stderr(&mut team.exec_with("r", "a.mlir", &["--remote-read-only"]));
    success_stderr(
        team.exec("r", "b.mlir")
            .env("MLIR_CACHE_KEY_FLAGS", "--remote_read_only"),
    );
    assert_eq!(team.runs(), 2);
    assert_eq!(
        target.keys(),
        Vec::<String>::new(),
        "a read-only client wrote"
    );
    let s = team.stats("r");
    assert_eq!(s["remote_writes"], 0);
    assert_eq!(s["remote_misses"], 2);

    // A writer shares a.mlir; a fresh read-only host reads it (and keeps it locally).
    success_stderr(&mut team.exec("w", "a.mlir"));
    assert_eq!(team.runs(), 3);
    let before = target.keys();
    assert_eq!(before.len(), 1, "{before:?}");
    success_stderr(
        team.exec("r2", "a.mlir")
            .env("MLIR_CACHE_KEY_FLAGS", "--remote_read_only"),
    );
    assert_eq!(team.runs(), 3, "the read-only host did not use the remote");
    let failing = team
        .exec("r2", "c.mlir")
        .env("FAIL", "1")
        .env("MLIR_CACHE_KEY_FLAGS", "--remote_read_only")
        .output()
        .expect("run");
    assert_eq!(failing.status.code(), Some(3));
    assert_eq!(target.keys(), before, "a read-only client wrote");
    let ttl_before: i64 = target.cli(&["pttl", &before[0]]).parse().expect("pttl");
    assert!(ttl_before > 0);
    let s = team.stats("r2");
    common::assert_counters(&s, ["remote_hits", "remote_writes"], [1, 0]);
}

#[test]
fn racing_hosts_compile_a_key_once() {
    let (target, team) = redis_or_skip!(Team::shared("racing_hosts"));
    let hosts = ["h1", "h2", "h3"];
    let outputs = team.race(&hosts, "a.mlir", "2");
    assert_eq!(team.runs(), 1, "three hosts, one compile");
    let waited = outputs
        .iter()
        .filter(|o| common::stderr(o).contains("Blocking waiting for"))
        .count();
    assert_eq!(waited, 2, "the other hosts waited for the lease holder");
    let first = read(&team.out("h1", "a.mlir"));
    for h in hosts {
        assert_eq!(read(&team.out(h, "a.mlir")), first);
    }
    assert!(target.keys().iter().all(|k| !k.contains("/leases/")));
}

#[test]
fn a_lease_is_renewed_while_a_long_compile_runs() {
    let (_target, team) = redis_or_skip!(Team::shared("lease_renewal"));
    // A one-second lease and a three-second compile: only renewal keeps host b waiting.
    let flags = "--remote_lease=1";
    let holder = spawn_slow(
        team.exec("a", "a.mlir").env("MLIR_CACHE_KEY_FLAGS", flags),
        "3",
    );
    std::thread::sleep(Duration::from_millis(500));
    let stderr = success_stderr(team.exec("b", "a.mlir").env("MLIR_CACHE_KEY_FLAGS", flags));
    assert!(stderr.contains("Blocking waiting for"), "{stderr}");
    let holder = holder.wait_with_output().expect("wait");
    assert!(holder.status.success(), "{}", common::stderr(&holder));
    assert!(
        !common::stderr(&holder).contains("lost the compile lease"),
        "{}",
        common::stderr(&holder)
    );
    assert_eq!(
        team.runs(),
        1,
        "the lease expired while its holder compiled"
    );
    team.assert_same_output("a", "b", "a.mlir");
}

#[test]
fn a_dead_lease_holder_delays_but_never_blocks() {
    let (target, team) = redis_or_skip!(Team::shared("dead_holder"));
    // A holder that died: its lease expires by itself.
    success_stderr(&mut team.exec("a", "a.mlir")); // learn the key
    let entry = target.entry_keys().pop().expect("entry");
    let lease_of = |entry: &str| entry.replace("/entries-v1/", "/leases/");
    target.cli(&["del", &entry]);
    let lease = lease_of(&entry);
    assert_eq!(
        target.cli(&["set", &lease, "ghost:1:1", "px", "1500"]),
        "OK"
    );
    let t = Instant::now();
    let stderr = success_stderr(&mut team.exec("b", "a.mlir"));
    assert!(
        stderr.contains("Blocking waiting for ghost:1:1"),
        "{stderr}"
    );
    assert!(
        t.elapsed() >= Duration::from_millis(1200),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(team.runs(), 2);
    // A lease that never ends: wait --lock-timeout, then compile anyway.
    target.cli(&["del", &entry]);
    assert_eq!(target.cli(&["set", &lease, "stuck:1:1"]), "OK");
    let t = Instant::now();
    let stderr = success_stderr(&mut team.exec_with("c", "a.mlir", &["--lock-timeout", "1"]));
    assert!(stderr.contains("Gave up waiting for stuck:1:1"), "{stderr}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_eq!(team.runs(), 3);
    assert_eq!(
        target.cli(&["get", &lease]),
        "stuck:1:1",
        "someone else's lease is never deleted"
    );
}

/// A server that accepts connections and never answers; or answers junk.
fn fake_server(junk: Option<&'static [u8]>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().take(64) {
            let Ok(mut s) = stream else { continue };
            if let Some(bytes) = junk {
                let mut buf = [0u8; 512];
                let _ = s.read(&mut buf);
                let _ = s.write_all(bytes);
            }
            held.push(s);
        }
    });
    port
}

#[test]
fn a_silent_or_garbled_server_costs_one_timeout_per_retry_period() {
    for (name, junk) in [
        ("silent", None),
        (
            "garbled",
            Some(&b"HTTP/1.1 400 Bad Request\r\n\r\n\x00\xff"[..]),
        ),
    ] {
        let port = fake_server(junk);
        let team = Team::new(format!("redis://127.0.0.1:{port}/0"));
        let flags = "--remote_timeout=0.5";
        let (first, took) =
            timed_success(team.exec("a", "a.mlir").env("MLIR_CACHE_KEY_FLAGS", flags));
        assert!(took < Duration::from_secs(4), "{name}: took {took:?}");
        assert!(first.contains("remote cache unavailable"), "{name}");
        let (_, took) = timed_success(team.exec("a", "b.mlir").env("MLIR_CACHE_KEY_FLAGS", flags));
        assert!(
            took < Duration::from_millis(1500),
            "{name}: the second process paid the timeout again ({took:?})"
        );
        assert_eq!(team.runs(), 2, "{name}");
        let s = team.stats("a");
        assert_eq!(s["remote_errors"], 1, "{name}: {s}");
        assert!(s["remote_skipped"].as_u64() >= Some(2), "{name}: {s}");
        assert_eq!(s["remote_hits"], 0);
    }
}

#[test]
fn bad_remote_urls_are_usage_errors_naming_the_flag() {
    let team = Team::new("unused".to_owned());
    let stats = |flags: &str, cli: Option<&str>| {
        let mut c = bin();
        c.env("MLIR_CACHE_KEY_FLAGS", flags)
            .args(["cache", "stats", "--cache-dir"])
            .arg(team.cache("a"));
        if let Some(url) = cli {
            c.args(["--remote", url]);
        }
        c
    };
    let e = failure(
        &mut stats("--remote=redis://u:hunter2@h:1/nodb", None),
        common::EX_USAGE,
    );
    assert!(
        e.contains("MLIR_CACHE_KEY_FLAGS: --remote=redis://***@h:1/nodb"),
        "{e}"
    );
    assert!(e.contains("database number"), "{e}");
    assert!(!e.contains("hunter2"), "{e}");
    let e = failure(&mut stats("", Some("ftp://h/0")), common::EX_USAGE);
    assert!(e.contains("command line: --remote=ftp://h/0"), "{e}");
    assert!(e.contains("unsupported scheme"), "{e}");
    // Buckets are in the default build; a bucket URL must name its bucket.
    for url in ["s3:///prefix?region=x", "gcs://"] {
        let e = failure(&mut stats("", Some(url)), common::EX_USAGE);
        assert!(e.contains(&format!("command line: --remote={url}")), "{e}");
        assert!(e.contains("URL needs a bucket"), "{e}");
    }
    let e = failure(&mut stats("--remote_timeout=0", None), common::EX_USAGE);
    assert!(e.contains("--remote_timeout=0"), "{e}");
    // A good URL is shown, password hidden.
    let text = String::from_utf8(success(&mut stats(
        "--remote=redis://u:hunter2@127.0.0.1:1/3/team",
        None,
    )))
    .expect("utf-8");
    assert!(
        text.contains("remote              redis://u:***@127.0.0.1:1/3/team"),
        "{text}"
    );
}
