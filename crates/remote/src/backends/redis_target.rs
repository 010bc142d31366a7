//! Where a Redis tier lives, as its URL names it ([`Target`]):
//!
//! - one server: `redis://[USER[:PASSWORD]@]HOST[:PORT][/DB[/PREFIX…]]` (`rediss://` with TLS);
//! - a cluster: `redis-cluster://[USER[:PASSWORD]@]HOST:PORT[,HOST:PORT…][/PREFIX…]`
//!   (`rediss-cluster://` with TLS). The nodes listed are seeds: the client learns the others,
//!   and which holds which slot, from them. A cluster has one database, so the path is the
//!   prefix alone. `tier_url.rs` carries the seeds after the first as `node=HOST:PORT` query
//!   options (a URL's host holds one); that form is accepted as written too.

use url::Url;

use crate::backend::{NODE_OPTION, Parsed, UrlError, path_segments, percent_decode};

/// Default key prefix inside a Redis database.
pub const DEFAULT_PREFIX: &str = "mlir-cache-key";
/// Redis's port when the URL names none.
pub const DEFAULT_PORT: u16 = 6379;
/// At most this many seed nodes: a cluster is found from a few.
const MAX_SEEDS: usize = 64;

/// A Redis server (or a cluster's seed nodes), database and key prefix, as the URL names them.
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    /// The server, or a cluster's seed nodes (at least one).
    pub nodes: Vec<Node>,
    pub db: i64,
    pub username: Option<String>,
    pub password: Option<String>,
    /// Keys are `PREFIX/…`; never empty, no leading or trailing `/`.
    pub prefix: String,
    /// `rediss://`, `rediss-cluster://`: TLS, the server's certificate verified.
    pub tls: bool,
    /// `redis-cluster://`: slots spread over nodes; an entry and its lease share one.
    pub cluster: bool,
}

/// One server's address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub host: String,
    pub port: u16,
}

impl std::fmt::Display for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl Target {
    pub fn parse(url: &Url) -> Result<Target, UrlError> {
        let cluster = url.scheme().ends_with("-cluster");
        let form = if cluster {
            "redis-cluster://HOST:PORT[,HOST:PORT…][/PREFIX]"
        } else {
            "redis://HOST:PORT/DB[/PREFIX]"
        };
        let Some(host) = url.host_str().filter(|h| !h.is_empty()) else {
            return Err(UrlError(format!("a redis URL needs a host: {form}")));
        };
        let mut nodes = vec![Node {
            host: unbracket(host).to_owned(),
            port: url.port().unwrap_or(DEFAULT_PORT),
        }];
        for (name, value) in url.query_pairs() {
            if cluster && name == NODE_OPTION {
                nodes.push(parse_node(&value)?);
            } else {
                return Err(UrlError(format!(
                    "a redis URL takes no query option {name:?}: {form}"
                )));
            }
        }
        if url.fragment().is_some() {
            return Err(UrlError(format!("a redis URL takes no fragment: {form}")));
        }
        if nodes.len() > MAX_SEEDS {
            return Err(UrlError(format!(
                "{} seed nodes; a cluster is found from at most {MAX_SEEDS}",
                nodes.len()
            )));
        }
        let mut segments = path_segments(url)?;
        let db = if cluster || segments.is_empty() {
            0
        } else {
            let first = segments.remove(0);
            first
                .parse::<i64>()
                .ok()
                .filter(|n| (0..=1_000_000).contains(n))
                .ok_or_else(|| {
                    UrlError(format!(
                        "expected a database number after the host ({form}), got {first:?}"
                    ))
                })?
        };
        let prefix = if segments.is_empty() {
            DEFAULT_PREFIX.to_owned()
        } else {
            segments.join("/")
        };
        // A brace in the prefix would become every key's hash tag: one slot for the whole cache.
        if cluster && prefix.contains(['{', '}']) {
            return Err(UrlError(format!(
                "a cluster's prefix may not hold {{ or }} (they pick a key's slot), got {prefix:?}"
            )));
        }
        let decode = |s: &str| -> Result<String, UrlError> {
            percent_decode(s)
                .ok_or_else(|| UrlError("the user name or password is not valid UTF-8".into()))
        };
        let username = (!url.username().is_empty())
            .then(|| decode(url.username()))
            .transpose()?;
        let password = url.password().map(decode).transpose()?;
        Ok(Target {
            nodes,
            db,
            username,
            password,
            prefix,
            tls: url.scheme().starts_with("rediss"),
            cluster,
        })
    }

