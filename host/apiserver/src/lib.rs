//! # wasmgate-apiserver
//!
//! The Kubernetes REST and watch protocol over a [`wasmgate_storage::Store`]: the request
//! stack (kube's `pkg/server` filters), routing, audit and the reviews, wired to the
//! crates that hold each concern. [`ApiServer`] is the [`wasmgate_server::Handler`] that
//! `wasmgate-server` serves.
//!
//! ## Layout
//! * `stack`: the filters every request passes (deadline, in-flight share, authentication
//!   of tokens, impersonation, audit, authorization), then `handler`.
//! * `handler`: routing of one request to discovery, a review, the aggregator's proxy or
//!   a type's verbs (`wasmgate-endpoints`); the single place errors become `Status`.
//! * `reviews`: the create-only reviews (access reviews, `TokenReview`).
//! * `audit`: the audit log.
//! * `inner`: the state every request reads ([`Options`] are in `options`).
//! * `internal`: what the server lends the crates below: the loopback
//!   [`Client`](wasmgate_apiserver_core::client::Client) and each crate's `Context`.
//!
//! Below it, each with the `Context` trait it needs of the server:
//! `wasmgate-endpoints` (the verbs, the kinds' strategies), `wasmgate-apiextensions`
//! (CRDs), `wasmgate-aggregator` (APIServices), `wasmgate-admission` (the admission chain:
//! Wasm plugins, webhooks, policies), `wasmgate-rbac` (the authorizer),
//! `wasmgate-controllers` (garbage collector, namespaces, the controller loop); and `wasmgate-metrics`, `wasmgate-registry` (resource types, discovery,
//! OpenAPI), `wasmgate-auth`, `wasmgate-outbound`, `wasmgate-apiserver-core`. This crate
//! names no storage engine, wasmtime or tikv-client: plugins run through
//! `wasmgate-plugin-runtime`, the one crate that names wasmtime.
//!
//! ## Cancel safety
//! Dropping a request future (client gone) never leaves a partial write: a write is one
//! store commit, which either happens or not. A watch ends when its client disconnects,
//! when `timeoutSeconds` passes, or at shutdown, always with a clean end of stream.
#![forbid(unsafe_code)]

pub mod audit;
mod authn;
mod handler;
mod health;
mod inner;
mod internal;
mod limits;
mod options;
mod request;
mod reviews;
mod stack;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{Semaphore, watch};
use wasmgate_storage::Store;

// The crates below this one, under the names their modules had in it.
use wasmgate_admission::{self as admission, plugins, policies, webhooks};
use wasmgate_aggregator as aggregator;
use wasmgate_apiextensions::controller as crd_controller;
use wasmgate_apiserver_core::{body, client, error, object, response};
use wasmgate_auth::{authn_token, sa_token};
use wasmgate_controllers::{self as controllers, gc, namespaces};
use wasmgate_metrics as metrics;
use wasmgate_outbound as outbound;
use wasmgate_rbac as rbac;
use wasmgate_registry as registry;
use wasmgate_registry::{discovery, version};

pub use body::Body;
pub use version::GIT_VERSION;
pub use wasmgate_aggregator::FrontProxy;
pub use wasmgate_auth::User;

use inner::Inner;
pub use options::Options;

/// The API server. Cheap to clone.
#[derive(Clone)]
pub struct ApiServer {
    inner: Arc<Inner>,
}

