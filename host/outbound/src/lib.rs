//! The API server's one outbound HTTPS client: admission webhooks, conversion webhooks and
//! (later) the aggregation layer all call out through [`Outbound`].
//!
//! Like kube-apiserver's webhook clients, a call goes to an `https://` URL only, and the
//! server's certificate is verified against the caller's `caBundle` (or the system's trust
//! roots when there is none), for the URL's host name or IP address. One client is kept per
//! trust configuration (the system roots, or one per distinct CA bundle, keyed by its SHA-256),
//! so that connections to a webhook are pooled and reused across calls (HTTP/1.1 keep-alive,
//! or one HTTP/2 connection when the server offers `h2` by ALPN) instead of a TCP and TLS
//! handshake per admission request.
//!
//! Errors display as Go's HTTP client errors appear in kube-apiserver messages
//! (`Post "URL": context deadline exceeded`), so that callers can embed them in
//! `failed calling webhook "NAME": failed to call webhook: <error>`.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::error::Error as StdError;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderValue, Request, StatusCode, Uri};
use http_body::Body as _;
use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
use hyper_rustls::{ConfigBuilderExt as _, HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use rustls::{ClientConfig, RootCertStore};
use sha2::{Digest as _, Sha256};

/// Where a call goes: an https URL and how its certificate is verified.
#[derive(Clone, Debug)]
pub struct Target {
    /// `https://host[:port]/path?query`; the certificate must be valid for `host`.
    pub url: Uri,
    /// PEM CA certificates; `None` = the system's trust roots.
    pub ca_bundle: Option<Bytes>,
    /// The client certificate presented (the aggregation layer's front-proxy identity).
    pub identity: Option<Arc<Identity>>,
    /// Accept any server certificate (an `APIService`'s `insecureSkipTLSVerify`).
    pub insecure: bool,
}

impl Default for Target {
    fn default() -> Self {
        Target {
            url: Uri::from_static("https://invalid/"),
            ca_bundle: None,
            identity: None,
            insecure: false,
        }
    }
}

/// A TLS client certificate chain and its key, PEM.
#[derive(Clone, Debug)]
pub struct Identity {
    pub cert_pem: Bytes,
    pub key_pem: Bytes,
}

/// A whole reply: any status (the caller decides what a non-2xx means) and the body.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub body: Bytes,
}

/// Why a call failed. Each message starts with `Post "URL": `.
#[derive(Debug, thiserror::Error)]
pub enum OutboundError {
    /// The URL is not `https://host[:port]/...` (nothing was sent).
    #[error("Post {url:?}: {reason}")]
    BadUrl { url: String, reason: String },
    /// The CA bundle holds no certificate, or one that does not parse (nothing was sent).
    #[error("Post {url:?}: unable to load root certificates: {reason}")]
    BadCaBundle { url: String, reason: String },
    /// The whole call (connect, TLS, request, reply body) took longer than its timeout.
    #[error("Post {url:?}: context deadline exceeded")]
    Timeout { url: String },
    /// Name resolution or the TCP connection failed.
    #[error("Post {url:?}: {message}")]
    Connect { url: String, message: String },
    /// The TLS handshake failed (e.g. a certificate not trusted or not valid for the host),
    /// or the system's trust roots could not be loaded.
    #[error("Post {url:?}: tls: {message}")]
    Tls { url: String, message: String },
    /// The request or the reply failed at the HTTP level (e.g. connection closed mid-reply).
    #[error("Post {url:?}: {message}")]
    Http { url: String, message: String },
    /// The reply body is longer than the caller's limit.
    #[error("Post {url:?}: response body larger than {limit} bytes")]
    BodyTooLarge { url: String, limit: usize },
}

type HttpsClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A client's TLS configuration: the CA bundle's SHA-256 (`None`: the system roots), the
/// client identity's, and whether server certificates are checked at all.
type TrustKey = (Option<[u8; 32]>, Option<[u8; 32]>, bool);

/// Above this many trust configurations (CA bundles of webhooks since deleted pile up), the
/// cached clients are all dropped and rebuilt on demand.
const MAX_CLIENTS: usize = 64;

/// How long an idle pooled connection is kept (Go's `http.Transport` default).
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The outbound HTTPS client: one connection pool per trust configuration, created lazily.
/// Shared behind an `Arc`; calls never hold the lock while waiting on the network.
pub struct Outbound {
    clients: Mutex<HashMap<TrustKey, HttpsClient>>,
}

