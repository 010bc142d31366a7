//! The bucket tiers with real processes and real servers: cache directories standing for hosts
//! share one Garage bucket (3 nodes, replication factor 3; `remote/garage.rs`) through `exec
//! --remote=s3://…` configured the AWS way; a node killed mid-run changes nothing; values
//! overwritten in the bucket are refused and counted, never served, and the shared secret's MAC
//! holds on S3 as on Redis; a failing bucket warns in one line. GCS: two cache directories share
//! an entry through gcp-storage-emulator (an emulator, started by `scripts/gcs-emulator.sh`).

use crate::{garage, redis};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use crate::common::{counter, read, success, success_at_info, success_stderr};
use crate::garage::Bucket;
use crate::gcs::Emulator;
use crate::team::Team;
use serde_json::Value;

/// Hosts sharing `bucket`, every command given the AWS variables.
struct S3Team {
    team: Team,
    bucket: Bucket,
}

impl S3Team {
    fn new(bucket: Bucket) -> S3Team {
        S3Team {
            team: Team::new(bucket.url()),
            bucket,
        }
    }

    fn exec(&self, host: &str, module: &str) -> Command {
        self.exec_with(host, module, &[])
    }

    fn exec_with(&self, host: &str, module: &str, options: &[&str]) -> Command {
        let mut c = self.team.exec_with(host, module, options);
        self.bucket.aws_env(&mut c);
        c
    }

    fn mck(&self, host: &str, args: &[&str]) -> Command {
        let mut c = self.team.mck(host, args);
        self.bucket.aws_env(&mut c);
        c
    }

    fn stats_with(&self, host: &str, options: &[&str]) -> Value {
        let mut args = vec!["cache", "stats", "--json"];
        args.extend_from_slice(options);
        serde_json::from_slice(&success(&mut self.mck(host, &args))).expect("stats json")
    }

    fn stats(&self, host: &str) -> Value {
        self.stats_with(host, &[])
    }

    /// The entry file host `host` holds for the object `key`.
    fn entry_file(&self, host: &str, key: &str) -> Vec<u8> {
        let digest = key.rsplit('/').next().expect("digest");
        read(
            &self
                .team
                .cache(host)
                .join("v1/entries")
                .join(&digest[..2])
                .join(digest),
        )
    }

    fn secret(&self, name: &str, text: &str) -> PathBuf {
        let path = self.team.path(name);
        std::fs::write(&path, text).expect("write secret");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        path
    }
}

#[test]
fn two_cache_dirs_sharing_a_bucket_hit_each_others_entries() {
    let (_cluster, bucket) = garage::shared("two_dirs_share");
    let t = S3Team::new(bucket);
    success_stderr(&mut t.exec("a", "a.mlir"));
    assert_eq!(t.team.runs(), 1);
    let keys = t.bucket.entry_keys();
    assert_eq!(keys.len(), 1, "{keys:?}");
    // The object is the entry file's exact bytes.
    assert_eq!(t.bucket.get(&keys[0]), Some(t.entry_file("a", &keys[0])));

    let stderr = success_at_info(&mut t.exec("b", "a.mlir"));
    assert!(
        stderr.contains("Using a cached artefact from s3://"),
        "{stderr}"
    );
    assert_eq!(
        t.team.runs(),
        1,
        "host b compiled instead of using a's entry"
    );
    t.team.assert_same_output("a", "b", "a.mlir");
    let b = t.stats("b");
    assert_eq!(
        (counter(&b, "remote_hits"), counter(&b, "remote_writes")),
        (1, 0)
    );
    assert_eq!(b["entries"], 1, "the remote hit is back-filled locally");

    // B's next hit is local: the remote is not asked (no second remote hit).
    success_stderr(&mut t.exec("b", "a.mlir"));
    assert_eq!(counter(&t.stats("b"), "remote_hits"), 1);
    assert_eq!(t.team.runs(), 1);

    // And the other way round.
    success_stderr(&mut t.exec("b", "c.mlir"));
    assert_eq!(t.team.runs(), 2);
    success_stderr(&mut t.exec("a", "c.mlir"));
    assert_eq!(
        t.team.runs(),
        2,
        "host a compiled c.mlir instead of using b's entry"
    );
    t.team.assert_same_output("a", "b", "c.mlir");
    let a = t.stats("a");
    assert_eq!(counter(&a, "remote_errors"), 0, "{a}");
    // S3 does not lease (docs/remote-and-trust.md), and the stats say so.
    assert!(a["lease_tier"].is_null(), "{a}");
    let text = String::from_utf8(success(&mut t.mck("a", &["cache", "stats"]))).expect("utf-8");
    assert!(
        text.contains("remote lease        none (no tier of this chain leases"),
        "{text}"
    );
}

