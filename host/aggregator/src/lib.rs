//! # wasmgate-aggregator
//!
//! The aggregation layer (issue 13, item 1): `apiregistration.k8s.io/v1` `APIService`s put
//! an extension API server behind a group/version, as kube-aggregator does.
//!
//! - Requests for that group/version (`/apis/GROUP/VERSION/...`) are authenticated,
//!   audited, limited and authorized here, then proxied — streaming, watches included —
//!   with kube's request-header authentication: the gateway's front-proxy client
//!   certificate and `X-Remote-User` / `X-Remote-Group` naming the caller (credentials and
//!   `Impersonate-*` headers are not passed on). `kube-system/extension-apiserver-
//!   authentication` tells extension servers what to trust (written at start).
//! - Where the backend is: `spec.service` as `https://NAME.NAMESPACE.svc:PORT` (Wasmgate
//!   has no Services: the name must resolve), or the URL in the annotation
//!   `wasmgate.dev/backend` (`https://127.0.0.1:8443`), which wins. `caBundle` and
//!   `insecureSkipTLSVerify` are honoured.
//! - A controller probes each backend's discovery document (`GET /apis/GROUP/VERSION`)
//!   every few seconds and on every change, sets the `Available` condition (`Passed`,
//!   `FailedDiscoveryCheck`, `ServiceNotFound`), and keeps the resource list, which goes
//!   into `/apis` discovery (legacy and aggregated: `kubectl api-resources` lists them).
//! - A backend that does not answer gives `503 ServiceUnavailable` for its group only.
//!
//! - OpenAPI v3: the index lists the proxied group/versions, whose documents are the
//!   backends' own (proxied); OpenAPI v2 is not merged.
//!
//! Partial: built-in groups have no `Local` APIService objects.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Request, Response, header};
use serde_json::{Map, Value, json};
use wasmgate_apimachinery::status::Status;
use wasmgate_apimachinery::validation::FieldError;
use wasmgate_storage::ReadAt;

use crate::body::Body;
use crate::error::{ApiError, ApiResult};
use crate::outbound::{Identity, Target};
use wasmgate_apiserver_core::{User, body, client, error, object};
use wasmgate_controllers as controller;
use wasmgate_outbound as outbound;
use wasmgate_registry as registry;

/// The front proxy of the aggregation layer: the client certificate it presents to extension
/// API servers and the CA they trust it by (kube's `--proxy-client-cert-file`,
/// `--requestheader-client-ca-file`, `--requestheader-allowed-names`), PEM.
#[derive(Clone)]
pub struct FrontProxy {
    pub ca_pem: String,
    pub client_cert_pem: String,
    pub client_key_pem: String,
    pub allowed_names: Vec<String>,
}

impl std::fmt::Debug for FrontProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrontProxy")
            .field("allowed_names", &self.allowed_names)
            .finish_non_exhaustive()
    }
}

/// What the aggregation layer needs of the server: the controllers' context (the store to
/// read `APIService`s from, the loopback client for their status), the index and probes it
/// keeps there, the outbound client, and the identity and limits it proxies with.
pub trait Context: wasmgate_controllers::Context {
    /// The `APIService`s in force.
    fn aggregator(&self) -> &tokio::sync::watch::Sender<Arc<Index>>;
    /// What the probes of their backends found.
    fn probes(&self) -> &Probes;
    /// The one outbound HTTPS client.
    fn outbound(&self) -> &outbound::Outbound;
    /// The front proxy's identity; `None`: requests go without a client certificate.
    fn front_proxy(&self) -> Option<&FrontProxy>;
    /// The cluster CA (PEM), published as `client-ca-file`.
    fn client_ca_pem(&self) -> Option<&str>;
    /// The largest request body, and how long it may take to arrive.
    fn request_body_limits(&self) -> (usize, Duration);
}

/// A shared server is a context too.
impl<C: Context + ?Sized> Context for Arc<C> {
    fn aggregator(&self) -> &tokio::sync::watch::Sender<Arc<Index>> {
        (**self).aggregator()
    }

    fn probes(&self) -> &Probes {
        (**self).probes()
    }

    fn outbound(&self) -> &outbound::Outbound {
        (**self).outbound()
    }

