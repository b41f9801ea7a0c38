//! A lean HTTPS client: hyper's connection-level API over tokio-rustls, the kubeconfig's CA
//! as the only trust anchor and its client certificate (or bearer token) for
//! authentication.
//!
//! HTTP/1.1: one keep-alive connection per [`Client`]. HTTP/2: [`Client`]s share a few
//! multiplexed connections ([`Endpoint::h2_pool`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use bytes::{Bytes, BytesMut};
use http::header::{ACCEPT, CONTENT_TYPE, HOST};
use http::{HeaderValue, Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::kubeconfig::Credentials;

/// The request body type.
pub type ReqBody = Full<Bytes>;

const APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");

/// Where and how to connect.
pub struct Endpoint {
    addr: SocketAddr,
    server_name: ServerName<'static>,
    connector: TlsConnector,
    /// `host:port`, for the `Host` header and HTTP/2 `:authority`.
    authority: String,
    host_header: HeaderValue,
    /// Path prefix of the server URL (usually empty).
    base_path: String,
    http2: bool,
    timeout: Duration,
    /// `Bearer <token>`, for a user authenticated by a token.
    authorization: Option<HeaderValue>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("addr", &self.addr)
            .field("authority", &self.authority)
            .field("http2", &self.http2)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// Resolves the server and prepares TLS (ALPN `h2` or `http/1.1` only).
    pub async fn new(creds: &Credentials, http2: bool, timeout: Duration) -> anyhow::Result<Self> {
        let uri: Uri = creds
            .server
            .parse()
            .with_context(|| format!("server URL {:?}", creds.server))?;
        if uri.scheme_str() != Some("https") {
            bail!("server URL must be https://, got {:?}", creds.server);
        }
        let authority = uri
            .authority()
            .ok_or_else(|| anyhow!("server URL {:?} has no host", creds.server))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = authority.port_u16().unwrap_or(443);
        let addr = tokio::net::lookup_host((host.as_str(), port))
            .await
            .with_context(|| format!("resolving {host}"))?
            .next()
            .ok_or_else(|| anyhow!("{host} resolves to no address"))?;
        let server_name = ServerName::try_from(host.clone())
            .map_err(|e| anyhow!("invalid server name {host:?}: {e}"))?;
        let authority_str = format!(
            "{}:{port}",
            if host.contains(':') {
                format!("[{host}]")
            } else {
                host.clone()
            }
        );
        let host_header = HeaderValue::from_str(&authority_str)
            .with_context(|| format!("server authority {authority_str:?}"))?;
        Ok(Endpoint {
            addr,
            server_name,
            connector: TlsConnector::from(Arc::new(tls_config(creds, http2)?)),
            authority: authority_str,
            host_header,
            base_path: uri.path().trim_end_matches('/').to_owned(),
            http2,
            timeout,
            authorization: match &creds.token {
                Some(t) => Some(
                    HeaderValue::from_str(&format!("Bearer {t}"))
                        .context("the token is not a valid header value")?,
                ),
                None => None,
            },
        })
    }

    /// The server's `host:port`.
    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// The request URI for `path_and_query` (starting with `/`): origin-form for HTTP/1.1,
    /// absolute for HTTP/2.
    pub fn uri(&self, path_and_query: &str) -> anyhow::Result<Uri> {
        let s = if self.http2 {
            format!(
                "https://{}{}{path_and_query}",
                self.authority, self.base_path
            )
        } else {
            format!("{}{path_and_query}", self.base_path)
        };
        Uri::try_from(s.as_str()).with_context(|| format!("request URI {s:?}"))
    }

    /// A request with the usual headers; `body` is JSON when not empty.
    pub fn request(&self, method: Method, uri: Uri, body: Bytes) -> Request<ReqBody> {
        let has_body = !body.is_empty();
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = method;
        *req.uri_mut() = uri;
        let h = req.headers_mut();
        if !self.http2 {
            h.insert(HOST, self.host_header.clone());
        }
        h.insert(ACCEPT, APPLICATION_JSON);
        if has_body {
            h.insert(CONTENT_TYPE, APPLICATION_JSON);
        }
        if let Some(a) = &self.authorization {
            h.insert(http::header::AUTHORIZATION, a.clone());
        }
        req
    }

    /// A TCP connection to the server, nothing sent.
    pub async fn tcp(&self) -> anyhow::Result<TcpStream> {
        TcpStream::connect(self.addr)
            .await
            .with_context(|| format!("connecting to {}", self.addr))
    }

    /// A TLS connection to the server (handshake complete), nothing sent.
    pub async fn tls(&self) -> anyhow::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let tcp = self.tcp().await?;
        self.connector
            .connect(self.server_name.clone(), tcp)
            .await
            .with_context(|| format!("TLS handshake with {}", self.authority))
    }

    /// Opens one connection (TCP, TLS, HTTP handshake); its driver runs as a task.
    pub async fn connect(&self) -> anyhow::Result<Conn> {
        let tcp = TcpStream::connect(self.addr)
            .await
            .with_context(|| format!("connecting to {}", self.addr))?;
        tcp.set_nodelay(true).context("setting TCP_NODELAY")?;
        let tls = self
            .connector
            .connect(self.server_name.clone(), tcp)
            .await
            .with_context(|| format!("TLS handshake with {}", self.authority))?;
        if self.http2 {
            if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
                bail!("the server did not negotiate HTTP/2 (ALPN h2)");
            }
            let (send, conn) = http2::Builder::new(TokioExecutor::new())
                .handshake::<_, ReqBody>(TokioIo::new(tls))
                .await
                .context("HTTP/2 handshake")?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok(Conn::H2(send))
        } else {
            let (send, conn) = http1::handshake::<_, ReqBody>(TokioIo::new(tls))
                .await
                .context("HTTP/1.1 handshake")?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok(Conn::H1(send))
        }
    }

    /// `n` shared HTTP/2 connections, or none for HTTP/1.1.
    pub async fn h2_pool(&self, n: usize) -> anyhow::Result<Vec<H2Conn>> {
        let mut pool = Vec::new();
        if self.http2 {
            for _ in 0..n.max(1) {
                if let Conn::H2(c) = self.connect().await? {
                    pool.push(c);
                }
            }
        }
        Ok(pool)
    }

    /// A client: over `shared` (an HTTP/2 connection) if given, else over a connection of
    /// its own, opened now.
    pub async fn client(self: &Arc<Self>, shared: Option<&H2Conn>) -> anyhow::Result<Client> {
        let conn = match shared {
            Some(c) => Conn::H2(c.clone()),
            None => self.connect().await?,
        };
        Ok(Client {
            ep: self.clone(),
            conn: Some(conn),
        })
    }
}