impl fmt::Debug for Outbound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let clients = self.lock().len();
        f.debug_struct("Outbound")
            .field("clients", &clients)
            .finish()
    }
}

impl Default for Outbound {
    fn default() -> Self {
        Self::new()
    }
}

impl Outbound {
    /// An outbound client with no connection yet.
    pub fn new() -> Outbound {
        Outbound {
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// POSTs `body` (Content-Type/Accept `content_type`) to `target` and returns the whole
    /// reply, at most `max_body` bytes (else `BodyTooLarge`), all within `timeout` (else
    /// `Timeout`).
    pub async fn post(
        &self,
        target: &Target,
        content_type: &str,
        body: Bytes,
        timeout: Duration,
        max_body: usize,
    ) -> Result<Reply, OutboundError> {
        let url = target.url.to_string();
        let client = self.client_for(target, &url)?;
        let Ok(content_type) = HeaderValue::from_str(content_type) else {
            return Err(OutboundError::Http {
                url,
                message: format!("invalid Content-Type {content_type:?}"),
            });
        };
        let request = Request::post(target.url.clone())
            .header(CONTENT_TYPE, content_type.clone())
            .header(ACCEPT, content_type)
            .body(Full::new(body));
        let request = match request {
            Ok(request) => request,
            Err(e) => {
                return Err(OutboundError::Http {
                    url,
                    message: error_chain(&e),
                });
            }
        };
        match tokio::time::timeout(timeout, exchange(&client, request, max_body, &url)).await {
            Ok(result) => result,
            Err(_elapsed) => Err(OutboundError::Timeout { url }),
        }
    }

    /// Sends `request` (its URI is the target's URL, path and query included) and returns
    /// the reply as it streams in: `timeout` bounds the wait for its head only (a watch
    /// streams for as long as it lasts).
    pub async fn send(
        &self,
        target: &Target,
        request: Request<Full<Bytes>>,
        timeout: Duration,
    ) -> Result<http::Response<hyper::body::Incoming>, OutboundError> {
        let url = target.url.to_string();
        let client = self.client_for(target, &url)?;
        match tokio::time::timeout(timeout, client.request(request)).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => Err(request_error(&url, &e)),
            Err(_elapsed) => Err(OutboundError::Timeout { url }),
        }
    }

    /// The client for `target` (whose URL is `url`), after checking the URL: nothing is
    /// sent when either is wrong.
    fn client_for(&self, target: &Target, url: &str) -> Result<HttpsClient, OutboundError> {
        let url = url.to_owned();
        if let Err(reason) = check_url(&target.url) {
            return Err(OutboundError::BadUrl { url, reason });
        }
        self.client(target).map_err(|e| match e {
            TrustError::BadCaBundle(reason) => OutboundError::BadCaBundle { url, reason },
            TrustError::Tls(message) => OutboundError::Tls { url, message },
        })
    }

    /// The pooled client for a target's TLS configuration, built on first use.
    fn client(&self, target: &Target) -> Result<HttpsClient, TrustError> {
        let ca_bundle = target.ca_bundle.as_ref();
        let key: TrustKey = (
            ca_bundle.map(|pem| Sha256::digest(pem).into()),
            target.identity.as_ref().map(|i| {
                let mut h = Sha256::new();
                h.update(&i.cert_pem);
                h.update(&i.key_pem);
                h.finalize().into()
            }),
            target.insecure,
        );
        if let Some(client) = self.lock().get(&key) {
            return Ok(client.clone());
        }
        // Built outside the lock: loading the system roots reads files.
        let client = build_client(ca_bundle, target.identity.as_deref(), target.insecure)?;
        let mut clients = self.lock();
        if clients.len() >= MAX_CLIENTS && !clients.contains_key(&key) {
            clients.clear();
        }
        // A concurrent call may have inserted one meanwhile: keep that one (and its pool).
        Ok(clients.entry(key).or_insert(client).clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TrustKey, HttpsClient>> {
        // The map stays consistent whatever panicked while holding it.
        self.clients.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Sends the request and reads the whole reply body, at most `max_body` bytes.
async fn exchange(
    client: &HttpsClient,
    request: Request<Full<Bytes>>,
    max_body: usize,
    url: &str,
) -> Result<Reply, OutboundError> {
    let response = client
        .request(request)
        .await
        .map_err(|e| request_error(url, &e))?;
    let status = response.status();
    let body = response.into_body();
    let too_large = || OutboundError::BodyTooLarge {
        url: url.to_owned(),
        limit: max_body,
    };
    // A Content-Length above the limit fails before reading anything.
    if body.size_hint().lower() > u64::try_from(max_body).unwrap_or(u64::MAX) {
        return Err(too_large());
    }
    match Limited::new(body, max_body).collect().await {
        Ok(collected) => Ok(Reply {
            status,
            body: collected.to_bytes(),
        }),
        Err(e) if e.is::<LengthLimitError>() => Err(too_large()),
        Err(e) => Err(OutboundError::Http {
            url: url.to_owned(),
            message: error_chain(&*e),
        }),
    }
}

/// Why a URL cannot be called, as kube-apiserver would say it.
fn check_url(url: &Uri) -> Result<(), String> {
    match url.scheme_str() {
        Some("https") => {}
        Some(scheme) => {
            return Err(format!(
                "unsupported protocol scheme {scheme:?} (only https is allowed)"
            ));
        }
        None => return Err("unsupported protocol scheme \"\"".to_owned()),
    }
    match url.host() {
        Some(host) if !host.is_empty() => Ok(()),
        _ => Err("no Host in request URL".to_owned()),
    }
}

/// Why no client could be built for a trust configuration.
enum TrustError {
    BadCaBundle(String),
    Tls(String),
}

/// A client verifying servers against `ca_bundle` (or the system roots; or not at all when
/// `insecure`), presenting `identity` when given, offering h2 and http/1.1 by ALPN, https
/// only.
fn build_client(
    ca_bundle: Option<&Bytes>,
    identity: Option<&Identity>,
    insecure: bool,
) -> Result<HttpsClient, TrustError> {
    let provider = default_provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TrustError::Tls(error_chain(&e)))?;
    let builder = match (insecure, ca_bundle) {
        (true, _) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyServer(provider))),
        (false, Some(pem)) => builder.with_root_certificates(root_store(pem)?),
        (false, None) => builder.with_native_roots().map_err(|e| {
            TrustError::Tls(format!(
                "unable to load the system trust roots: {}",
                error_chain(&e)
            ))
        })?,
    };
    let tls = match identity {
        None => builder.with_no_client_auth(),
        Some(id) => {
            let certs = CertificateDer::pem_slice_iter(&id.cert_pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| TrustError::Tls(format!("the client certificate: {e}")))?;
            let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(&id.key_pem)
                .map_err(|e| TrustError::Tls(format!("the client key: {e}")))?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| TrustError::Tls(format!("the client identity: {e}")))?
        }
    };

    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let connector = HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only()
        .enable_http1()
        .enable_http2()
        .wrap_connector(http);
    Ok(Client::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(IDLE_TIMEOUT)
        .build(connector))
}

/// The process's rustls provider (aws-lc-rs when none is installed).
fn default_provider() -> Arc<CryptoProvider> {
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
}

/// Accepts any server certificate, still checking the handshake's signatures
/// (`insecureSkipTLSVerify`). Hand-written: rustls leaves this choice to its users on
/// purpose, behind `dangerous()`.
#[derive(Debug)]
struct AnyServer(Arc<CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The certificates of a PEM CA bundle (at least one).
fn root_store(pem: &[u8]) -> Result<RootCertStore, TrustError> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|e| {
            TrustError::BadCaBundle(format!("unable to parse bytes as PEM block: {e}"))
        })?;
        roots
            .add(cert)
            .map_err(|e| TrustError::BadCaBundle(format!("invalid CA certificate: {e}")))?;
    }
    if roots.is_empty() {
        return Err(TrustError::BadCaBundle(
            "no CA certificate in the bundle".to_owned(),
        ));
    }
    Ok(roots)
}

