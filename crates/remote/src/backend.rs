//! What a backend is: the schemes it answers to, whether it leases, how it checks its URL and
//! how it opens its tier ([`Backend`], listed in the scheme table, `schemes.rs`), and the URL
//! pieces backends share.

use url::Url;

use crate::error::RemoteError;
use crate::tier::{Tier, TierOptions};

/// One kind of remote storage.
pub struct Backend {
    /// The URL schemes it answers to; the first is its name.
    pub schemes: &'static [&'static str],
    /// The URL's form, for messages (`redis://HOST:PORT/DB`).
    pub form: &'static str,
    /// Whether its tier takes compile leases (one compile per key across hosts).
    pub leases: bool,
    /// Checks a URL of one of its schemes; nothing is contacted.
    pub parse: fn(&Url) -> Result<Parsed, UrlError>,
    /// Sets the tier up for a URL it checked; nothing is contacted yet.
    pub open: OpenTier,
}

/// Sets a tier up for its URL (nothing is contacted yet): a backend's `open`, or a test's own.
pub type OpenTier = fn(&Url, TierOptions) -> Result<Box<dyn Tier>, RemoteError>;

/// The query option that carries a cluster's seed nodes after the first (`tier_url.rs` moves
/// them there from the URL's authority).
pub const NODE_OPTION: &str = "node";

/// Why a URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UrlError(pub String);

/// What a backend reads from its URL when it checks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The key (object path) prefix every entry and lease lives under; no leading or trailing
    /// `/`.
    pub prefix: String,
    /// The URL as messages show it: normalized, password replaced by `***`.
    pub shown: String,
}

/// Non-empty path segments of `url`, percent-decoded; `.` and `..` refused (they would escape
/// the prefix). For backends that read a prefix from the path.
pub fn path_segments(url: &Url) -> Result<Vec<String>, UrlError> {
    let mut out = Vec::new();
    for raw in url.path().split('/').filter(|s| !s.is_empty()) {
        let s = percent_decode(raw)
            .ok_or_else(|| UrlError(format!("path segment {raw:?} is not valid UTF-8")))?;
        if s == "." || s == ".." || s.contains('/') {
            return Err(UrlError(format!(
                "path segment {s:?} is not allowed in the prefix"
            )));
        }
        out.push(s);
    }
    Ok(out)
}

/// `s` with its `%XX` escapes decoded; `None` when the result is not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(v) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
