//! `run.seal`: a run archive signed with the shared secret (`remote_secret_file`, the one that
//! authenticates remote values). The manifest lists the SHA-256 of every other member and import
//! checks each member against it, so one HMAC over the manifest's exact bytes covers the whole
//! archive. With a secret, import takes only an archive whose seal verifies: an unsigned one, or
//! one signed with another secret, is refused (a crafted archive whose manifest was re-summed
//! over a replaced payload can be re-summed, not re-signed). Without a secret an archive is
//! trusted as before and a seal is not checked.
//!
//! ```text
//! run.seal = "mlir-cache-key.run-seal.v1 " hex(HMAC-SHA-256(secret, purpose, run.json)) "\n"
//! ```
//!
//! The seal is the first member, before `run.json`, so import reads it before the manifest.

use mck_remote::{Secret, TAG_LEN};

/// The seal's member name.
pub const SEAL: &str = "run.seal";
/// What the tag is for: a tag made for anything else never verifies as an archive's.
const PURPOSE: &str = "mlir-cache-key/run-archive/v1";
const HEADER: &str = "mlir-cache-key.run-seal.v1 ";
/// Length of a well-formed seal member.
pub const SEAL_LEN: u64 = (HEADER.len() + 2 * TAG_LEN + 1) as u64;

/// The seal member of an archive whose manifest is `manifest`.
pub fn seal(secret: &Secret, manifest: &[u8]) -> Vec<u8> {
    format!("{HEADER}{}\n", hex::encode(secret.tag(PURPOSE, manifest))).into_bytes()
}

/// Checks the archive's seal (`None`: it had none) against `manifest` under `secret`;
/// without a secret nothing is checked. The error says why the archive is refused.
pub fn check(secret: Option<&Secret>, seal: Option<&[u8]>, manifest: &[u8]) -> Result<(), String> {
    let Some(secret) = secret else {
        return Ok(());
    };
    let Some(seal) = seal else {
        return Err(format!(
            "it is not signed, and with a shared secret (remote_secret_file = {}) only archives \
             signed with it are imported (export it again where that secret is set)",
            secret.path().display()
        ));
    };
    let tag = std::str::from_utf8(seal)
        .ok()
        .and_then(|text| text.strip_prefix(HEADER)?.strip_suffix('\n'))
        .and_then(|hex_tag| hex::decode(hex_tag).ok())
        .filter(|tag| tag.len() == TAG_LEN)
        .ok_or_else(|| format!("{SEAL} is not a seal this version reads"))?;
    secret.verify_tag(PURPOSE, manifest, &tag).map_err(|_| {
        format!(
            "its signature does not match the shared secret (remote_secret_file = {}): it was \
             signed with another secret, or run.json was changed after signing",
            secret.path().display()
        )
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn secret(dir: &std::path::Path, name: &str, text: &str) -> Secret {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        Secret::read(&path).unwrap()
    }

    #[test]
    fn a_seal_verifies_under_its_secret_only() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (
            secret(dir.path(), "a", "the first shared secret"),
            secret(dir.path(), "b", "the other shared secret"),
        );
        let manifest = br#"{"run":"r1"}"#;
        let sealed = seal(&a, manifest);
        assert_eq!(sealed.len() as u64, SEAL_LEN);
        assert_eq!(check(Some(&a), Some(&sealed), manifest), Ok(()));
        assert_eq!(check(None, Some(&sealed), manifest), Ok(()));
        assert_eq!(check(None, None, manifest), Ok(()));
        let other = check(Some(&b), Some(&sealed), manifest).unwrap_err();
        assert!(other.contains("does not match"), "{other}");
        let changed = check(Some(&a), Some(&sealed), br#"{"run":"r2"}"#).unwrap_err();
        assert!(changed.contains("does not match"), "{changed}");
        let unsigned = check(Some(&a), None, manifest).unwrap_err();
        assert!(unsigned.contains("not signed"), "{unsigned}");
        for bad in [&b"garbage"[..], &sealed[..sealed.len() - 1], b""] {
            let e = check(Some(&a), Some(bad), manifest).unwrap_err();
            assert!(e.contains("not a seal"), "{e}");
        }
    }
}
