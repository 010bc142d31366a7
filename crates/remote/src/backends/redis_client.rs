//! [`RedisClient`]: every command of the Redis tier, on one connection (the `redis` crate):
//! entries written and read (whole or in parts), their expiry refreshed, a quick PING, and the
//! compile lease — across hosts, one compiler per key while the remote is reachable (the local
//! `flock` does the same within one host):
//!
//! - acquire: `SET lease-key TOKEN NX PX ttl` (only if nobody holds it; expires by itself);
//! - renew: every ttl/3 while compiling, a thread runs "PEXPIRE if the value is still TOKEN";
//! - release: "DEL if the value is still TOKEN", so a holder whose lease expired and was taken
//!   by another host never deletes the new holder's lease.
//!
//! A holder that dies stops renewing; its lease expires after `ttl` and a waiter takes over.
//! TOKEN is `host:pid:nanos`, unique per acquisition and readable in "waiting for" messages.
//!
//! Latency: one call (connecting included) takes at most the remote timeout. A failure trips
//! the shared breaker, renewal included, and a lease is not released after a failure (it
//! expires by itself) nor is its renewer waited for, so a stalled server costs one timeout.

use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use redis::{
    Client, ClientTlsConfig, ConnectionAddr, IntoConnectionInfo, ProtocolVersion,
    RedisConnectionInfo, TlsCertificates,
};
use tracing::{debug, warn};

use url::Url;

use crate::backend::{Parsed, UrlError, path_segments, percent_decode};
use crate::breaker::Breaker;
use crate::credentials::Credentials;
use crate::error::{RemoteError, one_line};
use crate::tier::{Lease, LeaseAttempt, TierOptions};

/// Default key prefix inside a Redis database.
pub const DEFAULT_PREFIX: &str = "mlir-cache-key";
/// Redis's port when the URL names none.
pub const DEFAULT_PORT: u16 = 6379;

/// A Redis server, database and key prefix, as the URL names them.
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub db: i64,
    pub username: Option<String>,
    pub password: Option<String>,
    /// Keys are `PREFIX/…`; never empty, no leading or trailing `/`.
    pub prefix: String,
    /// `rediss://`: TLS, the server's certificate verified.
    pub tls: bool,
}

