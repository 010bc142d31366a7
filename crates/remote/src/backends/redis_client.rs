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
use redis::cluster::{ClusterConnection, cluster_pipe};
use tracing::{debug, warn};

use super::redis_conn::{Conn, Server};
use super::redis_target::Target;
use crate::breaker::Breaker;
use crate::error::{RemoteError, one_line};
use crate::tier::{Lease, LeaseAttempt, TierOptions};

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
    client: Server,
    remote: String,
    timeout: Duration,
    ttl: Duration,
    conn: Mutex<Option<Conn>>,
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
        let client =
            Server::new(target, &credentials, timeout).map_err(|reason| RemoteError::Setup {
                remote: remote.clone(),
                reason,
            })?;
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
        let timeout = self.timeout;
        self.run_then("read an entry", |c| match c {
            Conn::One(c) => stream_parts(c, key, part, timeout, start),
            Conn::Cluster(c) => batch_parts(c, key, part, timeout, start),
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
        f: impl FnOnce(&mut Conn) -> redis::RedisResult<T>,
    ) -> Result<T, RemoteError> {
        self.run_then(op, |c| f(c).map(|v| (v, Keep::Connection)))
    }

    /// As [`RedisClient::run`]; `f` also says whether the connection can be used again.
    fn run_then<T>(
        &self,
        op: &'static str,
        f: impl FnOnce(&mut Conn) -> redis::RedisResult<(T, Keep)>,
    ) -> Result<T, RemoteError> {
        self.run_within(op, self.timeout, f)
    }

    /// As [`RedisClient::run_then`], bounded by `timeout` instead of the tier's.
    fn run_within<T>(
        &self,
        op: &'static str,
        timeout: Duration,
        f: impl FnOnce(&mut Conn) -> redis::RedisResult<(T, Keep)>,
    ) -> Result<T, RemoteError> {
        let err = |source| RemoteError::Lease {
            op,
            remote: self.remote.clone(),
            source: Box::new(source),
        };
        let start = Instant::now();
        let mut slot = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(self.client.connect(self.timeout).map_err(err)?);
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

/// Whether a connection is fit for the next command after a call.
enum Keep {
    Connection,
    /// Replies are still on their way: close it.
    Nothing,
}

/// [`RedisClient::get_parts`] on one server: every `GETRANGE` sent before the first reply is
/// read, each part handed on as soon as it is parsed.
fn stream_parts(
    c: &mut redis::Connection,
    key: &str,
    part: &mut dyn FnMut(Bytes) -> bool,
    timeout: Duration,
    start: Instant,
) -> redis::RedisResult<(bool, Keep)> {
    let reply = |c: &mut redis::Connection| -> redis::RedisResult<redis::Value> {
        if start.elapsed() >= timeout {
            return Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into());
        }
        c.set_read_timeout(Some(left(timeout, start)))?;
        c.set_write_timeout(Some(left(timeout, start)))?;
        c.recv_response()
    };
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
            getrange(key, from, PART_BYTES.min(len - from)).write_packed_command(&mut packed);
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
}

/// A cluster's connection sends one request and reads its replies (no commands in flight
/// between calls), so parts go in pipelines of this many, each to the node of the key's slot.
const CLUSTER_BATCH_PARTS: usize = 8;

/// [`RedisClient::get_parts`] on a cluster: `STRLEN` with the first part, then the rest in
/// batches; the whole read within `timeout`.
fn batch_parts(
    c: &mut ClusterConnection,
    key: &str,
    part: &mut dyn FnMut(Bytes) -> bool,
    timeout: Duration,
    start: Instant,
) -> redis::RedisResult<(bool, Keep)> {
    let (len, first): (usize, Vec<u8>) = cluster_pipe()
        .add_command(redis::cmd("STRLEN").arg(key).to_owned())
        .add_command(getrange(key, 0, PART_BYTES))
        .query(c)?;
    if len == 0 {
        return Ok((false, Keep::Connection));
    }
    if !part(Bytes::from(first)) {
        return Ok((true, Keep::Connection));
    }
    let rest: Vec<usize> = (1..len.div_ceil(PART_BYTES)).collect();
    for batch in rest.chunks(CLUSTER_BATCH_PARTS) {
        if start.elapsed() >= timeout {
            return Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into());
        }
        c.set_read_timeout(Some(left(timeout, start)))?;
        c.set_write_timeout(Some(left(timeout, start)))?;
        let mut pipe = cluster_pipe();
        for i in batch {
            let from = i * PART_BYTES;
            pipe.add_command(getrange(key, from, PART_BYTES.min(len - from)));
        }
        let values: Vec<Vec<u8>> = pipe.query(c)?;
        for value in values {
            if !part(Bytes::from(value)) {
                return Ok((true, Keep::Connection));
            }
        }
    }
    Ok((true, Keep::Connection))
}

/// `GETRANGE` of the `len` bytes of `key` from `from` (Redis takes the last byte's index).
fn getrange(key: &str, from: usize, len: usize) -> redis::Cmd {
    let mut cmd = redis::cmd("GETRANGE");
    cmd.arg(key).arg(from).arg(from + len - 1);
    cmd
}

/// Bounds the next command on `conn` by what is left of `timeout` since `start` (connecting
/// may have used some of it).
fn within(conn: &Conn, timeout: Duration, start: Instant) -> redis::RedisResult<()> {
    conn.set_timeouts(left(timeout, start))
}

/// What is left of `timeout` since `start`; never zero (which would mean "no bound").
fn left(timeout: Duration, start: Instant) -> Duration {
    timeout
        .saturating_sub(start.elapsed())
        .max(Duration::from_millis(1))
}

/// What the holder of a lease needs to renew and release it.
#[derive(Clone)]
struct Holder {
    client: Server,
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
        conn: &mut Option<Conn>,
        script: &str,
        extra: Option<u64>,
    ) -> redis::RedisResult<i64> {
        let start = Instant::now();
        let result = (|| {
            if conn.is_none() {
                *conn = Some(self.client.connect(self.timeout)?);
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
    let mut conn: Option<Conn> = None;
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
