//! Parsing `--remote=URL` into the store's [`RemoteUrl`]: which service holds the shared tier, and
//! where inside it (the forms are listed in `mck_store::remote::RemoteUrl`'s module). Parsing is
//! separate from connecting so a bad URL is a usage error at startup (naming the flag and where
//! it came from), never a silent fallback.
//!
//! A chain of tiers is one `--remote` per tier, or `[URL, URL, …]` in one value (the
//! configuration file's `remote = [redis://…, s3://…]`); `read_only=1` in a tier's query makes
//! that tier read-only ([`parse_tier`]).

use mck_store::remote::{
    BucketTarget, DEFAULT_REDIS_PREFIX, READ_ONLY_OPTION, RedisTarget, RemoteTier, RemoteUrl,
};
use url::Url;

/// Redis's port when the URL names none.
pub const DEFAULT_REDIS_PORT: u16 = 6379;

/// Why a URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UrlError(pub String);

const S3_OPTIONS: &[&str] = &["endpoint", "region"];
const GCS_OPTIONS: &[&str] = &["endpoint", "credential_path"];

/// Parses `text` (see the module doc).
pub fn parse(text: &str) -> Result<RemoteUrl, UrlError> {
    let bad = |m: String| UrlError(m);
    let url = Url::parse(text.trim()).map_err(|e| {
        bad(format!(
            "not a URL ({e}); expected redis://HOST:PORT/DB, s3://BUCKET/PREFIX or gcs://BUCKET/PREFIX"
        ))
    })?;
    match url.scheme() {
        "redis" => parse_redis(&url).map(RemoteUrl::Redis),
        "s3" => parse_bucket(&url, S3_OPTIONS).map(RemoteUrl::S3),
        "gcs" | "gs" => parse_bucket(&url, GCS_OPTIONS).map(RemoteUrl::Gcs),
        "rediss" => Err(bad(
            "TLS Redis (rediss://) is not supported; use redis:// on a trusted network or a TLS tunnel"
                .to_owned(),
        )),
        other => Err(bad(format!(
            "unsupported scheme {other:?}; expected redis://, s3:// or gcs://"
        ))),
    }
}

/// One tier: a URL as [`parse_supported`] takes it, with an optional `read_only=1` (or `true`,
/// `0`, `false`) among its query options, taken out before the service sees them.
pub fn parse_tier(text: &str) -> Result<RemoteTier, UrlError> {
    let Ok(mut url) = Url::parse(text.trim()) else {
        return parse_supported(text).map(RemoteTier::writable); // the error says why
    };
    let mut read_only = false;
    let mut rest = Vec::new();
    for (name, value) in url.query_pairs() {
        if name == READ_ONLY_OPTION {
            read_only = match value.as_ref() {
                "1" | "true" => true,
                "0" | "false" => false,
                other => {
                    return Err(UrlError(format!(
                        "{READ_ONLY_OPTION} takes 1 or 0, got {other:?}"
                    )));
                }
            };
        } else {
            rest.push((name.into_owned(), value.into_owned()));
        }
    }
    if url.query().is_some() {
        if rest.is_empty() {
            url.set_query(None);
        } else {
            url.query_pairs_mut().clear().extend_pairs(rest);
        }
    }
    Ok(RemoteTier {
        url: parse_supported(url.as_str())?,
        read_only,
    })
}

/// A chain, fastest first: one tier ([`parse_tier`]) or `[URL, URL, …]` (commas separate;
/// each URL may be quoted).
pub fn parse_chain(text: &str) -> Result<Vec<RemoteTier>, UrlError> {
    let text = text.trim();
    let Some(inner) = text.strip_prefix('[') else {
        return Ok(vec![parse_tier(text)?]);
    };
    let inner = inner
        .strip_suffix(']')
        .ok_or_else(|| UrlError("a list of tiers ends with ]: [URL, URL]".into()))?;
    let tiers = inner
        .split(',')
        .map(|item| item.trim().trim_matches(|c| c == '"' || c == '\''))
        .filter(|item| !item.is_empty())
        .enumerate()
        .map(|(i, item)| parse_tier(item).map_err(|e| UrlError(format!("tier {}: {e}", i + 1))))
        .collect::<Result<Vec<_>, _>>()?;
    if tiers.is_empty() {
        return Err(UrlError("the list of tiers is empty".into()));
    }
    Ok(tiers)
}

