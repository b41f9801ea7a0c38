//! # wasmgate-endpoints
//!
//! The verbs of the Kubernetes REST and watch protocol over one generic store, and what
//! each kind brings to them (kube's `pkg/endpoints/handlers`, `pkg/registry/generic/registry`
//! and the per-kind strategies of `pkg/registry/*`):
//! * `verbs`: one module per verb (get, list, watch, create, update, patch, apply, delete,
//!   deletecollection, scale, token), the write path they share (admission is
//!   `wasmgate_admission::chain`, asked with the write's attributes) and the response
//!   encodings;
//! * `kinds`: the choice between the built-in kinds' strategies, the CRD kind's and the
//!   custom resources' (`wasmgate-apiextensions`), and how a kind's objects are presented
//!   (versions, conversion);
//! * `builtin`, `events`: the built-in kinds' strategies (defaults, validation).
//!
//! [`serve`] is the one entry: the API server's handler has routed the request to a type
//! and read its body. Everything this crate needs of the server is [`Context`].
#![forbid(unsafe_code)]

mod builtin;
mod context;
mod events;
mod kinds;
mod verbs;

use bytes::Bytes;

// The crates below this one, under the names their modules had in the API server.
use wasmgate_admission::{plugins, policies, webhooks};
use wasmgate_aggregator as aggregator;
use wasmgate_apiextensions::{controller as crd_controller, crd, custom};
use wasmgate_apiserver_core::{body, error, object, response};
use wasmgate_auth::{User, sa_token};
use wasmgate_metrics as metrics;
use wasmgate_rbac as rbac;
use wasmgate_registry as registry;
use wasmgate_registry::openapi;

pub use crate::context::{Context, Request, Served};

/// Serves one resource request with its verb.
pub async fn serve(request: Request, body: Bytes) -> Served {
    verbs::serve(request, body).await
}
