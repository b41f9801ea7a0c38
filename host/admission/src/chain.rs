//! The admission chain of one write (kube's `pkg/admission` chain): its [`Attributes`] go
//! through the Wasm plugins bound to its group, the admission webhooks and the
//! ValidatingAdmissionPolicies that match it, in kube's order: mutating plugins in order,
//! then mutating webhooks; then (after the caller validated the mutated object again)
//! validating plugins, webhooks and policies. What kube-apiserver does with admission
//! webhooks, with the same wording: a denial is `admission plugin "NAME" denied the
//! request: MESSAGE` with the plugin's code (403 when it gives none), reason and causes; a
//! failing plugin (trap, timeout, out of memory, malformed result, an answer over the
//! runtime's caps) is a 500 `InternalError` under `failurePolicy: Fail`, and a `Warning`
//! under `Ignore` (nothing of its answer is used). [`AdmissionError`] names these
//! outcomes; its one mapping to `Status` is the wording above.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use wasmgate_apimachinery::status::{Status, StatusCause};
use wasmgate_plugin_runtime::wit::{
    self, AdmissionRequest, AdmissionResponse, GroupVersionKind, GroupVersionResource, Mutation,
    Operation, UserInfo,
};
use wasmgate_plugin_runtime::{CallError, Session};
use wasmgate_storage::ReadAt;

use crate::User;
use crate::error::{ApiError, ApiResult};
use crate::metrics::{Step, operation_name};
use crate::object::{self, meta, meta_str};
use crate::plugins::{Binding, FailurePolicy, Op};
use crate::policies;
use crate::webhooks::{self, Webhook};

/// The plugins and webhooks one request goes through, and the request they are sent.
pub struct Admission {
    bindings: Vec<Arc<Binding>>,
    /// The request's calls of each binding's plugin (by index): a plugin bound as both
    /// hooks answers `mutate` and `validate` in one instance.
    sessions: Vec<Session>,
    mutating_webhooks: Vec<Arc<Webhook>>,
    validating_webhooks: Vec<Arc<Webhook>>,
    /// The admission policies and their bindings that apply, with how a denial names
    /// the resource.
    policies: Vec<(Arc<policies::Policy>, Arc<policies::Binding>)>,
    policy_target: PolicyTarget,
    req: AdmissionRequest,
    /// What the plugins are sent instead when the request is at another version than the
    /// storage version.
    hub: Option<Hub>,
    inner: Arc<dyn crate::Context>,
    /// Audit annotations of plugins, webhooks and policies (`<name>/<key>`, value).
    annotations: Vec<(String, String)>,
}

/// Admission plugins see a custom resource at its storage version, whatever version the
/// client wrote (ARCHITECTURE.md "The write path"), so a plugin for a multi-version CRD
/// handles one version. As kube-apiserver does for a webhook registered for one version
/// (`VersionedAttributes`), the object is converted for the plugins and a mutated one
/// back; webhooks and policies see the request's version.
struct Hub {
    versions: Box<dyn VersionConverter>,
    /// The plugins' request: `kind` and `resource` at the storage version (`requestKind`
    /// and `requestResource` keep the client's), objects at the storage version.
    req: AdmissionRequest,
    /// The object (at the request's version) last converted, and its storage form.
    converted: Option<(Value, Value)>,
}

impl Hub {
    /// `obj` at the storage version, converted again only when it changed since.
    async fn storage_form(&mut self, obj: &Value) -> ApiResult<&Value> {
        let converted = match self.converted.take() {
            Some(c) if c.0 == *obj => c,
            _ => {
                self.req.object = None;
                (obj.clone(), self.versions.to_storage(obj.clone()).await?)
            }
        };
        Ok(&self.converted.insert(converted).1)
    }

    /// Puts `obj`'s storage form in the plugins' request, serialised only when it changed
    /// since it was last sent.
    async fn send(&mut self, obj: &Value) -> ApiResult<()> {
        self.storage_form(obj).await?;
        if self.req.object.is_none() {
            self.req.object = self.converted.as_ref().map(|(_, to)| to.to_string());
        }
        Ok(())
    }
}

/// How a policy's denial names what it denied, and where its namespace is.
struct PolicyTarget {
    /// `<resource>[.<group>]`.
    resource: String,
    group: String,
    plural: String,
    namespaced: bool,
}

/// Why admission stopped a request: the outcomes kube-apiserver tells apart, each mapped
/// to its `Status` in one place ([`AdmissionError::status`]).
#[derive(Debug)]
pub(crate) enum AdmissionError {
    /// A plugin said no.
    Denied(Box<Denial>),
    /// A plugin failed (trap, timeout, out of memory, malformed result, too large) under
    /// `failurePolicy: Fail`.
    Failed { plugin: String, error: CallError },
    /// A webhook said no, or failed under `failurePolicy: Fail` (the Status worded as
    /// kube's, `webhooks::call`).
    Webhook(Box<Status>),
    /// A mutation changed what the object is (kind, apiVersion, name, namespace, uid).
    IdentityChanged {
        /// `plugin "NAME"` or `webhook "NAME"`.
        who: String,
        field: &'static str,
        was: Option<String>,
        is: Option<String>,
    },
}

/// A plugin's denial: its own Status when it gave one; `object` (name, group, kind) names
/// what was denied (`Status.details`, as kubectl words its message).
#[derive(Debug)]
pub(crate) struct Denial {
    plugin: String,
    status: Option<wit::Status>,
    object: (String, String, String),
}

impl AdmissionError {
    fn denied(b: &Binding, status: Option<wit::Status>, req: &AdmissionRequest) -> Self {
        AdmissionError::Denied(Box::new(Denial {
            plugin: b.name.clone(),
            status,
            object: (
                req.name.clone(),
                req.kind.group.clone(),
                req.kind.kind.clone(),
            ),
        }))
    }