impl Target {
    pub fn parse(url: &Url) -> Result<Target, UrlError> {
        let host = match url.host_str() {
            Some(h) if !h.is_empty() => h.trim_start_matches('[').trim_end_matches(']'),
            _ => {
                return Err(UrlError(
                    "a redis URL needs a host: redis://HOST:PORT/DB (rediss:// with TLS)".into(),
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
            DEFAULT_PREFIX.to_owned()
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
        Ok(Target {
            host: host.to_owned(),
            port: url.port().unwrap_or(DEFAULT_PORT),
            db,
            username,
            password,
            prefix,
            tls: url.scheme() == "rediss",
        })
    }

    /// The prefix, and the URL as shown: port and database always, the prefix unless it is the
    /// default, the password as `***`.
    pub fn parsed(&self) -> Parsed {
        let mut shown = if self.tls { "rediss://" } else { "redis://" }.to_owned();
        match (&self.username, &self.password) {
            (Some(u), Some(_)) => shown += &format!("{u}:***@"),
            (None, Some(_)) => shown += ":***@",
            (Some(u), None) => shown += &format!("{u}@"),
            (None, None) => {}
        }
        if self.host.contains(':') {
            shown += &format!("[{}]", self.host);
        } else {
            shown += &self.host;
        }
        shown += &format!(":{}/{}", self.port, self.db);
        if self.prefix != DEFAULT_PREFIX {
            shown += &format!("/{}", self.prefix);
        }
        Parsed {
            prefix: self.prefix.clone(),
            shown,
        }
    }
}

/// A value is read in parts of this size (`RedisClient::get_parts`).
pub const PART_BYTES: usize = 1 << 20;

/// Renews the expiry of KEYS[1] to ARGV[2] ms if it still holds ARGV[1].
const RENEW: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
     return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end";
/// Deletes KEYS[1] if it still holds ARGV[1].
const RELEASE: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
     return redis.call('DEL', KEYS[1]) else return 0 end";

/// Writes get one more second per this many bytes beyond the base timeout.
const WRITE_BYTES_PER_SECOND: u64 = 64 << 20;

/// The Redis tier's connection and commands.
pub struct RedisClient {
    client: Client,
    remote: String,
    timeout: Duration,
    ttl: Duration,
    conn: Mutex<Option<redis::Connection>>,
    breaker: Arc<Breaker>,
}

// Not derived: the client's connection info holds the password.
impl std::fmt::Debug for RedisClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RedisClient({}, lease {:?})", self.remote, self.ttl)
    }
}

impl RedisClient {
    /// A coordinator for `target`; connects lazily.
    pub fn new(target: &Target, options: TierOptions) -> Result<RedisClient, RemoteError> {
        let TierOptions {
            shown: remote,
            timeout,
            lease: ttl,
            breaker,
            credentials,
            ..
        } = options;
        let mut settings = RedisConnectionInfo::default()
            .set_db(target.db)
            .set_protocol(ProtocolVersion::RESP2)
            // Two pipelined CLIENT SETINFO replies, each waited for and then ignored, would make a
            // stalled server cost two timeouts before the first real command.
            .set_skip_set_lib_name();
        if let Some(u) = &target.username {
            settings = settings.set_username(u);
        }
        let not_set_up = |reason: String| RemoteError::Setup {
            remote: remote.clone(),
            reason,
        };
        match (&target.password, &credentials.password) {
            (Some(_), Some(file)) => {
                return Err(not_set_up(format!(
                    "a password is in the URL and in remote_password_file ({}): give it once, \
                     in the file",
                    file.path().display()
                )));
            }
            (Some(p), None) => settings = settings.set_password(p),
            (None, Some(file)) => settings = settings.set_password(file.text()),
            (None, None) => {}
        }
        let setup = |op, source| RemoteError::Lease {
            op,
            remote: remote.clone(),
            source: Box::new(source),
        };
        let address = if target.tls {
            ConnectionAddr::TcpTls {
                host: target.host.clone(),
                port: target.port,
                insecure: false,
                tls_params: None,
            }
        } else {
            ConnectionAddr::Tcp(target.host.clone(), target.port)
        };
        let info = address
            .into_connection_info()
            .map_err(|e| setup("configure the connection", e))?
            .set_redis_settings(settings);
        let client = if target.tls {
            let certificates = tls_files(&credentials).map_err(not_set_up)?;
            Client::build_with_tls(info, certificates)
        } else {
            Client::open(info)
        }
        .map_err(|e| setup("configure the connection", e))?;
        Ok(RedisClient {
            client,
            remote,
            timeout,
            ttl: ttl.max(Duration::from_millis(300)),
            conn: Mutex::new(None),
            breaker,
        })
    }

    /// Tries to take the lease `key`: `Acquired` (held until the lease drops) or `Held` by
    /// another compiler (its token).
    pub fn try_acquire(&self, key: &str) -> Result<LeaseAttempt, RemoteError> {
        let token = new_token();
        let ttl_ms = millis(self.ttl);
        let set: Option<String> = self.run("take a compile lease", |c| {
            redis::cmd("SET")
                .arg(key)
                .arg(&token)
                .arg("NX")
                .arg("PX")
                .arg(ttl_ms)
                .query(c)
        })?;
        if set.is_none() {
            let holder: Option<String> = self.run("read a compile lease", |c| {
                redis::cmd("GET").arg(key).query(c)
            })?;
            return Ok(LeaseAttempt::Held(
                holder.unwrap_or_else(|| "(a lease that just ended)".to_owned()),
            ));
        }
        Ok(LeaseAttempt::Acquired(Box::new(RedisLease::start(
            Holder {
                client: self.client.clone(),
                remote: self.remote.clone(),
                key: key.to_owned(),
                token,
                timeout: self.timeout,
                breaker: self.breaker.clone(),
            },
            self.ttl,
        ))))
    }

    /// The token of whoever holds the lease `key`, if anyone (a read: read-only clients use it
    /// to wait for a compile in progress elsewhere instead of taking the lease).
    pub fn holder(&self, key: &str) -> Result<Option<String>, RemoteError> {
        self.run("read a compile lease", |c| {
            redis::cmd("GET").arg(key).query(c)
        })
    }

    /// Checks that the server answers: a refused connection fails at once here, not after a
    /// timeout.
    pub fn ping(&self) -> Result<(), RemoteError> {
        let _: String = self.run("reach the server", |c| redis::cmd("PING").query(c))?;
        Ok(())
    }

    /// The value at `key`, if any, in one `GET`. Each wait for the server is bounded by what is
    /// left of the timeout (a server that stops answering costs one timeout).
    pub fn get_value(&self, key: &str) -> Result<Option<Vec<u8>>, RemoteError> {
        self.run("read an entry", |c| redis::cmd("GET").arg(key).query(c))
    }

    /// The value at `key` in parts of [`PART_BYTES`], each handed to `part` as soon as it is
    /// parsed while the next ones are on their way. `STRLEN` goes out with the first part's
    /// `GETRANGE`, so a value of one part takes one round trip; the other parts' `GETRANGE`s
    /// are sent at once when the length is known. False when absent. Unlike one `GET`, the
    /// whole read is bounded by the timeout. Parts are not one atomic read: a value replaced
    /// meanwhile fails its checks, and the caller reads it again whole (`chain.rs`).
    pub fn get_parts(
        &self,
        key: &str,
        part: &mut dyn FnMut(Bytes) -> bool,
    ) -> Result<bool, RemoteError> {
        let start = Instant::now();
        let reply = |c: &mut redis::Connection| -> redis::RedisResult<redis::Value> {
            if start.elapsed() >= self.timeout {
                return Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into());
            }
            within(c, self.timeout, start)?;
            c.recv_response()
        };
        self.run_then("read an entry", |c| {
            let mut packed = Vec::new();
            redis::cmd("STRLEN")
                .arg(key)
                .write_packed_command(&mut packed);
            getrange(key, 0, PART_BYTES).write_packed_command(&mut packed);
            c.send_packed_command(&packed)?;
            let len: usize = redis::from_redis_value(reply(c)?)?;
            let first: Vec<u8> = redis::from_redis_value(reply(c)?)?;
            if len == 0 {
                return Ok((false, Keep::Connection));
            }
            let parts = len.div_ceil(PART_BYTES);
            if parts > 1 {
                packed.clear();
                for i in 1..parts {
                    let from = i * PART_BYTES;
                    getrange(key, from, PART_BYTES.min(len - from))
                        .write_packed_command(&mut packed);
                }
                c.send_packed_command(&packed)?;
            }
            // Replies still coming would be read as answers to later commands.
            let abandoned = if parts > 1 {
                Keep::Nothing
            } else {
                Keep::Connection
            };
            if !part(Bytes::from(first)) {
                return Ok((true, abandoned));
            }
            for _ in 1..parts {
                let bytes: Vec<u8> = redis::from_redis_value(reply(c)?)?;
                if !part(Bytes::from(bytes)) {
                    return Ok((true, Keep::Nothing));
                }
            }
            Ok((true, Keep::Connection))
        })
    }

    /// Stores `value` at `key`, living `expiry` (`None`: forever). A large value gets one more
    /// second of timeout per 64 MiB.
    pub fn put_value(
        &self,
        key: &str,
        value: &[u8],
        expiry: Option<Duration>,
    ) -> Result<(), RemoteError> {
        let extra = Duration::from_secs(value.len() as u64 / WRITE_BYTES_PER_SECOND);
        let timeout = self.timeout.saturating_add(extra);
        self.run_within("write an entry", timeout, |c| {
            let mut set = redis::cmd("SET");
            set.arg(key).arg(value);
            if let Some(expiry) = expiry {
                set.arg("PX").arg(millis(expiry));
            }
            set.query::<()>(c).map(|()| ((), Keep::Connection))
        })
    }

    /// Sets the expiry of `key` to `expiry` (a hit keeps a used entry alive, as the local
    /// cache's last use does).
    pub fn refresh_expiry(&self, key: &str, expiry: Duration) -> Result<(), RemoteError> {
        let _: i64 = self.run("refresh an entry's expiry", |c| {
            redis::cmd("PEXPIRE").arg(key).arg(millis(expiry)).query(c)
        })?;
        Ok(())
    }

    /// Runs `f` on the cached connection (connecting first if needed); a failed call drops the
    /// connection so the next one reconnects.
    fn run<T>(
        &self,
        op: &'static str,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, RemoteError> {
        self.run_then(op, |c| f(c).map(|v| (v, Keep::Connection)))
    }

    /// As [`RedisClient::run`]; `f` also says whether the connection can be used again.
    fn run_then<T>(
        &self,
        op: &'static str,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<(T, Keep)>,
    ) -> Result<T, RemoteError> {
        self.run_within(op, self.timeout, f)
    }

    /// As [`RedisClient::run_then`], bounded by `timeout` instead of the tier's.
    fn run_within<T>(
        &self,
        op: &'static str,
        timeout: Duration,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<(T, Keep)>,
    ) -> Result<T, RemoteError> {
        let err = |source| RemoteError::Lease {
            op,
            remote: self.remote.clone(),
            source: Box::new(source),
        };
        let start = Instant::now();
        let mut slot = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(connect(&self.client, self.timeout).map_err(err)?);
        }
        let Some(conn) = slot.as_mut() else {
            return Err(RemoteError::Setup {
                remote: self.remote.clone(),
                reason: "no connection".to_owned(),
            });
        };
        let result = within(conn, timeout, start).and_then(|()| f(conn));
        if !matches!(result, Ok((_, Keep::Connection))) {
            *slot = None;
        }
        result.map(|(v, _)| v).map_err(err)
    }
}

