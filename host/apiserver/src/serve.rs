//! Serving: the accept loop, TLS with client-certificate authentication, HTTP/1.1 and
//! HTTP/2 on one port, connection limits, and graceful shutdown.
//!
//! Connections are bounded in time and number, so idle or slow clients cannot hold the
//! server's file descriptors: the TLS handshake and each request's headers must arrive
//! within `header_read_timeout`; a connection with no request in flight for
//! `idle_timeout` is closed; connections that have not authenticated (handshaking, or
//! without a client certificate) are capped at `max_unauthenticated_connections`, past
//! which new ones are closed at once. A plain-HTTP request to the TLS port gets Go's
//! `400 Client sent an HTTP request to an HTTPS server.`, as kube-apiserver answers.
//!
//! Shutdown, in order: stop accepting; mark the server shutting down (readyz fails, every
//! watch ends with a clean end of stream); ask every connection to close once its
//! requests finish, waiting up to `drain_timeout`; then return.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::Instant;

use crate::body::Body;
use crate::error_body_io::ErrorBodyIo;
use crate::{ApiServer, User, authn_x509};

/// How to serve.
#[derive(Clone)]
pub struct ServeOptions {
    /// TLS; `None` serves plain HTTP (only with an explicit flag).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Who a request without a client certificate is. `None`: anonymous (401 on
    /// everything but health and version). The plain-HTTP listener sets an admin here.
    pub unauthenticated_user: Option<User>,
    /// How long in-flight requests may take to finish at shutdown.
    pub drain_timeout: Duration,
    /// How long a client may take for the TLS handshake, and for each request's headers.
    pub header_read_timeout: Duration,
    /// How long a connection may stay open with no request in flight.
    pub idle_timeout: Duration,
    /// Most connections at once that have not authenticated with a client certificate
    /// (still handshaking, or anonymous). Only on the TLS listener.
    pub max_unauthenticated_connections: usize,
}

impl ServeOptions {
    /// Options with kube-apiserver's defaults for the timeouts (Go `http.Server`:
    /// 32 s to read headers, 90 s idle) and 256 unauthenticated connections.
    pub fn new(tls: Option<Arc<rustls::ServerConfig>>) -> ServeOptions {
        ServeOptions {
            tls,
            unauthenticated_user: None,
            drain_timeout: Duration::from_secs(30),
            header_read_timeout: Duration::from_secs(32),
            idle_timeout: Duration::from_secs(90),
            max_unauthenticated_connections: 256,
        }
    }
}

impl std::fmt::Debug for ServeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeOptions")
            .field("tls", &self.tls.is_some())
            .field("unauthenticated_user", &self.unauthenticated_user)
            .field("drain_timeout", &self.drain_timeout)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field(
                "max_unauthenticated_connections",
                &self.max_unauthenticated_connections,
            )
            .finish()
    }
}

/// Largest HTTP/1 request head: Go's `http.DefaultMaxHeaderBytes` (1 MiB) plus its 4 KiB
/// of slack.
const MAX_HEAD_BYTES: usize = (1 << 20) + 4096;

/// Open connections, so that shutdown can wait for them.
#[derive(Default)]
struct Live {
    count: AtomicUsize,
    gone: Notify,
}

/// Counts one connection while alive.
struct LiveGuard(Arc<Live>);

impl LiveGuard {
    fn new(live: &Arc<Live>) -> LiveGuard {
        live.count.fetch_add(1, Ordering::AcqRel);
        LiveGuard(live.clone())
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.gone.notify_waiters();
        }
    }
}

/// Logs a repeated failure at most once per interval, with how many were not logged.
struct Throttled {
    last: Option<Instant>,
    suppressed: u64,
}

impl Throttled {
    const INTERVAL: Duration = Duration::from_secs(10);

    fn new() -> Throttled {
        Throttled {
            last: None,
            suppressed: 0,
        }
    }

    /// `Some(suppressed)` when this occurrence should be logged.
    fn tick(&mut self) -> Option<u64> {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < Self::INTERVAL)
        {
            self.suppressed += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.suppressed))
    }
}