/// Classifies a failed request: connect (TCP or TLS) or HTTP.
fn request_error(url: &str, e: &hyper_util::client::legacy::Error) -> OutboundError {
    // hyper-util's own text ("client error (Connect)") says less than its cause.
    let message = error_chain(e.source().unwrap_or(e));
    let url = url.to_owned();
    if !e.is_connect() {
        OutboundError::Http { url, message }
    } else if is_tls(e) {
        OutboundError::Tls { url, message }
    } else {
        OutboundError::Connect { url, message }
    }
}

/// Whether a rustls error is in the chain (also inside `io::Error`s, whose `source` skips
/// the error they wrap).
fn is_tls(e: &(dyn StdError + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(e) = next {
        if e.is::<rustls::Error>() {
            return true;
        }
        if let Some(inner) = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            && is_tls(inner)
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// `outer: cause: root cause`, skipping a cause already in the text before it.
fn error_chain(e: &(dyn StdError + 'static)) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        next = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    use std::convert::Infallible;
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    use http::{Response, Version};
    use http_body::Frame;
    use http_body_util::combinators::BoxBody;
    use http_body_util::{BodyExt, StreamBody};
    use hyper::body::Incoming;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;
    use hyper_util::server::conn::auto;
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, SanType,
    };
    use rustls::ServerConfig;
    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
    use tokio::net::TcpListener;

    const JSON: &str = "application/json";
    const LONG: Duration = Duration::from_secs(10);

    /// A test CA and a serving certificate it issued for 127.0.0.1.
    struct Pki {
        ca_pem: String,
        server_cert: CertificateDer<'static>,
        server_key: PrivatePkcs8KeyDer<'static>,
    }

    fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
    }

    fn pki() -> Pki {
        let ca = ca("outbound-test-ca");
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params
            .distinguished_name
            .push(DnType::CommonName, "webhook");
        params.subject_alt_names = vec![SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST))];
        let cert = params.signed_by(&key, &*ca).unwrap();
        Pki {
            ca_pem: ca.pem(),
            server_cert: cert.der().clone(),
            server_key: PrivatePkcs8KeyDer::from(key.serialize_der()),
        }
    }

    /// What the test server saw of one request.
    #[derive(Debug)]
    struct Seen {
        version: Version,
        content_type: Option<HeaderValue>,
        accept: Option<HeaderValue>,
    }

    /// An in-process HTTPS server. Paths: `/echo` (201, the request body), `/big` (64 KiB
    /// with Content-Length), `/big-chunked` (64 KiB without), `/hang` (never answers).
    struct Server {
        addr: SocketAddr,
        pki: Pki,
        /// TCP connections accepted.
        accepted: Arc<AtomicUsize>,
        seen: Arc<Mutex<Vec<Seen>>>,
    }

    impl Server {
        async fn start(alpn: &[&[u8]]) -> Server {
            let pki = pki();
            let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
            let mut config = ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(
                    vec![pki.server_cert.clone()],
                    PrivateKeyDer::Pkcs8(pki.server_key.clone_key()),
                )
                .unwrap();
            config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
            let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
            let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
            let addr = listener.local_addr().unwrap();
            let accepted = Arc::new(AtomicUsize::new(0));
            let seen = Arc::new(Mutex::new(Vec::new()));
            let (accepted2, seen2) = (accepted.clone(), seen.clone());
            tokio::spawn(async move {
                loop {
                    let (tcp, _) = listener.accept().await.unwrap();
                    accepted2.fetch_add(1, Ordering::SeqCst);
                    let acceptor = acceptor.clone();
                    let seen = seen2.clone();
                    tokio::spawn(async move {
                        let Ok(tls) = acceptor.accept(tcp).await else {
                            return;
                        };
                        let service = service_fn(move |req| handle(req, seen.clone()));
                        let _ = auto::Builder::new(TokioExecutor::new())
                            .serve_connection(TokioIo::new(tls), service)
                            .await;
                    });
                }
            });
            Server {
                addr,
                pki,
                accepted,
                seen,
            }
        }

        fn target(&self, path: &str) -> Target {
            Target {
                url: format!("https://{}{path}", self.addr).parse().unwrap(),
                ca_bundle: Some(Bytes::from(self.pki.ca_pem.clone())),
                ..Target::default()
            }
        }
    }

    async fn handle(
        req: Request<Incoming>,
        seen: Arc<Mutex<Vec<Seen>>>,
    ) -> Result<Response<BoxBody<Bytes, Infallible>>, Infallible> {
        seen.lock().unwrap().push(Seen {
            version: req.version(),
            content_type: req.headers().get(CONTENT_TYPE).cloned(),
            accept: req.headers().get(ACCEPT).cloned(),
        });
        let big = Bytes::from(vec![b'x'; 64 * 1024]);
        let response = match req.uri().path() {
            "/echo" => {
                let body = req.into_body().collect().await.unwrap().to_bytes();
                Response::builder()
                    .status(StatusCode::CREATED)
                    .body(Full::new(body).boxed())
            }
            "/big" => Response::builder().body(Full::new(big).boxed()),
            "/big-chunked" => {
                let frames = futures_util::stream::iter(
                    big.chunks(1024)
                        .map(|c| Ok::<_, Infallible>(Frame::data(Bytes::copy_from_slice(c))))
                        .collect::<Vec<_>>(),
                );
                Response::builder().body(BodyExt::boxed(StreamBody::new(frames)))
            }
            "/hang" => std::future::pending().await,
            _ => Response::builder()
                .status(StatusCode::NOT_FOUND)
                .body(Full::new(Bytes::new()).boxed()),
        };
        Ok(response.unwrap())
    }

    #[tokio::test]
    async fn post_round_trips_over_h2() {
        let server = Server::start(&[b"h2", b"http/1.1"]).await;
        let outbound = Outbound::new();
        let body = Bytes::from_static(br#"{"kind":"AdmissionReview"}"#);
        let reply = outbound
            .post(&server.target("/echo"), JSON, body.clone(), LONG, 1024)
            .await
            .unwrap();
        assert_eq!(reply.status, StatusCode::CREATED);
        assert_eq!(reply.body, body);
        let seen = server.seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].version, Version::HTTP_2);
        assert_eq!(seen[0].content_type.as_ref().unwrap(), JSON);
        assert_eq!(seen[0].accept.as_ref().unwrap(), JSON);
    }

    #[tokio::test]
    async fn post_round_trips_over_http1() {
        let server = Server::start(&[b"http/1.1"]).await;
        let reply = Outbound::new()
            .post(
                &server.target("/echo?timeout=10s"),
                JSON,
                Bytes::from_static(b"{}"),
                LONG,
                1024,
            )
            .await
            .unwrap();
        assert_eq!(reply.status, StatusCode::CREATED);
        assert_eq!(reply.body, "{}");
        assert_eq!(server.seen.lock().unwrap()[0].version, Version::HTTP_11);
    }

    #[tokio::test]
    async fn connections_are_reused() {
        for alpn in [&[b"h2".as_slice(), b"http/1.1"][..], &[b"http/1.1"]] {
            let server = Server::start(alpn).await;
            let outbound = Outbound::new();
            for i in 0..3 {
                let body = Bytes::from(format!("call {i}"));
                let reply = outbound
                    .post(&server.target("/echo"), JSON, body.clone(), LONG, 1024)
                    .await
                    .unwrap();
                assert_eq!(reply.body, body);
            }
            assert_eq!(server.accepted.load(Ordering::SeqCst), 1, "ALPN {alpn:?}");
            assert_eq!(outbound.lock().len(), 1);
        }
    }

    #[tokio::test]
    async fn wrong_ca_is_a_tls_error_naming_the_url() {
        let server = Server::start(&[b"h2", b"http/1.1"]).await;
        let outbound = Outbound::new();
        let mut target = server.target("/echo");
        target.ca_bundle = Some(Bytes::from(ca("another-ca").pem()));
        let err = outbound
            .post(&target, JSON, Bytes::new(), LONG, 1024)
            .await
            .unwrap_err();
        assert!(matches!(err, OutboundError::Tls { .. }), "{err:?}");
        let text = err.to_string();
        let prefix = format!("Post \"https://{}/echo\": tls: ", server.addr);
        assert!(text.starts_with(&prefix), "{text}");
        assert!(text.contains("invalid peer certificate"), "{text}");

        // The right CA still works: another trust configuration, another client.
        outbound
            .post(&server.target("/echo"), JSON, Bytes::new(), LONG, 1024)
            .await
            .unwrap();
        assert_eq!(outbound.lock().len(), 2);
    }

    #[tokio::test]
    async fn system_roots_do_not_trust_a_private_ca() {
        let server = Server::start(&[b"h2", b"http/1.1"]).await;
        let mut target = server.target("/echo");
        target.ca_bundle = None;
        let err = Outbound::new()
            .post(&target, JSON, Bytes::new(), LONG, 1024)
            .await
            .unwrap_err();
        assert!(matches!(err, OutboundError::Tls { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn bad_ca_bundles() {
        let server = Server::start(&[b"h2", b"http/1.1"]).await;
        let garbage_cert = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        for bundle in ["", "not PEM at all", garbage_cert] {
            let mut target = server.target("/echo");
            target.ca_bundle = Some(Bytes::from(bundle));
            let err = Outbound::new()
                .post(&target, JSON, Bytes::new(), LONG, 1024)
                .await
                .unwrap_err();
            assert!(
                matches!(err, OutboundError::BadCaBundle { .. }),
                "{bundle:?}: {err:?}"
            );
            let text = err.to_string();
            let prefix = format!("Post \"https://{}/echo\": unable to load root", server.addr);
            assert!(text.starts_with(&prefix), "{text}");
        }
        assert_eq!(server.accepted.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn only_https_urls() {
        let outbound = Outbound::new();
        for url in ["http://127.0.0.1:9443/validate", "/validate"] {
            let target = Target {
                url: url.parse().unwrap(),
                ca_bundle: None,
                ..Target::default()
            };
            let err = outbound
                .post(&target, JSON, Bytes::new(), LONG, 1024)
                .await
                .unwrap_err();
            assert!(
                matches!(err, OutboundError::BadUrl { .. }),
                "{url}: {err:?}"
            );
            assert!(
                err.to_string().starts_with(&format!("Post {url:?}: ")),
                "{err}"
            );
        }
        assert_eq!(outbound.lock().len(), 0);
    }

    #[tokio::test]
    async fn a_server_that_never_answers_times_out() {
        let server = Server::start(&[b"h2", b"http/1.1"]).await;
        let target = server.target("/hang?timeout=10s");
        let start = Instant::now();
        let err = Outbound::new()
            .post(
                &target,
                JSON,
                Bytes::new(),
                Duration::from_millis(300),
                1024,
            )
            .await
            .unwrap_err();
        let elapsed = start.elapsed();
        assert!(matches!(err, OutboundError::Timeout { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!(
                "Post \"https://{}/hang?timeout=10s\": context deadline exceeded",
                server.addr
            )
        );
        assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    }

    #[tokio::test]
    async fn the_timeout_covers_the_tls_handshake() {
        // Accepts TCP connections and never speaks.
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let silent = tokio::spawn(async move {
            let mut held = Vec::new();
            loop {
                held.push(listener.accept().await.unwrap());
            }
        });
        let target = Target {
            url: format!("https://{addr}/validate").parse().unwrap(),
            ca_bundle: Some(Bytes::from(pki().ca_pem)),
            ..Target::default()
        };
        let start = Instant::now();
        let err = Outbound::new()
            .post(
                &target,
                JSON,
                Bytes::new(),
                Duration::from_millis(300),
                1024,
            )
            .await
            .unwrap_err();
        assert!(matches!(err, OutboundError::Timeout { .. }), "{err:?}");
        assert!(start.elapsed() < Duration::from_secs(2));
        silent.abort();
    }

    #[tokio::test]
    async fn connection_refused_is_a_connect_error() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let target = Target {
            url: format!("https://{addr}/validate").parse().unwrap(),
            ca_bundle: Some(Bytes::from(pki().ca_pem)),
            ..Target::default()
        };
        let err = Outbound::new()
            .post(&target, JSON, Bytes::new(), LONG, 1024)
            .await
            .unwrap_err();
        assert!(matches!(err, OutboundError::Connect { .. }), "{err:?}");
        assert!(
            err.to_string()
                .starts_with(&format!("Post \"https://{addr}/validate\": ")),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_reply_larger_than_max_body_is_refused() {
        for alpn in [&[b"h2".as_slice(), b"http/1.1"][..], &[b"http/1.1"]] {
            let server = Server::start(alpn).await;
            let outbound = Outbound::new();
            for path in ["/big", "/big-chunked"] {
                let err = outbound
                    .post(&server.target(path), JSON, Bytes::new(), LONG, 1024)
                    .await
                    .unwrap_err();
                assert!(
                    matches!(err, OutboundError::BodyTooLarge { limit: 1024, .. }),
                    "{path}: {err:?}"
                );
                assert_eq!(
                    err.to_string(),
                    format!(
                        "Post \"https://{}{path}\": response body larger than 1024 bytes",
                        server.addr
                    )
                );
                // Exactly the limit is fine.
                let reply = outbound
                    .post(&server.target(path), JSON, Bytes::new(), LONG, 64 * 1024)
                    .await
                    .unwrap();
                assert_eq!(reply.body.len(), 64 * 1024);
            }
        }
    }
}