/// The CA to verify the server against (`None`: the system's roots) and the client's certificate
/// and key for mutual TLS, read from their files.
fn tls_files(credentials: &Credentials) -> Result<TlsCertificates, String> {
    let root_cert = credentials
        .ca_file
        .as_deref()
        .map(|f| Credentials::read_pem(f, "remote_ca_file"))
        .transpose()?;
    let client_tls = match (&credentials.cert_file, &credentials.key_file) {
        (Some(cert), Some(key)) => Some(ClientTlsConfig {
            client_cert: Credentials::read_pem(cert, "remote_cert_file")?,
            client_key: Credentials::read_pem(key, "remote_key_file")?,
        }),
        (None, None) => None,
        _ => {
            return Err("mutual TLS needs both remote_cert_file and remote_key_file".to_owned());
        }
    };
    Ok(TlsCertificates {
        client_tls,
        root_cert,
    })
}

/// Whether a connection is fit for the next command after a call.
enum Keep {
    Connection,
    /// Replies are still on their way: close it.
    Nothing,
}

fn connect(client: &Client, timeout: Duration) -> redis::RedisResult<redis::Connection> {
    client.get_connection_with_timeout(timeout)
}

/// `GETRANGE` of the `len` bytes of `key` from `from` (Redis takes the last byte's index).
fn getrange(key: &str, from: usize, len: usize) -> redis::Cmd {
    let mut cmd = redis::cmd("GETRANGE");
    cmd.arg(key).arg(from).arg(from + len - 1);
    cmd
}