    fn front_proxy(&self) -> Option<&FrontProxy> {
        (**self).front_proxy()
    }

    fn client_ca_pem(&self) -> Option<&str> {
        (**self).client_ca_pem()
    }

    fn request_body_limits(&self) -> (usize, Duration) {
        (**self).request_body_limits()
    }
}

/// The API group of `APIService`.
pub const GROUP: &str = crate::registry::APIREGISTRATION_GROUP;
const PREFIX: &str = "apiregistration.k8s.io/";
/// Where the backend of an `APIService` is, when it is not `spec.service`.
pub const BACKEND_ANNOTATION: &str = "wasmgate.dev/backend";
/// How long a proxied request may take to start answering.
const PROXY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a discovery probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// One `APIService`.
#[derive(Debug)]
pub struct Service {
    pub name: String,
    pub group: String,
    pub version: String,
    group_priority: i64,
    version_priority: i64,
    /// Where requests go: `None` for a local service (served here), `Err` when the spec
    /// names nothing callable.
    backend: Option<Result<Target, String>>,
}

/// The `APIService`s in force, and what the probes learnt.
#[derive(Debug, Default)]
pub struct Index {
    pub revision: u64,
    services: Vec<Arc<Service>>,
}

/// What the last probe of a service found.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    available: bool,
    reason: String,
    message: String,
    /// The backend's `APIResourceList`, when it answered one.
    resources: Option<Value>,
}

/// The probes, by service name.
#[derive(Debug, Default)]
pub struct Probes(Mutex<HashMap<String, Arc<Probe>>>);

impl Probes {
    fn get(&self, name: &str) -> Option<Arc<Probe>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
    }

    fn set(&self, name: &str, p: Arc<Probe>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), p);
    }
}

impl Index {
    /// The proxied service of `group`/`version`, if any.
    pub fn remote(&self, group: &str, version: &str) -> Option<&Arc<Service>> {
        self.services
            .iter()
            .find(|s| s.group == group && s.version == version && s.backend.is_some())
    }

    /// Every proxied group/version.
    pub fn remote_group_versions(&self) -> Vec<(String, String)> {
        self.services
            .iter()
            .filter(|s| s.backend.is_some())
            .map(|s| (s.group.clone(), s.version.clone()))
            .collect()
    }

    /// Whether `group` has a proxied version.
    pub fn serves_group(&self, group: &str) -> bool {
        self.services
            .iter()
            .any(|s| s.group == group && s.backend.is_some())
    }

    /// The proxied groups with their versions, by group then version priority.
    fn groups(&self) -> Vec<(String, Vec<Arc<Service>>)> {
        let mut by_group: Vec<(String, Vec<Arc<Service>>)> = Vec::new();
        let mut remote: Vec<&Arc<Service>> = self
            .services
            .iter()
            .filter(|s| s.backend.is_some())
            .collect();
        remote.sort_by(|a, b| {
            (b.group_priority, &a.group, b.version_priority, &a.version).cmp(&(
                a.group_priority,
                &b.group,
                a.version_priority,
                &b.version,
            ))
        });
        for s in remote {
            match by_group.iter_mut().find(|(g, _)| *g == s.group) {
                Some((_, v)) => v.push(s.clone()),
                None => by_group.push((s.group.clone(), vec![s.clone()])),
            }
        }
        by_group
    }

    pub fn is_empty(&self) -> bool {
        self.services.is_empty()
    }
}

