//! TLS (rustls, ring provider) and the shared secret, for nodes and clients; off unless
//! configured. With TLS every listener serves HTTPS and every outgoing request (Raft RPCs,
//! snapshots, client calls) verifies the server's certificate against the given CA; with
//! mutual TLS a node also demands a client certificate signed by that CA, and presents its own
//! on its outgoing requests. With a shared secret every request must carry it in the
//! [`SECRET_HEADER`] header, else it is answered HTTP 401 before any route (and so Raft) sees it.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;

/// The header carrying the shared secret.
pub const SECRET_HEADER: &str = "x-siftdb-secret";

/// What a node or client was told on its command line.
#[derive(Debug, Clone, Default)]
pub struct SecurityOptions {
    /// PEM certificate chain: the node's server certificate (and, under mTLS, its client one);
    /// for a client, its client certificate under mTLS.
    pub cert: Option<PathBuf>,
    /// PEM private key of `cert`.
    pub key: Option<PathBuf>,
    /// PEM CA certificate(s) that servers (and, under mTLS, clients) must chain to.
    pub ca: Option<PathBuf>,
    /// Mutual TLS: nodes demand client certificates signed by `ca`.
    pub mtls: bool,
    /// A file holding the shared secret (surrounding whitespace is not part of it).
    pub secret_file: Option<PathBuf>,
}

/// A start-up configuration refused: what is wrong, naming the flag or file.
#[derive(Debug)]
pub enum SecurityError {
    /// A flag needs another one: `(given, missing)`.
    Missing(&'static str, &'static str),
    /// A file could not be read.
    Read {
        /// Which flag named it.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file was read but does not hold what it must.
    Invalid {
        /// Which flag named it.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

impl fmt::Display for SecurityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecurityError::Missing(given, missing) => write!(f, "{given} needs {missing}"),
            SecurityError::Read { flag, path, source } => {
                write!(f, "{flag} {}: cannot read: {source}", path.display())
            }
            SecurityError::Invalid { flag, path, why } => {
                write!(f, "{flag} {}: {why}", path.display())
            }
        }
    }
}

impl std::error::Error for SecurityError {}

/// The TLS and secret settings in force, ready to use.
#[derive(Clone, Default)]
pub struct Security {
    /// The server side of a node; `None`: plain HTTP.
    pub server: Option<Arc<rustls::ServerConfig>>,
    /// The client side (outgoing requests); `None`: plain HTTP.
    pub client: Option<Arc<rustls::ClientConfig>>,
    /// The shared secret every request carries and every node demands.
    pub secret: Option<Arc<str>>,
}

impl fmt::Debug for Security {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Security")
            .field("tls_server", &self.server.is_some())
            .field("tls_client", &self.client.is_some())
            .field("secret", &self.secret.as_ref().map(|_| "(set)"))
            .finish()
    }
}