    /// What the client gets.
    pub(crate) fn status(&self) -> Status {
        match self {
            AdmissionError::Webhook(s) => (**s).clone(),
            AdmissionError::Denied(d) => {
                let (name, group, kind) = &d.object;
                let mut s = denial_status(&d.plugin, d.status.as_ref());
                s.details.name.clone_from(name);
                s.details.group.clone_from(group);
                s.details.kind.clone_from(kind);
                s
            }
            AdmissionError::Failed { plugin, error } => {
                let mut s = Status::failure(
                    500,
                    "InternalError",
                    format!("Internal error occurred: failed calling plugin {plugin:?}: {error}"),
                );
                s.details.causes = vec![StatusCause {
                    reason: error.cause().into(),
                    message: format!("plugin {plugin:?}: {error}"),
                    field: String::new(),
                }];
                s
            }
            AdmissionError::IdentityChanged {
                who,
                field,
                was,
                is,
            } => {
                let mut s = Status::failure(
                    500,
                    "InternalError",
                    format!(
                        "Internal error occurred: {who} changed {field} from {:?} to {:?}; a mutation may not change what the object is",
                        was.as_deref().unwrap_or(""),
                        is.as_deref().unwrap_or("")
                    ),
                );
                s.details.causes = vec![StatusCause {
                    reason: "FieldValueForbidden".into(),
                    message: format!("{who} may not change {field}"),
                    field: (*field).into(),
                }];
                s
            }
        }
    }
}

impl From<AdmissionError> for ApiError {
    fn from(e: AdmissionError) -> ApiError {
        e.status().into()
    }
}

/// kube's wording of a webhook denial: `admission plugin "NAME" denied the request: …`,
/// with the plugin's code (403 when it gives none), reason and causes.
fn denial_status(plugin: &str, st: Option<&wit::Status>) -> Status {
    let denied = format!("admission plugin {plugin:?} denied the request");
    let Some(st) = st else {
        return Status::failure(403, "Forbidden", format!("{denied} without explanation"));
    };
    let code = if (400..600).contains(&st.code) {
        st.code
    } else {
        403
    };
    let reason = if st.reason.is_empty() {
        "Forbidden"
    } else {
        &st.reason
    };
    let mut msg = if st.message.is_empty() {
        denied
    } else {
        format!("{denied}: {}", st.message)
    };
    // As kube's field errors read in a message: `field: message`, several in brackets.
    // kubectl prints the message of every reason but Invalid (for which it prints the
    // causes).
    let causes: Vec<String> = st
        .causes
        .iter()
        .map(|c| match c.field.as_str() {
            "" => c.message.clone(),
            f => format!("{f}: {}", c.message),
        })
        .collect();
    match causes.len() {
        0 => {}
        1 => msg = format!("{msg}: {}", causes[0]),
        _ => msg = format!("{msg}: [{}]", causes.join(", ")),
    }
    let mut s = Status::failure(code, reason, msg);
    s.details.causes = webhooks::call::causes_of(&st.causes);
    s
}

/// What admission is asked about one write (kube's `admission.Attributes`).
pub struct Attributes<'a> {
    pub group: &'a str,
    /// The request's version.
    pub version: &'a str,
    pub kind: &'a str,
    pub resource: &'a str,
    pub subresource: Option<&'a str>,
    pub namespaced: bool,
    /// The versions the type serves (a webhook's `matchPolicy: Equivalent`).
    pub served_versions: &'a [String],
    /// The request's namespace.
    pub namespace: Option<&'a str>,
    /// The name in the request's path; the object's own name wins.
    pub name: &'a str,
    pub operation: Op,
    /// The new object (creates, updates), at the request's version.
    pub object: Option<&'a Value>,
    /// The stored object (updates, deletes), at the request's version.
    pub old_object: Option<&'a Value>,
    /// The same at the storage version, when at hand.
    pub old_stored: Option<&'a Value>,
    pub user: &'a User,
    pub dry_run: bool,
}

/// A converted object, when it is ready.
pub type Converted<'a> = Pin<Box<dyn Future<Output = ApiResult<Value>> + Send + 'a>>;

/// How an object moves between the request's version and the storage version, for plugins
/// (kube's `ObjectConvertor` behind `VersionedAttributes`): plugins see a custom resource
/// at its storage version, whatever version the client wrote.
pub trait VersionConverter: Send + Sync {
    /// The storage version alone.
    fn storage_version(&self) -> &str;
    /// `obj` (at the request's version) at the storage version.
    fn to_storage(&self, obj: Value) -> Converted<'_>;
    /// `obj` (at the storage version) at the request's version.
    fn to_request(&self, obj: Value) -> Converted<'_>;
}

/// Whether any plugin, webhook or policy could see writes to `group` (a cheap check
/// before building anything). WasmPlugin objects are exempt, as kube exempts webhook
/// configurations from webhooks: a broken plugin bound to every group can always be fixed
/// or removed.
pub fn configured(server: &dyn crate::Context, group: &str) -> bool {
    group != crate::plugins::crd::GROUP
        && (!server.plugins().snapshot().is_empty()
            || !server.webhooks().borrow().is_empty()
            || !server.policies().borrow().is_empty())
}