fn parse(obj: &Value) -> Service {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let s = |k: &str| spec.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let annotation = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(BACKEND_ANNOTATION))
        .and_then(Value::as_str);
    let service = spec.get("service").filter(|s| s.is_object());
    let backend = match (annotation, service) {
        (None, None) => None,
        (Some(url), _) => Some(url.to_owned()),
        (None, Some(svc)) => {
            let f = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or("");
            let port = svc.get("port").and_then(Value::as_u64).unwrap_or(443);
            Some(format!(
                "https://{}.{}.svc:{port}",
                f("name"),
                f("namespace")
            ))
        }
    };
    let ca_bundle = spec
        .get("caBundle")
        .and_then(Value::as_str)
        .filter(|b| !b.is_empty())
        .map(|b| {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.decode(b)
        });
    let backend = backend.map(|url| {
        let url = url
            .trim_end_matches('/')
            .parse::<http::Uri>()
            .map_err(|e| format!("backend {url:?}: {e}"))?;
        let ca_bundle = match ca_bundle {
            Some(Ok(b)) => Some(Bytes::from(b)),
            Some(Err(e)) => return Err(format!("caBundle is not base64: {e}")),
            None => None,
        };
        Ok(Target {
            url,
            ca_bundle,
            identity: None,
            insecure: spec
                .get("insecureSkipTLSVerify")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    });
    Service {
        name: crate::object::meta_str(obj, "name")
            .unwrap_or("")
            .to_owned(),
        group: s("group"),
        version: s("version"),
        group_priority: spec
            .get("groupPriorityMinimum")
            .and_then(Value::as_i64)
            .unwrap_or(0),
        version_priority: spec
            .get("versionPriority")
            .and_then(Value::as_i64)
            .unwrap_or(0),
        backend,
    }
}

/// kube's validation of an `APIService` (v1).
pub fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let s = |k: &str| spec.get(k).and_then(Value::as_str).unwrap_or("");
    let name = crate::object::meta_str(obj, "name").unwrap_or("");
    let local = spec.get("service").is_none_or(Value::is_null);
    if !local {
        if s("group").is_empty() {
            errs.push(FieldError::required(
                "spec.group",
                "only empty for the legacy API group",
            ));
        }
        if s("version").is_empty() {
            errs.push(FieldError::required("spec.version", ""));
        }
        let expected = format!("{}.{}", s("version"), s("group"));
        if !name.is_empty() && name != expected {
            errs.push(FieldError::invalid(
                "metadata.name",
                name,
                format!("must be `spec.version+\".\"+spec.group`: {expected:?}"),
            ));
        }
        let svc = &spec["service"];
        for k in ["namespace", "name"] {
            if svc.get(k).and_then(Value::as_str).is_none_or(str::is_empty) {
                errs.push(FieldError::required(format!("spec.service.{k}"), ""));
            }
        }
        if let Some(port) = svc.get("port").filter(|p| !p.is_null()) {
            let n = port.as_i64().unwrap_or(0);
            if !(1..=65535).contains(&n) {
                errs.push(FieldError::invalid(
                    "spec.service.port",
                    port.clone(),
                    "port is not valid: must be between 1 and 65535, inclusive",
                ));
            }
        }
    }
    let priority = |k: &str, max: i64, errs: &mut Vec<FieldError>| {
        let v = spec.get(k).and_then(Value::as_i64).unwrap_or(0);
        if v <= 0 || v > max {
            errs.push(FieldError::invalid(
                format!("spec.{k}"),
                v,
                format!("must be positive and less than {max}"),
            ));
        }
    };
    priority("groupPriorityMinimum", 20000, &mut errs);
    priority("versionPriority", 1000, &mut errs);
    if spec.get("insecureSkipTLSVerify").and_then(Value::as_bool) == Some(true)
        && spec
            .get("caBundle")
            .and_then(Value::as_str)
            .is_some_and(|c| !c.is_empty())
    {
        errs.push(FieldError::invalid(
            "spec.insecureSkipTLSVerify",
            true,
            "may not be true if caBundle is present",
        ));
    }
    if let Some(url) = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(BACKEND_ANNOTATION))
        .and_then(Value::as_str)
        && !url.starts_with("https://")
    {
        errs.push(FieldError::invalid(
            format!("metadata.annotations[{BACKEND_ANNOTATION}]"),
            url,
            "must be an https:// URL",
        ));
    }
    errs
}

/// The identity the proxy presents, from the options.
fn identity(inner: &dyn Context) -> Option<Arc<Identity>> {
    inner.front_proxy().map(|f| {
        Arc::new(Identity {
            cert_pem: Bytes::from(f.client_cert_pem.clone()),
            key_pem: Bytes::from(f.client_key_pem.clone()),
        })
    })
}

/// `target` with the front-proxy identity, for `path_and_query` on its backend.
fn at(inner: &dyn Context, target: &Target, path_and_query: &str) -> Result<Target, String> {
    let url = format!(
        "{}{path_and_query}",
        target.url.to_string().trim_end_matches('/')
    );
    Ok(Target {
        url: url.parse().map_err(|e| format!("{url:?}: {e}"))?,
        identity: identity(inner),
        ..target.clone()
    })
}

