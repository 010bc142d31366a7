//! Where the registry of addresses and run records lives: in the cache directory (the default)
//! or shared by a team in a PostgreSQL schema (`registry = postgres://user@host/db?schema=team`).
//! Only the URL's form is checked here; `mck-runs` connects.

use std::time::Duration;

use mck_remote::Secret;
use serde::Serialize;

/// The longest registry URL accepted.
pub const MAX_REGISTRY_URL_LEN: usize = 2048;

/// The default of `registry_lease`.
pub const DEFAULT_REGISTRY_LEASE: Duration = Duration::from_secs(30);

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RegistrySettings {
    /// A PostgreSQL URL (without a password); `None`: `registry.sqlite` in the cache directory.
    pub shared: Option<String>,
    /// The password of the URL's user; else `PGPASSFILE` (or `~/.pgpass`) is read.
    #[serde(skip)]
    pub password: Option<Secret>,
    /// How long another host takes a `running` mark for live without its compiling process
    /// renewing it (a shared registry only; the local one asks the kernel).
    pub lease: Duration,
    /// The CA that signed the database's certificate: TLS, verified against it (else, with
    /// `sslmode=require`, against the system's roots).
    pub ca_file: Option<std::path::PathBuf>,
}

impl Default for RegistrySettings {
    fn default() -> Self {
        RegistrySettings {
            shared: None,
            password: None,
            lease: DEFAULT_REGISTRY_LEASE,
            ca_file: None,
        }
    }
}

/// Parses the `registry` setting: `local`, or a `postgres://` / `postgresql://` URL that holds
/// no password (it belongs in `registry_password_file` or `PGPASSFILE`, never in a URL that
/// command lines and logs show).
pub fn parse_registry(text: &str) -> Result<Option<String>, String> {
    if text == "local" {
        return Ok(None);
    }
    if text.len() > MAX_REGISTRY_URL_LEN {
        return Err(format!(
            "a registry URL is at most {MAX_REGISTRY_URL_LEN} bytes"
        ));
    }
    let rest = text
        .strip_prefix("postgres://")
        .or_else(|| text.strip_prefix("postgresql://"))
        .ok_or("expected `local` or a postgres://user@host[:port]/database[?schema=NAME] URL")?;
    if text.chars().any(char::is_control) {
        return Err("a registry URL may not hold control characters".to_owned());
    }
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    if let Some((user, _)) = authority.rsplit_once('@')
        && user.contains(':')
    {
        return Err(
            "a registry URL may not hold a password: put it in a file named by \
                    registry_password_file, or in PGPASSFILE"
                .to_owned(),
        );
    }
    if authority.rsplit('@').next().unwrap_or_default().is_empty() {
        return Err("a registry URL names its host: postgres://user@host/database".to_owned());
    }
    Ok(Some(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::parse_registry;

    #[test]
    fn urls_are_checked_for_form_and_passwords() {
        assert_eq!(parse_registry("local"), Ok(None));
        let url = "postgres://ci@db.internal:5432/builds?schema=team";
        assert_eq!(parse_registry(url), Ok(Some(url.to_owned())));
        let refused = parse_registry("postgres://ci:hunter2@db/builds").unwrap_err();
        assert!(
            refused.contains("password") && !refused.contains("hunter2"),
            "{refused}"
        );
        assert!(parse_registry("mysql://db/x").is_err());
        assert!(parse_registry("postgres:///x").is_err());
        assert!(parse_registry("postgres://h/x\n").is_err());
        assert!(parse_registry(&format!("postgres://h/{}", "x".repeat(3000))).is_err());
    }
}
