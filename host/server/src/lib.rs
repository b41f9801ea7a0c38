//! # wasmgate-server
//!
//! Serving, as kube-apiserver's `pkg/server` secure serving does it: the accept loop, TLS
//! with client-certificate authentication, HTTP/1.1 and HTTP/2 on one port, connection
//! limits and timeouts, and graceful shutdown. What a request means is the [`Handler`]'s
//! business (the API server); this crate knows only connections.
//!
//! * [`serve()`]: the accept loop and each connection's life ([`ServeOptions`]).
//! * `unauthenticated`: the bounded pool of connections that have not authenticated.
//! * `error_body_io`: hyper's own error answers given a `Status` body.
#![forbid(unsafe_code)]

mod error_body_io;
mod serve;
mod unauthenticated;

use std::future::Future;

use wasmgate_apiserver_core::body::Body;
use wasmgate_auth::User;

pub use serve::{ConnInfo, ServeOptions, serve};

/// What [`serve()`] serves: one request at a time, and the start of shutdown. Each request
/// carries its connection's [`ConnInfo`] as an extension.
pub trait Handler: Clone + Send + Sync + 'static {
    /// Answers `req`; `user` is the one its connection's client certificate names.
    fn handle(
        &self,
        req: http::Request<hyper::body::Incoming>,
        user: Option<User>,
    ) -> impl Future<Output = http::Response<Body>> + Send;

    /// Shutdown began: no more connections are accepted (readyz should fail, watches end).
    fn begin_shutdown(&self);
}