/// Bounds the next command on `conn` by what is left of `timeout` since `start` (connecting
/// may have used some of it).
fn within(conn: &redis::Connection, timeout: Duration, start: Instant) -> redis::RedisResult<()> {
    let left = timeout
        .saturating_sub(start.elapsed())
        .max(Duration::from_millis(1));
    conn.set_read_timeout(Some(left))?;
    conn.set_write_timeout(Some(left))
}

/// What the holder of a lease needs to renew and release it.
#[derive(Clone)]
struct Holder {
    client: Client,
    remote: String,
    key: String,
    token: String,
    timeout: Duration,
    breaker: Arc<Breaker>,
}

impl Holder {
    /// Runs `script` on the lease (KEYS[1] = key, ARGV[1] = token, then `extra`) on `conn`
    /// (connecting first), all within one timeout; a failure trips the breaker.
    fn eval(
        &self,
        conn: &mut Option<redis::Connection>,
        script: &str,
        extra: Option<u64>,
    ) -> redis::RedisResult<i64> {
        let start = Instant::now();
        let result = (|| {
            if conn.is_none() {
                *conn = Some(connect(&self.client, self.timeout)?);
            }
            let Some(c) = conn.as_mut() else {
                unreachable!("connected above")
            };
            within(c, self.timeout, start)?;
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(script).arg(1).arg(&self.key).arg(&self.token);
            if let Some(v) = extra {
                cmd.arg(v);
            }
            cmd.query(c)
        })();
        if let Err(e) = &result {
            *conn = None;
            self.breaker.trip(&format!(
                "cannot keep the compile lease {}: {}",
                self.key,
                one_line(&e.to_string())
            ));
        }
        result
    }
}

