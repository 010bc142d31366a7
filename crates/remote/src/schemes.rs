//! The scheme table: which backend serves a tier URL. A backend is one file under `backends/`
//! that exports a [`Backend`] (`backend.rs`: its schemes, whether it leases, how it checks its URL and opens
//! its tier) and one line below; nothing else in the workspace names it.

use crate::backend::{Backend, UrlError};
use crate::backends;

/// Every backend of this build (S3 and GCS are cargo features, on by default).
const BACKENDS: &[&Backend] = &[
    &backends::redis::BACKEND,
    &backends::redis::CLUSTER,
    #[cfg(feature = "remote-s3")]
    &backends::buckets::S3,
    #[cfg(feature = "remote-gcs")]
    &backends::buckets::GCS,
];

/// The backend for `scheme`.
pub fn find(scheme: &str) -> Result<&'static Backend, UrlError> {
    BACKENDS
        .iter()
        .copied()
        .find(|b| b.schemes.contains(&scheme))
        .ok_or_else(|| {
            UrlError(format!(
                "unsupported scheme {scheme:?}; expected {}",
                forms()
            ))
        })
}

/// The URL forms this build takes, for messages.
pub fn forms() -> String {
    let forms: Vec<&str> = BACKENDS.iter().map(|b| b.form).collect();
    forms.join(", ")
}
