//! What this crate needs of the server ([`Context`]) and what one request brings and
//! leaves ([`Request`], [`Served`]).

use std::sync::Arc;
use std::time::Duration;

use http::{HeaderMap, Response};
use wasmgate_apimachinery::options::Query;
use wasmgate_apimachinery::request_info::ResourceRequest;

use crate::body::Body;
use crate::error::ApiResult;
use crate::registry::ResourceType;
use crate::{User, sa_token};

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