/// Headers never passed on: hop-by-hop ones, the caller's credentials and impersonation
/// (the backend learns who is calling from `X-Remote-*`).
fn passed_on(name: &HeaderName) -> bool {
    let n = name.as_str();
    !(matches!(
        n,
        "authorization"
            | "connection"
            | "keep-alive"
            | "proxy-authorization"
            | "proxy-connection"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "host"
            | "content-length"
    ) || n.starts_with("impersonate-")
        || n.starts_with("x-remote-"))
}

/// kube-aggregator's answer when the backend cannot be reached.
fn unavailable() -> ApiError {
    Status::failure(
        503,
        "ServiceUnavailable",
        "the server is currently unable to handle the request",
    )
    .into()
}

/// Proxies an authorized request to `service`'s backend, as `user`.
pub async fn proxy<B>(
    inner: &dyn Context,
    user: &User,
    req: Request<B>,
    service: &Service,
) -> ApiResult<Response<Body>>
where
    B: crate::body::RequestBody,
{
    let Some(backend) = &service.backend else {
        return Err(Status::not_found_path().into());
    };
    let backend = backend.as_ref().map_err(|e| {
        tracing::warn!(apiservice = %service.name, "not callable: {e}");
        unavailable()
    })?;
    let (parts, body) = req.into_parts();
    let (limit, timeout) = inner.request_body_limits();
    let body =
        crate::body::within_body_timeout(timeout, crate::body::read_body(body, limit)).await?;
    let pq = parts
        .uri
        .path_and_query()
        .map_or("/", http::uri::PathAndQuery::as_str);
    let target = at(inner, backend, pq).map_err(|e| {
        tracing::warn!(apiservice = %service.name, "{e}");
        unavailable()
    })?;
    let mut out = Request::builder()
        .method(parts.method.clone())
        .uri(target.url.clone());
    if let Some(h) = out.headers_mut() {
        for (k, v) in &parts.headers {
            if passed_on(k) {
                h.append(k.clone(), v.clone());
            }
        }
        remote_user(h, user);
    }
    let out = out
        .body(http_body_util::Full::new(body))
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let resp = inner
        .outbound()
        .send(&target, out, PROXY_TIMEOUT)
        .await
        .map_err(|e| {
            tracing::warn!(apiservice = %service.name, error = %e, "proxying");
            unavailable()
        })?;
    let (mut parts, incoming) = resp.into_parts();
    for h in [
        header::CONNECTION,
        header::TRANSFER_ENCODING,
        HeaderName::from_static("keep-alive"),
    ] {
        parts.headers.remove(h);
    }
    use http_body_util::BodyExt as _;
    Ok(Response::from_parts(parts, Relay(incoming).boxed()))
}

/// `X-Remote-User` and `X-Remote-Group` for `user`.
fn remote_user(h: &mut HeaderMap, user: &User) {
    if let Ok(v) = HeaderValue::from_str(&user.name) {
        h.insert(HeaderName::from_static("x-remote-user"), v);
    }
    for g in user.groups_with_authenticated() {
        if let Ok(v) = HeaderValue::from_str(g) {
            h.append(HeaderName::from_static("x-remote-group"), v);
        }
    }
}

/// A backend's body passed on as it arrives; an error from the backend ends it (the client
/// sees the stream end, as when kube-aggregator's backend goes away mid-watch).
struct Relay(hyper::body::Incoming);

impl http_body::Body for Relay {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        match std::pin::Pin::new(&mut self.0).poll_frame(cx) {
            std::task::Poll::Ready(Some(Ok(f))) => std::task::Poll::Ready(Some(Ok(f))),
            std::task::Poll::Ready(Some(Err(e))) => {
                tracing::debug!(error = %e, "proxied body ended early");
                std::task::Poll::Ready(None)
            }
            std::task::Poll::Ready(None) => std::task::Poll::Ready(None),
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.0.size_hint()
    }
}

