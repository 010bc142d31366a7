//! The scheme table: which backend serves a tier URL. A backend is one file under `backends/`
//! that exports a [`Backend`] (its schemes, whether it leases, how it checks its URL and opens
//! its tier) and one line below; nothing else in the workspace names it.

use crate::backends;
use crate::tier::OpenTier;
use crate::tier_url::{Parsed, UrlError};

/// One kind of remote storage.
pub struct Backend {
    /// The URL schemes it answers to; the first is its name.
    pub schemes: &'static [&'static str],
    /// The URL's form, for messages (`redis://HOST:PORT/DB`).
    pub form: &'static str,
    /// Whether its tier takes compile leases (one compile per key across hosts).
    pub leases: bool,
    /// Checks a URL of one of its schemes; nothing is contacted.
    pub parse: fn(&url::Url) -> Result<Parsed, UrlError>,
    /// Sets the tier up for a URL it checked; nothing is contacted yet.
    pub open: OpenTier,
}

/// Every backend of this build (S3 and GCS are cargo features, on by default).
const BACKENDS: &[&Backend] = &[
    &backends::redis::BACKEND,
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
