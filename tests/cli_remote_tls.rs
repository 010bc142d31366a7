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

use crate::common::{self, read, success};
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

/// A `redis-server` with TLS only on a free port, its password `PASSWORD`, killed on drop.
struct TlsRedis {
    port: u16,
    child: Child,
}

impl TlsRedis {
    fn start(pki: &Pki, client_certificates: bool) -> TlsRedis {
        let port = free_port();
        let dir = pki.path(&format!("redis-{port}"));
        std::fs::create_dir(&dir).expect("dir");
        let pem = |name: &str| pki.path(name).display().to_string();
        let child = Command::new("redis-server")
            .args([
                "--port",
                "0",
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args([
                "--tls-port",
                &port.to_string(),
                "--tls-cert-file",
                &pem("server.pem"),
            ])
            .args([
                "--tls-key-file",
                &pem("server.key"),
                "--tls-ca-cert-file",
                &pem("ca.pem"),
            ])
            .args([
                "--tls-auth-clients",
                if client_certificates { "yes" } else { "no" },
            ])
            .args(["--requirepass", PASSWORD, "--dir"])
            .arg(&dir)
            .stdout(Stdio::null())
            .spawn()
            .expect("start redis-server");
        let server = TlsRedis { port, child };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "redis-server did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}/0/tls", self.port)
    }
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `exec` of a.mlir on `host` with `options`: its output, the build a success.
fn build(team: &Team, host: &str, options: &[String]) -> Output {
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    let out = team
        .exec_with(host, "a.mlir", &options)
        .output()
        .expect("run exec");
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
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    let stats = team.stats_with(host, &options);
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

/// The server is really TLS only: a plain `redis://` to it gets no hit and no failed build.
#[test]
fn plain_redis_to_a_tls_port_costs_a_build_nothing() {
    let pki = Pki::new();
    let server = TlsRedis::start(&pki, false);
    let plain = Team::new(format!("redis://127.0.0.1:{}/0/tls", server.port));
    build(&plain, "a", &pki.options("ca.pem", false));
    assert_eq!(plain.runs(), 1);
}