/// One probe: the backend's `APIResourceList` for the service's group/version.
async fn probe(inner: &dyn Context, service: &Service) -> Probe {
    let failed = |reason: &str, message: String| Probe {
        available: false,
        reason: reason.to_owned(),
        message,
        resources: None,
    };
    let backend = match &service.backend {
        Some(Ok(b)) => b,
        Some(Err(e)) => return failed("ServiceNotFound", e.clone()),
        None => {
            return Probe {
                available: true,
                reason: "Local".into(),
                message: "Local APIServices are always available".into(),
                resources: None,
            };
        }
    };
    let path = format!("/apis/{}/{}", service.group, service.version);
    let target = match at(inner, backend, &path) {
        Ok(t) => t,
        Err(e) => return failed("ServiceNotFound", e),
    };
    let req = Request::get(target.url.clone())
        .header(header::ACCEPT, "application/json")
        .body(http_body_util::Full::new(Bytes::new()));
    let Ok(mut req) = req else {
        return failed("FailedDiscoveryCheck", "building the request".into());
    };
    remote_user(req.headers_mut(), &crate::client::system_user());
    let failing = |e: String| {
        failed(
            "FailedDiscoveryCheck",
            format!("failing or missing response from {}: {e}", target.url),
        )
    };
    let resp = match inner.outbound().send(&target, req, PROBE_TIMEOUT).await {
        Ok(r) => r,
        Err(e) => return failing(e.to_string()),
    };
    let status = resp.status();
    use http_body_util::BodyExt as _;
    let body = match tokio::time::timeout(PROBE_TIMEOUT, resp.into_body().collect()).await {
        Ok(Ok(b)) => b.to_bytes(),
        Ok(Err(e)) => return failing(e.to_string()),
        Err(_) => return failing("context deadline exceeded".into()),
    };
    if !status.is_success() {
        return failing(format!(
            "bad status from {}: {}",
            target.url,
            status.as_u16()
        ));
    }
    match serde_json::from_slice::<Value>(&body) {
        Ok(list) if list.get("resources").is_some_and(Value::is_array) => Probe {
            available: true,
            reason: "Passed".into(),
            message: "all checks passed".into(),
            resources: Some(list),
        },
        _ => failing("the answer is not an APIResourceList".into()),
    }
}

/// Reads every `APIService`, probes the remote ones and records what it found (index,
/// probes, `status.conditions`).
pub async fn sync(inner: &dyn Context) -> Result<(u64, bool), String> {
    let page = inner
        .store()
        .list(PREFIX, ReadAt::Latest, None, 0, false)
        .await
        .map_err(|e| crate::error::error_chain(&e))?;
    let objects: Vec<Value> = page
        .items
        .iter()
        .filter_map(|i| crate::object::from_stored(&i.value).ok())
        .collect();
    let services: Vec<Arc<Service>> = objects.iter().map(|o| Arc::new(parse(o))).collect();
    let remote = services.iter().any(|s| s.backend.is_some());
    inner.aggregator().send_replace(Arc::new(Index {
        revision: page.revision,
        services: services.clone(),
    }));
    for (obj, service) in objects.iter().zip(&services) {
        let p = Arc::new(probe(inner, service).await);
        inner.probes().set(&service.name, p.clone());
        let stored = obj
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| c["type"] == "Available"));
        let same = stored.is_some_and(|c| {
            c["status"] == if p.available { "True" } else { "False" }
                && c["reason"] == p.reason.as_str()
                && c["message"] == p.message.as_str()
        });
        if !same {
            write_status(inner, obj, &p).await;
        }
    }
    Ok((page.revision, remote))
}

async fn write_status(inner: &dyn Context, obj: &Value, p: &Probe) {
    let name = crate::object::meta_str(obj, "name")
        .unwrap_or("")
        .to_owned();
    let mut obj = obj.clone();
    obj["status"] = json!({"conditions": [{
        "type": "Available",
        "status": if p.available { "True" } else { "False" },
        "lastTransitionTime": crate::object::now_rfc3339(),
        "reason": p.reason,
        "message": p.message,
    }]});
    let path = format!("/apis/{GROUP}/v1/apiservices/{name}/status");
    if let Err(e) = crate::client::put(inner, crate::client::system_user(), &path, &obj).await {
        tracing::debug!(apiservice = %name, error = %e, "writing the Available condition");
    }
}