/// A held lease; renewed in the background, released on drop.
pub struct RedisLease {
    holder: Holder,
    /// The breaker's failure count when acquired.
    trips: u64,
    ttl: Duration,
    stop: Option<mpsc::Sender<()>>,
}

impl std::fmt::Debug for RedisLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLease")
            .field("key", &self.holder.key)
            .field("token", &self.holder.token)
            .finish_non_exhaustive()
    }
}

impl RedisLease {
    fn start(holder: Holder, ttl: Duration) -> RedisLease {
        let (stop, stopped) = mpsc::channel::<()>();
        let renewer = holder.clone();
        let spawned = std::thread::Builder::new()
            .name("mck-lease".to_owned())
            .spawn(move || renew_until_stopped(&renewer, ttl, &stopped));
        if let Err(e) = spawned {
            warn!(
                "cannot start renewing the compile lease {} on {}: {e}; it expires in {ttl:?}",
                holder.key, holder.remote
            );
        }
        RedisLease {
            trips: holder.breaker.trips(),
            holder,
            ttl,
            stop: Some(stop),
        }
    }
}

impl Lease for RedisLease {
    fn key(&self) -> &str {
        &self.holder.key
    }
}

impl Drop for RedisLease {
    fn drop(&mut self) {
        // Stop the renewer without waiting for it: it may be stuck on a stalled server. A
        // renewal that lands after the release finds the token gone and does nothing.
        drop(self.stop.take());
        let h = &self.holder;
        if h.breaker.trips() != self.trips || h.breaker.check("release the lease").is_err() {
            debug!(
                "not releasing the compile lease {} on {}: the remote failed meanwhile; it expires within {:?}",
                h.key, h.remote, self.ttl
            );
            return;
        }
        match h.eval(&mut None, RELEASE, None) {
            Ok(_) => debug!("released the compile lease {} on {}", h.key, h.remote),
            // It expires by itself.
            Err(e) => debug!(
                "cannot release the compile lease {} on {}: {}",
                h.key,
                h.remote,
                one_line(&e.to_string())
            ),
        }
    }
}

fn renew_until_stopped(holder: &Holder, ttl: Duration, stopped: &mpsc::Receiver<()>) {
    let every = ttl / 3;
    let mut conn: Option<redis::Connection> = None;
    loop {
        match stopped.recv_timeout(every) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
        if holder.breaker.check("renew the lease").is_err() {
            continue; // this process uses the remote no more until the breaker half-opens
        }
        let renewed = holder.eval(&mut conn, RENEW, Some(millis(ttl)));
        // Released meanwhile: whatever the renewal said no longer matters.
        if !matches!(stopped.try_recv(), Err(TryRecvError::Empty)) {
            return;
        }
        match renewed {
            Ok(1) => {}
            Ok(_) => {
                warn!(
                    "lost the compile lease {} on {} (it expired); another host may compile the same key",
                    holder.key, holder.remote
                );
                return;
            }
            Err(e) => debug!(
                "cannot renew the compile lease {} on {}: {}",
                holder.key,
                holder.remote,
                one_line(&e.to_string())
            ),
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// `host:pid:nanos`: unique per acquisition, and says who holds a lease.
fn new_token() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown-host".to_owned());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{host}:{}:{nanos}", std::process::id())
}
