//! [`ObjectStore`]: a remote tier over an opendal operator (the storage layer sccache uses), one
//! object per entry holding the entry file's exact bytes (self-checksummed, so a reader verifies
//! what it gets as it would a local file): the tier of the bucket backends (`buckets.rs`).
//! opendal's API is async; one tokio runtime per process with
//! one worker thread drives every store, and every call is bounded by a timeout so a slow or
//! silent server costs at most that long. One runtime, not one per store: opendal's HTTP client
//! is process-wide, and a pooled connection is driven by the runtime that opened it, so a
//! second store on a runtime of its own waited on a connection nobody drove (two buckets in a
//! chain, two caches in one Python process) until its timeout.
//!
//! Expiry: buckets rely on their own lifecycle rules.
//!
//! A failure is one line naming the tier, the operation and the cause (`one_line`): opendal's
//! own text carries the request context and, for S3, the server's XML body.

use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use opendal::{ErrorKind, HttpTransporter, OperationContext, Operator};
use opendal_http_transport_reqwest::ReqwestTransport;

use crate::credentials::Credentials;
use crate::error::RemoteError;
use crate::tier::Tier;

/// Writes get one more second per this many bytes beyond the base timeout.
const WRITE_BYTES_PER_SECOND: u64 = 64 << 20;

/// Entries stored in an opendal service.
pub struct ObjectStore {
    runtime: &'static tokio::runtime::Runtime,
    op: Operator,
    remote: String,
    timeout: Duration,
}

// Not derived: opendal's and tokio's own Debug output says nothing a log reader needs.
impl std::fmt::Debug for ObjectStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ObjectStore({}, timeout {:?})",
            self.remote, self.timeout
        )
    }
}

impl ObjectStore {
    /// A tier over `build()`'s operator (nothing is contacted yet); `remote`: the tier as
    /// shown in messages. With TLS files in `credentials`, the operator's HTTPS trusts only the
    /// CA of `remote_ca_file` and presents the client certificate of `remote_cert_file`.
    pub fn open(
        remote: String,
        timeout: Duration,
        credentials: &Credentials,
        build: impl FnOnce() -> Result<Operator, opendal::Error>,
    ) -> Result<ObjectStore, RemoteError> {
        let setup = |reason: String| RemoteError::Setup {
            remote: remote.clone(),
            reason,
        };
        let runtime =
            shared_runtime().map_err(|e| setup(format!("cannot start the I/O runtime: {e}")))?;
        opendal::install_default();
        let mut op = build().map_err(|e| setup(one_line(&e)))?;
        if let Some(client) = https_client(credentials).map_err(setup)? {
            let transport = HttpTransporter::new(ReqwestTransport::new(client));
            op = op.with_context(OperationContext::new().with_http_transport(transport));
        }
        Ok(ObjectStore {
            runtime,
            op,
            remote,
            timeout,
        })
    }

    /// Runs `fut` to completion or until `limit`.
    fn bounded<T>(
        &self,
        op: &'static str,
        limit: Duration,
        fut: impl Future<Output = T>,
    ) -> Result<T, RemoteError> {
        self.runtime
            .block_on(async { tokio::time::timeout(limit, fut).await })
            .map_err(|_| RemoteError::Timeout {
                op,
                remote: self.remote.clone(),
                after: limit,
            })
    }

    fn service_error(&self, op: &'static str, source: opendal::Error) -> RemoteError {
        RemoteError::Service {
            op,
            remote: self.remote.clone(),
            source: Box::new(Cause(one_line(&source))),
        }
    }
}

impl Tier for ObjectStore {
    fn get(&self, path: &str) -> Result<Option<Bytes>, RemoteError> {
        let result = self.bounded("read an entry", self.timeout, self.op.read(path))?;
        match result {
            // No copy when the body came in one piece.
            Ok(buffer) => Ok(Some(buffer.to_bytes())),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(source) => Err(self.service_error("read an entry", source)),
        }
    }

    /// The body as it streams in (one GET), each piece handed on as it arrives; the whole read
    /// is bounded by the timeout, as `get` is.
    fn get_parts(
        &self,
        path: &str,
        part: &mut dyn FnMut(Bytes) -> bool,
    ) -> Result<bool, RemoteError> {
        let read = async {
            let mut body = self.op.reader(path).await?.into_stream(..).await?;
            while let Some(buffer) = body.next().await {
                for piece in buffer? {
                    if !part(piece) {
                        return Ok(true);
                    }
                }
            }
            Ok::<_, opendal::Error>(true)
        };
        match self.bounded("read an entry", self.timeout, read)? {
            Ok(found) => Ok(found),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(source) => Err(self.service_error("read an entry", source)),
        }
    }

    fn put(&self, path: &str, value: Vec<u8>) -> Result<(), RemoteError> {
        let extra = Duration::from_secs(value.len() as u64 / WRITE_BYTES_PER_SECOND);
        // Without a content type GCS (and its emulator) records a null one that opendal's own
        // reply parser then refuses.
        let write = async {
            self.op
                .write_with(path, value)
                .content_type("application/octet-stream")
                .await
        };
        self.bounded("write an entry", self.timeout.saturating_add(extra), write)?
            .map(|_| ())
            .map_err(|source| self.service_error("write an entry", source))
    }
}