impl Admission {
    /// The admission of a write; `None` when no plugin, webhook or policy applies to it.
    /// `storage`: how the object reaches the storage version, when the request is at
    /// another; asked only when a plugin admits the write.
    pub async fn new(
        server: Arc<dyn crate::Context>,
        attrs: &Attributes<'_>,
        storage: impl FnOnce() -> Option<Box<dyn VersionConverter>> + Send,
    ) -> ApiResult<Option<Admission>> {
        if !configured(&*server, attrs.group) {
            return Ok(None);
        }
        let op = attrs.operation;
        let (obj, old) = (attrs.object, attrs.old_object);
        let all = server.plugins().snapshot();
        let hooks = server.webhooks().borrow().clone();
        let pols = server.policies().borrow().clone();
        let name = obj
            .or(old)
            .and_then(|o| meta_str(o, "name"))
            .unwrap_or(attrs.name)
            .to_owned();
        fn labels_of(o: Option<&Value>) -> Option<&serde_json::Map<String, Value>> {
            o.and_then(|o| meta(o).get("labels"))
                .and_then(Value::as_object)
        }
        let labels = labels_of(obj.or(old));
        let sub = attrs.subresource;
        let mut bindings: Vec<Arc<Binding>> = all
            .iter()
            .filter(|b| b.hooks.mutate || b.hooks.validate)
            .filter(|b| b.admits(attrs.group, attrs.resource, sub, op, labels))
            .cloned()
            .collect();
        let matching = webhooks::Attributes {
            group: attrs.group,
            version: attrs.version,
            resource: attrs.resource,
            subresource: sub,
            op,
            namespaced: attrs.namespaced,
            served_versions: attrs.served_versions,
            labels: labels_of(obj),
            old_labels: labels_of(old),
        };
        let (mut mutating_webhooks, mut validating_webhooks) = if hooks.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            hooks.matching(&matching)
        };
        let mut matched_policies = if pols.is_empty() {
            Vec::new()
        } else {
            pols.matching(&matching, &name)
        };
        let namespace_object = attrs.group.is_empty() && attrs.resource == "namespaces";
        let selects = bindings.iter().any(|b| b.namespace_selector.is_some())
            || mutating_webhooks
                .iter()
                .chain(&validating_webhooks)
                .any(|h| h.selects_namespaces())
            || matched_policies
                .iter()
                .any(|(p, b)| p.selects_namespaces(b));
        if selects && (attrs.namespaced || namespace_object) {
            let ns_labels = if namespace_object {
                labels.cloned()
            } else {
                namespace_labels(&*server, attrs.namespace).await?
            };
            bindings.retain(|b| {
                b.namespace_selector
                    .as_ref()
                    .is_none_or(|s| !attrs.namespaced || s.matches(ns_labels.as_ref()))
            });
            mutating_webhooks.retain(|h| h.matches_namespace(ns_labels.as_ref()));
            validating_webhooks.retain(|h| h.matches_namespace(ns_labels.as_ref()));
            matched_policies.retain(|(p, b)| p.matches_namespace(b, ns_labels.as_ref()));
        }
        if bindings.is_empty()
            && mutating_webhooks.is_empty()
            && validating_webhooks.is_empty()
            && matched_policies.is_empty()
        {
            return Ok(None);
        }
        let gvk = GroupVersionKind {
            group: attrs.group.to_owned(),
            version: attrs.version.to_owned(),
            kind: attrs.kind.to_owned(),
        };
        let gvr = GroupVersionResource {
            group: attrs.group.to_owned(),
            version: attrs.version.to_owned(),
            resource: attrs.resource.to_owned(),
        };
        let req = AdmissionRequest {
            uid: object::new_uid(),
            kind: gvk.clone(),
            resource: gvr.clone(),
            sub_resource: sub.map(str::to_owned),
            request_kind: Some(gvk),
            request_resource: Some(gvr),
            request_sub_resource: sub.map(str::to_owned),
            name,
            namespace: attrs.namespace.map(str::to_owned),
            operation: match op {
                Op::Create => Operation::Create,
                Op::Update => Operation::Update,
                Op::Delete => Operation::Delete,
            },
            user_info: UserInfo {
                username: attrs.user.name.clone(),
                uid: String::new(),
                groups: attrs.user.groups.clone(),
                extra: Vec::new(),
            },
            object: None,
            old_object: old.map(Value::to_string),
            dry_run: attrs.dry_run,
            options: None,
        };
        // Plugins see the storage version; webhooks and policies the request's.
        let versions = if bindings.is_empty() { None } else { storage() };
        let hub = match versions {
            Some(versions) => {
                let mut req = req.clone();
                req.kind.version = versions.storage_version().to_owned();
                req.resource.version = versions.storage_version().to_owned();
                req.old_object = match (attrs.old_stored, old) {
                    (Some(o), _) => Some(o.to_string()),
                    (None, Some(o)) => Some(versions.to_storage(o.clone()).await?.to_string()),
                    (None, None) => None,
                };
                Some(Hub {
                    versions,
                    req,
                    converted: None,
                })
            }
            None => None,
        };
        let policy_target = PolicyTarget {
            resource: if attrs.group.is_empty() {
                attrs.resource.to_owned()
            } else {
                format!("{}.{}", attrs.resource, attrs.group)
            },
            group: attrs.group.to_owned(),
            plural: attrs.resource.to_owned(),
            namespaced: attrs.namespaced,
        };
        Ok(Some(Admission {
            sessions: bindings.iter().map(|b| b.plugin.session()).collect(),
            bindings,
            mutating_webhooks,
            validating_webhooks,
            policies: matched_policies,
            policy_target,
            annotations: Vec::new(),
            req,
            hub,
            inner: server,
        }))
    }
}

/// The labels of namespace `ns` (`None`: cluster-scoped, or no labels).
async fn namespace_labels(
    server: &dyn crate::Context,
    ns: Option<&str>,
) -> ApiResult<Option<serde_json::Map<String, Value>>> {
    let Some(ns) = ns else {
        return Ok(None);
    };
    let (_, found) = server
        .store()
        .get(&format!("core/namespaces//{ns}"), ReadAt::Latest)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(found
        .and_then(|f| object::from_stored(&f.value).ok())
        .and_then(|o| meta(&o).get("labels").and_then(Value::as_object).cloned()))
}

/// The mutating plugins of a request and what their calls need, borrowed from its
/// [`Admission`] apart from the request they are sent (the client's, or the storage
/// version's: [`Hub`]).
struct MutatingPlugins<'a> {
    bindings: &'a [Arc<Binding>],
    sessions: &'a mut [Session],
    /// A plugin bound to validate too keeps its instance for that (its session) when no
    /// webhook runs in between: one may take seconds.
    keep: bool,
    inner: &'a dyn crate::Context,
    annotations: &'a mut Vec<(String, String)>,
}

