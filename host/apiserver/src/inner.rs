//! The server's state that every part of the request path reads: the store, the served
//! types, the indexes the controllers keep current, the limits.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Weak};

use tokio::sync::{Semaphore, watch};
use wasmgate_storage::Store;

use crate::options::Options;
use crate::{
    aggregator, limits, metrics, outbound, plugins, policies, rbac, registry, sa_token, webhooks,
};

pub(crate) struct Inner {
    /// The server itself, for the requests it makes to itself ([`client::Client`]).
    pub(crate) me: Weak<Inner>,
    pub(crate) store: Store,
    pub(crate) registry: registry::Registry,
    pub(crate) options: Options,
    /// `true` once shutdown began: watches end, readyz fails.
    pub(crate) shutdown: watch::Sender<bool>,
    /// Whether the bootstrap namespaces exist.
    pub(crate) bootstrapped: AtomicBool,
    /// Bounds concurrent non-watch requests; a request that finds it empty gets 429.
    pub(crate) in_flight: Semaphore,
    /// The store revision the registry's custom types reflect (the CRD controller's
    /// progress); CRD writes wait on it.
    pub(crate) crd_synced: watch::Sender<u64>,
    /// In-flight requests per user (`max_in_flight_per_user`).
    pub(crate) per_user: limits::PerUser,
    /// Signs and verifies ServiceAccount tokens.
    pub(crate) sa_signer: sa_token::Signer,
    /// The RBAC roles and bindings ([`rbac::Index`]), rebuilt on every change.
    pub(crate) rbac: watch::Sender<Arc<rbac::Index>>,
    /// Keys of the terminating CRDs whose cleanup task runs (one task each).
    pub(crate) crd_cleanups: std::sync::Mutex<std::collections::HashSet<String>>,
    /// The Wasm plugins bound to API groups.
    pub(crate) plugins: plugins::Plugins,
    /// What `/metrics` exports.
    pub(crate) metrics: metrics::Metrics,
    /// The admission webhooks in force ([`webhooks::Index`]), rebuilt on every change.
    pub(crate) webhooks: watch::Sender<Arc<webhooks::Index>>,
    /// The admission policies in force ([`policies::Index`]), rebuilt with the webhooks.
    pub(crate) policies: watch::Sender<Arc<policies::Index>>,
    /// The `APIService`s in force ([`aggregator::Index`]) and what their probes found.
    pub(crate) aggregator: watch::Sender<Arc<aggregator::Index>>,
    pub(crate) probes: aggregator::Probes,
    /// The one outbound HTTPS client (webhooks, the aggregation layer).
    pub(crate) outbound: outbound::Outbound,
}
