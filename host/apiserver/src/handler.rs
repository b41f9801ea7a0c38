//! Routing of one request, top to bottom, in kube-apiserver's filter order:
//! non-resource endpoints that need no identity (health, version) → authentication (401)
//! → discovery / OpenAPI → resource requests (lookup 404, verb 405, max-in-flight 429,
//! body limit 413) → the verb. Errors become `Status` here and nowhere else.

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::Value;
use wasmgate_apimachinery::media;
use wasmgate_apimachinery::options::Query;
use wasmgate_apimachinery::request_info::{
    self, RequestInfo, RequestInfoError, ResourceRequest, Verb,
};
use wasmgate_apimachinery::status::Status;

use crate::body::{self, Body};
use crate::error::{ApiError, ApiResult};
use crate::health::{self, Check};
use crate::{Inner, User, discovery, rbac, verbs, version};

/// Handles one request; never fails (errors are rendered as Status).
pub(crate) async fn handle<B>(
    inner: &Arc<Inner>,
    req: Request<B>,
    user: Option<User>,
) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let start = tokio::time::Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let head = matches!(method, Method::HEAD);
    let routed = match bearer_user(inner, req.headers(), user).await {
        Ok(Some(user)) if inner.options.audit.is_some() => audited(inner, req, user).await,
        Ok(user) => route(inner, req, user).await,
        Err(e) => {
            // Failed authentication is audited too (kube's WithFailedAuthenticationAudit).
            if let Some(log) = &inner.options.audit {
                log.failed_authentication(
                    &req.uri().to_string(),
                    req.method().as_str(),
                    e.status.code,
                );
            }
            Err(e)
        }
    };
    let (resp, cause) = match routed {
        Ok(r) => (r, None),
        Err(e) => (status_response(&e.status), e.cause),
    };
    let code = resp.status().as_u16();
    let elapsed_ms = start.elapsed().as_secs_f64() * 1e3;
    match cause {
        Some(c) => tracing::warn!(%method, %path, code, elapsed_ms, cause = %c, "request failed"),
        None if code >= 500 => tracing::warn!(%method, %path, code, elapsed_ms, "request failed"),
        None => tracing::debug!(%method, %path, code, elapsed_ms, "request"),
    }
    if head {
        let (parts, _) = resp.into_parts();
        return Response::from_parts(parts, body::empty());
    }
    resp
}

/// [`route`] with an audit event written when the response is complete (the request
/// body read first when the level logs it, the response body when it logs that and the
/// response is one object, not a list or a watch).
async fn audited<B>(inner: &Arc<Inner>, req: Request<B>, user: User) -> ApiResult<Response<Body>>
where
    B: http_body::Body<Data = Bytes> + Send + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    use crate::audit::{self, Level};
    let Some(log) = inner.options.audit.clone() else {
        return route(inner, req, Some(user)).await;
    };
    let received = time::OffsetDateTime::now_utc();
    let uri = req.uri().to_string();
    let path = decode_path(req.uri().path()).unwrap_or_else(|_| req.uri().path().to_owned());
    let watch = Query::parse(req.uri().query())
        .bool("watch")
        .ok()
        .flatten()
        .unwrap_or(false);
    let info = request_info::parse(req.method(), &path, watch).ok();
    let verb = match &info {
        Some(RequestInfo::Resource(r)) => r.verb.as_str().to_owned(),
        _ => req.method().as_str().to_ascii_lowercase(),
    };
    let user_agent = header_str(req.headers(), header::USER_AGENT).map(str::to_owned);
    // Whom it acts as (the impersonation is authorized again by `route`).
    let impersonated = impersonate(inner, req.headers(), user.clone())
        .ok()
        .filter(|i| i.name != user.name || i.groups != user.groups);
    let record = audit::Request {
        user: &user,
        impersonated,
        verb,
        path: &path,
        uri: &uri,
        user_agent: user_agent.as_deref(),
        info,
        received,
    };
    let level = log.level(&record);
    let has_body = matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH);
    let (result, request_object) = if level >= Level::Request && has_body {
        let (parts, body) = req.into_parts();
        let limit = inner.options.max_request_body_bytes;
        match within_body_timeout(inner, read_body(body, limit)).await {
            Ok(bytes) => {
                let object = audit::object_of(&bytes);
                let req = Request::from_parts(parts, http_body_util::Full::new(bytes));
                (route(inner, req, Some(user.clone())).await, object)
            }
            Err(e) => (Err(e), None),
        }
    } else {
        (route(inner, req, Some(user.clone())).await, None)
    };
    let one_object = !matches!(record.verb.as_str(), "list" | "watch");
    let (result, response_object) = match result {
        Ok(resp) if level == Level::RequestResponse && one_object => {
            let (parts, body) = resp.into_parts();
            let bytes = http_body_util::BodyExt::collect(body)
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            let object = audit::object_of(&bytes);
            (Ok(Response::from_parts(parts, body::full(bytes))), object)
        }
        Err(e) if level == Level::RequestResponse => {
            let status = serde_json::to_value(&*e.status).ok();
            (Err(e), status)
        }
        other => (other, None),
    };
    let code = match &result {
        Ok(r) => r.status().as_u16(),
        Err(e) => e.status.code,
    };
    log.write(&record, level, code, request_object, response_object);
    result
}