impl MutatingPlugins<'_> {
    /// Runs them in order on `obj`, sent as `req`; returns what they changed.
    async fn run(
        &mut self,
        req: &mut AdmissionRequest,
        obj: &mut Value,
        warnings: &mut Vec<String>,
    ) -> ApiResult<Change> {
        let mut changed = Change::None;
        let (inner, annotations) = (self.inner, &mut *self.annotations);
        for (b, session) in
            (self.bindings.iter().zip(self.sessions.iter_mut())).filter(|(b, _)| b.hooks.mutate)
        {
            let started = tokio::time::Instant::now();
            let r = mutate_by_plugin(b, session, inner, req, obj, annotations, warnings).await;
            if !(self.keep && b.hooks.validate) {
                session.release();
            }
            inner.metrics().admission_controller(
                &b.name,
                Step::Admit,
                operation_name(req.operation),
                started.elapsed(),
                r.is_err(),
            );
            changed = changed.max(r?);
        }
        Ok(changed)
    }
}

/// One mutating plugin on `obj`; what it changed.
async fn mutate_by_plugin(
    b: &Binding,
    session: &mut Session,
    inner: &dyn crate::Context,
    req: &mut AdmissionRequest,
    obj: &mut Value,
    annotations: &mut Vec<(String, String)>,
    warnings: &mut Vec<String>,
) -> ApiResult<Change> {
    let metrics = inner.metrics();
    // `req.object` is `obj` as JSON, serialised again only after a change.
    let sent = req.object.get_or_insert_with(|| obj.to_string()).len();
    let resp = match b.call(metrics, "mutate", session.mutate(req)).await {
        Ok(r) => r,
        Err(e) => {
            failed(metrics, b, e, warnings)?;
            return Ok(Change::None);
        }
    };
    annotate(annotations, &b.name, &resp.audit_annotations);
    let resp = respond(metrics, b, req, resp, warnings)?;
    let Some(mutation) = resp.mutation else {
        return Ok(Change::None);
    };
    let before = Identity::of(obj);
    let changed = match apply(obj, mutation, sent, inner.max_request_body_bytes()) {
        Ok(Change::None) => Change::None,
        Ok(c) => {
            req.object = None;
            c
        }
        Err(e) => {
            failed(metrics, b, e, warnings)?;
            return Ok(Change::None);
        }
    };
    check_identity(b, &before, obj)?;
    Ok(changed)
}

impl Admission {
    /// `obj` at the storage version when the plugins already have it so (their last
    /// conversion was of this object): what would be stored, with no conversion again.
    pub fn into_stored_form(self, obj: &Value) -> Option<Value> {
        let (from, to) = self.hub?.converted?;
        (from == *obj).then_some(to)
    }

