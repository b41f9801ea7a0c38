//! The request scope: what the filters of the stack (`stack.rs`) learn about a request and
//! hand down to the handler and the verbs.

use http::Method;
use wasmgate_apimachinery::options::Query;
use wasmgate_apimachinery::request_info::{self, RequestInfo, RequestInfoError, Verb};

use crate::User;

/// What the filters learn about a request, passed down the stack.
#[derive(Debug)]
pub(crate) struct Call {
    /// The request's method.
    pub(crate) method: Method,
    /// The path, percent-decoded (Go's `url.URL.Path`: `a%2Db` names `a-b`).
    pub(crate) path: String,
    /// The query parameters.
    pub(crate) query: Query,
    /// What the path asks for; `Err` when it asks for nothing this server has (the
    /// handler answers `404`/`405`, after authentication).
    pub(crate) info: Result<RequestInfo, RequestInfoError>,
    /// Who is calling (after the stack's `authenticate`), then whom the request acts as
    /// (after its `impersonate`).
    pub(crate) user: User,
    /// The user the stack's `impersonate` switched to, for the audit event.
    pub(crate) impersonated: Option<User>,
    /// Warnings for the client (`Warning: 299 - "..."` headers).
    pub(crate) warnings: Vec<String>,
    /// Audit annotations admission left, for the audit event.
    pub(crate) audit_annotations: Vec<(String, String)>,
}

impl Call {
    /// The resource request, if that is what this is.
    pub(crate) fn resource(&self) -> Option<&request_info::ResourceRequest> {
        match &self.info {
            Ok(RequestInfo::Resource(r)) => Some(r),
            _ => None,
        }
    }

    /// Long-running requests (watches) end on their own terms, not by a deadline, and
    /// hold no place in the in-flight budget.
    pub(crate) fn long_running(&self) -> bool {
        self.resource().is_some_and(|r| r.verb == Verb::Watch)
    }

    /// Whether the request may change something (kube's in-flight kinds: everything but
    /// get, list and watch is `mutating`).
    pub(crate) fn mutating(&self) -> bool {
        match self.resource() {
            Some(r) => !matches!(r.verb, Verb::Get | Verb::List | Verb::Watch),
            None => !matches!(self.method, Method::GET | Method::HEAD),
        }
    }

    /// The verb authorization and audit see: the resource verb, else the method's.
    pub(crate) fn verb(&self) -> String {
        match self.resource() {
            Some(r) => r.verb.as_str().to_owned(),
            None => self.method.as_str().to_ascii_lowercase(),
        }
    }
}