/// An HTTP client for the TLS files of `credentials`; `None` when they name none (opendal's own
/// client then verifies servers against the system's roots).
fn https_client(credentials: &Credentials) -> Result<Option<reqwest::Client>, String> {
    if credentials.ca_file.is_none() && credentials.cert_file.is_none() {
        return Ok(None);
    }
    let mut builder = reqwest::Client::builder();
    if let Some(ca) = &credentials.ca_file {
        let pem = Credentials::read_pem(ca, "remote_ca_file")?;
        let certificates = reqwest::Certificate::from_pem_bundle(&pem)
            .map_err(|e| format!("the remote_ca_file {}: {e}", ca.display()))?;
        builder = builder.tls_certs_only(certificates);
    }
    match (&credentials.cert_file, &credentials.key_file) {
        (Some(cert), Some(key)) => {
            let mut pem = Credentials::read_pem(cert, "remote_cert_file")?;
            pem.extend_from_slice(&Credentials::read_pem(key, "remote_key_file")?);
            let identity = reqwest::Identity::from_pem(&pem)
                .map_err(|e| format!("the remote_cert_file {}: {e}", cert.display()))?;
            builder = builder.identity(identity);
        }
        (None, None) => {}
        _ => return Err("mutual TLS needs both remote_cert_file and remote_key_file".to_owned()),
    }
    builder
        .build()
        .map(Some)
        .map_err(|e| format!("cannot set up HTTPS: {e}"))
}

/// The process's runtime for opendal (see the module's comment). Per process id: a child
/// forked after the parent made one has no worker thread to drive it, so it gets its own (the
/// parent's copy is left alone).
fn shared_runtime() -> Result<&'static tokio::runtime::Runtime, String> {
    static RUNTIME: Mutex<Option<(u32, &'static tokio::runtime::Runtime)>> = Mutex::new(None);
    let mut slot = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    let pid = std::process::id();
    if let Some((owner, runtime)) = *slot
        && owner == pid
    {
        return Ok(runtime);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("mck-remote-io")
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    // Lives as long as the process: stores are opened and dropped at any time.
    let runtime: &'static tokio::runtime::Runtime = Box::leak(Box::new(runtime));
    *slot = Some((pid, runtime));
    Ok(runtime)
}

/// An operation's cause, already one line: the source of [`RemoteError::Service`], with no
/// source of its own (so no chain of nested errors is printed after it).
#[derive(Debug)]
struct Cause(String);

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Cause {}

/// Longest cause shown: enough for a server's own sentence, never a page of XML.
const CAUSE_CHARS: usize = 240;

/// `e` as one line: its kind, the server's code and message (S3's XML `<Code>`/`<Message>` when
/// the body is one) or opendal's message, and the innermost source (the network error), with
/// whitespace collapsed. Request context (URLs, headers) is left out: it can carry signed
/// query strings.
pub fn one_line(e: &opendal::Error) -> String {
    let message = e.message();
    let said = match (xml_field(message, "Code"), xml_field(message, "Message")) {
        (Some(code), Some(text)) => format!("{code}: {text}"),
        (Some(code), None) => code.to_owned(),
        _ => message.to_owned(),
    };
    let mut innermost = None;
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        innermost = Some(s.to_string());
        source = s.source();
    }
    let mut out = format!("{}", e.kind());
    for part in [Some(said), innermost].into_iter().flatten() {
        let part = part.split_whitespace().collect::<Vec<_>>().join(" ");
        if !part.is_empty() && !out.contains(&part) {
            out.push_str(": ");
            out.push_str(&part);
        }
    }
    if out.chars().count() > CAUSE_CHARS {
        out = out.chars().take(CAUSE_CHARS).collect::<String>() + "…";
    }
    out
}

/// The text of `<NAME>…</NAME>` in `xml`, if there is one.
fn xml_field<'a>(xml: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let start = xml.find(&open)? + open.len();
    let len = xml[start..].find(&format!("</{name}>"))?;
    Some(xml[start..start + len].trim()).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_is_one_line_with_the_servers_words_and_the_network_error() {
        let body = "<?xml version=\"1.0\"?>\n<Error>\n  <Code>AccessDenied</Code>\n  \
                    <Message>Forbidden: no such key</Message>\n  <Resource>/b/x</Resource>\n</Error>";
        let e = opendal::Error::new(ErrorKind::PermissionDenied, body)
            .with_context("uri", "http://h/b/x?X-Amz-Signature=secret")
            .set_source(std::io::Error::other("connection reset\nby peer"));
        let line = one_line(&e);
        assert_eq!(
            line,
            "PermissionDenied: AccessDenied: Forbidden: no such key: connection reset by peer"
        );
        let plain = opendal::Error::new(ErrorKind::Unexpected, "send   failed\n");
        assert_eq!(one_line(&plain), "Unexpected: send failed");
        let long = opendal::Error::new(ErrorKind::Unexpected, "x ".repeat(500));
        assert!(one_line(&long).chars().count() <= CAUSE_CHARS + 1);
    }
}
