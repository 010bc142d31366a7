//! `rediss://`: a real Redis that speaks TLS only, with a CA, a server certificate and a client
//! certificate made at test time by openssl, and a password that only a file holds. Two cache
//! directories share entries through it; a CA that did not sign the server's certificate is
//! refused (the build goes on without the tier, the warning names the host and why); a server
//! that wants client certificates refuses a client without one, and the tool says so. No
//! output of any command holds the password.

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::cluster;
use crate::common::{self, read, success};
use crate::garage::{self, Bucket};
use crate::gcs::Emulator;
use crate::redis::free_port;
use crate::team::Team;

const PASSWORD: &str = "tls-test-password-4c1e7";

/// A CA, the server's certificate (for 127.0.0.1) and a client's, and a second CA that signed
/// nothing the server has.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        let pki = Pki {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        for ca in ["ca", "other-ca"] {
            pki.openssl(&[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-days",
                "2",
                "-subj",
                &format!("/CN=mck {ca}"),
                "-keyout",
                &format!("{ca}.key"),
                "-out",
                &format!("{ca}.pem"),
            ]);
        }
        std::fs::write(pki.path("server.ext"), "subjectAltName=IP:127.0.0.1\n").expect("ext");
        std::fs::write(pki.path("client.ext"), "extendedKeyUsage=clientAuth\n").expect("ext");
        for (name, subject) in [("server", "/CN=127.0.0.1"), ("client", "/CN=mck client")] {
            pki.openssl(&[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-subj",
                subject,
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
            ]);
            pki.openssl(&[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                &format!("{name}.ext"),
                "-out",
                &format!("{name}.pem"),
            ]);
        }
        let password = pki.path("password");
        std::fs::write(&password, format!("{PASSWORD}\n")).expect("password");
        std::fs::set_permissions(&password, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        pki
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn openssl(&self, args: &[&str]) {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .expect("run openssl (Debian's openssl package)");
        assert!(out.status.success(), "openssl {args:?}: {out:?}");
    }

    /// `--remote-ca-file CA --remote-password-file FILE`, and the client's certificate with
    /// `mutual`.
    fn options(&self, ca: &str, mutual: bool) -> Vec<String> {
        let mut options = vec![
            "--remote-ca-file".to_owned(),
            self.path(ca).display().to_string(),
            "--remote-password-file".to_owned(),
            self.path("password").display().to_string(),
        ];
        if mutual {
            for (flag, file) in [
                ("--remote-cert-file", "client.pem"),
                ("--remote-key-file", "client.key"),
            ] {
                options.push(flag.to_owned());
                options.push(self.path(file).display().to_string());
            }
        }
        options
    }
}

/// A server this test started, listening on `port` of 127.0.0.1; killed on drop.
struct Server {
    port: u16,
    child: Child,
}

impl Server {
    /// Waits until `command`'s child listens on `port`.
    fn listening(command: &mut Command, port: u16) -> Server {
        let what = command.get_program().to_string_lossy().into_owned();
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what} (a Debian package): {e}"));
        let server = Server { port, child };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "{what} did not listen on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `redis-server` with TLS only on a free port, its password `PASSWORD`.
struct TlsRedis(Server);

impl TlsRedis {
    fn start(pki: &Pki, client_certificates: bool) -> TlsRedis {
        let port = free_port();
        TlsRedis(Server::listening(
            &mut tls_redis_server(pki, port, client_certificates),
            port,
        ))
    }

    fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}/0/tls", self.0.port)
    }
}

/// `redis-server` listening with TLS only on `port`, the certificates of `pki`, its password
/// `PASSWORD`, no persistence, in a directory of its own.
fn tls_redis_server(pki: &Pki, port: u16, client_certificates: bool) -> Command {
    let dir = pki.path(&format!("redis-{port}"));
    std::fs::create_dir(&dir).expect("dir");
    let pem = |name: &str| pki.path(name).display().to_string();
    let mut command = Command::new("redis-server");
    command
        .args(["--port", "0", "--bind", "127.0.0.1", "--save", ""])
        .args(["--appendonly", "no", "--tls-port", &port.to_string()])
        .args(["--tls-cert-file", &pem("server.pem")])
        .args(["--tls-key-file", &pem("server.key")])
        .args(["--tls-ca-cert-file", &pem("ca.pem")])
        .args([
            "--tls-auth-clients",
            if client_certificates { "yes" } else { "no" },
        ])
        .args(["--requirepass", PASSWORD, "--dir"])
        .arg(&dir);
    command
}

/// Three masters of a Redis Cluster that speak TLS only, to clients and to each other, joined
/// by `redis-cli --cluster create`; killed on drop.
struct TlsCluster(Vec<Server>);

