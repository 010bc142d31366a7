//! How the Redis tier reaches its server: one server ([`redis::Client`]) or a cluster
//! ([`redis::cluster::ClusterClient`], which follows MOVED and ASK replies and learns the new
//! slot map after a failover), set up alike from a [`Target`] and the tier's credentials, and
//! a connection to either ([`Conn`]) that commands run on the same way.

use std::time::Duration;

use redis::cluster::{ClusterClient, ClusterClientBuilder, ClusterConnection};
use redis::{
    Client, ClientTlsConfig, ConnectionAddr, ConnectionInfo, ConnectionLike, IntoConnectionInfo,
    ProtocolVersion, RedisConnectionInfo, RedisResult, TlsCertificates, Value,
};

use super::redis_target::Target;
use crate::credentials::Credentials;

/// A cluster command that meets a dead node is tried once more (after the slot map is read
/// again), not the client's default 16 times: the breaker, not a retry loop, handles a tier
/// that is down.
const CLUSTER_RETRIES: u32 = 1;

/// The server or cluster a tier talks to; connects on demand.
#[derive(Clone)]
pub enum Server {
    One(Client),
    Cluster(ClusterClient),
}

/// A live connection to a [`Server`].
pub enum Conn {
    One(redis::Connection),
    /// Boxed: its node map is several times the size of one connection.
    Cluster(Box<ClusterConnection>),
}

impl Server {
    /// Sets up the client for `target`, the password given once (URL or `password`), TLS from
    /// the credentials' files; nothing is contacted. `Err` says why, naming no secret.
    pub fn new(
        target: &Target,
        credentials: &Credentials,
        timeout: Duration,
    ) -> Result<Server, String> {
        let password = match (&target.password, &credentials.password) {
            (Some(_), Some(file)) => {
                return Err(format!(
                    "a password is in the URL and in remote_password_file ({}): give it once, \
                     in the file",
                    file.path().display()
                ));
            }
            (Some(p), None) => Some(p.clone()),
            (None, Some(file)) => Some(file.text().to_owned()),
            (None, None) => None,
        };
        let mut settings = RedisConnectionInfo::default()
            .set_db(target.db)
            .set_protocol(ProtocolVersion::RESP2)
            // Two pipelined CLIENT SETINFO replies, each waited for and then ignored, would make
            // a stalled server cost two timeouts before the first real command.
            .set_skip_set_lib_name();
        if let Some(u) = &target.username {
            settings = settings.set_username(u);
        }
        if let Some(p) = &password {
            settings = settings.set_password(p);
        }
        let certificates = target.tls.then(|| tls_files(credentials)).transpose()?;
        let infos = target
            .nodes
            .iter()
            .map(|node| {
                let address = if target.tls {
                    ConnectionAddr::TcpTls {
                        host: node.host.clone(),
                        port: node.port,
                        insecure: false,
                        tls_params: None,
                    }
                } else {
                    ConnectionAddr::Tcp(node.host.clone(), node.port)
                };
                Ok(address
                    .into_connection_info()?
                    .set_redis_settings(settings.clone()))
            })
            .collect::<RedisResult<Vec<ConnectionInfo>>>()
            .map_err(|e| format!("cannot configure the connection: {e}"))?;
        let configured = |e: redis::RedisError| format!("cannot configure the connection: {e}");
        if !target.cluster {
            let info = infos.into_iter().next().ok_or("no server named")?;
            let client = match certificates {
                Some(certificates) => Client::build_with_tls(info, certificates),
                None => Client::open(info),
            };
            return client.map(Server::One).map_err(configured);
        }
        let mut builder = ClusterClientBuilder::new(infos)
            .connection_timeout(timeout)
            .response_timeout(timeout)
            .retries(CLUSTER_RETRIES)
            .use_protocol(ProtocolVersion::RESP2);
        if let Some(certificates) = certificates {
            builder = builder.certs(certificates);
        }
        builder.build().map(Server::Cluster).map_err(configured)
    }

    /// A connection, connecting (and for a cluster, reading its slot map) within `timeout`.
    pub fn connect(&self, timeout: Duration) -> RedisResult<Conn> {
        match self {
            Server::One(client) => client.get_connection_with_timeout(timeout).map(Conn::One),
            Server::Cluster(client) => client.get_connection().map(|c| Conn::Cluster(Box::new(c))),
        }
    }
}

impl Conn {
    /// Bounds each wait for a reply or a write by `left`.
    pub fn set_timeouts(&self, left: Duration) -> RedisResult<()> {
        match self {
            Conn::One(c) => {
                c.set_read_timeout(Some(left))?;
                c.set_write_timeout(Some(left))
            }
            Conn::Cluster(c) => {
                c.set_read_timeout(Some(left))?;
                c.set_write_timeout(Some(left))
            }
        }
    }

    fn inner(&mut self) -> &mut dyn ConnectionLike {
        match self {
            Conn::One(c) => c,
            Conn::Cluster(c) => c.as_mut(),
        }
    }
}

/// Commands run on either kind alike: a cluster routes each by its key's slot.
impl ConnectionLike for Conn {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        self.inner().req_packed_command(cmd)
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        self.inner().req_packed_commands(cmd, offset, count)
    }

    fn req_command(&mut self, cmd: &redis::Cmd) -> RedisResult<Value> {
        self.inner().req_command(cmd)
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::One(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }

    fn supports_pipelining(&self) -> bool {
        match self {
            Conn::One(c) => c.supports_pipelining(),
            Conn::Cluster(c) => c.supports_pipelining(),
        }
    }

    fn check_connection(&mut self) -> bool {
        self.inner().check_connection()
    }

    fn is_open(&self) -> bool {
        match self {
            Conn::One(c) => c.is_open(),
            Conn::Cluster(c) => c.is_open(),
        }
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