/// Two buckets in one chain, one process: a miss in the first and a hit in the second, on the
/// same server. Each bucket once drove opendal's process-wide HTTP client from a runtime of its
/// own, and the second one's request waited on a pooled connection nobody drove until it
/// timed out (the tier was skipped and the module compiled again).
#[test]
fn a_chain_of_two_buckets_on_one_server_hits_in_the_second_and_backfills_the_first() {
    let (_cluster, bucket) = garage::shared("two_buckets_chain");
    let (first, second) = (
        format!("{}/first", bucket.url()),
        format!("{}/second", bucket.url()),
    );
    let mut t = S3Team::new(bucket);
    t.team.remote = second.clone();
    success_stderr(&mut t.exec("a", "a.mlir"));
    t.team.remote = format!("{first} {second}");
    let stderr = success_at_info(&mut t.exec("b", "a.mlir"));
    assert_eq!(t.team.runs(), 1, "host b compiled: {stderr}");
    assert!(!stderr.contains("no answer within"), "{stderr}");
    t.team.assert_same_output("a", "b", "a.mlir");
    let b = t.stats("b");
    let tier = |i: usize, name: &str| counter(&b["tiers"][i], name);
    assert_eq!((tier(0, "misses"), tier(0, "backfills")), (1, 1), "{b}");
    assert_eq!((tier(1, "hits"), tier(1, "errors")), (1, 0), "{b}");
}

#[test]
fn a_node_killed_mid_run_leaves_reads_and_writes_working() {
    let (cluster, bucket) = garage::private("node_killed", "127.0.0.1");
    let t = S3Team::new(bucket);
    success_stderr(&mut t.exec("a", "a.mlir"));
    // Node 3 (not the one serving the endpoint) dies: 2 of 3 replicas are a quorum.
    cluster.kill_node(3);
    // Requests to the dead node first wait out Garage's own RPC timeout: past the default 2 s.
    let slow = |mut c: Command| {
        c.env("MLIR_CACHE_KEY_FLAGS", "--remote_timeout=20");
        c
    };
    success_stderr(&mut slow(t.exec("b", "a.mlir")));
    assert_eq!(t.team.runs(), 1, "the read went on");
    success_stderr(&mut slow(t.exec("b", "c.mlir")));
    assert_eq!(t.team.runs(), 2);
    success_stderr(&mut slow(t.exec("c", "c.mlir")));
    assert_eq!(t.team.runs(), 2, "the write went on: host c hit b's entry");
    for host in ["a", "b", "c"] {
        let s = t.stats(host);
        assert_eq!(
            (counter(&s, "remote_errors"), counter(&s, "remote_skipped")),
            (0, 0),
            "{host}: {s}"
        );
    }
    assert_eq!(t.bucket.entry_keys().len(), 2);
}

