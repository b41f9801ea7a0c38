//! The server's side of [`Client`]: the requests its own parts make (the garbage
//! collector's deletes, the plugin controller's status updates, the CRDs it installs) go
//! through the same request stack as clients' requests, admission included; and the
//! [`Context`] the controllers get: that client, the store to read and watch, the types.

use bytes::Bytes;
use http::{Method, Request, header};
use http_body_util::{BodyExt as _, Full};
use serde_json::Value;
use tokio::sync::watch;
use wasmgate_controllers::Context;
use wasmgate_registry::Registry;
use wasmgate_storage::Store;

use crate::User;
use crate::client::{Answer, Client};
use crate::inner::Inner;

impl Client for Inner {
    fn call<'a>(
        &'a self,
        user: User,
        method: Method,
        path: &'a str,
        content_type: &'a str,
        body: Option<&'a Value>,
    ) -> Answer<'a> {
        Box::pin(async move {
            // The stack serves through an `Arc` of the server; a server being dropped
            // answers no more requests, its own included.
            let inner = self.me.upgrade().ok_or("the API server is shutting down")?;
            let bytes = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
            let req = Request::builder()
                .method(method)
                .uri(path)
                .header(header::CONTENT_TYPE, content_type)
                .header(header::ACCEPT, "application/json")
                // The gateway's own writes name it, as kube's loopback client does.
                .header(
                    header::USER_AGENT,
                    concat!("wasmgate/", env!("CARGO_PKG_VERSION")),
                )
                .body(Full::new(bytes))
                .map_err(|e| e.to_string())?;
            let resp = crate::stack::handle(&inner, req, Some(user)).await;
            let code = resp.status().as_u16();
            let bytes = resp
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            Ok((code, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
        })
    }
}

impl Context for Inner {
    fn store(&self) -> &Store {
        &self.store
    }

    fn types(&self) -> &Registry {
        &self.registry
    }

    fn shutdown(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    fn resync(&self) -> std::time::Duration {
        self.options.namespace_resync
    }
}

impl wasmgate_admission::Context for Inner {
    fn plugins(&self) -> &crate::plugins::Plugins {
        &self.plugins
    }

    fn webhooks(&self) -> &watch::Sender<std::sync::Arc<crate::webhooks::Index>> {
        &self.webhooks
    }

    fn policies(&self) -> &watch::Sender<std::sync::Arc<crate::policies::Index>> {
        &self.policies
    }

    fn outbound(&self) -> &crate::outbound::Outbound {
        &self.outbound
    }

    fn metrics(&self) -> &crate::metrics::Metrics {
        &self.metrics
    }

    fn max_request_body_bytes(&self) -> usize {
        self.options.max_request_body_bytes
    }
}

impl wasmgate_rbac::Context for Inner {
    fn rbac(&self) -> &watch::Sender<std::sync::Arc<crate::rbac::Index>> {
        &self.rbac
    }
}

impl wasmgate_aggregator::Context for Inner {
    fn aggregator(&self) -> &watch::Sender<std::sync::Arc<crate::aggregator::Index>> {
        &self.aggregator
    }

    fn probes(&self) -> &crate::aggregator::Probes {
        &self.probes
    }

    fn outbound(&self) -> &crate::outbound::Outbound {
        &self.outbound
    }

    fn front_proxy(&self) -> Option<&crate::FrontProxy> {
        self.options.front_proxy.as_ref()
    }

    fn client_ca_pem(&self) -> Option<&str> {
        self.options.client_ca_pem.as_deref()
    }

    fn request_body_limits(&self) -> (usize, std::time::Duration) {
        (
            self.options.max_request_body_bytes,
            self.options.body_read_timeout,
        )
    }
}

impl wasmgate_apiextensions::Context for Inner {
    fn crd_synced(&self) -> &watch::Sender<u64> {
        &self.crd_synced
    }

    fn crd_cleanups(&self) -> &std::sync::Mutex<std::collections::HashSet<String>> {
        &self.crd_cleanups
    }
}

impl wasmgate_endpoints::Context for Inner {
    fn bookmark_interval(&self) -> std::time::Duration {
        self.options.bookmark_interval
    }

    fn min_request_timeout(&self) -> std::time::Duration {
        self.options.min_request_timeout
    }

    fn resource_version_wait(&self) -> std::time::Duration {
        self.options.resource_version_wait
    }

    fn sa_signer(&self) -> &crate::sa_token::Signer {
        &self.sa_signer
    }
}
