//! PostgreSQL for the shared-registry tests: the server `scripts/test.sh` starts
//! (`scripts/postgres.sh`: its URL, password file and a superuser's socket in `MCK_TEST_POSTGRES_*`).
//! Each test works in a schema of its own. Never a silent pass: without the server a test
//! fails under CI (`CI` set); by hand it is skipped with a line on stderr.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The server of `$MCK_TEST_POSTGRES_*`, or `None` (by hand) when there is none.
macro_rules! postgres_or_skip {
    ($test:expr) => {
        match crate::postgres::Server::for_test($test) {
            Some(server) => server,
            None => return,
        }
    };
}

pub struct Server {
    /// `postgres://mck_tool@127.0.0.1:PORT/mck`, no schema.
    pub url: String,
    pub password_file: PathBuf,
    pub passfile: PathBuf,
    /// This test's schema.
    pub schema: String,
    /// The same server as a role it lets in over TLS only, the CA that signed the server's
    /// certificate and another CA that signed nothing.
    pub tls_url: String,
    pub ca: PathBuf,
    pub other_ca: PathBuf,
    psql: String,
    socket_dir: String,
    pub port: String,
    admin: String,
}

impl Server {
    pub fn for_test(test: &str) -> Option<Server> {
        let var = |name: &str| std::env::var(name).ok();
        let Some(url) = var("MCK_TEST_POSTGRES_URL") else {
            assert!(
                std::env::var_os("CI").is_none(),
                "{test}: MCK_TEST_POSTGRES_URL is not set under CI: scripts/test.sh starts \
                 PostgreSQL (scripts/postgres.sh) and exports it"
            );
            eprintln!("{test}: skipped: no PostgreSQL (run scripts/test.sh)");
            return None;
        };
        let need = |name: &str| var(name).unwrap_or_else(|| panic!("{name} is not set"));
        let schema = format!(
            "t_{}_{}",
            test.chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .take(40)
                .collect::<String>()
                .to_ascii_lowercase(),
            std::process::id()
        );
        let server = Server {
            url,
            password_file: need("MCK_TEST_POSTGRES_PASSWORD_FILE").into(),
            passfile: need("MCK_TEST_POSTGRES_PASSFILE").into(),
            schema,
            tls_url: need("MCK_TEST_POSTGRES_TLS_URL"),
            ca: need("MCK_TEST_POSTGRES_CA").into(),
            other_ca: need("MCK_TEST_POSTGRES_OTHER_CA").into(),
            psql: need("MCK_TEST_POSTGRES_PSQL"),
            socket_dir: need("MCK_TEST_POSTGRES_SOCKET_DIR"),
            port: need("MCK_TEST_POSTGRES_PORT"),
            admin: need("MCK_TEST_POSTGRES_ADMIN_USER"),
        };
        server.admin_sql(&format!("DROP SCHEMA IF EXISTS {} CASCADE", server.schema));
        Some(server)
    }

    /// The `registry` setting for this test's schema.
    pub fn registry(&self) -> String {
        format!("{}?schema={}", self.url, self.schema)
    }

    /// `MLIR_CACHE_KEY_FLAGS` for a cache at `cache_dir` on this registry (password from the
    /// file), with `extra` flags.
    pub fn flags(&self, cache_dir: &std::path::Path, extra: &str) -> String {
        format!(
            "--cache_dir={} --registry={} --registry_password_file={} {extra}",
            cache_dir.display(),
            self.registry(),
            self.password_file.display()
        )
    }

    /// `sql` as the superuser over the server's socket; its output (unaligned, tuples only).
    pub fn admin_sql(&self, sql: &str) -> String {
        let out = self.psql_as(&self.admin, None, sql);
        assert!(
            out.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// [`Server::admin_sql`], `None` when it fails (the schema not made yet).
    pub fn try_admin_sql(&self, sql: &str) -> Option<String> {
        let out = self.psql_as(&self.admin, None, sql);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// `sql` as the tool's own role over TCP (password from the libpq password file): the
    /// whole output, to see a statement fail.
    pub fn tool_sql(&self, sql: &str) -> std::process::Output {
        Command::new(&self.psql)
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                &self.url,
                "-c",
                sql,
            ])
            .env("PGPASSFILE", &self.passfile)
            .output()
            .expect("run psql")
    }

    fn psql_as(&self, user: &str, db: Option<&str>, sql: &str) -> std::process::Output {
        Command::new(&self.psql)
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(&self.socket_dir)
            .args([
                "-p",
                &self.port,
                "-U",
                user,
                "-d",
                db.unwrap_or("mck"),
                "-c",
                sql,
            ])
            .output()
            .expect("run psql")
    }
}

/// Two programs in `dir` that land at one address: the corpus MLP module (`p.mlir`) and the
/// same module with one constant changed (`q.mlir`), so of the same name and another key.
pub fn two_programs(dir: &Path) -> (PathBuf, PathBuf) {
    let (p, q) = (dir.join("p.mlir"), dir.join("q.mlir"));
    std::fs::copy(crate::common::corpus("cpu/mlp.a.generic.mlir"), &p).expect("copy");
    let source = std::fs::read_to_string(&p).expect("read");
    let changed = source.replacen("dense<0.000000e+00>", "dense<1.000000e+00>", 1);
    assert_ne!(
        source, changed,
        "the corpus module has the constant to change"
    );
    std::fs::write(&q, changed).expect("write");
    (p, q)
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.psql_as(
            &self.admin,
            None,
            &format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema),
        );
    }
}