fn tls_config(creds: &Credentials, http2: bool) -> anyhow::Result<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&creds.ca_pem) {
        let cert = cert.map_err(|e| anyhow!("certificate-authority: {e}"))?;
        roots
            .add(cert)
            .context("certificate-authority: unusable certificate")?;
    }
    if roots.is_empty() {
        bail!("certificate-authority holds no certificate");
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS versions")?
        .with_root_certificates(roots);
    // A user with a token (or none at all) presents no certificate.
    let mut config = if creds.cert_pem.is_empty() {
        builder.with_no_client_auth()
    } else {
        let chain = CertificateDer::pem_slice_iter(&creds.cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| anyhow!("client-certificate: {e}"))?;
        if chain.is_empty() {
            bail!("client-certificate holds no certificate");
        }
        let key = PrivateKeyDer::from_pem_slice(&creds.key_pem)
            .map_err(|e| anyhow!("client-key: {e}"))?;
        builder
            .with_client_auth_cert(chain, key)
            .context("client certificate and key")?
    };
    config.alpn_protocols = vec![if http2 {
        b"h2".to_vec()
    } else {
        b"http/1.1".to_vec()
    }];
    Ok(config)
}

/// A shared HTTP/2 connection.
pub type H2Conn = http2::SendRequest<ReqBody>;

/// One connection's request sender.
#[derive(Debug)]
pub enum Conn {
    /// HTTP/1.1: one request at a time.
    H1(http1::SendRequest<ReqBody>),
    /// HTTP/2: cheap to clone, requests multiplexed.
    H2(http2::SendRequest<ReqBody>),
}

impl Conn {
    async fn send(&mut self, req: Request<ReqBody>) -> hyper::Result<Response<Incoming>> {
        match self {
            Conn::H1(s) => {
                s.ready().await?;
                s.send_request(req).await
            }
            Conn::H2(s) => {
                s.ready().await?;
                s.send_request(req).await
            }
        }
    }
}