/// Keeps the index and the probes current: on every change, and every few seconds while
/// there are remote services.
pub async fn run(inner: Weak<dyn Context>) {
    crate::controller::run(inner, "aggregator", PREFIX, |i| async move {
        let (revision, remote) = sync(i.as_ref()).await?;
        Ok(crate::controller::Reconciled {
            pending: remote,
            revision,
        })
    })
    .await;
}

/// Waits (briefly) until the index includes `revision`, after a write of an `APIService`.
pub async fn wait_for(inner: &dyn Context, revision: u64) {
    crate::controller::wait_for_index(inner.aggregator(), revision, |ix| ix.revision).await;
}

/// The ConfigMap in `kube-system` that says what extension API servers trust.
const AUTHENTICATION_CONFIGMAP: &str = "extension-apiserver-authentication";

/// `kube-system/extension-apiserver-authentication`: what extension API servers trust
/// (kube-apiserver writes it at start).
pub async fn publish_authentication(inner: &dyn Context) -> Result<(), String> {
    let mut data = Map::new();
    if let Some(ca) = inner.client_ca_pem() {
        data.insert("client-ca-file".into(), json!(ca));
    }
    if let Some(f) = inner.front_proxy() {
        data.insert("requestheader-client-ca-file".into(), json!(f.ca_pem));
        data.insert(
            "requestheader-allowed-names".into(),
            json!(serde_json::to_string(&f.allowed_names).unwrap_or_default()),
        );
        data.insert(
            "requestheader-username-headers".into(),
            json!("[\"X-Remote-User\"]"),
        );
        data.insert(
            "requestheader-group-headers".into(),
            json!("[\"X-Remote-Group\"]"),
        );
        data.insert(
            "requestheader-extra-headers-prefix".into(),
            json!("[\"X-Remote-Extra-\"]"),
        );
    }
    if data.is_empty() {
        return Ok(());
    }
    let cm = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": AUTHENTICATION_CONFIGMAP, "namespace": "kube-system"},
        "data": data,
    });
    // Replicas of one cluster publish the same data (they share its CAs); whichever
    // writes first, the others find it as they would write it.
    crate::client::ensure(
        inner,
        crate::client::system_user(),
        "/api/v1/namespaces/kube-system/configmaps",
        AUTHENTICATION_CONFIGMAP,
        &cm,
        |mut current| {
            if current.get("data") == cm.get("data") {
                return None;
            }
            current["data"] = cm["data"].clone();
            Some(current)
        },
    )
    .await
}

/// An `APIResourceList` resource as aggregated discovery (`APIResourceDiscovery`) has it.
fn discovery_resource(group: &str, version: &str, r: &Value, subs: Vec<Value>) -> Value {
    let mut out = json!({
        "resource": r["name"],
        "responseKind": {"group": group, "version": version, "kind": r["kind"]},
        "scope": if r["namespaced"].as_bool().unwrap_or(false) { "Namespaced" } else { "Cluster" },
        "singularResource": r.get("singularName").cloned().unwrap_or(json!("")),
        "verbs": r.get("verbs").cloned().unwrap_or(json!([])),
    });
    for k in ["shortNames", "categories"] {
        if let Some(v) = r
            .get(k)
            .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
        {
            out[k] = v.clone();
        }
    }
    if !subs.is_empty() {
        out["subresources"] = Value::Array(subs);
    }
    out
}

