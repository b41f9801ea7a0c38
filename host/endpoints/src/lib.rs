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
mod events;
mod kinds;
mod verbs;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Response};
use wasmgate_apimachinery::options::Query;
use wasmgate_apimachinery::request_info::ResourceRequest;

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

use crate::body::Body;
use crate::error::ApiResult;
use crate::registry::ResourceType;

/// What the verbs need of the server: the store, the types and the loopback client
/// (`wasmgate_controllers::Context`), the admission chain's plugins, webhooks and policies
/// (`wasmgate_admission::Context`), RBAC's index (escalation checks, apply's field-manager
/// permission), the aggregator's and the CRD controller's progress (writes to those kinds
/// wait until they are served), and the few tunings below.
pub trait Context:
    wasmgate_admission::Context
    + wasmgate_rbac::Context
    + wasmgate_aggregator::Context
    + wasmgate_apiextensions::Context
    + Send
    + Sync
    + 'static
{
    /// How often a watch that allows bookmarks gets one.
    fn bookmark_interval(&self) -> Duration;
    /// Watches without `timeoutSeconds` end after a random time in [1x, 2x) of this.
    fn min_request_timeout(&self) -> Duration;
    /// How long a `NotOlderThan` read waits for a newer revision before 504.
    fn resource_version_wait(&self) -> Duration;
    /// Signs ServiceAccount tokens (`serviceaccounts/token`).
    fn sa_signer(&self) -> &sa_token::Signer;
}

/// One resource request, routed: the server behind it, the type, the request's parts and
/// who makes it.
pub struct Request {
    pub server: Arc<dyn Context>,
    pub rt: Arc<ResourceType>,
    pub req: ResourceRequest,
    pub query: Query,
    pub headers: HeaderMap,
    pub user: User,
}

/// What serving a request gave: the response, and what the request leaves for the
/// response's `Warning` headers and its audit event (also when it failed).
pub struct Served {
    pub response: ApiResult<Response<Body>>,
    pub warnings: Vec<String>,
    pub audit_annotations: Vec<(String, String)>,
}

/// Serves one resource request with its verb.
pub async fn serve(request: Request, body: Bytes) -> Served {
    verbs::serve(request, body).await
}
