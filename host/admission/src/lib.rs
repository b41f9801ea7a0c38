//! # wasmgate-admission
//!
//! Admission's three kinds of admitter and what keeps them current (kube's
//! `k8s.io/apiserver/pkg/admission` with its plugins):
//! * [`plugins`]: the Wasm plugins bound to API groups (`WasmPlugin` objects, their
//!   modules, the controller that loads them, `--plugin-dir`);
//! * [`webhooks`]: `MutatingWebhookConfiguration` / `ValidatingWebhookConfiguration`, their
//!   index and the `AdmissionReview` call;
//! * [`policies`]: `ValidatingAdmissionPolicy` and its bindings, evaluated in CEL;
//! * [`configuration`]: the webhooks' and policies' indexes, kept current from the store;
//! * [`chain`]: the three run for one write, from its [`chain::Attributes`].
//!
//! What
//! this crate may touch of the server is its [`Context`]: the controllers' context (the
//! store to read and watch, the loopback client for writes), plus the admitters' state the
//! server keeps, the outbound client and the metrics.
#![forbid(unsafe_code)]

pub mod chain;
pub mod configuration;
pub mod plugins;
pub mod policies;
pub mod webhooks;

use std::sync::Arc;

use tokio::sync::watch;
// The crates below this one, under the names their modules had in the API server.
use wasmgate_apiserver_core::{User, body, client, error, object, response};
use wasmgate_controllers as controller;
use wasmgate_metrics as metrics;
use wasmgate_outbound as outbound;
use wasmgate_registry as registry;

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
