//! Where a tier lives, as the settings carry it: a URL whose scheme picks a backend from the
//! scheme table (`schemes.rs`), checked by that backend when it is parsed — so a bad URL is a
//! usage error at startup, naming the flag and where it came from, never a silent fallback —
//! and shown in messages with its password replaced by `***`.
//!
//! A chain holds several tiers ([`RemoteTier`]), fastest first: one `--remote` per tier, or
//! `[URL, URL, …]` in one value (the configuration file's `remote = [redis://…, s3://…]`);
//! `read_only=1` in a tier's query (`redis://h:6379/0?read_only=1`) makes that one tier
//! read-only, and is taken out before the backend sees the URL. A cluster's URL lists its seed
//! nodes in the authority (`redis-cluster://h1:7000,h2:7001/PREFIX`), which a URL's host cannot
//! hold: the nodes after the first become `node=HOST:PORT` query options ([`seeds_in_query`]).

use std::borrow::Cow;
use std::fmt;

use url::Url;

use crate::backend::{Backend, NODE_OPTION, Parsed, UrlError};
use crate::schemes;

/// The query option that makes one tier of a chain read-only.
pub const READ_ONLY_OPTION: &str = "read_only";

/// A tier's URL, checked by its backend.
#[derive(Clone)]
pub struct TierUrl {
    url: Url,
    backend: &'static Backend,
    parsed: Parsed,
}

impl TierUrl {
    /// Parses `text` and has the backend its scheme names check it (nothing is contacted).
    pub fn parse(text: &str) -> Result<TierUrl, UrlError> {
        let url = Url::parse(&seeds_in_query(text.trim()))
            .map_err(|e| UrlError(format!("not a URL ({e}); expected {}", schemes::forms())))?;
        let backend = schemes::find(url.scheme())?;
        let parsed = (backend.parse)(&url)?;
        Ok(TierUrl {
            url,
            backend,
            parsed,
        })
    }

    /// The URL as given (password included: for the backend that connects, never for messages).
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The backend's name (its first scheme).
    pub fn service(&self) -> &'static str {
        self.backend.schemes[0]
    }

    /// Whether this backend's tier takes compile leases (one compile per key across hosts).
    pub fn leases(&self) -> bool {
        self.backend.leases
    }

    /// The key (object path) prefix every entry and lease lives under.
    pub fn prefix(&self) -> &str {
        &self.parsed.prefix
    }

    pub(crate) fn backend(&self) -> &'static Backend {
        self.backend
    }
}

impl PartialEq for TierUrl {
    fn eq(&self, other: &Self) -> bool {
        self.url == other.url
    }
}

impl Eq for TierUrl {}

impl fmt::Display for TierUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.parsed.shown)
    }
}

impl fmt::Debug for TierUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TierUrl({self})")
    }
}

impl serde::Serialize for TierUrl {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One tier of the chain: where it lives and whether this host may write to it.
#[derive(Clone, PartialEq, Eq, serde::Serialize)]
pub struct RemoteTier {
    pub url: TierUrl,
    /// `read_only=1` in its URL: read it, never write to it (nor take its leases).
    pub read_only: bool,
}

impl RemoteTier {
    /// A writable tier.
    pub fn writable(url: TierUrl) -> RemoteTier {
        RemoteTier {
            url,
            read_only: false,
        }
    }
}

/// As written in the configuration file: the URL (password redacted) and its read-only mark.
impl fmt::Display for RemoteTier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = self.url.to_string();
        f.write_str(&shown)?;
        if self.read_only {
            let joiner = if shown.contains('?') { '&' } else { '?' };
            write!(f, "{joiner}{READ_ONLY_OPTION}=1")?;
        }
        Ok(())
    }
}

impl fmt::Debug for RemoteTier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RemoteTier({self})")
    }
}

