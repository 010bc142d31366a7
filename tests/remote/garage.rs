//! Garage (a real S3-compatible store, 3 nodes, replication factor 3) for the S3 tests: the
//! shared cluster `scripts/test.sh` starts through `scripts/garage.sh` (its settings in
//! `MCK_TEST_S3_*`; each test works under its own prefix), or a private cluster a test starts
//! (and may kill a node of) itself, stopped on drop. Objects are read and written with curl's own
//! SigV4 signing, not with the code under test.
//!
//! Never a silent pass: without `MCK_TEST_S3_ENDPOINT` under CI a test fails (the script did not
//! do its job); by hand it starts a private cluster, and fails if Garage is missing.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::redis::unique_prefix;

/// A bucket and a prefix of one test's own, and how to reach them.
#[derive(Clone)]
pub struct Bucket {
    pub endpoint: String,
    pub region: String,
    pub bucket: String,
    pub key_id: String,
    pub secret: String,
    pub prefix: String,
}

impl Bucket {
    fn from_settings(settings: &BTreeMap<String, String>, test: &str) -> Bucket {
        let get = |name: &str| {
            settings
                .get(name)
                .unwrap_or_else(|| panic!("{name} is missing from the Garage settings"))
                .clone()
        };
        Bucket {
            endpoint: get("MCK_TEST_S3_ENDPOINT"),
            region: get("MCK_TEST_S3_REGION"),
            bucket: get("MCK_TEST_S3_BUCKET"),
            key_id: get("MCK_TEST_S3_ACCESS_KEY_ID"),
            secret: get("MCK_TEST_S3_SECRET_ACCESS_KEY"),
            prefix: unique_prefix(test),
        }
    }

    /// `s3://BUCKET/PREFIX`: endpoint, region and keys come from the AWS variables ([`Bucket::aws_env`]).
    pub fn url(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.prefix)
    }

    /// The same place with the endpoint and region in the URL (the keys still from the variables).
    pub fn url_with_query(&self) -> String {
        format!(
            "{}?endpoint={}&region={}",
            self.url(),
            self.endpoint,
            self.region
        )
    }

    /// The AWS variables a user would set for this bucket.
    pub fn aws_env<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        command
            .env("AWS_ENDPOINT_URL", &self.endpoint)
            .env("AWS_REGION", &self.region)
            .env("AWS_ACCESS_KEY_ID", &self.key_id)
            .env("AWS_SECRET_ACCESS_KEY", &self.secret)
    }

    fn curl(&self, method: &str, key: &str, query: &str) -> Command {
        let mut c = Command::new("curl");
        c.args(["-sS", "--fail-with-body", "-X", method])
            .arg("--aws-sigv4")
            .arg(format!("aws:amz:{}:s3", self.region))
            .arg("--user")
            .arg(format!("{}:{}", self.key_id, self.secret))
            .arg("-H")
            .arg("x-amz-content-sha256: UNSIGNED-PAYLOAD")
            .arg(format!("{}/{}/{key}{query}", self.endpoint, self.bucket));
        c
    }

    /// The object at `key` (a full key, prefix included); `None` when absent.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        let mut c = self.curl("GET", key, "");
        c.args(["-w", "\n%{http_code}"]);
        let out = c.output().expect("run curl");
        let (body, code) = split_status(&out.stdout);
        match code {
            200 => Some(body.to_vec()),
            404 => None,
            _ => panic!("GET {key}: HTTP {code}: {}", String::from_utf8_lossy(body)),
        }
    }

    /// Replaces the object at `key` with exactly `value`.
    pub fn put(&self, key: &str, value: &[u8]) {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(file.path(), value).expect("write");
        let mut c = self.curl("PUT", key, "");
        c.arg("--data-binary")
            .arg(format!("@{}", file.path().display()));
        let out = c.output().expect("run curl");
        assert!(out.status.success(), "PUT {key}: {out:?}");
        assert_eq!(
            self.get(key).as_deref(),
            Some(value),
            "PUT {key} did not stick"
        );
    }

    /// Every key under this test's prefix, sorted.
    pub fn keys(&self) -> Vec<String> {
        // `/` encoded: curl signs the query as given, Garage checks its canonical form.
        let query = format!("?list-type=2&prefix={}%2F", self.prefix.replace('/', "%2F"));
        let out = self.curl("GET", "", &query).output().expect("run curl");
        assert!(out.status.success(), "list {}: {out:?}", self.prefix);
        let xml = String::from_utf8_lossy(&out.stdout);
        let mut keys: Vec<String> = xml
            .split("<Key>")
            .skip(1)
            .filter_map(|s| s.split_once("</Key>").map(|(k, _)| k.to_owned()))
            .collect();
        keys.sort();
        keys
    }

    /// Keys of entries (not leases).
    pub fn entry_keys(&self) -> Vec<String> {
        crate::redis::entries_among(self.keys())
    }
}

fn split_status(out: &[u8]) -> (&[u8], u16) {
    let at = out
        .iter()
        .rposition(|&b| b == b'\n')
        .expect("curl -w status");
    let code = std::str::from_utf8(&out[at + 1..])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .expect("an HTTP status");
    (&out[..at], code)
}

/// A test's bucket on the shared cluster, or (by hand, without the script) on a private one.
pub fn shared(test: &str) -> (Option<Cluster>, Bucket) {
    if std::env::var_os("MCK_TEST_S3_ENDPOINT").is_some() {
        let settings = std::env::vars()
            .filter(|(k, _)| k.starts_with("MCK_TEST_S3_"))
            .collect();
        return (None, Bucket::from_settings(&settings, test));
    }
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false") {
        panic!(
            "{test}: MCK_TEST_S3_ENDPOINT is not set under CI: scripts/test.sh starts Garage \
             (scripts/garage.sh) and exports it"
        );
    }
    let (cluster, bucket) = private(test, "127.0.0.1");
    (Some(cluster), bucket)
}

/// A cluster of the test's own, its nodes listening on `bind`.
pub fn private(test: &str, bind: &str) -> (Cluster, Bucket) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new("bash")
        .arg(script())
        .arg("start")
        .arg(dir.path())
        .env("GARAGE_BIND", bind)
        .output()
        .expect("run scripts/garage.sh");
    assert!(
        out.status.success(),
        "{test}: scripts/garage.sh start failed (is Garage installed? `scripts/garage.sh \
         install`):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let settings = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let bucket = Bucket::from_settings(&settings, test);
    (Cluster { dir }, bucket)
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/garage.sh")
}

/// A private Garage cluster, stopped on drop.
pub struct Cluster {
    dir: tempfile::TempDir,
}

impl Cluster {
    /// Kills node `n` (1-based; node 1 serves the S3 endpoint the tests use) with SIGKILL.
    pub fn kill_node(&self, n: u32) {
        let pidfile = self.dir.path().join(format!("node{n}/pid"));
        let pid: libc::pid_t = std::fs::read_to_string(&pidfile)
            .expect("node pid")
            .trim()
            .parse()
            .expect("a pid");
        // SAFETY: kill(2) on a pid the script started; no memory is involved.
        assert_eq!(
            unsafe { libc::kill(pid, libc::SIGKILL) },
            0,
            "kill node {n}"
        );
        // Reap it: the shell that started it has exited, so it is not our child; wait until gone.
        for _ in 0..100 {
            // SAFETY: signal 0 only checks that the pid exists.
            if unsafe { libc::kill(pid, 0) } != 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::fs::remove_file(pidfile).expect("remove pid file");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(self.dir.path())
            .status();
    }
}