    /// The audit annotations collected so far (for the request's audit event).
    pub fn take_annotations(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.annotations)
    }

    /// Runs the mutating plugins in order on `obj`; returns what they changed (the caller
    /// then validates it again, as far as that needs). Timed as kube's `admit` step.
    pub async fn mutate(
        &mut self,
        obj: &mut Value,
        warnings: &mut Vec<String>,
    ) -> ApiResult<Change> {
        let started = tokio::time::Instant::now();
        let r = self.mutate_all(obj, warnings).await;
        let op = operation_name(self.req.operation);
        self.inner
            .metrics()
            .admission_step(Step::Admit, op, started.elapsed(), r.is_err());
        r
    }

    async fn mutate_all(
        &mut self,
        obj: &mut Value,
        warnings: &mut Vec<String>,
    ) -> ApiResult<Change> {
        let mut changed = Change::None;
        if self.bindings.iter().any(|b| b.hooks.mutate) {
            let mut plugins = MutatingPlugins {
                bindings: &self.bindings,
                sessions: &mut self.sessions,
                keep: self.mutating_webhooks.is_empty(),
                inner: &*self.inner,
                annotations: &mut self.annotations,
            };
            match &mut self.hub {
                Some(hub) => {
                    let mut stored = hub.storage_form(obj).await?.clone();
                    if plugins.run(&mut hub.req, &mut stored, warnings).await? != Change::None {
                        // Converted back by the plugin: anything may have changed.
                        changed = Change::Object;
                        *obj = hub.versions.to_request(stored.clone()).await?;
                        hub.converted = Some((obj.clone(), stored));
                        self.req.object = None;
                    }
                }
                None => changed = plugins.run(&mut self.req, obj, warnings).await?,
            }
        }
        // Then the mutating webhooks, in order; one with `reinvocationPolicy: IfNeeded`
        // runs once more when a later one changed the object after it ran.
        let hooks = self.mutating_webhooks.clone();
        let mut last_change = None;
        let mut ran = Vec::with_capacity(hooks.len());
        for (i, h) in hooks.iter().enumerate() {
            let c = self.mutate_webhook(h, obj, warnings).await?;
            if c != Change::None {
                changed = changed.max(c);
                last_change = Some(i);
            }
            ran.push(i);
        }
        if let Some(last) = last_change {
            for (i, h) in hooks.iter().enumerate() {
                if h.reinvoke && ran.contains(&i) && i < last {
                    changed = changed.max(self.mutate_webhook(h, obj, warnings).await?);
                }
            }
        }
        Ok(changed)
    }

    /// One mutating webhook on `obj`; what it changed.
    async fn mutate_webhook(
        &mut self,
        h: &Webhook,
        obj: &mut Value,
        warnings: &mut Vec<String>,
    ) -> ApiResult<Change> {
        let sent = self.req.object.get_or_insert_with(|| obj.to_string()).len();
        let resp = match webhooks::call::call(&self.inner, h, &self.req).await {
            Ok(r) => r,
            Err(f) => {
                webhook_failed(h, &f, warnings)?;
                return Ok(Change::None);
            }
        };
        warnings.extend(resp.warnings.iter().cloned());
        if !resp.allowed {
            return Err(
                AdmissionError::Webhook(Box::new(webhooks::call::denial_status(
                    h,
                    resp.status.as_ref(),
                )))
                .into(),
            );
        }
        let Some(mutation) = resp.mutation else {
            return Ok(Change::None);
        };
        let before = Identity::of(obj);
        let max = self.inner.max_request_body_bytes();
        match apply(obj, mutation, sent, max) {
            Ok(Change::None) => Ok(Change::None),
            Ok(c) => {
                self.req.object = None;
                check_identity_of(&h.name, "webhook", &before, obj)?;
                Ok(c)
            }
            Err(e) => {
                let f = webhooks::call::CallFailure::Invalid(e.to_string());
                webhook_failed(h, &f, warnings)?;
                Ok(Change::None)
            }
        }
    }

    /// Runs the validating plugins (all of them, concurrently) on `obj` (`None`: a
    /// delete), the object as [`Admission::mutate`] left it (what it last sent them is
    /// reused when no plugin changed it); the first denial in binding order answers.
    pub async fn validate(
        &mut self,
        obj: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> ApiResult<()> {
        let started = tokio::time::Instant::now();
        let r = self.validate_all(obj, warnings).await;
        let op = operation_name(self.req.operation);
        self.inner
            .metrics()
            .admission_step(Step::Validate, op, started.elapsed(), r.is_err());
        r
    }

    async fn validate_all(
        &mut self,
        obj: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> ApiResult<()> {
        if obj.is_none() {
            self.req.object = None;
        }
        if !self.policies.is_empty() {
            let mut annotations = Vec::new();
            let r = self.run_policies(obj, warnings, &mut annotations).await;
            self.annotations.extend(annotations);
            r?;
        }
        let plugins = self.bindings.iter().any(|b| b.hooks.validate);
        let sends = (plugins && self.hub.is_none()) || !self.validating_webhooks.is_empty();
        if let (Some(o), true) = (obj, sends) {
            // Unchanged since the mutating plugins saw it: as they were sent it.
            self.req.object.get_or_insert_with(|| o.to_string());
        }
        if let Some(hub) = &mut self.hub {
            match obj {
                Some(o) if plugins => hub.send(o).await?,
                _ => hub.req.object = None,
            }
        }
        let validators: Vec<&Arc<Binding>> =
            self.bindings.iter().filter(|b| b.hooks.validate).collect();
        let sessions = (self.bindings.iter().zip(&mut self.sessions))
            .filter(|(b, _)| b.hooks.validate)
            .map(|(_, s)| s);
        let plugin_req = self.hub.as_ref().map_or(&self.req, |h| &h.req);
        let req = &self.req;
        let metrics = self.inner.metrics();
        let inner = &self.inner;
        let (results, answers) = futures_util::future::join(
            futures_util::future::join_all(validators.iter().zip(sessions).map(
                |(b, session)| async move {
                    let started = tokio::time::Instant::now();
                    let r = b
                        .call(metrics, "validate", session.validate(plugin_req))
                        .await;
                    (r, started.elapsed())
                },
            )),
            futures_util::future::join_all(
                self.validating_webhooks
                    .iter()
                    .map(|h| webhooks::call::call(inner, h, req)),
            ),
        )
        .await;
        let op = operation_name(self.req.operation);
        for (b, (r, took)) in validators.into_iter().zip(results) {
            let outcome = match r {
                Ok(resp) => {
                    annotate(&mut self.annotations, &b.name, &resp.audit_annotations);
                    respond(metrics, b, plugin_req, resp, warnings).map(drop)
                }
                Err(e) => failed(metrics, b, e, warnings),
            };
            metrics.admission_controller(&b.name, Step::Validate, op, took, outcome.is_err());
            outcome?;
        }
        for (h, r) in self.validating_webhooks.iter().zip(answers) {
            match r {
                Ok(resp) => {
                    annotate(&mut self.annotations, &h.name, &resp.audit_annotations);
                    warnings.extend(resp.warnings.iter().cloned());
                    if !resp.allowed {
                        return Err(AdmissionError::Webhook(Box::new(
                            webhooks::call::denial_status(h, resp.status.as_ref()),
                        ))
                        .into());
                    }
                }
                Err(f) => webhook_failed(h, &f, warnings)?,
            }
        }
        Ok(())
    }
}

impl Admission {
    /// The admission policies that apply, in binding order (kube runs them before the
    /// validating webhooks): the first denial answers.
    async fn run_policies(
        &self,
        obj: Option<&Value>,
        warnings: &mut Vec<String>,
        annotations: &mut Vec<(String, String)>,
    ) -> ApiResult<()> {
        // `request` without its objects: they are `object` and `oldObject`.
        let request = webhooks::call::review_of(&self.req, false)
            .map(|mut r| r["request"].take())
            .unwrap_or(Value::Null);
        let object = obj.cloned().unwrap_or(Value::Null);
        let old_object = self
            .req
            .old_object
            .as_deref()
            .and_then(|o| serde_json::from_str(o).ok())
            .unwrap_or(Value::Null);
        let namespace_object = match (&self.req.namespace, self.policy_target.namespaced) {
            (Some(ns), true) => self
                .read(&format!("core/namespaces//{ns}"))
                .await?
                .unwrap_or(Value::Null),
            _ => Value::Null,
        };
        for (policy, binding) in &self.policies {
            let mut input = policies::Input {
                object: &object,
                old_object: &old_object,
                request: &request,
                namespace_object: &namespace_object,
                params: &Value::Null,
                resource: &self.policy_target.resource,
                name: &self.req.name,
                group: &self.policy_target.group,
                plural: &self.policy_target.plural,
            };
            let params = match (policy.param_kind(), binding.param_ref()) {
                (Some(kind), Some((name, ns, deny))) => match self.param(kind, name, ns).await? {
                    Some(p) => Some(p),
                    None if *deny => {
                        return Err(AdmissionError::Webhook(policies::params_missing(
                            policy, binding, &input,
                        ))
                        .into());
                    }
                    None => continue,
                },
                _ => None,
            };
            if let Some(p) = &params {
                input.params = p;
            }
            policies::evaluate(policy, binding, &input, warnings, annotations)
                .map_err(AdmissionError::Webhook)?;
        }
        Ok(())
    }

    /// The object of `kind` (apiVersion, kind) named `name` (in `namespace`, else the
    /// request's, for a namespaced kind) that a binding's `paramRef` names.
    async fn param(
        &self,
        (api_version, kind): &(String, String),
        name: &str,
        namespace: &str,
    ) -> ApiResult<Option<Value>> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let catalog = self.inner.types().snapshot();
        let Some(rt) = catalog.types().iter().find(|t| {
            t.group == group && t.kind == *kind && t.versions.iter().any(|v| v == version)
        }) else {
            return Ok(None);
        };
        let ns = if namespace.is_empty() {
            self.req.namespace.as_deref()
        } else {
            Some(namespace)
        };
        self.read(&rt.key(ns, name)).await
    }

    /// A stored object, decoded.
    async fn read(&self, key: &str) -> ApiResult<Option<Value>> {
        let (_, found) = self
            .inner
            .store()
            .get(key, ReadAt::Latest)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        Ok(found.and_then(|f| object::from_stored(&f.value).ok()))
    }
}

