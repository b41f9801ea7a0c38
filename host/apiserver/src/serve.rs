//! Serving: the accept loop, TLS with client-certificate authentication, HTTP/1.1 and
//! HTTP/2 on one port, and graceful shutdown.
//!
//! Shutdown, in order: stop accepting; mark the server shutting down (readyz fails, every
//! watch ends with a clean end of stream); let in-flight requests finish, up to
//! `drain_timeout`; then return.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

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
}

impl std::fmt::Debug for ServeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeOptions")
            .field("tls", &self.tls.is_some())
            .field("unauthenticated_user", &self.unauthenticated_user)
            .field("drain_timeout", &self.drain_timeout)
            .finish()
    }
}

/// Serves `server` on `listener` until `shutdown` completes, then shuts down gracefully.
pub async fn serve(
    server: ApiServer,
    listener: TcpListener,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http2().max_concurrent_streams(1000);
    let acceptor = options.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // Out of file descriptors and similar: back off, keep serving.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let server = server.clone();
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let acceptor = acceptor.clone();
        let fallback_user = options.unauthenticated_user.clone();
        tokio::spawn(async move {
            match acceptor {
                Some(acceptor) => {
                    let tls = match tokio::time::timeout(
                        Duration::from_secs(10),
                        acceptor.accept(stream),
                    )
                    .await
                    {
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
                        .map(|(name, groups)| User { name, groups })
                        .or(fallback_user);
                    serve_connection(server, builder, watcher, TokioIo::new(tls), user).await;
                }
                None => {
                    serve_connection(
                        server,
                        builder,
                        watcher,
                        TokioIo::new(stream),
                        fallback_user,
                    )
                    .await
                }
            }
        });
    }
    drop(listener);
    server.begin_shutdown();
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(options.drain_timeout) => {
            tracing::warn!("shutdown: in-flight requests did not finish in time");
        }
    }
    Ok(())
}

async fn serve_connection<I>(
    server: ApiServer,
    builder: auto::Builder<TokioExecutor>,
    watcher: hyper_util::server::graceful::Watcher,
    io: TokioIo<I>,
    user: Option<User>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| {
        let server = server.clone();
        let user = user.clone();
        async move { Ok::<_, Infallible>(server.handle(req, user).await) }
    });
    let conn = builder.serve_connection(io, service).into_owned();
    if let Err(e) = watcher.watch(conn).await {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}