/// As [`parse`], and refuses a service this build does not include.
pub fn parse_supported(text: &str) -> Result<RemoteUrl, UrlError> {
    let url = parse(text)?;
    let feature = match url {
        RemoteUrl::S3(_) if !cfg!(feature = "remote-s3") => "remote-s3",
        RemoteUrl::Gcs(_) if !cfg!(feature = "remote-gcs") => "remote-gcs",
        _ => return Ok(url),
    };
    Err(UrlError(format!(
        "{}:// remotes are not in this build: rebuild with `cargo build --features {feature}`",
        url.service()
    )))
}

fn parse_redis(url: &Url) -> Result<RedisTarget, UrlError> {
    let host = match url.host_str() {
        Some(h) if !h.is_empty() => h.trim_start_matches('[').trim_end_matches(']'),
        _ => {
            return Err(UrlError(
                "a redis URL needs a host: redis://HOST:PORT/DB".into(),
            ));
        }
    };
    if url.query().is_some() || url.fragment().is_some() {
        return Err(UrlError(
            "a redis URL takes no query or fragment: redis://HOST:PORT/DB[/PREFIX]".into(),
        ));
    }
    let mut segments = path_segments(url)?;
    let db = if segments.is_empty() {
        0
    } else {
        let first = segments.remove(0);
        first
            .parse::<i64>()
            .ok()
            .filter(|n| (0..=1_000_000).contains(n))
            .ok_or_else(|| {
                UrlError(format!(
                    "expected a database number after the host (redis://HOST:PORT/DB), got {first:?}"
                ))
            })?
    };
    let prefix = if segments.is_empty() {
        DEFAULT_REDIS_PREFIX.to_owned()
    } else {
        segments.join("/")
    };
    let decode = |s: &str| -> Result<String, UrlError> {
        percent_decode(s)
            .ok_or_else(|| UrlError("the user name or password is not valid UTF-8".into()))
    };
    let username = (!url.username().is_empty())
        .then(|| decode(url.username()))
        .transpose()?;
    let password = url.password().map(decode).transpose()?;
    Ok(RedisTarget {
        host: host.to_owned(),
        port: url.port().unwrap_or(DEFAULT_REDIS_PORT),
        db,
        username,
        password,
        prefix,
    })
}

fn parse_bucket(url: &Url, allowed: &[&str]) -> Result<BucketTarget, UrlError> {
    let scheme = url.scheme();
    let bucket = match url.host_str() {
        Some(b) if !b.is_empty() => b.to_owned(),
        _ => {
            return Err(UrlError(format!(
                "a {scheme} URL needs a bucket: {scheme}://BUCKET/PREFIX"
            )));
        }
    };
    if !url.username().is_empty() || url.password().is_some() || url.port().is_some() {
        return Err(UrlError(format!(
            "a {scheme} URL takes no user, password or port; credentials come from the service's usual environment"
        )));
    }
    let prefix = path_segments(url)?.join("/");
    let mut options = Vec::new();
    for (name, value) in url.query_pairs() {
        if !allowed.contains(&name.as_ref()) {
            return Err(UrlError(format!(
                "unknown {scheme} option {name:?} (known: {})",
                allowed.join(", ")
            )));
        }
        if options.iter().any(|(n, _)| n == name.as_ref()) {
            return Err(UrlError(format!(
                "the {scheme} option {name:?} is given twice"
            )));
        }
        options.push((name.into_owned(), value.into_owned()));
    }
    Ok(BucketTarget {
        bucket,
        prefix,
        options,
    })
}