impl TlsCluster {
    fn start(pki: &Pki) -> TlsCluster {
        let nodes: Vec<Server> = (0..3)
            .map(|_| {
                let port = cluster::node_port();
                let mut command = tls_redis_server(pki, port, false);
                command
                    .args(["--tls-cluster", "yes", "--cluster-enabled", "yes"])
                    .args(["--cluster-node-timeout", "1000", "--masterauth", PASSWORD]);
                Server::listening(&mut command, port)
            })
            .collect();
        let addresses: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let cli = |args: &[&str]| {
            let out = Command::new("redis-cli")
                .args(["--tls", "--cacert"])
                .arg(pki.path("ca.pem"))
                .args(args)
                .env("REDISCLI_AUTH", PASSWORD)
                .output()
                .expect("run redis-cli");
            assert!(out.status.success(), "redis-cli {args:?} failed");
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let mut create = vec!["--cluster", "create"];
        create.extend(addresses.iter().map(String::as_str));
        create.push("--cluster-yes");
        cli(&create);
        let deadline = Instant::now() + Duration::from_secs(30);
        for node in &nodes {
            let port = node.port.to_string();
            while !cli(&["-p", &port, "cluster", "info"]).contains("cluster_state:ok") {
                assert!(Instant::now() < deadline, "the TLS cluster did not form");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        TlsCluster(nodes)
    }

    fn url(&self) -> String {
        let seeds: Vec<String> = self
            .0
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("rediss-cluster://{}/tls", seeds.join(","))
    }
}

/// `exec` of a.mlir on `host` with `options`: its output, the build a success.
fn build(team: &Team, host: &str, options: &[String]) -> Output {
    build_in(team, host, options, None)
}

/// As [`build`], with the AWS variables of `bucket` when given.
fn build_in(team: &Team, host: &str, options: &[String], bucket: Option<&Bucket>) -> Output {
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    let mut exec = team.exec_with(host, "a.mlir", &options);
    if let Some(bucket) = bucket {
        bucket.aws_env(&mut exec);
    }
    let out = exec.output().expect("run exec");
    assert!(out.status.success(), "{host}: the build failed: {out:?}");
    assert_eq!(
        read(&team.out(host, "a.mlir")),
        read(&team.out("a", "a.mlir"))
    );
    assert!(
        !format!("{out:?}").contains(PASSWORD),
        "{host}: the password was shown: {out:?}"
    );
    out
}

fn remote_hits(team: &Team, host: &str, options: &[String]) -> u64 {
    remote_hits_in(team, host, options, None)
}

/// As [`remote_hits`], with the AWS variables of `bucket` when given.
fn remote_hits_in(team: &Team, host: &str, options: &[String], bucket: Option<&Bucket>) -> u64 {
    let mut stats = team.mck(host, &["cache", "stats", "--json"]);
    stats.args(options);
    if let Some(bucket) = bucket {
        bucket.aws_env(&mut stats);
    }
    let stats: serde_json::Value = serde_json::from_slice(&success(&mut stats)).expect("json");
    assert!(!stats.to_string().contains(PASSWORD), "{stats}");
    stats["remote_hits"].as_u64().expect("remote_hits")
}

#[test]
fn a_hit_through_rediss_and_a_certificate_that_does_not_verify_is_refused() {
    let pki = Pki::new();
    let server = TlsRedis::start(&pki, false);
    let team = Team::new(server.url());
    let ours = pki.options("ca.pem", false);
    build(&team, "a", &ours);
    build(&team, "b", &ours);
    assert_eq!(team.runs(), 1, "b hit what a stored, over TLS");
    assert_eq!(remote_hits(&team, "b", &ours), 1);

    // Another CA: the server is not believed; the build compiles without the tier.
    let out = build(&team, "c", &pki.options("other-ca.pem", false));
    assert_eq!(team.runs(), 2, "c compiled: the tier was not used");
    let err = common::stderr(&out);
    common::assert_contains(
        &err,
        &[
            "remote cache unavailable",
            "rediss://127.0.0.1",
            "certificate",
        ],
    );
    let shown = common::text(success(team.mck("a", &["config", "show"]).args(&ours)));
    assert!(
        shown.contains("remote_password_file") && !shown.contains(PASSWORD),
        "{shown}"
    );
}

#[test]
fn mutual_tls_without_the_client_certificate_is_refused_and_said() {
    let pki = Pki::new();
    let server = TlsRedis::start(&pki, true);
    let team = Team::new(server.url());
    let out = build(&team, "a", &pki.options("ca.pem", false));
    let err = common::stderr(&out);
    common::assert_contains(&err, &["remote cache unavailable", "rediss://127.0.0.1"]);
    let mutual = pki.options("ca.pem", true);
    build(&team, "b", &mutual);
    build(&team, "c", &mutual);
    assert_eq!(
        team.runs(),
        2,
        "a without the tier, b compiled and stored, c hit"
    );
    assert_eq!(remote_hits(&team, "c", &mutual), 1);
}

/// `rediss-cluster://`: a cluster whose nodes speak TLS only; a password from the file, the
/// server verified against the CA; another CA is refused, naming the tier, and costs no build.
#[test]
fn a_hit_through_a_tls_cluster_and_another_ca_is_refused() {
    let pki = Pki::new();
    let cluster = TlsCluster::start(&pki);
    let team = Team::new(cluster.url());
    let ours = pki.options("ca.pem", false);
    build(&team, "a", &ours);
    build(&team, "b", &ours);
    assert_eq!(
        team.runs(),
        1,
        "b hit what a stored, through the TLS cluster"
    );
    assert_eq!(remote_hits(&team, "b", &ours), 1);
    let out = build(&team, "c", &pki.options("other-ca.pem", false));
    assert_eq!(team.runs(), 2, "c compiled: the tier was not used");
    common::assert_contains(
        &common::stderr(&out),
        &[
            "remote cache unavailable",
            "rediss-cluster://127.0.0.1",
            "certificate",
        ],
    );
}

/// The server is really TLS only: a plain `redis://` to it gets no hit and no failed build.
#[test]
fn plain_redis_to_a_tls_port_costs_a_build_nothing() {
    let pki = Pki::new();
    let server = TlsRedis::start(&pki, false);
    let plain = Team::new(format!("redis://127.0.0.1:{}/0/tls", server.0.port));
    build(&plain, "a", &pki.options("ca.pem", false));
    assert_eq!(plain.runs(), 1);
}

/// stunnel (Debian's) terminating TLS for 127.0.0.1 in front of a plain HTTP endpoint, with the
/// server certificate of `pki`; killed on drop.
struct TlsProxy(Server);

impl TlsProxy {
    fn start(pki: &Pki, plain: &str) -> TlsProxy {
        let port = free_port();
        let upstream = plain.trim_start_matches("http://").trim_end_matches('/');
        let config = pki.path(&format!("stunnel-{port}.conf"));
        std::fs::write(
            &config,
            format!(
                "foreground = yes\npid =\n[s3]\naccept = 127.0.0.1:{port}\nconnect = {upstream}\n\
                 cert = {}\nkey = {}\n",
                pki.path("server.pem").display(),
                pki.path("server.key").display()
            ),
        )
        .expect("stunnel config");
        TlsProxy(Server::listening(
            Command::new("stunnel4").arg(&config),
            port,
        ))
    }

    fn endpoint(&self) -> String {
        format!("https://127.0.0.1:{}", self.0.port)
    }
}

/// Garage behind a TLS-terminating proxy: `s3://` over HTTPS whose server certificate only the
/// private CA of `remote_ca_file` vouches for. Two directories share entries; another CA is
/// refused and the build goes on without the tier.
#[test]
fn a_bucket_over_https_with_a_private_ca_shares_entries_and_another_ca_is_refused() {
    let pki = Pki::new();
    let (_cluster, plain) = garage::shared("s3_over_https");
    let proxy = TlsProxy::start(&pki, &plain.endpoint);
    let bucket = Bucket {
        endpoint: proxy.endpoint(),
        ..plain.clone()
    };
    let team = Team::new(bucket.url());
    let ca = |file: &str| {
        vec![
            "--remote-ca-file".to_owned(),
            pki.path(file).display().to_string(),
        ]
    };
    build_in(&team, "a", &ca("ca.pem"), Some(&bucket));
    build_in(&team, "b", &ca("ca.pem"), Some(&bucket));
    assert_eq!(team.runs(), 1, "b hit what a stored, over HTTPS");
    assert_eq!(remote_hits_in(&team, "b", &ca("ca.pem"), Some(&bucket)), 1);
    assert!(!plain.entry_keys().is_empty(), "the entry is in the bucket");

    let out = build_in(&team, "c", &ca("other-ca.pem"), Some(&bucket));
    assert_eq!(team.runs(), 2, "c compiled: the tier was not used");
    common::assert_contains(
        &common::stderr(&out),
        &["remote cache unavailable", "s3://"],
    );
}

/// gcp-storage-emulator behind the same proxy: `gcs://` over HTTPS, verified against the private
/// CA only; another CA is refused and the build goes on without the tier.
#[test]
fn a_gcs_bucket_over_https_with_a_private_ca_shares_entries_and_another_ca_is_refused() {
    let pki = Pki::new();
    let emulator = Emulator::get();
    let proxy = TlsProxy::start(&pki, &format!("http://{}", emulator.host));
    let prefix = crate::redis::unique_prefix("gcs_over_https");
    let team = Team::new(format!("gcs://{}/{prefix}", emulator.bucket));
    let exec = |host: &str, ca: &str| {
        let mut c = team.exec_with(
            host,
            "a.mlir",
            &["--remote-ca-file", &pki.path(ca).display().to_string()],
        );
        c.env("STORAGE_EMULATOR_HOST", proxy.endpoint())
            .env_remove("GOOGLE_APPLICATION_CREDENTIALS");
        c
    };
    for host in ["a", "b"] {
        let err = common::success_stderr(&mut exec(host, "ca.pem"));
        assert!(!err.contains("remote cache unavailable"), "{host}: {err}");
    }
    assert_eq!(team.runs(), 1, "b hit what a stored, over HTTPS");
    team.assert_same_output("a", "b", "a.mlir");
    let err = common::success_stderr(&mut exec("c", "other-ca.pem"));
    assert_eq!(team.runs(), 2, "c compiled: the tier was not used");
    common::assert_contains(&err, &["remote cache unavailable", "gcs://"]);
}
