//! The request's scope: the server, the type, the request's parts, who makes it, and
//! what it leaves for its response (`Warning`s) and its audit event; the kind it is for
//! ([`Kind`]) and its negotiated encoding (`Negotiated`) hang off it.

use std::sync::Arc;

use http::{HeaderMap, header};
use wasmgate_apimachinery::options::Query;
use wasmgate_apimachinery::request_info::ResourceRequest;
use wasmgate_apimachinery::status::{Status, Target};
use wasmgate_storage::ReadAt;

use super::Negotiated;
use crate::error::{ApiError, ApiResult, storage_error};
use crate::kinds::Kind;
use crate::registry::ResourceType;
use crate::response::header_str;
use crate::{Context, User};

/// Everything a verb needs about its request.
pub(crate) struct Ctx {
    pub(crate) inner: Arc<dyn Context>,
    pub(crate) rt: Arc<ResourceType>,
    pub(crate) req: ResourceRequest,
    pub(crate) query: Query,
    pub(crate) headers: HeaderMap,
    /// The response encoding the request negotiated.
    pub(crate) encoding: Negotiated,
    /// `Warning` headers to send.
    pub(crate) warnings: Vec<String>,
    /// `Warning`s of steps that only borrow the context (admission in an update).
    pub(crate) late_warnings: std::sync::Mutex<Vec<String>>,
    /// Audit annotations admission left (`key` -> `value`), for the request's audit event.
    pub(crate) audit_annotations: std::sync::Mutex<Vec<(String, String)>>,
    pub(crate) user: User,
    /// The write is a server-side apply (also when it creates): the apply sets
    /// `managedFields` itself, no `Update` entry is recorded.
    pub(crate) applying: bool,
}

impl Ctx {
    /// The kind the request is for, at the request's version: its strategy, storage and
    /// presentation.
    pub(crate) fn kind(&self) -> Kind<'_> {
        Kind {
            rt: &self.rt,
            version: &self.req.version,
            subresource: self.req.subresource.as_deref(),
            server: &self.inner,
        }
    }

    /// Whether the client takes gzip (`Accept-Encoding`).
    pub(crate) fn accepts_gzip(&self) -> bool {
        header_str(&self.headers, header::ACCEPT_ENCODING)
            .is_some_and(crate::response::accepts_gzip)
    }

    pub(crate) fn namespace(&self) -> Option<&str> {
        self.req.namespace.as_deref()
    }

    pub(crate) fn name(&self) -> &str {
        self.req.name.as_deref().unwrap_or("")
    }

    pub(crate) fn target<'a>(&'a self, name: &'a str) -> Target<'a> {
        Target {
            group: &self.rt.group,
            resource: &self.rt.resource,
            name,
        }
    }

    pub(crate) fn key(&self, name: &str) -> String {
        self.rt.key(self.namespace(), name)
    }

    /// The stored object `name` at the latest revision, or 404.
    pub(crate) async fn read_latest(&self, name: &str) -> ApiResult<wasmgate_storage::Versioned> {
        self.read_latest_at(&self.key(name), self.target(name))
            .await
    }

    /// The object stored at `key` at the latest revision, or 404 naming `target`.
    pub(crate) async fn read_latest_at(
        &self,
        key: &str,
        target: Target<'_>,
    ) -> ApiResult<wasmgate_storage::Versioned> {
        let (_, found) = self
            .inner
            .store()
            .get(key, ReadAt::Latest)
            .await
            .map_err(|e| storage_error(e, target))?;
        found.ok_or_else(|| ApiError::from(Status::not_found(target)))
    }

    pub(crate) fn api_version(&self) -> String {
        self.rt.group_version(&self.req.version)
    }

    /// A copy of the request's context that outlives the handler (for the task that
    /// writes a streamed response); warnings added to it go nowhere.
    pub(crate) fn detached(&self) -> Ctx {
        Ctx {
            inner: self.inner.clone(),
            rt: self.rt.clone(),
            req: self.req.clone(),
            query: self.query.clone(),
            headers: self.headers.clone(),
            encoding: self.encoding.clone(),
            warnings: Vec::new(),
            late_warnings: Default::default(),
            audit_annotations: Default::default(),
            user: self.user.clone(),
            applying: self.applying,
        }
    }

    /// Audit annotations admission left, for the request's audit event.
    pub(super) fn add_audit_annotations(&self, a: Vec<(String, String)>) {
        if !a.is_empty() {
            self.audit_annotations
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(a);
        }
    }

    /// `Warning`s of a step that only borrows the context.
    pub(super) fn add_late_warnings(&self, w: Vec<String>) {
        if !w.is_empty() {
            self.late_warnings
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(w);
        }
    }
}
