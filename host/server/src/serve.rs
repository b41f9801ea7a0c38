//! Serving: the accept loop, TLS with client-certificate authentication, HTTP/1.1 and
//! HTTP/2 on one port, connection limits, and graceful shutdown.
//!
//! Connections are bounded in time, so idle or slow clients cannot hold the server's
//! file descriptors: a connection must complete its TLS handshake and its first request's
//! headers within `header_read_timeout` of being accepted (whatever it is doing, it is
//! closed then), and every later request's headers within that time too; a connection
//! with no request in flight for `idle_timeout` is closed. Connections that have not
//! authenticated (no client certificate, no request with a valid bearer token yet) are
//! kept in a pool of at most `max_unauthenticated_connections` idle ones: past it the
//! oldest idle one is closed to make room, and a newcomer is never refused
//! ([`crate::unauthenticated`]). A plain-HTTP request to the TLS port gets Go's
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
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use wasmgate_apiserver_core::body::Body;
use wasmgate_auth::{User, authn_x509};

use crate::Handler;
use crate::error_body_io::ErrorBodyIo;
use crate::unauthenticated::{Leave, Member, Phase, Pool};

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
    /// How long a client may take for the TLS handshake and its first request (from the
    /// moment it is accepted), and for each later request's headers.
    pub header_read_timeout: Duration,
    /// How long a connection may stay open with no request in flight.
    pub idle_timeout: Duration,
    /// Most idle connections kept at once that have not authenticated (no client
    /// certificate, no request with a valid token yet); past it the oldest idle one is
    /// closed for a newcomer. Only on the TLS listener.
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
pub async fn serve<S: Handler>(
    server: S,
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
    let unauthenticated = Pool::new(options.max_unauthenticated_connections);
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
        let activity = Arc::new(Activity::new());
        let member = acceptor.as_ref().map(|_| {
            let shed = unauthenticated.shed_count();
            let member = unauthenticated.join(activity.in_flight.clone());
            if unauthenticated.shed_count() != shed
                && let Some(suppressed) = refused.tick()
            {
                tracing::warn!(
                    %peer,
                    suppressed,
                    "too many unauthenticated connections: closed the oldest idle one"
                );
            }
            member
        });
        let _ = stream.set_nodelay(true);
        let conn = Conn {
            server: server.clone(),
            builder: builder.clone(),
            stop: stop_rx.clone(),
            idle_timeout: options.idle_timeout,
            deadline: Instant::now() + options.header_read_timeout,
            activity,
            peer,
            member: member.clone(),
            _live: LiveGuard::new(&live),
        };
        let acceptor = acceptor.clone();
        let fallback_user = options.unauthenticated_user.clone();
        tokio::spawn(async move {
            let _leave = member.map(Leave);
            match acceptor {
                Some(acceptor) => tls_connection(conn, acceptor, stream, fallback_user).await,
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

async fn tls_connection<S: Handler>(
    conn: Conn<S>,
    acceptor: tokio_rustls::TlsAcceptor,
    mut stream: TcpStream,
    fallback_user: Option<User>,
) {
    let (deadline, peer) = (conn.deadline, conn.peer);
    let member = conn.member.clone();
    // Closed to make room while it has sent nothing: it ends here.
    let shed = Member::shed_of(member.as_deref());
    tokio::pin!(shed);
    let mut head = [0u8; 5];
    let peeked = tokio::select! {
        r = tokio::time::timeout_at(deadline, stream.peek(&mut head)) => r,
        () = &mut shed => return,
    };
    if let Some(m) = &member {
        m.set_phase(Phase::Handshaking);
    }
    if let Ok(Ok(5)) = peeked
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
    let handshake = tokio::time::timeout_at(deadline, acceptor.accept(stream));
    let tls = match handshake.await {
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
    // A connection with a client certificate has authenticated: it leaves the pool of
    // unauthenticated ones now, not when it ends.
    if let Some(m) = &member {
        m.set_phase(Phase::Established);
        if user.is_some() {
            m.leave();
        }
    }
    conn.serve(TokioIo::new(ErrorBodyIo::new(tls)), user.or(fallback_user))
        .await;
}

/// What a request may learn of its connection (a request extension).
#[derive(Clone)]
pub struct ConnInfo {
    /// The client's address.
    pub peer: std::net::SocketAddr,
    /// Its place among the unauthenticated connections, while it has one.
    member: Option<Arc<Member>>,
}

impl ConnInfo {
    /// A request on the connection authenticated: it is no longer an unauthenticated
    /// connection (a client with a bearer token holds its connections as one with a
    /// certificate does).
    pub fn authenticated(&self) {
        if let Some(m) = &self.member {
            m.leave();
        }
    }
}

/// How long a connection told to go for sending no request in time has to leave before
/// it is dropped.
const SILENT_GRACE: Duration = Duration::from_secs(1);

/// One accepted connection.
struct Conn<S> {
    server: S,
    builder: auto::Builder<TokioExecutor>,
    stop: watch::Receiver<bool>,
    idle_timeout: Duration,
    /// When the TLS handshake and the first request must be complete.
    deadline: Instant,
    /// Its requests in flight.
    activity: Arc<Activity>,
    peer: std::net::SocketAddr,
    /// Its place among the unauthenticated connections (TLS listener only).
    member: Option<Arc<Member>>,
    _live: LiveGuard,
}

impl<S: Handler> Conn<S> {
    /// Serves requests until the client closes, the connection is idle for too long, or
    /// the server shuts down (then after the requests in flight).
    async fn serve<I>(self, io: TokioIo<I>, user: Option<User>)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let activity = self.activity.clone();
        let server = self.server.clone();
        let act = activity.clone();
        let info = ConnInfo {
            peer: self.peer,
            member: self.member.clone(),
        };
        let service = service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
            let server = server.clone();
            let user = user.clone();
            let guard = Activity::start(&act);
            req.extensions_mut().insert(info.clone());
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
        // The first request must have arrived by the deadline, whatever the connection is
        // doing (an idle TLS connection, headers or an HTTP/2 preface trickling in).
        // It is told to go (an HTTP/2 GOAWAY) rather than cut off: a client that sent a
        // request just then (Go's HTTP/2 client may hold a connection it dialled and not
        // used yet) retries it elsewhere instead of seeing an unexpected EOF. One that has
        // still sent nothing a moment later is dropped.
        let first_request = tokio::time::sleep_until(self.deadline);
        tokio::pin!(first_request);
        let mut told_to_go = false;
        let cut_off = tokio::time::sleep_until(self.deadline + SILENT_GRACE);
        tokio::pin!(cut_off);
        let shed = Member::shed_of(self.member.as_deref());
        tokio::pin!(shed);
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
                () = &mut first_request, if !activity.started() && !told_to_go => {
                    tracing::debug!(peer = %self.peer, "no request within the header read timeout: closing");
                    told_to_go = true;
                    if !closing {
                        conn.as_mut().graceful_shutdown();
                        closing = true;
                    }
                }
                () = &mut cut_off, if told_to_go && !activity.started() => {
                    tracing::debug!(peer = %self.peer, "no request within the header read timeout: closed");
                    return;
                }
                () = &mut shed, if !closing => {
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
    /// Shared with the connection's place among the unauthenticated ones.
    in_flight: Arc<AtomicUsize>,
    /// Whether a request has arrived.
    started: std::sync::atomic::AtomicBool,
    /// When the connection opened; `last` counts from it.
    opened: Instant,
    /// Milliseconds after `opened` when the last request ended (atomic: every request
    /// updates it, and a lock there showed in GET throughput).
    last: AtomicU64,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            in_flight: Arc::new(AtomicUsize::new(0)),
            started: std::sync::atomic::AtomicBool::new(false),
            opened: Instant::now(),
            last: AtomicU64::new(0),
        }
    }

    fn start(this: &Arc<Activity>) -> ActivityGuard {
        this.in_flight.fetch_add(1, Ordering::AcqRel);
        this.started.store(true, Ordering::Release);
        ActivityGuard(this.clone())
    }

    /// Whether a request has arrived on the connection.
    fn started(&self) -> bool {
        self.started.load(Ordering::Acquire)
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