    /// The prefix, and the URL as shown: every node with its port, the database (one server),
    /// the prefix unless it is the default, the password as `***`.
    pub fn parsed(&self) -> Parsed {
        let scheme = match (self.tls, self.cluster) {
            (false, false) => "redis",
            (true, false) => "rediss",
            (false, true) => "redis-cluster",
            (true, true) => "rediss-cluster",
        };
        let mut shown = format!("{scheme}://");
        match (&self.username, &self.password) {
            (Some(u), Some(_)) => shown += &format!("{u}:***@"),
            (None, Some(_)) => shown += ":***@",
            (Some(u), None) => shown += &format!("{u}@"),
            (None, None) => {}
        }
        let nodes: Vec<String> = self.nodes.iter().map(Node::to_string).collect();
        shown += &nodes.join(",");
        if !self.cluster {
            shown += &format!("/{}", self.db);
        }
        if self.prefix != DEFAULT_PREFIX {
            shown += &format!("/{}", self.prefix);
        }
        Parsed {
            prefix: self.prefix.clone(),
            shown,
        }
    }
}

fn unbracket(host: &str) -> &str {
    host.trim_start_matches('[').trim_end_matches(']')
}

/// `HOST:PORT` or `[V6]:PORT`, a seed node.
fn parse_node(text: &str) -> Result<Node, UrlError> {
    let bad = || UrlError(format!("expected a seed node as HOST:PORT, got {text:?}"));
    let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
    let host = unbracket(host);
    if host.is_empty() || host.contains(['/', '@', '?', '#', ',']) {
        return Err(bad());
    }
    Ok(Node {
        host: host.to_owned(),
        port: port.parse().map_err(|_| bad())?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(text: &str) -> Result<Target, UrlError> {
        Target::parse(&Url::parse(text).unwrap())
    }

    fn node(host: &str, port: u16) -> Node {
        Node {
            host: host.to_owned(),
            port,
        }
    }

    #[test]
    fn one_server() {
        let r = target("redis://127.0.0.1:6380/2").unwrap();
        assert_eq!((r.nodes.clone(), r.db), (vec![node("127.0.0.1", 6380)], 2));
        assert_eq!(r.prefix, DEFAULT_PREFIX);
        assert!(!r.cluster && !r.tls);
        let r = target("redis://cache.example").unwrap();
        assert_eq!((r.nodes[0].port, r.db), (6379, 0));
        assert_eq!(r.parsed().shown, "redis://cache.example:6379/0");
        assert_eq!(target("redis://h:1/0/team/a").unwrap().prefix, "team/a");
        let r = target("redis://alice:s%40cret@h:1/3").unwrap();
        assert_eq!(r.username.as_deref(), Some("alice"));
        assert_eq!(r.password.as_deref(), Some("s@cret"));
        let r = target("redis://[::1]:7000/1").unwrap();
        assert_eq!(r.nodes[0].host, "::1");
        assert_eq!(r.parsed().shown, "redis://[::1]:7000/1");
        assert!(target("rediss://h:1/0").unwrap().tls);
    }

    #[test]
    fn one_server_takes_no_seeds() {
        let e = target("redis://h:1/0?node=h:2").err().expect("refused");
        assert!(e.0.contains("no query option \"node\""), "{e}");
    }

    #[test]
    fn a_cluster_has_seeds_and_no_database() {
        let r = target("redis-cluster://:pw@h1:7000/team/a?node=h2:7001&node=[::1]:7002").unwrap();
        assert!(r.cluster && !r.tls);
        assert_eq!(
            r.nodes,
            vec![node("h1", 7000), node("h2", 7001), node("::1", 7002)]
        );
        assert_eq!((r.db, r.prefix.as_str()), (0, "team/a"));
        assert_eq!(
            r.parsed().shown,
            "redis-cluster://:***@h1:7000,h2:7001,[::1]:7002/team/a"
        );
        let r = target("rediss-cluster://h1:7000").unwrap();
        assert!(r.cluster && r.tls);
        assert_eq!(r.parsed().shown, "rediss-cluster://h1:7000");
    }

    #[test]
    fn bad_cluster_urls_say_why() {
        for (url, why) in [
            ("redis-cluster://h1:7000?node=h2", "HOST:PORT"),
            ("redis-cluster://h1:7000?node=h2:x", "HOST:PORT"),
            ("redis-cluster://h1:7000?node=:1", "HOST:PORT"),
            ("redis-cluster://h1:7000?other=1", "no query option"),
            ("redis-cluster://h1:7000/a{b}", "may not hold"),
        ] {
            let e = target(url).err().expect(url);
            assert!(e.0.contains(why), "{url}: {e}");
        }
        let many: Vec<String> = (0..MAX_SEEDS).map(|i| format!("node=h:{i}")).collect();
        let e = target(&format!("redis-cluster://h:1?{}", many.join("&")))
            .err()
            .expect("refused");
        assert!(e.0.contains("at most"), "{e}");
    }
}
