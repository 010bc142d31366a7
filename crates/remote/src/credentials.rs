//! [`Credentials`]: what a backend may need to reach its server, from files named by the
//! settings — TLS files read when a tier is opened, a password read with the settings.

use std::path::PathBuf;

use serde::Serialize;

use crate::auth::Secret;

/// What a backend may need to reach its server, from files (never a secret on a command line):
/// the CA that signed the server's certificate (`None`: the system's roots), a client
/// certificate and key (mutual TLS), and a password (Redis: with the ACL user of the URL).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Credentials {
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// Read when the settings are (mode checked like the shared secret's); shown as its path.
    pub password: Option<Secret>,
}

impl Credentials {
    /// The PEM bytes of `file` (`what` names the setting in the error).
    pub fn read_pem(file: &std::path::Path, what: &str) -> Result<Vec<u8>, String> {
        let bytes = std::fs::read(file)
            .map_err(|e| format!("cannot read the {what} {}: {e}", file.display()))?;
        if !bytes.windows(11).any(|w| w == b"-----BEGIN ") {
            return Err(format!("the {what} {} holds no PEM block", file.display()));
        }
        Ok(bytes)
    }
}