#[test]
fn values_overwritten_in_the_bucket_are_refused_and_counted() {
    let (_cluster, bucket) = garage::shared("overwritten");
    let t = S3Team::new(bucket);
    success_stderr(&mut t.exec("a", "a.mlir"));
    success_stderr(&mut t.exec("a", "c.mlir"));
    let good = read(&t.team.out("a", "a.mlir"));
    let keys = t.bucket.entry_keys();
    assert_eq!(keys.len(), 2, "{keys:?}");
    let is_a = |k: &String| {
        let file = t.entry_file("a", k);
        file.windows(b"jit_mlp-".len()).any(|w| w == b"jit_mlp-")
    };
    let a_key = keys
        .iter()
        .find(|k| is_a(k))
        .expect("a.mlir's entry")
        .clone();
    let c_key = keys
        .iter()
        .find(|k| **k != a_key)
        .expect("c.mlir's entry")
        .clone();
    let valid = t.entry_file("a", &a_key);
    let mut flipped = valid.clone();
    let last = flipped.len() - 3;
    flipped[last] ^= 0x20;
    let junk = [
        ("flipped bytes", flipped),
        ("another key's valid entry", t.entry_file("a", &c_key)),
    ];
    for (i, (what, value)) in junk.iter().enumerate() {
        t.bucket.put(&a_key, value);
        let host = format!("fresh{i}");
        let stderr = success_stderr(&mut t.exec(&host, "a.mlir"));
        assert!(stderr.contains("is corrupt"), "{what}: {stderr}");
        assert_eq!(
            read(&t.team.out(&host, "a.mlir")),
            good,
            "{what}: wrong bytes served"
        );
        let s = t.stats(&host);
        assert_eq!(counter(&s, "remote_corrupt"), 1, "{what}: {s}");
        assert_eq!(counter(&s, "remote_hits"), 0, "{what}: {s}");
        assert_eq!(t.team.runs(), 3 + i, "{what}: not recompiled");
    }
    // The last host rewrote a good value: its own entry file.
    let last = format!("fresh{}", junk.len() - 1);
    assert_eq!(t.bucket.get(&a_key), Some(t.entry_file(&last, &a_key)));
    assert_ne!(
        t.bucket.get(&a_key),
        Some(valid.clone()),
        "a new compile, a new entry"
    );
}

#[test]
fn the_shared_secret_refuses_a_resealed_value_on_s3_as_on_redis() {
    let (_cluster, bucket) = garage::shared("secret_on_s3");
    let t = S3Team::new(bucket);
    let secret = t.secret("team.secret", "correct horse battery staple\n");
    let secret_opts = ["--remote-secret-file", secret.to_str().expect("utf-8")];
    success_stderr(&mut t.exec_with("a", "a.mlir", &secret_opts));
    let good = read(&t.team.out("a", "a.mlir"));
    let keys = t.bucket.entry_keys();
    assert_eq!(keys.len(), 1);
    assert_eq!(
        t.bucket.get(&keys[0]).expect("object")[..4],
        *b"MCKA",
        "sealed"
    );
    let list: Value =
        serde_json::from_slice(&success(&mut t.mck("a", &["cache", "entries", "--json"])))
            .expect("json");
    let key = list[0]["key"].as_str().expect("key").to_owned();

    // Someone with write access to the bucket and no secret stores a self-consistent entry.
    let evil = t.team.path("evil.bin");
    std::fs::write(&evil, b"evil artefact\n").expect("write");
    success_stderr(&mut t.mck("attacker", &["cache", "put", &key, evil.to_str().unwrap()]));
    assert_ne!(t.bucket.get(&keys[0]).expect("object")[..4], *b"MCKA");

    let runs = t.team.runs();
    let stderr = success_stderr(&mut t.exec_with("b", "a.mlir", &secret_opts));
    assert!(stderr.contains("not authenticated"), "{stderr}");
    assert_eq!(
        read(&t.team.out("b", "a.mlir")),
        good,
        "the forged value was served"
    );
    assert_eq!(t.team.runs(), runs + 1);
    let s = t.stats_with("b", &secret_opts);
    assert_eq!(counter(&s, "remote_unauthenticated"), 1, "{s}");
    assert_eq!(counter(&s, "remote_hits"), 0, "{s}");
}