impl ApiServer {
    /// Builds the server over `store`: registers the built-in types, creates the
    /// bootstrap namespaces, and starts the namespace controller and the compactor
    /// (needs a tokio runtime).
    pub async fn new(store: Store, options: Options) -> Result<ApiServer, ApiServerError> {
        let sa_signer =
            sa_token::Signer::load_or_create(options.service_account_key_file.as_deref())
                .map_err(ApiServerError::Bootstrap)?;
        let inner = Arc::new_cyclic(|me| Inner {
            me: me.clone(),
            sa_signer,
            store,
            registry: registry::Registry::new(registry::builtin_types()),
            in_flight: Semaphore::new(options.max_in_flight.max(1)),
            per_user: limits::PerUser::default(),
            plugins: plugins::Plugins::new(options.plugin_cache_dir.clone()),
            metrics: metrics::Metrics::new(),
            options,
            shutdown: watch::Sender::new(false),
            bootstrapped: AtomicBool::new(false),
            crd_synced: watch::Sender::new(0),
            rbac: watch::Sender::new(Arc::new(rbac::Index::default())),
            crd_cleanups: std::sync::Mutex::new(std::collections::HashSet::new()),
            webhooks: watch::Sender::new(Arc::new(webhooks::Index::default())),
            outbound: outbound::Outbound::new(),
            policies: watch::Sender::new(Arc::new(policies::Index::default())),
            aggregator: watch::Sender::new(Arc::new(aggregator::Index::default())),
            probes: aggregator::Probes::default(),
        });
        // Each crate below gets the server as the `Context` it declares (`internal.rs`);
        // its tasks hold it weakly, so they never keep it alive.
        let me = Arc::downgrade(&inner);
        namespaces::bootstrap(inner.as_ref())
            .await
            .map_err(ApiServerError::Bootstrap)?;
        // The index follows the store from the start: each bootstrap write waits for it.
        tokio::spawn(rbac::run(me.clone() as Weak<dyn rbac::Context>));
        rbac::bootstrap(inner.as_ref())
            .await
            .map_err(ApiServerError::Bootstrap)?;
        aggregator::publish_authentication(&inner)
            .await
            .map_err(ApiServerError::Bootstrap)?;
        tokio::spawn(aggregator::run(me.clone() as Weak<dyn aggregator::Context>));
        // Admit with the stored webhook configurations from the first request on.
        admission::configuration::sync(inner.as_ref())
            .await
            .map_err(ApiServerError::Bootstrap)?;
        tokio::spawn(admission::configuration::run(
            me.clone() as Weak<dyn admission::Context>
        ));
        // Serve every stored CRD from the first request on (a restart keeps them).
        let crds = inner.clone() as Arc<dyn wasmgate_apiextensions::Context>;
        crd_controller::sync(&crds)
            .await
            .map_err(ApiServerError::Bootstrap)?;
        inner.bootstrapped.store(true, Ordering::Release);
        tokio::spawn(namespaces::run(me.clone() as Weak<dyn controllers::Context>));
        tokio::spawn(crd_controller::run(Arc::downgrade(&crds)));
        drop(crds);
        tokio::spawn(gc::run(me.clone() as Weak<dyn controllers::Context>));
        tokio::spawn(compactor(me.clone()));
        tokio::spawn(inflight_ticker(me.clone()));
        // The WasmPlugin type is a CRD: installed once the CRD controller runs.
        plugins::crd::ensure(inner.as_ref())
            .await
            .map_err(ApiServerError::Bootstrap)?;
        tokio::spawn(plugins::controller::run(
            me.clone() as Weak<dyn admission::Context>
        ));
        if let Some(dir) = inner.options.plugin_dir.clone() {
            tokio::spawn(plugins::dir::run(me as Weak<dyn admission::Context>, dir));
        }
        Ok(ApiServer { inner })
    }

    /// Handles one request (the service behind [`wasmgate_server::serve`]; tests call it
    /// directly).
    pub async fn handle<B>(&self, req: http::Request<B>, user: Option<User>) -> http::Response<Body>
    where
        B: http_body::Body<Data = Bytes> + Send + Unpin,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        stack::handle(&self.inner, req, user).await
    }

    /// Starts shutting down: readyz fails and every watch ends cleanly.
    pub fn begin_shutdown(&self) {
        self.inner.shutdown.send_replace(true);
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }
}

/// The API server is what the serving loop serves.
impl wasmgate_server::Handler for ApiServer {
    async fn handle(
        &self,
        req: http::Request<hyper::body::Incoming>,
        user: Option<User>,
    ) -> http::Response<Body> {
        ApiServer::handle(self, req, user).await
    }

    fn begin_shutdown(&self) {
        ApiServer::begin_shutdown(self);
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiServerError {
    /// What the server writes or reads at start failed: the service account key, the
    /// bootstrap namespaces, the default RBAC, the authentication ConfigMap, the stored
    /// CRDs and webhooks, the WasmPlugin CRD. Another replica writing the same objects at
    /// the same moment is not a cause: those writes are create-or-verify.
    #[error("starting the API server failed: {0}")]
    Bootstrap(String),
}

/// Compacts history older than the retention period, periodically (`STORE-02`).
async fn compactor(inner: Weak<Inner>) {
    let mut samples: std::collections::VecDeque<(tokio::time::Instant, u64)> = Default::default();
    loop {
        let Some(i) = inner.upgrade() else { return };
        let interval = i.options.compaction_interval;
        let retention = i.options.history_retention;
        let now = tokio::time::Instant::now();
        samples.push_back((now, i.store.revision()));
        let mut target = None;
        while let Some(&(t, rev)) = samples.front() {
            if now.duration_since(t) >= retention {
                target = Some(rev);
                samples.pop_front();
            } else {
                break;
            }
        }
        // Of several replicas over one store, the one holding the lease compacts (it
        // renews the lease every round; another takes over 3 rounds after it stops).
        let leader = match i
            .store
            .lease("compaction", interval.saturating_mul(3))
            .await
        {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %error::error_chain(&e), "compaction lease");
                false
            }
        };
        if leader
            && let Some(rev) = target
            && rev > i.store.compacted()
        {
            if let Err(e) = i.store.compact(rev).await {
                tracing::warn!(error = %error::error_chain(&e), "compaction failed");
            } else {
                tracing::debug!(revision = rev, "compacted");
            }
        }
        let shutdown = i.shutdown.subscribe();
        drop(i);
        let mut shutdown = shutdown;
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }
}

/// Starts each second of `apiserver_current_inflight_requests` (kube reports the most
/// requests in flight during the last second), for as long as the server lives.
async fn inflight_ticker(inner: Weak<Inner>) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        inner.metrics.requests.tick();
    }
}
