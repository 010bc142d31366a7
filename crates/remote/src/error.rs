//! Errors of the remote tier. None of them fails a compile: the tiered lookup turns each into a
//! local fallback, a counter and (once per process) a warning. Each variant names the operation,
//! the remote and what went wrong, on one line (a service's nested, multi-line error text is
//! folded by [`one_line`]), so that one warning is enough to act on.

use std::time::Duration;

use mck_store::UnixMillis;

/// The implementation's own error (opendal's, the `redis` crate's), kept as the source.
pub type ServiceError = Box<dyn std::error::Error + Send + Sync>;

/// A remote operation that did not happen or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The circuit breaker is open: an earlier failure (in this process or a recent one sharing
    /// the cache directory) marked the remote down; it is retried after `until_ms`.
    #[error("skipped {op}: {remote} is marked down until {} ({reason})", show_ms(*until_ms))]
    Down {
        op: &'static str,
        remote: String,
        until_ms: UnixMillis,
        reason: String,
    },
    /// The operation took longer than the configured timeout.
    #[error("cannot {op} on {remote}: no answer within {after:?}")]
    Timeout {
        op: &'static str,
        remote: String,
        after: Duration,
    },
    /// The storage service (opendal, in `mck-remote`) failed.
    #[error("cannot {op} on {remote}: {}", one_line(&source.to_string()))]
    Service {
        op: &'static str,
        remote: String,
        #[source]
        source: ServiceError,
    },
    /// The Redis lease connection failed.
    #[error("cannot {op} on {remote}: {}", one_line(&source.to_string()))]
    Lease {
        op: &'static str,
        remote: String,
        #[source]
        source: ServiceError,
    },
    /// The remote could not be set up at all (the service refused the configuration, or this
    /// build lacks the cargo feature the URL needs).
    #[error("cannot use the remote cache {remote}: {reason}")]
    Setup { remote: String, reason: String },
}

impl RemoteError {
    /// True when nothing was attempted (the breaker was open).
    pub fn is_skip(&self) -> bool {
        matches!(self, RemoteError::Down { .. })
    }
}

/// `text` on one line: line breaks and runs of blanks become one space (a service's error may
/// nest its causes over several lines; a warning is one line).
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Milliseconds since the epoch as an RFC 3339 UTC time.
pub fn show_ms(ms: UnixMillis) -> String {
    let t = std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_seconds(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nested_service_error_is_one_line() {
        let source: ServiceError = "Unexpected (temporary) at read\n\n   Context:\n      url: http://h\n\n   Source: refused".into();
        let e = RemoteError::Service {
            op: "get",
            remote: "s3://b".into(),
            source,
        };
        assert_eq!(
            e.to_string(),
            "cannot get on s3://b: Unexpected (temporary) at read Context: url: http://h Source: refused"
        );
    }
}