/// Serves `server` on `listener` until `shutdown` completes, then shuts down gracefully.
pub async fn serve(
    server: ApiServer,
    listener: TcpListener,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_read_timeout)
        // Go's server (kube-apiserver) takes heads up to 1 MiB; hyper's default is
        // ~400 KiB. hyper's limit of 100 headers stays: raising it moves the header index
        // from the stack to the heap for every request (hyper documents ~5 %).
        .max_buf_size(MAX_HEAD_BYTES);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(1000);
    let acceptor = options.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    let unauthenticated = Arc::new(Semaphore::new(options.max_unauthenticated_connections));
    let live = Arc::new(Live::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut accept_errors = Throttled::new();
    let mut refused = Throttled::new();
    let mut backoff = Duration::ZERO;
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => {
                    backoff = Duration::ZERO;
                    x
                }
                Err(e) => {
                    // Out of file descriptors and similar: back off (up to 1 s), keep
                    // serving, and do not flood the log.
                    backoff = (backoff * 2).clamp(Duration::from_millis(5), Duration::from_secs(1));
                    if let Some(suppressed) = accept_errors.tick() {
                        tracing::warn!(error = %e, suppressed, "accept failed");
                    }
                    tokio::time::sleep(backoff).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let permit = match &acceptor {
            Some(_) => match unauthenticated.clone().try_acquire_owned() {
                Ok(p) => Some(p),
                Err(_) => {
                    if let Some(suppressed) = refused.tick() {
                        tracing::warn!(%peer, suppressed, "too many unauthenticated connections: closing new ones");
                    }
                    drop(stream);
                    continue;
                }
            },
            None => None,
        };
        let _ = stream.set_nodelay(true);
        let conn = Conn {
            server: server.clone(),
            builder: builder.clone(),
            stop: stop_rx.clone(),
            idle_timeout: options.idle_timeout,
            _live: LiveGuard::new(&live),
        };
        let acceptor = acceptor.clone();
        let fallback_user = options.unauthenticated_user.clone();
        let handshake_timeout = options.header_read_timeout;
        tokio::spawn(async move {
            match acceptor {
                Some(acceptor) => {
                    tls_connection(
                        conn,
                        acceptor,
                        stream,
                        peer,
                        fallback_user,
                        handshake_timeout,
                        permit,
                    )
                    .await
                }
                None => {
                    conn.serve(TokioIo::new(ErrorBodyIo::new(stream)), fallback_user)
                        .await
                }
            }
        });
    }
    drop(listener);
    server.begin_shutdown();
    stop_tx.send_replace(true);
    let drained = async {
        loop {
            let gone = live.gone.notified();
            if live.count.load(Ordering::Acquire) == 0 {
                return;
            }
            gone.await;
        }
    };
    if tokio::time::timeout(options.drain_timeout, drained)
        .await
        .is_err()
    {
        tracing::warn!("shutdown: in-flight requests did not finish in time");
    }
    Ok(())
}

/// Whether the first bytes of a connection are an HTTP/1 request line rather than a TLS
/// record (Go's `tlsRecordHeaderLooksLikeHTTP`).
fn looks_like_http(head: &[u8]) -> bool {
    [b"GET /", b"HEAD ", b"POST ", b"PUT /", b"OPTIO"]
        .iter()
        .any(|m| head == m.as_slice())
}

/// What Go's server (so kube-apiserver) answers to plain HTTP on a TLS port.
const HTTP_ON_HTTPS: &[u8] =
    b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

async fn tls_connection(
    conn: Conn,
    acceptor: tokio_rustls::TlsAcceptor,
    mut stream: TcpStream,
    peer: std::net::SocketAddr,
    fallback_user: Option<User>,
    handshake_timeout: Duration,
    permit: Option<OwnedSemaphorePermit>,
) {
    let deadline = Instant::now() + handshake_timeout;
    let mut head = [0u8; 5];
    if let Ok(Ok(5)) = tokio::time::timeout_at(deadline, stream.peek(&mut head)).await
        && looks_like_http(&head)
    {
        let _ = stream.write_all(HTTP_ON_HTTPS).await;
        let _ = stream.shutdown().await;
        // Read what the client sent so that closing does not reset the connection
        // (and with it the answer) while its request is still unread.
        let mut sink = [0u8; 4096];
        let drain = async { while let Ok(1..) = stream.read(&mut sink).await {} };
        let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
        return;
    }
    let tls = match tokio::time::timeout_at(deadline, acceptor.accept(stream)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            return;
        }
    };
    let user = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|certs| certs.first())
        .and_then(|c| authn_x509::user_from_client_cert(c.as_ref()))
        .map(|(name, groups)| User { name, groups });
    // An authenticated connection no longer counts against the cap (the permit goes
    // now, not when the connection ends: long-lived watches of authenticated clients
    // held it, and past the cap every new connection was refused).
    let _permit = match user {
        Some(_) => {
            drop(permit);
            None
        }
        None => permit,
    };
    conn.serve(TokioIo::new(ErrorBodyIo::new(tls)), user.or(fallback_user))
        .await;
}