/// Audit annotations of plugin or webhook `name`, as kube keys them (`<name>/<key>`).
fn annotate(into: &mut Vec<(String, String)>, name: &str, annotations: &[(String, String)]) {
    into.extend(
        annotations
            .iter()
            .map(|(k, v)| (format!("{name}/{k}"), v.clone())),
    );
}

/// A plugin's answer: its warnings kept, a denial turned into the request's error.
fn respond(
    metrics: &crate::metrics::Metrics,
    b: &Binding,
    req: &AdmissionRequest,
    resp: AdmissionResponse,
    warnings: &mut Vec<String>,
) -> Result<AdmissionResponse, AdmissionError> {
    warnings.extend(resp.warnings.iter().cloned());
    if resp.allowed {
        return Ok(resp);
    }
    metrics.plugin_denial(&b.name);
    Err(AdmissionError::denied(b, resp.status, req))
}

/// A failed call under the binding's failure policy: an error (`Fail`), or a warning and
/// on (`Ignore`).
fn failed(
    metrics: &crate::metrics::Metrics,
    b: &Binding,
    e: CallError,
    warnings: &mut Vec<String>,
) -> Result<(), AdmissionError> {
    tracing::warn!(plugin = %b.name, cause = e.cause(), "plugin call failed: {e}");
    match b.failure_policy {
        FailurePolicy::Fail => Err(AdmissionError::Failed {
            plugin: b.name.clone(),
            error: e,
        }),
        FailurePolicy::Ignore => {
            metrics.plugin_failure_ignored(&b.name);
            warnings.push(format!(
                "failed calling plugin {:?} (failurePolicy Ignore, request allowed): {e}",
                b.name
            ));
            Ok(())
        }
    }
}

/// A webhook that gave no usable answer, under its failure policy: the request's error
/// (`Fail`), or a warning and on (`Ignore`).
fn webhook_failed(
    h: &Webhook,
    f: &webhooks::call::CallFailure,
    warnings: &mut Vec<String>,
) -> Result<(), AdmissionError> {
    tracing::warn!(webhook = %h.name, configuration = %h.configuration, cause = f.cause(), "webhook call failed: {}", f.message());
    match h.failure_policy {
        webhooks::config::FailurePolicy::Fail => Err(AdmissionError::Webhook(Box::new(
            webhooks::call::failure_status(h, f),
        ))),
        webhooks::config::FailurePolicy::Ignore => {
            warnings.push(format!(
                "failed calling webhook {:?} (failurePolicy Ignore, request allowed): {}",
                h.name,
                f.message()
            ));
            Ok(())
        }
    }
}

/// Applies a plugin's mutation to `obj` (sent to it as `sent` bytes of JSON), checked to
/// leave a JSON object within the size limit (the request-body limit); returns whether it
/// may have changed `obj`. On an error `obj` is as it was. The runtime already held the
/// mutation's text to its cap (`caps::MAX_MUTATION_BYTES`, the default request-body
/// limit); what is checked here is the object it leaves, against the limit configured,
/// failing the same way (`TooLarge`).
fn apply(obj: &mut Value, m: Mutation, sent: usize, max_bytes: usize) -> Result<Change, CallError> {
    let too_big = |size: usize| {
        CallError::TooLarge(format!(
            "mutated object: {size} bytes, more than the {max_bytes} allowed"
        ))
    };
    match m {
        Mutation::Object(s) => {
            if s.len() > max_bytes {
                return Err(too_big(s.len()));
            }
            let out = serde_json::from_str::<Value>(&s).map_err(|e| {
                CallError::Malformed(format!("the mutated object is not JSON: {e}"))
            })?;
            if !out.is_object() {
                return Err(CallError::Malformed(
                    "the mutated object is not an object".into(),
                ));
            }
            let changed = Change::between(obj, &out);
            *obj = out;
            Ok(changed)
        }
        Mutation::JsonPatch(p) => {
            let patch: json_patch::Patch = serde_json::from_str(&p)
                .map_err(|e| CallError::Malformed(format!("the JSON patch is invalid: {e}")))?;
            let not_a_patch = |e: json_patch::PatchError| {
                CallError::Malformed(format!("the JSON patch does not apply: {e}"))
            };
            use json_patch::PatchOperation as Op;
            // Only `copy` grows an object by more than the patch's own size: without it,
            // `sent + patch` bounds the result and the patch applies in place (a failed
            // patch is undone). A patch of the root may leave no object: it applies to a
            // copy.
            let copies = patch
                .0
                .iter()
                .any(|op| matches!(op, Op::Copy(_)) || op.path().is_root());
            if !copies && sent.saturating_add(p.len()) <= max_bytes {
                json_patch::patch(obj, &patch).map_err(not_a_patch)?;
            } else {
                let mut doc = obj.clone();
                json_patch::patch(&mut doc, &patch).map_err(not_a_patch)?;
                let size = serde_json::to_vec(&doc).map_or(0, |b| b.len());
                if size > max_bytes {
                    return Err(too_big(size));
                }
                if !doc.is_object() {
                    return Err(CallError::Malformed(
                        "the mutated object is not an object".into(),
                    ));
                }
                *obj = doc;
            }
            Ok(Change::of_patch(&patch, obj))
        }
    }
}