/// How a request failed.
#[derive(Debug)]
pub enum Failure {
    /// No complete response within the timeout.
    Timeout,
    /// Connection, TLS or protocol error.
    Transport(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Timeout => f.write_str("timed out"),
            Failure::Transport(e) => f.write_str(e),
        }
    }
}

/// A response: status, and the body if it was kept.
#[derive(Debug)]
pub struct Reply {
    /// The status.
    pub status: StatusCode,
    /// The body, when asked for or when the status is not 2xx; empty otherwise.
    pub body: Bytes,
    /// Body length in bytes (also when the body was discarded).
    pub body_len: usize,
}

/// Sends requests one at a time over one connection, reconnecting after a failure.
pub struct Client {
    ep: Arc<Endpoint>,
    conn: Option<Conn>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("connected", &self.conn.is_some())
            .finish()
    }
}

impl Client {
    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.ep
    }

    /// Sends `req` and reads the whole response within the request timeout. The body is
    /// kept when `keep_body` or when the status is not 2xx (for the error message).
    pub async fn exchange(
        &mut self,
        req: Request<ReqBody>,
        keep_body: bool,
    ) -> Result<Reply, Failure> {
        let timeout = self.ep.timeout;
        match tokio::time::timeout(timeout, self.exchange_inner(req, keep_body)).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => {
                self.conn = None;
                Err(e)
            }
            Err(_) => {
                // An HTTP/1.1 connection with a request abandoned mid-way is unusable.
                self.conn = None;
                Err(Failure::Timeout)
            }
        }
    }

    async fn exchange_inner(
        &mut self,
        req: Request<ReqBody>,
        keep_body: bool,
    ) -> Result<Reply, Failure> {
        let resp = self.send(req).await?;
        let status = resp.status();
        let keep = keep_body || !status.is_success();
        read_body(resp.into_body(), keep)
            .await
            .map(|(body, body_len)| Reply {
                status,
                body,
                body_len,
            })
            .map_err(|e| Failure::Transport(format!("reading the response body: {e}")))
    }

    /// Sends `req` and returns the response head with the body unread (for watches).
    pub async fn send(&mut self, req: Request<ReqBody>) -> Result<Response<Incoming>, Failure> {
        let conn = match &mut self.conn {
            Some(c) => c,
            None => {
                let c = self
                    .ep
                    .connect()
                    .await
                    .map_err(|e| Failure::Transport(format!("{e:#}")))?;
                self.conn.insert(c)
            }
        };
        match conn.send(req).await {
            Ok(r) => Ok(r),
            Err(e) => {
                self.conn = None;
                Err(Failure::Transport(error_chain(&e)))
            }
        }
    }
}

/// Reads a body to the end: returns it (when `keep`) and its length.
pub async fn read_body(mut body: Incoming, keep: bool) -> hyper::Result<(Bytes, usize)> {
    let mut len = 0;
    let mut first: Option<Bytes> = None;
    let mut rest: Option<BytesMut> = None;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue; // trailers
        };
        len += data.len();
        if !keep {
            continue;
        }
        match (&first, &mut rest) {
            (None, _) => first = Some(data),
            (Some(f), None) => {
                let mut b = BytesMut::with_capacity(f.len() + data.len() * 2);
                b.extend_from_slice(f);
                b.extend_from_slice(&data);
                rest = Some(b);
            }
            (Some(_), Some(b)) => b.extend_from_slice(&data),
        }
    }
    let body = match (first, rest) {
        (_, Some(b)) => b.freeze(),
        (Some(f), None) => f,
        (None, None) => Bytes::new(),
    };
    Ok((body, len))
}

/// An error with its sources, on one line.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

/// A short description of a failed response, from its Status `message` if any.
pub fn describe_failure(method: &Method, what: &str, reply: &Reply) -> String {
    let msg = crate::watchline::parse_object(&reply.body)
        .ok()
        .and_then(|o| o.message.map(|m| m.into_owned()))
        .unwrap_or_else(|| {
            String::from_utf8_lossy(&reply.body[..reply.body.len().min(200)]).into_owned()
        });
    format!("{method} {what}: {} {msg}", reply.status.as_u16())
}