/// One accepted connection.
struct Conn {
    server: ApiServer,
    builder: auto::Builder<TokioExecutor>,
    stop: watch::Receiver<bool>,
    idle_timeout: Duration,
    _live: LiveGuard,
}

impl Conn {
    /// Serves requests until the client closes, the connection is idle for too long, or
    /// the server shuts down (then after the requests in flight).
    async fn serve<I>(self, io: TokioIo<I>, user: Option<User>)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let activity = Arc::new(Activity::new());
        let server = self.server.clone();
        let act = activity.clone();
        let service = service_fn(move |req| {
            let server = server.clone();
            let user = user.clone();
            let guard = Activity::start(&act);
            async move {
                let resp = server.handle(req, user).await;
                Ok::<_, Infallible>(resp.map(|inner| TrackedBody {
                    inner,
                    _guard: guard,
                }))
            }
        });
        let conn = self.builder.serve_connection(io, service);
        tokio::pin!(conn);
        // Created once and reused: these are polled on every wake-up of the connection.
        let mut stop = self.stop.clone();
        let stopped = async move {
            let _ = stop.wait_for(|s| *s).await;
        };
        tokio::pin!(stopped);
        let idle_check = tokio::time::sleep(self.idle_timeout);
        tokio::pin!(idle_check);
        let mut closing = false;
        loop {
            tokio::select! {
                biased;
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                    return;
                }
                _ = &mut stopped, if !closing => {
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
                _ = idle_check.as_mut() => {
                    let next = match activity.idle_for() {
                        Some(idle) if idle >= self.idle_timeout => {
                            if !closing {
                                conn.as_mut().graceful_shutdown();
                                closing = true;
                            }
                            self.idle_timeout
                        }
                        Some(idle) => self.idle_timeout - idle,
                        None => self.idle_timeout,
                    };
                    idle_check.as_mut().reset(Instant::now() + next);
                }
            }
        }
    }
}

/// Requests in flight on a connection (a response counts until its body has been sent or
/// dropped, so a long watch is not idle), and when the last one ended.
struct Activity {
    in_flight: AtomicUsize,
    /// When the connection opened; `last` counts from it.
    opened: Instant,
    /// Milliseconds after `opened` when the last request ended (atomic: every request
    /// updates it, and a lock there showed in GET throughput).
    last: AtomicU64,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            in_flight: AtomicUsize::new(0),
            opened: Instant::now(),
            last: AtomicU64::new(0),
        }
    }

    fn start(this: &Arc<Activity>) -> ActivityGuard {
        this.in_flight.fetch_add(1, Ordering::AcqRel);
        ActivityGuard(this.clone())
    }

    /// How long nothing has been in flight; `None` while something is.
    fn idle_for(&self) -> Option<Duration> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let last = Duration::from_millis(self.last.load(Ordering::Acquire));
        Some(self.opened.elapsed().saturating_sub(last))
    }
}

struct ActivityGuard(Arc<Activity>);

impl Drop for ActivityGuard {
    fn drop(&mut self) {
        let since_open = u64::try_from(self.0.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.0.last.store(since_open, Ordering::Release);
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its request counted as in flight until it is done.
struct TrackedBody {
    inner: Body,
    _guard: ActivityGuard,
}

impl HttpBody for TrackedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_request_lines_are_recognised() {
        assert!(looks_like_http(b"GET /"));
        assert!(looks_like_http(b"OPTIO"));
        assert!(!looks_like_http(&[0x16, 0x03, 0x01, 0x02, 0x00]));
        assert!(!looks_like_http(b"DELET"), "as Go: only these five");
    }

    #[test]
    fn throttled_logs_once_per_interval() {
        let mut t = Throttled::new();
        assert_eq!(t.tick(), Some(0));
        assert_eq!(t.tick(), None);
        assert_eq!(t.tick(), None);
        t.last = Some(Instant::now() - Throttled::INTERVAL);
        assert_eq!(t.tick(), Some(2));
    }
}
