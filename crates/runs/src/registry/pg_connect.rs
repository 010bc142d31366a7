//! From the `registry` URL to a PostgreSQL connection: the schema is this tool's own query
//! parameter (`?schema=team`, taken out before the client parses the rest), the password
//! comes from `registry_password_file` or the libpq password file, and every connection is
//! bounded in time: connecting, waiting for a lock, idling in a transaction.
//!
//! TLS: with `registry_ca_file`, or `sslmode=require` (`verify-ca`, `verify-full`) in the URL,
//! the connection is TLS only, the server's certificate verified for the URL's host against
//! that CA (else the system's roots); `sslmode=disable` or nothing: plain TCP.

use std::str::FromStr;
use std::time::Duration;

use mck_settings::RegistrySettings;
use postgres::config::Host;

use super::passfile::{self, Login};

/// The schema when the URL names none.
pub(crate) const DEFAULT_SCHEMA: &str = "mlir_cache_key";

/// How long connecting may take before the registry counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Server-side bounds of every session: a lock wait or an idle transaction past these fails
/// instead of holding a build (or another host) forever.
const SESSION_OPTIONS: &str = "-c lock_timeout=60000 -c idle_in_transaction_session_timeout=60000";

/// Where a shared registry lives.
pub(crate) struct Target {
    pub config: postgres::Config,
    /// The schema's name, checked to be a plain identifier (so it is quoted safely).
    pub schema: String,
    /// The URL as messages show it (it never holds a password: the setting refuses one).
    pub shown: String,
    /// TLS, and what verifies the server; `None`: plain TCP.
    pub tls: Option<rustls::ClientConfig>,
}

impl Target {
    /// Connects (TLS or plain, as the URL and settings say).
    pub fn connect(&self) -> Result<postgres::Client, postgres::Error> {
        match &self.tls {
            Some(tls) => self
                .config
                .connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls.clone())),
            None => self.config.connect(postgres::NoTls),
        }
    }
}

/// Parses `url` (already checked for form by the setting) and finds its password.
pub(crate) fn target(url: &str, settings: &RegistrySettings) -> Result<Target, String> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut schema = DEFAULT_SCHEMA.to_owned();
    let mut sslmode = None;
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        if let Some(name) = pair.strip_prefix("schema=") {
            schema = name.to_owned();
        } else if let Some(mode) = pair.strip_prefix("sslmode=") {
            sslmode = Some(mode.to_owned());
        } else {
            rest.push(pair);
        }
    }
    check_schema(&schema)?;
    // A CA file asks for TLS as `require` does; without either, plain TCP.
    let ca = settings.ca_file.as_deref();
    let tls = match sslmode.as_deref() {
        Some("disable") if ca.is_some() => {
            return Err("sslmode=disable, but registry_ca_file asks for TLS".to_owned());
        }
        Some("disable") => None,
        None | Some("prefer" | "allow") if ca.is_none() => None,
        None | Some("prefer" | "allow" | "require" | "verify-ca" | "verify-full") => {
            Some(tls_config(ca)?)
        }
        Some(other) => {
            return Err(format!(
                "sslmode={other:?}: expected disable, prefer, require, verify-ca or verify-full"
            ));
        }
    };
    let client_url = match rest.is_empty() {
        true => base.to_owned(),
        false => format!("{base}?{}", rest.join("&")),
    };
    let mut config = postgres::Config::from_str(&client_url).map_err(|e| e.to_string())?;
    if config.get_password().is_some() {
        return Err("a registry URL may not hold a password".to_owned());
    }
    let user = config
        .get_user()
        .ok_or("the URL names no user: postgres://USER@host/database")?
        .to_owned();
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(name)) => name.clone(),
        Some(Host::Unix(_)) => "localhost".to_owned(),
        None => return Err("the URL names no host".to_owned()),
    };
    let login = Login {
        host: &host,
        port: config.get_ports().first().copied().unwrap_or(5432),
        database: config.get_dbname().unwrap_or(&user),
        user: &user,
    };
    let password = match &settings.password {
        Some(secret) => Some(secret.text().trim_end_matches(['\n', '\r']).to_owned()),
        None => passfile::lookup(&login),
    };
    if let Some(password) = password {
        config.password(password);
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    config
        .application_name("mlir-cache-key")
        .options(SESSION_OPTIONS)
        .ssl_mode(match tls {
            Some(_) => postgres::config::SslMode::Require,
            None => postgres::config::SslMode::Disable,
        });
    Ok(Target {
        config,
        schema,
        shown: url.to_owned(),
        tls,
    })
}

/// A TLS client verifying the server against the CA in `ca_file` (PEM), else the system's roots.
fn tls_config(ca_file: Option<&std::path::Path>) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        Some(file) => {
            use rustls::pki_types::{CertificateDer, pem::PemObject};
            let pem = mck_remote::Credentials::read_pem(file, "registry_ca_file")?;
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| format!("{}: {e}", file.display()))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("{}: {e}", file.display()))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(
                    "TLS asked for, but the system has no CA certificates: name one \
                            with registry_ca_file"
                        .to_owned(),
                );
            }
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// A schema name is a lower-case identifier of at most 63 bytes: it is spliced into SQL.
fn check_schema(name: &str) -> Result<(), String> {
    let ok = (1..=63).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    match ok {
        true => Ok(()),
        false => Err(format!(
            "schema {name:?}: expected a lower-case identifier ([a-z_][a-z0-9_]*, at most 63 bytes)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_is_taken_out_and_checked() {
        let settings = RegistrySettings::default();
        let t = target("postgres://ci@db:6543/builds?schema=team_a", &settings).unwrap();
        assert_eq!(t.schema, "team_a");
        assert_eq!(t.config.get_ports(), &[6543]);
        assert_eq!(t.config.get_dbname(), Some("builds"));
        let t = target("postgres://ci@db/builds", &settings).unwrap();
        assert_eq!(t.schema, DEFAULT_SCHEMA);
        for bad in ["Team", "a;drop", "1a", "", "a\"b"] {
            let url = format!("postgres://ci@db/b?schema={bad}");
            assert!(target(&url, &settings).is_err(), "{bad}");
        }
        assert!(
            target("postgres://db/b", &settings)
                .err()
                .is_some_and(|e| e.contains("no user"))
        );
    }
}