/// A Status as a response.
pub(crate) fn status_response(s: &Status) -> Response<Body> {
    let mut r = Response::new(body::full(s.to_json()));
    *r.status_mut() = StatusCode::from_u16(s.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(secs) = s.details.retry_after_seconds
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// A JSON (or other) response with a status code.
pub(crate) fn bytes_response(
    code: StatusCode,
    content_type: &'static str,
    bytes: impl Into<Bytes>,
) -> Response<Body> {
    let mut r = Response::new(body::full(bytes));
    *r.status_mut() = code;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn json_value_response(v: &Value) -> Response<Body> {
    bytes_response(
        StatusCode::OK,
        "application/json",
        serde_json::to_vec(v).unwrap_or_default(),
    )
}

fn text_response(code: u16, text: String) -> Response<Body> {
    bytes_response(
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        "text/plain; charset=utf-8",
        text,
    )
}

fn method_not_allowed() -> ApiError {
    Status::failure(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
    )
    .into()
}

/// Paths anyone may read (kube's default `system:public-info-viewer`).
fn is_public(path: &str) -> bool {
    let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
    matches!(first, "livez" | "readyz" | "healthz" | "version")
}

async fn route<B>(
    inner: &Arc<Inner>,
    req: Request<B>,
    user: Option<User>,
) -> ApiResult<Response<Body>>
where
    B: http_body::Body<Data = Bytes> + Send + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    // Routing sees the decoded path, as Go's `url.URL.Path` is (`a%2Db` names `a-b`).
    let path = decode_path(req.uri().path())?;
    let query = Query::parse(req.uri().query());
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    if let Some(endpoint) = health::Endpoint::from_segment(segments[0]) {
        if segments.len() > 2 {
            return Ok(text_response(404, "404 page not found\n".into()));
        }
        let (code, text) = health::render(
            endpoint,
            segments.get(1).copied(),
            &query,
            &health_checks(inner, endpoint).await,
        );
        return Ok(text_response(code, text));
    }
    if path == "/version" || path == "/version/" {
        return Ok(json_value_response(&version::info()));
    }
    if user.is_none() && !is_public(&path) {
        return Err(Status::failure(401, "Unauthorized", "Unauthorized").into());
    }
    let user = user.unwrap_or_else(|| User {
        name: "system:anonymous".into(),
        groups: vec!["system:unauthenticated".into()],
    });
    let user = impersonate(inner, req.headers(), user)?;
    if let Some(name) = crate::plugins::upload::module_path(&path) {
        let verb = match *req.method() {
            Method::GET | Method::HEAD => "get",
            Method::DELETE => "delete",
            _ => "update",
        };
        authorize(
            inner,
            &user,
            verb,
            Some(rbac::ResourceAttributes {
                group: "wasmgate.dev".into(),
                resource: "wasmplugins".into(),
                subresource: "module".into(),
                namespace: String::new(),
                name: name.to_owned(),
            }),
            &path,
        )?;
        let name = name.to_owned();
        let method = req.method().clone();
        let limit = inner.options.max_request_body_bytes;
        let body = within_body_timeout(inner, read_body(req.into_body(), limit)).await?;
        return crate::plugins::upload::handle(inner, user, &method, &name, body).await;
    }
    let method_verb = req.method().as_str().to_ascii_lowercase();
    if path == "/metrics" || segments[0] == "openapi" {
        authorize(inner, &user, &method_verb, None, &path)?;
    }
    if path == "/metrics" {
        if !matches!(*req.method(), Method::GET | Method::HEAD) {
            return Err(method_not_allowed());
        }
        let mut resp = bytes_response(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Bytes::from(inner.metrics.render()),
        );
        resp.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        return Ok(resp);
    }
    if segments[0] == "openapi" {
        return openapi_route(inner, &segments[1..], &query, req.headers());
    }
    let watch = query
        .bool("watch")
        .map_err(|e| Status::bad_request(e.0))?
        .unwrap_or(false);
    let info = match request_info::parse(req.method(), &path, watch) {
        Ok(i) => i,
        Err(RequestInfoError::MethodNotAllowed) => return Err(method_not_allowed()),
        Err(RequestInfoError::NotFound) => return Err(Status::not_found_path().into()),
    };
    match &info {
        RequestInfo::Resource(r) => {
            // `/api/v1/namespaces/NAME` is in namespace NAME, as kube's RequestInfo has it.
            let namespace = match (&r.namespace, r.resource.as_str(), &r.name) {
                (Some(ns), _, _) => ns.clone(),
                (None, "namespaces", Some(name)) => name.clone(),
                _ => String::new(),
            };
            // A list or watch of one name (`fieldSelector=metadata.name=X`) is for that
            // name, as kube's RequestInfo has it: `resourceNames` rules allow it.
            let name = match (&r.name, r.verb) {
                (Some(n), _) => n.clone(),
                (None, Verb::List | Verb::Watch) => {
                    selected_name(query.get("fieldSelector")).unwrap_or_default()
                }
                _ => String::new(),
            };
            let attrs = rbac::ResourceAttributes {
                group: r.group.clone(),
                resource: r.resource.clone(),
                subresource: r.subresource.clone().unwrap_or_default(),
                namespace,
                name,
            };
            authorize(inner, &user, r.verb.as_str(), Some(attrs), &path)?;
        }
        _ => authorize(inner, &user, &method_verb, None, &path)?,
    }
    let catalog = inner.registry.snapshot();
    let get_only = |m: &Method| *m == Method::GET || *m == Method::HEAD;
    match info {
        RequestInfo::LegacyRoot | RequestInfo::GroupsRoot => {
            if !get_only(req.method()) {
                return Err(method_not_allowed());
            }
            let accept = media::parse_accept(header_str(req.headers(), header::ACCEPT));
            let out = media::negotiate_discovery(&accept)
                .map_err(|e| Status::failure(406, "NotAcceptable", e.to_string()))?;
            let core = matches!(info, RequestInfo::LegacyRoot);
            let (bytes, etag) = catalog.root_discovery(core, out, &inner.options.advertise_address);
            if header_str(req.headers(), header::IF_NONE_MATCH) == Some(etag.as_str()) {
                let mut r =
                    bytes_response(StatusCode::NOT_MODIFIED, out.content_type(), Bytes::new());
                insert_header(r.headers_mut(), header::ETAG, etag);
                return Ok(r);
            }
            let mut r = bytes_response(StatusCode::OK, out.content_type(), bytes.clone());
            insert_header(r.headers_mut(), header::ETAG, etag);
            insert_header(r.headers_mut(), header::VARY, "Accept");
            Ok(r)
        }
        RequestInfo::Group(g) => {
            if !get_only(req.method()) {
                return Err(method_not_allowed());
            }
            discovery::api_group(&catalog, &g)
                .map(|v| json_value_response(&v))
                .ok_or_else(|| Status::not_found_path().into())
        }
        RequestInfo::GroupVersion { group, version } => {
            if !get_only(req.method()) {
                return Err(method_not_allowed());
            }
            discovery::api_resource_list(&catalog, &group, &version)
                .map(|v| json_value_response(&v))
                .ok_or_else(|| Status::not_found_path().into())
        }
        RequestInfo::NonResource => Err(Status::not_found_path().into()),
        RequestInfo::Resource(r) if crate::reviews::is_review(&r) => {
            let limit = inner.options.max_request_body_bytes;
            let body = within_body_timeout(inner, read_body(req.into_body(), limit)).await?;
            crate::reviews::handle(inner, &r, &user, &body)
        }
        RequestInfo::Resource(r) => resource(inner, catalog, r, query, req, user).await,
    }
}

/// The user of a request without a client certificate that presents a bearer token
/// (`Authorization: Bearer …`): the token file's user, or the service account of a token
/// the gateway signed (while the account exists with the uid it names), else 401. A
/// certificate's user wins over a token, as in kube's union authenticator.
async fn bearer_user(
    inner: &Inner,
    headers: &HeaderMap,
    user: Option<User>,
) -> ApiResult<Option<User>> {
    if user.is_some() {
        return Ok(user);
    }
    let Some(token) = header_str(headers, header::AUTHORIZATION)
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
    else {
        return Ok(None);
    };
    let unauthorized = || ApiError::from(Status::failure(401, "Unauthorized", "Unauthorized"));
    if let Some(u) = inner.options.tokens.user(token) {
        return Ok(Some(u.clone()));
    }
    let (ns, name, uid) =
        crate::sa_token::claims_of(&inner.sa_signer, token).ok_or_else(unauthorized)?;
    let key = format!("core/serviceaccounts/{ns}/{name}");
    let account = match inner
        .store
        .get(&key, wasmgate_storage::ReadAt::Latest)
        .await
    {
        Ok((_, Some(v))) => crate::object::from_stored(&v.value).ok(),
        Ok((_, None)) => None,
        Err(e) => {
            return Err(ApiError::internal(format!(
                "reading the service account of a token: {e}"
            )));
        }
    };
    match account {
        Some(a) if crate::object::meta_str(&a, "uid") == Some(uid.as_str()) => {
            Ok(Some(crate::sa_token::user_of(&ns, &name)))
        }
        _ => Err(unauthorized()),
    }
}

/// The name a field selector requires exactly (`metadata.name=X` or `==X` among its terms).
fn selected_name(selector: Option<&str>) -> Option<String> {
    selector?.split(',').find_map(|term| {
        let v = term.trim().strip_prefix("metadata.name")?;
        let v = v.strip_prefix("==").or_else(|| v.strip_prefix('='))?;
        (!v.is_empty() && !v.starts_with('=')).then(|| v.to_owned())
    })
}

/// RBAC's decision on the request (`system:masters` may do anything): a 403 when no
/// rule bound to the user allows it.
fn authorize(
    inner: &Inner,
    user: &User,
    verb: &str,
    resource: Option<rbac::ResourceAttributes>,
    path: &str,
) -> ApiResult<()> {
    if rbac::is_master(user) {
        return Ok(());
    }
    let attrs = rbac::Attributes {
        user,
        verb: verb.to_owned(),
        resource,
        path: path.to_owned(),
    };
    if rbac::permits(inner, &attrs) {
        Ok(())
    } else {
        Err(rbac::forbidden(&attrs))
    }
}

/// Percent-decodes a request path. A `%` not followed by two hex digits, or bytes that
/// are not UTF-8 once decoded, are a 400 (Go's URL parser refuses such a path).
fn decode_path(raw: &str) -> ApiResult<String> {
    let bytes = raw.as_bytes();
    let bad_escape = bytes.iter().enumerate().any(|(i, b)| {
        *b == b'%'
            && !(bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    });
    let decoded = percent_encoding::percent_decode_str(raw).decode_utf8();
    match decoded {
        Ok(p) if !bad_escape => Ok(p.into_owned()),
        _ => Err(Status::bad_request(format!("invalid URL escape in path {raw:?}")).into()),
    }
}

/// Impersonation (`kubectl --as`, `--as-group`; kube's impersonation filter): the caller
/// must be allowed the `impersonate` verb on the user (or service account), on each
/// group and extra value, and on the uid; the request then runs as the impersonated
/// user, whose groups are the ones asked for (else a service account's, else none), plus
/// `system:authenticated`. Refusals are 403s worded as kube's. Extra values and the uid
/// are authorized but not carried further (Wasmgate's users have neither).
fn impersonate(inner: &Inner, headers: &HeaderMap, user: User) -> ApiResult<User> {
    let values = |name: &str| -> Vec<&str> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect()
    };
    let target = values("impersonate-user")
        .first()
        .filter(|s| !s.is_empty())
        .map(|s| (*s).to_owned());
    let groups: Vec<String> = values("impersonate-group")
        .into_iter()
        .map(str::to_owned)
        .collect();
    let uid = values("impersonate-uid").first().map(|s| (*s).to_owned());
    let extras: Vec<(String, String)> = headers
        .iter()
        .filter_map(|(k, v)| {
            let key = k.as_str().strip_prefix("impersonate-extra-")?;
            let key = percent_encoding::percent_decode_str(key)
                .decode_utf8_lossy()
                .into_owned();
            Some((key, v.to_str().ok()?.to_owned()))
        })
        .collect();
    let Some(target) = target else {
        if groups.is_empty() && uid.is_none() && extras.is_empty() {
            return Ok(user);
        }
        return Err(Status::bad_request(
            "requested impersonation of groups, extra values or a uid without impersonating a user",
        )
        .into());
    };
    let check = |group: &str, resource: &str, sub: &str, ns: &str, name: &str| {
        authorize(
            inner,
            &user,
            "impersonate",
            Some(rbac::ResourceAttributes {
                group: group.into(),
                resource: resource.into(),
                subresource: sub.into(),
                namespace: ns.into(),
                name: name.into(),
            }),
            "",
        )
    };
    let service_account = target
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
        .filter(|(ns, name)| !ns.is_empty() && !name.is_empty() && !name.contains(':'));
    match service_account {
        Some((ns, name)) => check("", "serviceaccounts", "", ns, name)?,
        None => check("", "users", "", "", &target)?,
    }
    for g in &groups {
        check("", "groups", "", "", g)?;
    }
    for (k, v) in &extras {
        check("authentication.k8s.io", "userextras", k, "", v)?;
    }
    if let Some(u) = &uid {
        check("authentication.k8s.io", "uids", "", "", u)?;
    }
    let mut groups = if !groups.is_empty() {
        groups
    } else if let Some((ns, _)) = service_account {
        vec![
            "system:serviceaccounts".to_owned(),
            format!("system:serviceaccounts:{ns}"),
        ]
    } else {
        Vec::new()
    };
    let has = |gs: &[String], g: &str| gs.iter().any(|x| x == g);
    if target == "system:anonymous" {
        if !has(&groups, "system:unauthenticated") {
            groups.push("system:unauthenticated".into());
        }
    } else if !has(&groups, "system:authenticated") && !has(&groups, "system:unauthenticated") {
        groups.push("system:authenticated".into());
    }
    Ok(User {
        name: target,
        groups,
    })
}

fn insert_header(h: &mut HeaderMap, name: header::HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        h.insert(name, v);
    }
}

pub(crate) fn header_str(h: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

fn openapi_route(
    inner: &Arc<Inner>,
    rest: &[&str],
    query: &Query,
    headers: &HeaderMap,
) -> ApiResult<Response<Body>> {
    let catalog = inner.registry.snapshot();
    let docs = catalog.openapi();
    match rest {
        ["v3"] => Ok(bytes_response(
            StatusCode::OK,
            "application/json",
            docs.index.clone(),
        )),
        ["v3", gv @ ..] if !gv.is_empty() => {
            let key = gv.join("/");
            let (bytes, hash) = docs
                .docs
                .get(&key)
                .ok_or_else(|| ApiError::from(Status::not_found_path()))?;
            let mut r = bytes_response(StatusCode::OK, "application/json", bytes.clone());
            insert_header(r.headers_mut(), header::ETAG, &format!("\"{hash}\""));
            let cache = if query.get("hash") == Some(hash.as_str()) {
                "public, immutable"
            } else {
                "no-cache, private"
            };
            insert_header(r.headers_mut(), header::CACHE_CONTROL, cache);
            if header_str(headers, header::IF_NONE_MATCH) == Some(format!("\"{hash}\"").as_str()) {
                *r.status_mut() = StatusCode::NOT_MODIFIED;
            }
            Ok(r)
        }
        ["v2"] => {
            // kubectl asks for gnostic protobuf (KUBECTL-WIRE §4, §10); others get JSON.
            let (json, proto, hash) = docs.v2();
            let wants_proto =
                header_str(headers, header::ACCEPT).is_some_and(|a| a.contains("protobuf"));
            let mut r = if wants_proto && !proto.is_empty() {
                bytes_response(
                    StatusCode::OK,
                    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
                    proto.clone(),
                )
            } else {
                bytes_response(StatusCode::OK, "application/json", json.clone())
            };
            insert_header(r.headers_mut(), header::ETAG, &format!("\"{hash}\""));
            insert_header(r.headers_mut(), header::VARY, "Accept");
            Ok(r)
        }
        _ => Err(Status::not_found_path().into()),
    }
}

async fn health_checks(inner: &Inner, endpoint: health::Endpoint) -> Vec<Check> {
    let storage = match inner
        .store
        .get("core/namespaces//default", wasmgate_storage::ReadAt::Latest)
        .await
    {
        Ok(_) => None,
        Err(e) => Some(e.to_string()),
    };
    let mut checks = vec![
        Check {
            name: "ping",
            failure: None,
        },
        Check {
            name: "log",
            failure: None,
        },
        Check {
            name: "storage",
            failure: storage,
        },
        Check {
            name: "poststarthook/bootstrap-namespaces",
            failure: (!inner
                .bootstrapped
                .load(std::sync::atomic::Ordering::Acquire))
            .then(|| "not yet".into()),
        },
    ];
    if endpoint == health::Endpoint::Readyz {
        checks.push(Check {
            name: "shutdown",
            failure: (*inner.shutdown.borrow()).then(|| "shutting down".into()),
        });
    }
    // The reasons are withheld from clients (see `health::render`): they go to the log.
    for c in &checks {
        if let Some(reason) = &c.failure {
            tracing::warn!(endpoint = endpoint.name(), check = c.name, %reason, "health check failed");
        }
    }
    checks
}

async fn resource<B>(
    inner: &Arc<Inner>,
    catalog: Arc<crate::registry::Catalog>,
    r: ResourceRequest,
    query: Query,
    req: Request<B>,
    user: User,
) -> ApiResult<Response<Body>>
where
    B: http_body::Body<Data = Bytes> + Send + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let rt = catalog
        .lookup(&r.group, &r.version, &r.resource)
        .cloned()
        .ok_or_else(|| ApiError::from(Status::not_found_path()))?;
    // Scope: namespaced objects are addressed with a namespace (collections may span all
    // namespaces); cluster-scoped ones never are.
    if rt.namespaced && r.namespace.is_none() && !matches!(r.verb, Verb::List | Verb::Watch) {
        return Err(Status::not_found_path().into());
    }
    if !rt.namespaced && r.namespace.is_some() {
        return Err(Status::not_found_path().into());
    }
    match &r.subresource {
        Some(sub) => {
            let subs = rt.subresources_for(&r.version);
            let s = subs
                .iter()
                .find(|s| s.name == *sub)
                .ok_or_else(|| ApiError::from(Status::not_found_path()))?;
            if !s.verbs.contains(&r.verb.as_str()) {
                return Err(method_not_allowed());
            }
        }
        None => {
            if !rt.serves(r.verb.as_str()) {
                return Err(method_not_allowed());
            }
        }
    }
    // Watches are long-running and exempt from the in-flight limits, as upstream. The
    // user's share is taken first: a user past it never holds a global place.
    let _share = if r.verb == Verb::Watch || rbac::is_master(&user) {
        None
    } else {
        Some(
            inner
                .per_user
                .acquire(&user.name, inner.options.max_in_flight_per_user)?,
        )
    };
    let _permit = if r.verb == Verb::Watch {
        None
    } else {
        Some(inner.in_flight.try_acquire().map_err(|_| {
            ApiError::from(
                Status::failure(
                    429,
                    "TooManyRequests",
                    "Too many requests, please try again later.",
                )
                .with_retry_after(1),
            )
        })?)
    };
    let (parts, body) = req.into_parts();
    // A client that stalls its upload must not hold an in-flight slot for ever.
    let limit = inner.options.max_request_body_bytes;
    let no_body = !matches!(
        r.verb,
        Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection
    ) && http_body::Body::is_end_stream(&body);
    let body = if no_body {
        // The common read: no body, no timer.
        Bytes::new()
    } else {
        within_body_timeout(inner, async {
            match r.verb {
                Verb::Create
                | Verb::Update
                | Verb::Patch
                | Verb::Delete
                | Verb::DeleteCollection => read_body(body, limit).await,
                // A body on a read is ignored, but read: a connection closed with request
                // bytes unread is reset, and the reset can destroy the response on its way.
                _ => discard_body(body, limit).await.map(|()| Bytes::new()),
            }
        })
        .await?
    };
    let mut ctx = verbs::Ctx {
        inner: inner.clone(),
        rt,
        req: r,
        query,
        headers: parts.headers,
        warnings: Vec::new(),
        late_warnings: Default::default(),
        user,
        applying: false,
    };
    let gzip_ok = matches!(ctx.req.verb, Verb::Get | Verb::List) && ctx.accepts_gzip();
    let mut resp = verbs::dispatch(&mut ctx, body).await?;
    if gzip_ok {
        resp = gzip(resp).await;
    }
    let late = std::mem::take(
        ctx.late_warnings
            .get_mut()
            .unwrap_or_else(|p| p.into_inner()),
    );
    ctx.warnings.extend(late);
    for w in &ctx.warnings {
        let v = format!("299 - {}", go_quote_header(w));
        if let Ok(v) = HeaderValue::from_str(&v) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    Ok(resp)
}

/// Responses at least this large are compressed when the client accepts gzip (`GZIP-01`).
pub(crate) const GZIP_MIN_BYTES: u64 = 128 * 1024;

fn accepts_gzip(v: &str) -> bool {
    v.split(',').any(|e| {
        let mut parts = e.split(';');
        let name = parts.next().unwrap_or("").trim();
        name.eq_ignore_ascii_case("gzip") && !parts.any(|p| p.trim() == "q=0")
    })
}

impl verbs::Ctx {
    /// Whether the client takes gzip (`Accept-Encoding`).
    pub(crate) fn accepts_gzip(&self) -> bool {
        header_str(&self.headers, header::ACCEPT_ENCODING).is_some_and(accepts_gzip)
    }
}

/// Compresses a complete (non-streaming) body of at least [`GZIP_MIN_BYTES`].
async fn gzip(resp: Response<Body>) -> Response<Body> {
    use std::io::Write as _;
    let big = http_body::Body::size_hint(resp.body())
        .exact()
        .is_some_and(|n| n >= GZIP_MIN_BYTES);
    if !big || resp.headers().contains_key(header::CONTENT_ENCODING) {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(collected) = body.collect().await;
    let bytes = collected.to_bytes();
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 4),
        flate2::Compression::fast(),
    );
    if enc.write_all(&bytes).is_err() {
        return Response::from_parts(parts, body::full(bytes));
    }
    match enc.finish() {
        Ok(compressed) => {
            parts
                .headers
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            parts
                .headers
                .append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
            Response::from_parts(parts, body::full(compressed))
        }
        Err(_) => Response::from_parts(parts, body::full(bytes)),
    }
}

/// Warning header text: a quoted string with `\` and `"` escaped (RFC 7234 §5.5).
fn go_quote_header(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `read` within the body-read timeout (504 after).
async fn within_body_timeout<T>(
    inner: &Inner,
    read: impl std::future::Future<Output = ApiResult<T>>,
) -> ApiResult<T> {
    tokio::time::timeout(inner.options.body_read_timeout, read)
        .await
        .map_err(|_| {
            ApiError::from(Status::failure(
                504,
                "Timeout",
                "the request body was not received in time",
            ))
        })?
}

/// Reads and drops a body of at most `limit` bytes (413 above).
async fn discard_body<B>(mut body: B, limit: usize) -> ApiResult<()>
where
    B: http_body::Body<Data = Bytes> + Send + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            ApiError::from(Status::bad_request(format!(
                "unable to read the request body: {}",
                e.into()
            )))
        })?;
        if let Some(data) = frame.data_ref() {
            seen += data.len();
            if seen > limit {
                return Err(Status::failure(
                    413,
                    "RequestEntityTooLarge",
                    format!("Request entity too large: limit is {limit}"),
                )
                .into());
            }
        }
    }
    Ok(())
}

async fn read_body<B>(body: B, limit: usize) -> ApiResult<Bytes>
where
    B: http_body::Body<Data = Bytes> + Send + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let too_large = || {
        ApiError::from(Status::failure(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        ))
    };
    if body.size_hint().lower() > limit as u64 {
        return Err(too_large());
    }
    let limited = http_body_util::Limited::new(body, limit);
    match limited.collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                Err(too_large())
            } else {
                Err(Status::bad_request(format!("unable to read the request body: {e}")).into())
            }
        }
    }
}

#[cfg(test)]
mod selected_name_tests {
    /// A list or watch of `metadata.name=X` is authorized for X (AUTH-01).
    #[test]
    fn exact_name_terms() {
        use super::selected_name;
        assert_eq!(selected_name(Some("metadata.name=a")), Some("a".into()));
        assert_eq!(
            selected_name(Some("x=y,metadata.name==b")),
            Some("b".into())
        );
        assert_eq!(selected_name(Some("metadata.name!=a")), None);
        assert_eq!(selected_name(Some("metadata.namespace=a")), None);
        assert_eq!(selected_name(None), None);
    }
}