/// Adds the proxied groups to `/apis` discovery (`doc`: an `APIGroupList`, or an aggregated
/// `APIGroupDiscoveryList` when `aggregated`).
pub fn merge_discovery(inner: &dyn Context, doc: &mut Value, aggregated: bool) {
    let ix = inner.aggregator().borrow().clone();
    for (group, services) in ix.groups() {
        let entry = if aggregated {
            let versions: Vec<Value> = services
                .iter()
                .map(|s| {
                    let probe = inner.probes().get(&s.name);
                    let fresh = probe.as_ref().is_some_and(|p| p.available);
                    let none = Vec::new();
                    let all = probe
                        .as_ref()
                        .and_then(|p| p.resources.as_ref())
                        .and_then(|l| l["resources"].as_array())
                        .unwrap_or(&none);
                    let resources: Vec<Value> = all
                        .iter()
                        .filter(|r| !r["name"].as_str().unwrap_or("").contains('/'))
                        .map(|r| {
                            let name = r["name"].as_str().unwrap_or("");
                            let subs = all
                                .iter()
                                .filter_map(|x| {
                                    let (parent, sub) = x["name"].as_str()?.split_once('/')?;
                                    (parent == name).then(|| {
                                        json!({
                                            "subresource": sub,
                                            "responseKind": {"group": group, "version": s.version, "kind": x["kind"]},
                                            "verbs": x.get("verbs").cloned().unwrap_or(json!([])),
                                        })
                                    })
                                })
                                .collect();
                            discovery_resource(&group, &s.version, r, subs)
                        })
                        .collect();
                    json!({
                        "version": s.version,
                        "resources": resources,
                        "freshness": if fresh { "Current" } else { "Stale" },
                    })
                })
                .collect();
            json!({"metadata": {"name": group, "creationTimestamp": null}, "versions": versions})
        } else {
            group_doc(&group, &services)
        };
        if let Some(items) = doc
            .get_mut(if aggregated { "items" } else { "groups" })
            .and_then(Value::as_array_mut)
        {
            items.push(entry);
        }
    }
}

fn group_doc(group: &str, services: &[Arc<Service>]) -> Value {
    let versions: Vec<Value> = services
        .iter()
        .map(|s| json!({"groupVersion": format!("{group}/{}", s.version), "version": s.version}))
        .collect();
    json!({
        "name": group,
        "versions": versions,
        "preferredVersion": versions.first().cloned().unwrap_or(Value::Null),
    })
}

/// `GET /apis/GROUP` for a proxied group.
pub fn api_group(inner: &dyn Context, group: &str) -> Option<Value> {
    let ix = inner.aggregator().borrow().clone();
    let (_, services) = ix.groups().into_iter().find(|(g, _)| g == group)?;
    let mut doc = group_doc(group, &services);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn names_priorities_and_tls_are_validated_as_kube_does() {
        let obj = |name: &str, spec: Value| json!({"metadata": {"name": name}, "spec": spec});
        let ok = obj(
            "v1alpha1.wardle.example.com",
            json!({"group": "wardle.example.com", "version": "v1alpha1", "service": {"namespace": "w", "name": "api"}, "groupPriorityMinimum": 1000, "versionPriority": 15}),
        );
        assert!(validate(&ok).is_empty(), "{:?}", validate(&ok));
        let fields = |o: &Value| {
            validate(o)
                .iter()
                .map(|e| e.field.clone())
                .collect::<Vec<_>>()
        };
        let bad = obj(
            "wrong",
            json!({"group": "wardle.example.com", "version": "v1alpha1", "service": {"namespace": "w", "name": "api"}, "groupPriorityMinimum": 0, "versionPriority": 15, "insecureSkipTLSVerify": true, "caBundle": "eA=="}),
        );
        assert_eq!(
            fields(&bad),
            [
                "metadata.name",
                "spec.groupPriorityMinimum",
                "spec.insecureSkipTLSVerify"
            ]
        );
    }

    #[test]
    fn the_backend_is_the_annotation_else_the_service() {
        let mut o = json!({"metadata": {"name": "v1.g.io"}, "spec": {"group": "g.io", "version": "v1", "service": {"namespace": "ns", "name": "api", "port": 8443}}});
        let url = |o: &Value| parse(o).backend.unwrap().unwrap().url.to_string();
        assert_eq!(url(&o), "https://api.ns.svc:8443/");
        o["metadata"]["annotations"] = json!({BACKEND_ANNOTATION: "https://127.0.0.1:9443/"});
        assert_eq!(url(&o), "https://127.0.0.1:9443/");
        assert!(parse(&json!({"metadata": {"name": "v1.local"}, "spec": {"group": "local", "version": "v1"}})).backend.is_none());
    }

    #[test]
    fn credentials_and_impersonation_are_not_passed_on() {
        for h in [
            "authorization",
            "impersonate-user",
            "x-remote-user",
            "connection",
            "host",
        ] {
            assert!(!passed_on(&HeaderName::from_static(h)), "{h}");
        }
        for h in ["accept", "content-type", "user-agent", "accept-encoding"] {
            assert!(passed_on(&HeaderName::from_static(h)), "{h}");
        }
    }
}