/// One tier: a URL as [`TierUrl::parse`] takes it, with an optional `read_only=1` (or `true`,
/// `0`, `false`) among its query options.
pub fn parse_tier(text: &str) -> Result<RemoteTier, UrlError> {
    let Ok(mut url) = Url::parse(&seeds_in_query(text.trim())) else {
        return TierUrl::parse(text).map(RemoteTier::writable); // the error says why
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
        url: TierUrl::parse(url.as_str())?,
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
    let tiers = split_tiers(inner)
        .into_iter()
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

/// The items of a list of tiers: a comma ends one where the next begins with a scheme
/// (`redis://…`) or a quote, so a cluster's `h1:7000,h2:7001` stays in one item.
fn split_tiers(inner: &str) -> Vec<&str> {
    let starts_tier = |rest: &str| {
        let rest = rest.trim_start();
        if rest.starts_with(['"', '\'']) {
            return true;
        }
        let Some((scheme, _)) = rest.split_once("://") else {
            return false;
        };
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    };
    let mut items = Vec::new();
    let mut from = 0;
    for (comma, _) in inner.match_indices(',') {
        if starts_tier(&inner[comma + 1..]) {
            items.push(&inner[from..comma]);
            from = comma + 1;
        }
    }
    items.push(&inner[from..]);
    items
}

/// `text` with the seed nodes after the first in its authority (`h1:7000,h2:7001`) moved to
/// `node=HOST:PORT` query options; unchanged when it lists one host.
pub fn seeds_in_query(text: &str) -> Cow<'_, str> {
    let Some((scheme, rest)) = text.split_once("://") else {
        return Cow::Borrowed(text);
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (user, hosts) = match authority.rfind('@') {
        Some(at) => authority.split_at(at + 1),
        None => ("", authority),
    };
    let Some((first, others)) = hosts.split_once(',') else {
        return Cow::Borrowed(text);
    };
    let (before_fragment, fragment) = match tail.find('#') {
        Some(hash) => tail.split_at(hash),
        None => (tail, ""),
    };
    let (path, query) = match before_fragment.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (before_fragment, None),
    };
    let mut options: Vec<String> = others
        .split(',')
        .map(|node| format!("{NODE_OPTION}={node}"))
        .collect();
    options.extend(query.filter(|q| !q.is_empty()).map(str::to_owned));
    Cow::Owned(format!(
        "{scheme}://{user}{first}{path}?{}{fragment}",
        options.join("&")
    ))
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

    #[test]
    fn rediss_is_redis_over_tls() {
        let u = TierUrl::parse("rediss://alice@cache.example/2/team").unwrap();
        assert_eq!(u.to_string(), "rediss://alice@cache.example:6379/2/team");
        assert!(u.leases());
    }

    #[test]
    fn display_hides_the_password() {
        let u = TierUrl::parse("redis://alice:hunter2@h:1/3/p").unwrap();
        assert_eq!(u.to_string(), "redis://alice:***@h:1/3/p");
        assert!(!format!("{u:?}").contains("hunter2"));
        assert_eq!(redact("redis://alice:hunter2@h:1/x"), "redis://***@h:1/x");
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
            ("http://h/0", "unsupported scheme"),
            ("redis://h:1/0/a%2Fb", "not allowed"),
        ] {
            let e = TierUrl::parse(text).expect_err(text).to_string();
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

    #[test]
    fn a_cluster_lists_its_seed_nodes() {
        let t =
            parse_tier("redis-cluster://:pw@h1:7000,h2:7001,[::1]:7002/team?read_only=1").unwrap();
        assert!(t.read_only && t.url.leases());
        assert_eq!(t.url.service(), "redis-cluster");
        assert_eq!(t.url.prefix(), "team");
        let shown = "redis-cluster://:***@h1:7000,h2:7001,[::1]:7002/team?read_only=1";
        assert_eq!(t.to_string(), shown);
        assert_eq!(
            seeds_in_query("rediss-cluster://u:p@h1:1,h2:2/x?read_only=1#f"),
            "rediss-cluster://u:p@h1:1/x?node=h2:2&read_only=1#f"
        );
        assert_eq!(seeds_in_query("redis://h:1/0"), "redis://h:1/0");
        let chain = parse_chain("[redis-cluster://a:1,b:2/p, 'redis://c:3/0', s3://bucket/x]");
        let shown: Vec<String> = chain.unwrap().iter().map(ToString::to_string).collect();
        assert_eq!(shown[..2], ["redis-cluster://a:1,b:2/p", "redis://c:3/0"]);
        let e = parse_tier("redis://a:1,b:2/0").unwrap_err().to_string();
        assert!(e.contains("no query option \"node\""), "{e}");
    }
}