#[test]
fn a_bucket_that_refuses_warns_in_one_line_without_the_secret() {
    let (_cluster, bucket) = garage::shared("one_line");
    let mut wrong = bucket.clone();
    wrong.secret = "not-the-secret-key-0123456789".to_owned();
    let t = S3Team::new(wrong);
    let stderr = success_stderr(&mut t.exec("a", "a.mlir"));
    assert_eq!(
        t.team.runs(),
        1,
        "the compile ran despite the refusing bucket"
    );
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("remote cache unavailable"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    let line = warnings[0];
    assert!(line.contains(&t.bucket.url()), "names the tier: {line}");
    assert!(
        line.contains("cannot read an entry"),
        "names the operation: {line}"
    );
    assert!(
        line.contains("PermissionDenied") || line.contains("Forbidden"),
        "{line}"
    );
    assert!(!stderr.contains("not-the-secret"), "{stderr}");
    assert!(!stderr.contains("context:"), "an opendal dump: {stderr}");
    assert!(
        stderr.lines().count() <= 3,
        "more than the warning: {stderr}"
    );
}

#[test]
fn two_cache_dirs_share_an_entry_through_the_gcs_emulator() {
    let emulator = Emulator::get();
    let prefix = redis::unique_prefix("gcs_share");
    let team = Team::new(format!("gcs://{}/{prefix}", emulator.bucket));
    let exec = |host: &str| {
        let mut c = team.exec(host, "a.mlir");
        // No credentials anywhere: the emulator is named, so nothing asks a metadata server.
        c.env("STORAGE_EMULATOR_HOST", &emulator.host)
            .env_remove("GOOGLE_APPLICATION_CREDENTIALS");
        c
    };
    let stderr = success_stderr(&mut exec("a"));
    assert!(!stderr.contains("remote cache unavailable"), "{stderr}");
    let stderr = success_stderr(&mut exec("b"));
    assert!(!stderr.contains("remote cache unavailable"), "{stderr}");
    assert_eq!(team.runs(), 1, "host b compiled instead of using a's entry");
    team.assert_same_output("a", "b", "a.mlir");
    let mut stats = team.mck("b", &["cache", "stats", "--json"]);
    stats.env("STORAGE_EMULATOR_HOST", &emulator.host);
    let b: Value = serde_json::from_slice(&success(&mut stats)).expect("json");
    assert_eq!(counter(&b, "remote_hits"), 1, "{b}");
}

/// S3 credentials from the standard chain's files: no key in the environment, a profile named
/// by `AWS_PROFILE` in the file of `AWS_SHARED_CREDENTIALS_FILE`; two directories share an
/// entry through it, and a profile with a wrong key gets no hit and no failed build. The keys
/// appear in no output.
#[test]
fn credentials_come_from_the_shared_credentials_file_and_profile() {
    let (_cluster, bucket) = garage::shared("credentials_file");
    let t = S3Team::new(bucket.clone());
    let file = t.team.path("aws-credentials");
    std::fs::write(
        &file,
        format!(
            "[default]\naws_access_key_id = GKnotthisone\naws_secret_access_key = {}\n\n\
             [team]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            "0".repeat(64),
            bucket.key_id,
            bucket.secret
        ),
    )
    .expect("credentials file");
    let with_profile = |host: &str, profile: &str| {
        let mut c = t.team.exec(host, "a.mlir");
        c.env("AWS_ENDPOINT_URL", &bucket.endpoint)
            .env("AWS_REGION", &bucket.region)
            .env("AWS_SHARED_CREDENTIALS_FILE", &file)
            .env("AWS_PROFILE", profile)
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY");
        let out = c.output().expect("run exec");
        assert!(out.status.success(), "{host}: {out:?}");
        let shown = format!("{out:?}");
        assert!(
            !shown.contains(&bucket.secret),
            "{host}: the secret key was shown"
        );
        shown
    };
    with_profile("a", "team");
    with_profile("b", "team");
    assert_eq!(
        t.team.runs(),
        1,
        "b hit what a stored with the profile's keys"
    );
    assert_eq!(t.bucket.entry_keys().len(), 1);
    let refused = with_profile("c", "default");
    assert_eq!(t.team.runs(), 2, "c, with the wrong key, compiled");
    assert!(refused.contains("remote cache unavailable"), "{refused}");
}