/// Non-empty path segments, percent-decoded; `.` and `..` refused (they would escape the prefix).
fn path_segments(url: &Url) -> Result<Vec<String>, UrlError> {
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

fn percent_decode(s: &str) -> Option<String> {
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

/// `text` with any `user:password@` part replaced by `***@`, for messages about a URL that did
/// not parse.
pub fn redact(text: &str) -> String {
    if let Some((scheme, rest)) = text.split_once("://")
        && let Some(at) = rest.find('@')
        && !rest[..at].contains('/')
    {
        return format!("{scheme}://***@{}", &rest[at + 1..]);
    }
    text.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redis(text: &str) -> RedisTarget {
        match parse(text).unwrap() {
            RemoteUrl::Redis(r) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn redis_forms() {
        let r = redis("redis://127.0.0.1:6380/2");
        assert_eq!((r.host.as_str(), r.port, r.db), ("127.0.0.1", 6380, 2));
        assert_eq!(r.prefix, DEFAULT_REDIS_PREFIX);
        let r = redis("redis://cache.example");
        assert_eq!((r.port, r.db), (6379, 0));
        let r = redis("redis://h:1/0/team/a");
        assert_eq!(r.prefix, "team/a");
        let r = redis("redis://alice:s%40cret@h:1/3");
        assert_eq!(r.username.as_deref(), Some("alice"));
        assert_eq!(r.password.as_deref(), Some("s@cret"));
        let r = redis("redis://[::1]:7000/1");
        assert_eq!(r.host, "::1");
    }

    #[test]
    fn display_hides_the_password() {
        let u = parse("redis://alice:hunter2@h:1/3/p").unwrap();
        assert_eq!(u.to_string(), "redis://alice:***@h:1/3/p");
        assert!(!format!("{u:?}").contains("hunter2"));
        assert_eq!(redact("redis://alice:hunter2@h:1/x"), "redis://***@h:1/x");
    }

    #[test]
    fn buckets() {
        let u = parse("s3://b/team/x?endpoint=http://127.0.0.1:9000&region=us-east-1").unwrap();
        let RemoteUrl::S3(b) = &u else { panic!() };
        assert_eq!((b.bucket.as_str(), b.prefix.as_str()), ("b", "team/x"));
        assert_eq!(b.options.len(), 2);
        let u = parse("gcs://b").unwrap();
        assert_eq!(u.to_string(), "gcs://b");
    }

    #[test]
    fn bad_urls_say_why() {
        for (text, needle) in [
            ("localhost:6379", "scheme"),
            ("redis://", "host"),
            ("redis://h:1/x", "database number"),
            ("redis://h:1/-1", "database number"),
            ("redis://h:1/0?x=1", "no query"),
            ("redis://h:99999/0", "not a URL"),
            ("rediss://h/0", "TLS"),
            ("http://h/0", "unsupported scheme"),
            ("s3:///x", "bucket"),
            ("s3://b/x?colour=red", "unknown s3 option"),
            ("s3://b/x?region=a&region=b", "twice"),
            ("gcs://u:p@b/x", "no user"),
            ("redis://h:1/0/a%2Fb", "not allowed"),
        ] {
            let e = parse(text).expect_err(text).to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn a_tier_may_be_read_only() {
        let t = parse_tier("redis://h:1/0/team?read_only=1").unwrap();
        assert!(t.read_only);
        assert_eq!(t.url.to_string(), "redis://h:1/0/team");
        assert_eq!(t.to_string(), "redis://h:1/0/team?read_only=1");
        assert_eq!(parse_tier(&t.to_string()).unwrap(), t, "shown as it parses");
        let t = parse_tier("redis://h:1/0?read_only=0").unwrap();
        assert!(!t.read_only);
        let e = parse_tier("redis://h:1/0?read_only=yes").unwrap_err();
        assert!(e.to_string().contains("1 or 0"), "{e}");
        let e = parse_tier("redis://h:1/0?read_only=1&x=2").unwrap_err();
        assert!(e.to_string().contains("no query"), "{e}");
    }

    #[test]
    fn a_chain_is_a_list_of_tiers() {
        let chain = parse_chain(" [redis://a:1/0, 'redis://b:2/0?read_only=1'] ").unwrap();
        let shown: Vec<String> = chain.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["redis://a:1/0", "redis://b:2/0?read_only=1"]);
        assert_eq!(parse_chain("redis://a:1/0").unwrap().len(), 1);
        for (text, needle) in [
            ("[]", "empty"),
            ("[redis://a:1/0", "ends with ]"),
            ("[redis://a:1/0, http://b]", "tier 2: unsupported scheme"),
        ] {
            let e = parse_chain(text).expect_err(text).to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
