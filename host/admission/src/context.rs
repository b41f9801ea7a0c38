//! What the API server lends admission ([`Context`]).

use std::sync::Arc;

use tokio::sync::watch;

use crate::{metrics, outbound, plugins, policies, webhooks};

/// What the API server lends admission.
pub trait Context: wasmgate_controllers::Context {
    /// The Wasm plugins bound to API groups.
    fn plugins(&self) -> &plugins::Plugins;
    /// The webhooks in force.
    fn webhooks(&self) -> &watch::Sender<Arc<webhooks::Index>>;
    /// The admission policies in force.
    fn policies(&self) -> &watch::Sender<Arc<policies::Index>>;
    /// The one outbound HTTPS client.
    fn outbound(&self) -> &outbound::Outbound;
    /// Where calls are counted.
    fn metrics(&self) -> &metrics::Metrics;
    /// Largest accepted request body: a mutated object, or a conversion webhook's answer,
    /// may be at most twice as large.
    fn max_request_body_bytes(&self) -> usize;
}

/// A shared server is a context too (`&Arc<dyn Context>` passes as `&dyn Context`).
impl<C: Context + ?Sized> Context for Arc<C> {
    fn plugins(&self) -> &plugins::Plugins {
        (**self).plugins()
    }

    fn webhooks(&self) -> &watch::Sender<Arc<webhooks::Index>> {
        (**self).webhooks()
    }

    fn policies(&self) -> &watch::Sender<Arc<policies::Index>> {
        (**self).policies()
    }

    fn outbound(&self) -> &outbound::Outbound {
        (**self).outbound()
    }

    fn metrics(&self) -> &metrics::Metrics {
        (**self).metrics()
    }

    fn max_request_body_bytes(&self) -> usize {
        (**self).max_request_body_bytes()
    }
}