/// What a mutation changed of an object: after one that changed only labels and
/// annotations, the object needs their checks again, not a schema pass (for the kinds
/// whose validation reads nothing else of them; the caller knows which).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    None,
    /// `metadata.labels` and `metadata.annotations` only, left maps of strings.
    LabelsOnly,
    Object,
}

/// Where a labels-only mutation may write.
const LABEL_PATHS: [&str; 2] = ["/metadata/labels", "/metadata/annotations"];
const LABEL_FIELDS: [&str; 2] = ["labels", "annotations"];

impl Change {
    /// `before` replaced by `after`.
    fn between(before: &Value, after: &Value) -> Change {
        if before == after {
            return Change::None;
        }
        let labels_only = match (before.as_object(), after.as_object()) {
            (Some(b), Some(a)) => {
                let (bm, am) = (b.get("metadata"), a.get("metadata"));
                same_except(b, a, &["metadata"])
                    && match (bm.and_then(Value::as_object), am.and_then(Value::as_object)) {
                        (Some(bm), Some(am)) => same_except(bm, am, &LABEL_FIELDS),
                        _ => false,
                    }
            }
            _ => false,
        };
        if labels_only && string_maps(after) {
            Change::LabelsOnly
        } else {
            Change::Object
        }
    }

    /// `patch`, applied, left `after`.
    fn of_patch(patch: &json_patch::Patch, after: &Value) -> Change {
        use json_patch::PatchOperation as Op;
        let within = |p: &str| {
            LABEL_PATHS.iter().any(|l| {
                p.strip_prefix(l)
                    .is_some_and(|r| r.is_empty() || r.starts_with('/'))
            })
        };
        if patch.0.iter().all(|op| matches!(op, Op::Test(_))) {
            return Change::None;
        }
        let labels_only = patch.0.iter().all(|op| {
            within(op.path().as_str())
                && match op {
                    Op::Move(m) => within(m.from.as_str()),
                    Op::Copy(c) => within(c.from.as_str()),
                    _ => true,
                }
        });
        if labels_only && string_maps(after) {
            Change::LabelsOnly
        } else {
            Change::Object
        }
    }
}

/// Whether `b` and `a` hold the same members, but for those named in `skip`.
fn same_except(
    b: &serde_json::Map<String, Value>,
    a: &serde_json::Map<String, Value>,
    skip: &[&str],
) -> bool {
    b.iter()
        .all(|(k, v)| skip.contains(&k.as_str()) || a.get(k) == Some(v))
        && a.keys()
            .all(|k| skip.contains(&k.as_str()) || b.contains_key(k))
}

/// Whether `obj`'s labels and annotations are absent or maps of strings (what the fields'
/// own checks and no schema pass take).
fn string_maps(obj: &Value) -> bool {
    LABEL_FIELDS.iter().all(|f| match meta(obj).get(*f) {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.values().all(Value::is_string),
        Some(_) => false,
    })
}

/// What a mutation may not change: kind, apiVersion, name, namespace, uid.
struct Identity([Option<String>; 5]);

const IDENTITY_FIELDS: [&str; 5] = [
    "apiVersion",
    "kind",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];

impl Identity {
    fn of(o: &Value) -> Identity {
        let top = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
        let m = |k: &str| meta_str(o, k).map(str::to_owned);
        Identity([
            top("apiVersion"),
            top("kind"),
            m("name"),
            m("namespace"),
            m("uid"),
        ])
    }
}

/// A mutation may not change what the object is ([`Identity`]).
fn check_identity(b: &Binding, before: &Identity, after: &Value) -> Result<(), AdmissionError> {
    check_identity_of(&b.name, "plugin", before, after)
}