impl Security {
    /// `https` with TLS, else `http`.
    pub fn scheme(&self) -> &'static str {
        if self.client.is_some() {
            "https"
        } else {
            "http"
        }
    }

    /// An HTTP client that verifies servers as configured and sends the secret.
    pub fn http_client(&self) -> reqwest::Client {
        let mut b = reqwest::Client::builder();
        if let Some(c) = &self.client {
            b = b.use_preconfigured_tls((**c).clone());
        }
        if let Some(s) = &self.secret {
            let mut h = reqwest::header::HeaderMap::new();
            let mut v = reqwest::header::HeaderValue::from_str(s)
                .expect("a secret was checked to be a valid header value");
            v.set_sensitive(true);
            h.insert(SECRET_HEADER, v);
            b = b.default_headers(h);
        }
        b.build().expect("the HTTP client builds")
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read(flag: &'static str, path: &Path) -> Result<Vec<u8>, SecurityError> {
    std::fs::read(path).map_err(|source| SecurityError::Read { flag, path: path.into(), source })
}

fn invalid(flag: &'static str, path: &Path, why: impl fmt::Display) -> SecurityError {
    SecurityError::Invalid { flag, path: path.into(), why: why.to_string() }
}

fn certs(flag: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, SecurityError> {
    let pem = read(flag, path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(flag, path, format!("not PEM certificates: {e}")))?;
    if certs.is_empty() {
        return Err(invalid(flag, path, "holds no PEM certificate"));
    }
    Ok(certs)
}

fn key(flag: &'static str, path: &Path) -> Result<PrivateKeyDer<'static>, SecurityError> {
    let pem = read(flag, path)?;
    PrivateKeyDer::from_pem_slice(&pem)
        .map_err(|e| invalid(flag, path, format!("holds no PEM private key: {e}")))
}

fn roots(path: &Path) -> Result<rustls::RootCertStore, SecurityError> {
    let mut roots = rustls::RootCertStore::empty();
    for c in certs("--tls-ca", path)? {
        roots.add(c).map_err(|e| invalid("--tls-ca", path, e))?;
    }
    Ok(roots)
}

impl SecurityOptions {
    fn secret(&self) -> Result<Option<Arc<str>>, SecurityError> {
        let Some(path) = &self.secret_file else { return Ok(None) };
        let flag = "--secret-file";
        let text = String::from_utf8(read(flag, path)?)
            .map_err(|_| invalid(flag, path, "the secret is not UTF-8"))?;
        let secret = text.trim();
        if secret.is_empty() {
            return Err(invalid(flag, path, "the secret is empty"));
        }
        if reqwest::header::HeaderValue::from_str(secret).is_err() {
            return Err(invalid(flag, path, "the secret holds a byte a header cannot carry"));
        }
        Ok(Some(secret.into()))
    }

    /// Whether any TLS flag was given.
    fn any_tls(&self) -> bool {
        self.cert.is_some() || self.key.is_some() || self.ca.is_some() || self.mtls
    }

    /// The client side: servers verified against `ca`; under mTLS `cert` and `key` presented.
    fn client_config(
        &self,
        need_cert: bool,
    ) -> Result<Option<Arc<rustls::ClientConfig>>, SecurityError> {
        let ca = match (&self.ca, self.any_tls()) {
            (Some(ca), _) => ca,
            (None, false) => return Ok(None),
            (None, true) => return Err(SecurityError::Missing("TLS", "--tls-ca")),
        };
        let builder = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .with_root_certificates(roots(ca)?);
        let config = match (&self.cert, &self.key) {
            (Some(c), Some(k)) if need_cert => builder
                .with_client_auth_cert(certs("--tls-cert", c)?, key("--tls-key", k)?)
                .map_err(|e| invalid("--tls-key", k, e))?,
            _ => builder.with_no_client_auth(),
        };
        Ok(Some(Arc::new(config)))
    }

    fn check_pairs(&self) -> Result<(), SecurityError> {
        match (&self.cert, &self.key) {
            (Some(_), None) => Err(SecurityError::Missing("--tls-cert", "--tls-key")),
            (None, Some(_)) => Err(SecurityError::Missing("--tls-key", "--tls-cert")),
            _ if self.mtls && self.ca.is_none() => {
                Err(SecurityError::Missing("--mtls", "--tls-ca"))
            }
            _ => Ok(()),
        }
    }

    /// A node's settings: TLS needs `cert`, `key` and `ca` (its peers are verified against the
    /// CA too); every file is read and checked now, so a bad one stops the start.
    pub fn node(&self) -> Result<Security, SecurityError> {
        self.check_pairs()?;
        let secret = self.secret()?;
        if !self.any_tls() {
            return Ok(Security { server: None, client: None, secret });
        }
        let (Some(cert), Some(key_path)) = (&self.cert, &self.key) else {
            return Err(SecurityError::Missing("a TLS node", "--tls-cert and --tls-key"));
        };
        let client = self.client_config(self.mtls)?;
        let ca = self.ca.as_deref().ok_or(SecurityError::Missing("TLS", "--tls-ca"))?;
        let verifier = if self.mtls {
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots(ca)?), provider())
                .build()
                .map_err(|e| invalid("--tls-ca", ca, e))?
        } else {
            WebPkiClientVerifier::no_client_auth()
        };
        let mut server = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("ring supports the default protocol versions")
            .with_client_cert_verifier(verifier)
            .with_single_cert(certs("--tls-cert", cert)?, key("--tls-key", key_path)?)
            .map_err(|e| invalid("--tls-key", key_path, e))?;
        server.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Security { server: Some(Arc::new(server)), client, secret })
    }

    /// A client's settings: TLS needs `ca`; `cert` and `key` (both or neither) are presented
    /// to nodes that demand client certificates.
    pub fn client(&self) -> Result<Security, SecurityError> {
        self.check_pairs()?;
        let secret = self.secret()?;
        let client = self.client_config(true)?;
        Ok(Security { server: None, client, secret })
    }
}

/// A listener for `axum::serve` that hands over connections once their TLS handshake is done.
/// Handshakes run in their own tasks (at most [`HANDSHAKE_TIMEOUT`] each), so a slow or silent
/// client delays nobody else; a failed handshake (a client without an accepted certificate, a
/// client that does not trust ours) closes that connection only.
pub struct TlsListener {
    rx: tokio::sync::mpsc::Receiver<(
        tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
        SocketAddr,
    )>,
    local: SocketAddr,
}

/// How long a TLS handshake may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

impl TlsListener {
    /// Serves TLS with `config` on the connections `tcp` accepts.
    pub fn new(
        tcp: tokio::net::TcpListener,
        config: Arc<rustls::ServerConfig>,
    ) -> std::io::Result<TlsListener> {
        let local = tcp.local_addr()?;
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        tokio::spawn(async move {
            loop {
                let (stream, peer) = match tcp.accept().await {
                    Ok(a) => a,
                    // Out of file descriptors and the like: wait rather than spin.
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                };
                let (acceptor, conns) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    let handshake =
                        tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream));
                    if let Ok(Ok(tls)) = handshake.await {
                        let _ = conns.send((tls, peer)).await;
                    }
                });
                if tx.is_closed() {
                    return;
                }
            }
        });
        Ok(TlsListener { rx, local })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.rx.recv().await {
            Some(c) => c,
            // The accepting task ended: nothing more will come.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}

/// Whether `given` is the secret, in time independent of where they differ.
pub(crate) fn secret_matches(given: &[u8], secret: &[u8]) -> bool {
    given.len() == secret.len()
        && given.iter().zip(secret).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}