/// [`check_identity`] for a plugin or webhook (`what`) named `name`.
fn check_identity_of(
    name: &str,
    what: &str,
    before: &Identity,
    after: &Value,
) -> Result<(), AdmissionError> {
    let after = Identity::of(after);
    for ((field, was), is) in IDENTITY_FIELDS.iter().zip(&before.0).zip(&after.0) {
        if was != is {
            return Err(AdmissionError::IdentityChanged {
                who: format!("{what} {name:?}"),
                field,
                was: was.clone(),
                is: is.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use serde_json::json;

    use super::*;

    fn patch(ops: Value) -> Mutation {
        Mutation::JsonPatch(ops.to_string())
    }

    /// ADM (issue 8, step 0): each admission outcome maps to the Status kube-apiserver
    /// gives it: a denial (the plugin's code, 403 without one, the object in the details),
    /// a failure under `failurePolicy: Fail` (500, the cause), a mutation that changed
    /// what the object is (500, naming the field).
    #[test]
    fn admission_outcomes_map_to_kubes_statuses() {
        let object = (
            "w1".to_string(),
            "example.com".to_string(),
            "Widget".to_string(),
        );
        let bare = AdmissionError::Denied(Box::new(Denial {
            plugin: "p".into(),
            status: None,
            object: object.clone(),
        }))
        .status();
        assert_eq!((bare.code, bare.reason.as_str()), (403, "Forbidden"));
        assert_eq!(
            bare.message,
            "admission plugin \"p\" denied the request without explanation"
        );
        assert_eq!(
            (bare.details.name.as_str(), bare.details.kind.as_str()),
            ("w1", "Widget")
        );
        let invalid = AdmissionError::Denied(Box::new(Denial {
            plugin: "p".into(),
            status: Some(wit::Status {
                code: 422,
                reason: "Invalid".into(),
                message: "too big".into(),
                causes: vec![wit::StatusCause {
                    reason: "FieldValueInvalid".into(),
                    message: "at most 5".into(),
                    field: "spec.replicas".into(),
                }],
            }),
            object,
        }))
        .status();
        assert_eq!((invalid.code, invalid.reason.as_str()), (422, "Invalid"));
        assert_eq!(
            invalid.message,
            "admission plugin \"p\" denied the request: too big: spec.replicas: at most 5"
        );
        assert_eq!(invalid.details.causes[0].field, "spec.replicas");
        let timeout = AdmissionError::Failed {
            plugin: "p".into(),
            error: CallError::Timeout(std::time::Duration::from_millis(100)),
        }
        .status();
        assert_eq!(
            (timeout.code, timeout.reason.as_str()),
            (500, "InternalError")
        );
        assert_eq!(timeout.details.causes[0].reason, "timeout");
        let renamed = AdmissionError::IdentityChanged {
            who: "plugin \"p\"".into(),
            field: "metadata.name",
            was: Some("a".into()),
            is: Some("b".into()),
        }
        .status();
        assert_eq!(renamed.code, 500);
        assert!(
            renamed
                .message
                .contains("changed metadata.name from \"a\" to \"b\"")
        );
        assert_eq!(renamed.details.causes[0].field, "metadata.name");
    }

    /// ADM (issue 8): a JSON patch applies in place and says the object changed.
    #[test]
    fn a_json_patch_applies_in_place() {
        let mut obj = json!({"kind": "Widget", "metadata": {"name": "w"}});
        let sent = obj.to_string().len();
        let m = patch(json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]));
        assert_eq!(
            apply(&mut obj, m, sent, 1 << 20).unwrap(),
            Change::LabelsOnly
        );
        assert_eq!(obj["metadata"]["labels"]["a"], "b");
        let test_only = patch(json!([{"op": "test", "path": "/kind", "value": "Widget"}]));
        assert_eq!(
            apply(&mut obj, test_only, sent, 1 << 20).unwrap(),
            Change::None
        );
    }

    /// Issue 26: a mutation that touched only labels and annotations (and left them maps
    /// of strings) is told apart from one that touched anything else, by patch or by
    /// whole object, so that only the former skips the schema pass.
    #[test]
    fn a_labels_only_mutation_is_told_apart() {
        let obj = json!({"kind": "Widget", "metadata": {"name": "w", "labels": {"a": "b"}},
                         "spec": {"x": 1}});
        let sent = obj.to_string().len();
        let cases = [
            (
                json!([{"op": "add", "path": "/metadata/labels/c", "value": "d"},
                    {"op": "add", "path": "/metadata/annotations", "value": {"n": "v"}}]),
                Change::LabelsOnly,
            ),
            (
                json!([{"op": "add", "path": "/metadata/labels/c", "value": 3}]),
                Change::Object,
            ),
            (
                json!([{"op": "add", "path": "/metadata/labelsx", "value": "d"}]),
                Change::Object,
            ),
            (
                json!([{"op": "copy", "from": "/spec", "path": "/metadata/labels/c"}]),
                Change::Object,
            ),
            (
                json!([{"op": "replace", "path": "/spec/x", "value": 2}]),
                Change::Object,
            ),
            (
                json!([{"op": "replace", "path": "/metadata/name", "value": "w"}]),
                Change::Object,
            ),
        ];
        for (ops, want) in cases {
            let mut o = obj.clone();
            assert_eq!(
                apply(&mut o, patch(ops.clone()), sent, 1 << 20).unwrap(),
                want,
                "{ops}"
            );
        }
        let whole = |o: Value| Mutation::Object(o.to_string());
        let mut stamped = obj.clone();
        stamped["metadata"]["labels"]["owner"] = json!("admin");
        stamped["metadata"]["annotations"] = json!({"by": "admin"});
        let mut respecced = stamped.clone();
        respecced["spec"]["x"] = json!(2);
        let mut extra = stamped.clone();
        extra["status"] = json!({});
        for (after, want) in [
            (obj.clone(), Change::None),
            (stamped, Change::LabelsOnly),
            (respecced, Change::Object),
            (extra, Change::Object),
        ] {
            let mut o = obj.clone();
            assert_eq!(
                apply(&mut o, whole(after.clone()), sent, 1 << 20).unwrap(),
                want,
                "{after}"
            );
        }
    }

    /// A patch that fails half-way, replaces the root with a non-object, or grows the
    /// object past the limit by copies is the plugin's failure, and leaves the object as
    /// it was (a plugin under `failurePolicy: Ignore` must not have changed it).
    #[test]
    fn a_bad_patch_leaves_the_object_as_it_was() {
        let orig =
            json!({"kind": "Widget", "metadata": {"name": "w"}, "spec": {"a": "x".repeat(100)}});
        let sent = orig.to_string().len();
        let cases = [
            json!([{"op": "add", "path": "/spec/b", "value": 1}, {"op": "remove", "path": "/nope"}]),
            json!([{"op": "replace", "path": "", "value": [1, 2]}]),
            json!([{"op": "copy", "from": "/spec", "path": "/s1"}, {"op": "copy", "from": "/spec", "path": "/s2"}]),
        ];
        for (ops, cause) in cases
            .into_iter()
            .zip(["malformed", "malformed", "output_too_large"])
        {
            let mut obj = orig.clone();
            let err = apply(&mut obj, patch(ops.clone()), sent, sent + 150).unwrap_err();
            assert_eq!(err.cause(), cause, "{ops}: {err}");
            assert_eq!(obj, orig, "{ops}");
        }
    }
}
