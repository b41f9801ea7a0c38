//! The request pipeline: every request, from the connection to the handler, goes through
//! the filters kube-apiserver's `DefaultBuildHandlerChain` builds, in its order
//! (outermost first). Each filter is one function here that does its part and calls the
//! next one:
//!
//! 1. [`recover`] (`WithPanicRecovery`): a panic below answers `500` instead of taking
//!    the connection down with it.
//! 2. [`describe`] (`WithRequestInfo`): the path decoded (`400` when it cannot be), the
//!    query, what the path asks for ([`RequestInfo`]), and the series of kube's request
//!    metrics the answer is counted in ([`handle`] counts every answer, the filters' too).
//! 3. [`deadline`] (`WithRequestDeadline`, `WithTimeoutForNonLongRunningRequests`): a
//!    request ends by its `timeout=` (a Go duration; `400` when malformed), at most
//!    `Options::request_timeout` (60 s), with `504 Timeout`. Watches are long-running and
//!    have their own end (`timeoutSeconds`).
//! 4. [`authenticate`] (`WithAuthentication`, `WithFailedAuthenticationAudit`): the
//!    connection's client certificate, else a bearer token (static, or a ServiceAccount
//!    token); bad credentials are `401` (and audited). Without credentials only the
//!    public paths (health, `/version`) are served, as `system:anonymous`.
//! 5. [`audit`] (`WithAudit`): one `audit.k8s.io/v1` event when the response is complete.
//! 6. [`impersonate`] (`WithImpersonation`): `Impersonate-*` headers, each allowed by the
//!    `impersonate` verb, or `403`; the request then acts as that user.
//! 7. [`limit`] (`WithMaxInFlightLimit`, in the spirit of `WithPriorityAndFairness`): the
//!    user's share of the in-flight budget, then a place in it, or `429`; watches and
//!    health probes are exempt, `system:masters` from the share.
//! 8. [`authorize`] (`WithAuthorization`): RBAC, or `403` worded as kube's.
//! 9. the handler ([`handler::route`]): health, version, metrics, OpenAPI, discovery, the
//!    reviews, module uploads, resources; large reads gzipped ([`compress`]).
//!
//! Warnings the handler records go out as `Warning` headers on the response, whether it
//! succeeded or not (`WithWarningRecorder`), deduplicated and within kube's budget
//! ([`WarningRecorder`]): however many warnings plugins, policies and webhooks add
//! together, the headers stay small enough for the response to go out. Errors become
//! `Status` responses in [`handle`] and nowhere else.

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt as _;
use http::{HeaderMap, HeaderValue, Method, Request, Response, header};
use wasmgate_apimachinery::options::Query;
use wasmgate_apimachinery::request_info::{self, RequestInfo, Verb};
use wasmgate_apimachinery::status::Status;

use crate::body::{self, Body};
use crate::error::{ApiError, ApiResult};
use crate::handler;
use crate::inner::Inner;
use crate::request::Call;
use crate::response::{GZIP_MIN_BYTES, accepts_gzip, header_str};
use crate::{User, rbac};

/// Paths anyone may read, without credentials (kube's `system:public-info-viewer`).
fn is_public(path: &str) -> bool {
    let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
    matches!(first, "livez" | "readyz" | "healthz" | "version")
}

/// Serves one request through the whole stack; never fails (errors are rendered as
/// Status here).
pub(crate) async fn handle<B>(
    inner: &Arc<Inner>,
    req: Request<B>,
    certificate: Option<User>,
) -> Response<Body>
where
    B: crate::body::RequestBody,
{
    let start = tokio::time::Instant::now();
    let method = req.method().clone();
    let raw_path = req.uri().path().to_owned();
    // Errors are written in what the client accepts (JSON or protobuf).
    let accept = req.headers().get(header::ACCEPT).cloned();
    let mut warnings = Vec::new();
    let mut series = None;
    let described = describe(inner, req, certificate, &mut warnings, &mut series);
    let routed = recover(described).await;
    let (mut resp, cause) = match routed {
        Ok(r) => (r, None),
        Err(e) => (
            crate::response::status_response(&e.status, accept.as_ref()),
            e.cause,
        ),
    };
    let mut recorder = WarningRecorder::default();
    for w in &warnings {
        recorder.add(w);
    }
    drop(warnings);
    for v in recorder.header_values() {
        resp.headers_mut().append(header::WARNING, v);
    }
    let code = resp.status().as_u16();
    let elapsed = start.elapsed();
    let elapsed_ms = elapsed.as_secs_f64() * 1e3;
    let path = raw_path;
    match cause {
        Some(c) => tracing::warn!(%method, %path, code, elapsed_ms, cause = %c, "request failed"),
        None if code >= 500 => tracing::warn!(%method, %path, code, elapsed_ms, "request failed"),
        None => tracing::debug!(%method, %path, code, elapsed_ms, "request"),
    }
    // Every answer counts, the filters' (401, 403, 429) too (`WithRequestInfo`'s place).
    let resp = (inner.metrics.requests).finish(series, start, elapsed, resp);
    if method == Method::HEAD {
        let (parts, _) = resp.into_parts();
        return Response::from_parts(parts, body::empty());
    }
    resp
}

/// 1. A panic anywhere below is this request's `500`, not the connection's end.
async fn recover<T>(next: impl std::future::Future<Output = ApiResult<T>>) -> ApiResult<T> {
    match std::panic::AssertUnwindSafe(next).catch_unwind().await {
        Ok(r) => r,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(panic = %what, "a request panicked");
            Err(Status::failure(
                500,
                "InternalError",
                "Internal error occurred: This request caused apiserver to panic. Look in the logs for details.",
            )
            .into())
        }
    }
}

/// 2. What the request asks for, and the metrics series it is counted in.
async fn describe<B>(
    inner: &Arc<Inner>,
    req: Request<B>,
    certificate: Option<User>,
    warnings: &mut Vec<String>,
    series: &mut Option<crate::metrics::requests::SeriesId>,
) -> ApiResult<Response<Body>>
where
    B: crate::body::RequestBody,
{
    let path = handler::decode_path(req.uri().path())?;
    let query = Query::parse(req.uri().query());
    let watch = query
        .bool("watch")
        .map_err(|e| Status::bad_request(e.0))?
        .unwrap_or(false);
    let info = request_info::parse(req.method(), &path, watch);
    let mut call = Call {
        method: req.method().clone(),
        path,
        query,
        info,
        // Until `authenticate` knows better.
        user: anonymous(),
        impersonated: None,
        warnings: Vec::new(),
        audit_annotations: Vec::new(),
    };
    *series = request_series(inner, &call, req.headers());
    let result = deadline(inner, &mut call, req, certificate).await;
    warnings.append(&mut call.warnings);
    result
}

/// The request-metrics series of `call` (see [`crate::metrics::requests`]): only for what the registry
/// serves, asked the first time a label set is seen.
fn request_series(
    inner: &Inner,
    call: &Call,
    headers: &http::HeaderMap,
) -> Option<crate::metrics::requests::SeriesId> {
    let req = crate::metrics::requests::Request {
        method: &call.method,
        path: &call.path,
        query: &call.query,
        headers,
        info: call.info.as_ref().ok(),
    };
    inner.metrics.requests.series(&req, |r| {
        let catalog = inner.registry.snapshot();
        let Some(rt) = catalog.lookup(&r.group, &r.version, &r.resource) else {
            return false;
        };
        r.subresource
            .as_deref()
            .is_none_or(|sub| rt.subresources.iter().any(|s| s.name == sub))
    })
}

fn anonymous() -> User {
    User {
        name: "system:anonymous".into(),
        groups: vec!["system:unauthenticated".into()],
    }
}

/// kube's wording for a malformed `timeout=`.
const INVALID_TIMEOUT: &str = "invalid timeout specified in the request URL";

/// The deadline of a request that is not long-running: its `timeout=` when that is
/// positive and shorter than `max`, else `max` (kube's `WithRequestDeadline`).
fn request_deadline(query: &Query, max: Duration) -> ApiResult<Duration> {
    let Some(v) = query.get("timeout").filter(|v| !v.is_empty()) else {
        return Ok(max);
    };
    let nanos = wasmgate_apimachinery::gofmt::parse_go_duration(v)
        .map_err(|e| Status::bad_request(format!("{INVALID_TIMEOUT} - {e}")))?;
    let asked = u64::try_from(nanos).map_or(Duration::ZERO, Duration::from_nanos);
    Ok(if asked > Duration::ZERO && asked < max {
        asked
    } else {
        max
    })
}

/// 3. Ends a request that runs past its deadline with `504`. What it started keeps its
///    own guarantees: a write that reached the store's committer is committed (or not)
///    as if the client were still waiting, as in kube.
async fn deadline<B>(
    inner: &Arc<Inner>,
    call: &mut Call,
    req: Request<B>,
    certificate: Option<User>,
) -> ApiResult<Response<Body>>
where
    B: crate::body::RequestBody,
{
    if call.long_running() {
        return authenticate(inner, call, req, certificate).await;
    }
    let limit = request_deadline(&call.query, inner.options.request_timeout)?;
    match tokio::time::timeout(limit, authenticate(inner, call, req, certificate)).await {
        Ok(r) => r,
        Err(_) => Err(Status::failure(
            504,
            "Timeout",
            "Timeout: request did not complete within requested timeout - context deadline exceeded",
        )
        .into()),
    }
}

/// 4. Who is calling: the connection's client certificate (already verified), else a
///    bearer token; none only for the public paths.
async fn authenticate<B>(
    inner: &Arc<Inner>,
    call: &mut Call,
    req: Request<B>,
    certificate: Option<User>,
) -> ApiResult<Response<Body>>
where
    B: crate::body::RequestBody,
{
    let user = match bearer_user(inner, req.headers(), certificate).await {
        Ok(u) => u,
        Err(e) => {
            if let Some(log) = &inner.options.audit {
                log.failed_authentication(
                    &req.uri().to_string(),
                    req.method().as_str(),
                    e.status.code,
                    &log.source_ips(peer_ip(&req), req.headers()),
                );
            }
            return Err(e);
        }
    };
    call.user = match user {
        Some(u) => {
            // The connection carried an authenticated request: it no longer counts as
            // an unauthenticated one.
            if let Some(conn) = req.extensions().get::<wasmgate_server::ConnInfo>() {
                conn.authenticated();
            }
            u
        }
        None if is_public(&call.path) => anonymous(),
        None => return Err(Status::failure(401, "Unauthorized", "Unauthorized").into()),
    };
    audit(inner, call, req).await
}

/// The address of the client a request came from, when it came over a connection.
fn peer_ip<B>(req: &Request<B>) -> Option<std::net::IpAddr> {
    req.extensions()
        .get::<wasmgate_server::ConnInfo>()
        .map(|c| c.peer.ip())
}

/// The user of a request without a client certificate that presents a bearer token
/// (`Authorization: Bearer …`): [`crate::authn::authenticate_token`] for this server's audience, else
/// 401. A certificate's user wins over a token, as in kube's union authenticator.
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
    match crate::authn::authenticate_token(inner, token, &[crate::sa_token::ISSUER]).await? {
        crate::authn::TokenAuth::Authenticated(t) => Ok(Some(t.user)),
        crate::authn::TokenAuth::Refused(_) => {
            Err(Status::failure(401, "Unauthorized", "Unauthorized").into())
        }
    }
}

/// 5. An audit event when the response is complete (the request body read first when the
///    level logs it; the response body when it logs that and the response is one object,
///    not a list or a watch).
async fn audit<B>(inner: &Arc<Inner>, call: &mut Call, req: Request<B>) -> ApiResult<Response<Body>>
where
    B: crate::body::RequestBody,
{
    use crate::audit::{self, Level};
    let Some(log) = inner.options.audit.clone() else {
        return impersonate(inner, call, req).await;
    };
    let received = time::OffsetDateTime::now_utc();
    let uri = req.uri().to_string();
    let user = call.user.clone();
    let user_agent = header_str(req.headers(), header::USER_AGENT).map(str::to_owned);
    let source_ips = log.source_ips(peer_ip(&req), req.headers());
    let level = {
        let record = audit::Request {
            user: &user,
            impersonated: None,
            verb: call.verb(),
            path: &call.path,
            uri: &uri,
            user_agent: user_agent.as_deref(),
            info: call.info.clone().ok(),
            received,
            source_ips: Vec::new(),
        };
        log.level(&record)
    };
    let has_body = matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH);
    let (result, request_object) = if level >= Level::Request && has_body {
        let (parts, body) = req.into_parts();
        let limit = inner.options.max_request_body_bytes;
        match crate::body::within_body_timeout(
            inner.options.body_read_timeout,
            crate::body::read_body(body, limit),
        )
        .await
        {
            Ok(bytes) => {
                let object = audit::object_of(&bytes);
                let req = Request::from_parts(parts, http_body_util::Full::new(bytes));
                (impersonate(inner, call, req).await, object)
            }
            Err(e) => (Err(e), None),
        }
    } else {
        (impersonate(inner, call, req).await, None)
    };
    let verb = call.verb();
    let one_object = !matches!(verb.as_str(), "list" | "watch");
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
    let (code, failure) = match &result {
        Ok(r) => (r.status().as_u16(), None),
        Err(e) => (e.status.code, Some(&*e.status)),
    };
    let record = audit::Request {
        user: &user,
        impersonated: call.impersonated.clone(),
        verb,
        path: &call.path,
        uri: &uri,
        user_agent: user_agent.as_deref(),
        info: call.info.clone().ok(),
        received,
        source_ips,
    };
    let outcome = audit::Outcome {
        code,
        failure,
        request_object,
        response_object,
    };
    log.write(&record, level, outcome, &call.audit_annotations);
    result
}

/// 6. Impersonation (`kubectl --as`, `--as-group`; kube's impersonation filter): the
///    caller must be allowed the `impersonate` verb on the user (or service account), on
///    each group and extra value, and on the uid; the request then acts as the
///    impersonated user, whose groups are the ones asked for (else a service account's,
///    else none), plus `system:authenticated`. Refusals are 403s worded as kube's. Extra
///    values and the uid are authorized but not carried further (Wasmgate's users have
///    neither).
async fn impersonate<B>(
    inner: &Arc<Inner>,
    call: &mut Call,
    req: Request<B>,
) -> ApiResult<Response<Body>>
where
    B: crate::body::RequestBody,
{
    if let Some(acting) = impersonation(inner, req.headers(), &call.user)? {
        call.impersonated = Some(acting.clone());
        call.user = acting;
    }
    limit(inner, call, req).await
}

/// The user `headers` ask to act as, if any, once the caller `user` is allowed to.
fn impersonation(inner: &Inner, headers: &HeaderMap, user: &User) -> ApiResult<Option<User>> {
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
            return Ok(None);
        }
        return Err(Status::bad_request(
            "requested impersonation of groups, extra values or a uid without impersonating a user",
        )
        .into());
    };
    let check = |group: &str, resource: &str, sub: &str, ns: &str, name: &str| {
        check_access(
            inner,
            user,
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
    Ok(Some(User {
        name: target,
        groups,
    }))
}

/// 7. A place in the in-flight budget for the request's whole life (its body included:
///    a client that stalls its uploads holds its own places, not everyone's). The user's
///    share is taken first, so a user past it never holds a global place.
async fn limit<B>(inner: &Arc<Inner>, call: &mut Call, req: Request<B>) -> ApiResult<Response<Body>>
where
    B: crate::body::RequestBody,
{
    // Health probes and watches are exempt (kube's `probes` flow schema; long-running
    // requests), administrators from the per-user share.
    if call.long_running() || is_public(&call.path) {
        return authorize(inner, call, req).await;
    }
    let _share = if rbac::is_master(&call.user) {
        None
    } else {
        Some(
            inner
                .per_user
                .acquire(&call.user.name, inner.options.max_in_flight_per_user)?,
        )
    };
    let _permit = inner.in_flight.try_acquire().map_err(|_| {
        ApiError::from(
            Status::failure(
                429,
                "TooManyRequests",
                "Too many requests, please try again later.",
            )
            .with_retry_after(1),
        )
    })?;
    let _executing = inner.metrics.requests.executing(call.mutating());
    authorize(inner, call, req).await
}

/// 8. RBAC's decision on the request, then the handler.
async fn authorize<B>(
    inner: &Arc<Inner>,
    call: &mut Call,
    req: Request<B>,
) -> ApiResult<Response<Body>>
where
    B: crate::body::RequestBody,
{
    if let Some((verb, resource)) = attributes(call) {
        if inner.options.audit.is_some() {
            // The decision and its reason for the audit event, as kube's authorization
            // filter records them (a refusal here reads apart from an impersonation's).
            let a = rbac::Attributes {
                user: &call.user,
                verb,
                resource,
                path: call.path.clone(),
            };
            let decision = rbac::decide(inner, &a);
            let verdict = if decision.is_some() {
                "allow"
            } else {
                "forbid"
            };
            call.audit_annotations.extend([
                (
                    "authorization.k8s.io/decision".to_owned(),
                    verdict.to_owned(),
                ),
                (
                    "authorization.k8s.io/reason".to_owned(),
                    decision.clone().unwrap_or_default(),
                ),
            ]);
            if decision.is_none() {
                return Err(rbac::forbidden(&a));
            }
        } else {
            check_access(inner, &call.user, &verb, resource, &call.path)?;
        }
    }
    let compressible = compressible(call, req.headers());
    let resp = handler::route(inner, call, req).await?;
    Ok(if compressible {
        compress(resp).await
    } else {
        resp
    })
}

/// What [`authorize`] asks RBAC about a request: `None` for the public paths and for
/// paths that name nothing (the handler answers them `404`/`405`).
fn attributes(call: &Call) -> Option<(String, Option<rbac::ResourceAttributes>)> {
    if is_public(&call.path) {
        return None;
    }
    if let Some(name) = crate::plugins::upload::module_path(&call.path) {
        // A module upload is the `module` subresource of its WasmPlugin.
        let verb = match call.method {
            Method::GET | Method::HEAD => "get",
            Method::DELETE => "delete",
            _ => "update",
        };
        return Some((
            verb.to_owned(),
            Some(rbac::ResourceAttributes {
                group: "wasmgate.dev".into(),
                resource: "wasmplugins".into(),
                subresource: "module".into(),
                namespace: String::new(),
                name: name.to_owned(),
            }),
        ));
    }
    let info = call.info.as_ref().ok()?;
    let RequestInfo::Resource(r) = info else {
        return Some((call.verb(), None));
    };
    // `/api/v1/namespaces/NAME` is in namespace NAME, as kube's RequestInfo has it.
    let namespace = match (&r.namespace, r.resource.as_str(), &r.name) {
        (Some(ns), _, _) => ns.clone(),
        (None, "namespaces", Some(name)) => name.clone(),
        _ => String::new(),
    };
    // A list or watch of one name (`fieldSelector=metadata.name=X`) is for that name, as
    // kube's RequestInfo has it: `resourceNames` rules allow it.
    let name = match (&r.name, r.verb) {
        (Some(n), _) => n.clone(),
        (None, Verb::List | Verb::Watch) => {
            selected_name(call.query.get("fieldSelector")).unwrap_or_default()
        }
        _ => String::new(),
    };
    Some((
        r.verb.as_str().to_owned(),
        Some(rbac::ResourceAttributes {
            group: r.group.clone(),
            resource: r.resource.clone(),
            subresource: r.subresource.clone().unwrap_or_default(),
            namespace,
            name,
        }),
    ))
}

/// The name a field selector requires exactly (`metadata.name=X` or `==X` among its terms).
fn selected_name(selector: Option<&str>) -> Option<String> {
    selector?.split(',').find_map(|term| {
        let v = term.trim().strip_prefix("metadata.name")?;
        let v = v.strip_prefix("==").or_else(|| v.strip_prefix('='))?;
        (!v.is_empty() && !v.starts_with('=')).then(|| v.to_owned())
    })
}

/// RBAC's decision (`system:masters` may do anything): a 403 when no rule bound to the
/// user allows it.
fn check_access(
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

/// Whether the response to `call` may be gzipped: a get or list of resources by a client
/// that takes gzip (`Accept-Encoding`).
fn compressible(call: &Call, headers: &HeaderMap) -> bool {
    call.resource()
        .is_some_and(|r| matches!(r.verb, Verb::Get | Verb::List))
        && header_str(headers, header::ACCEPT_ENCODING).is_some_and(accepts_gzip)
}

/// Compresses a complete (non-streaming) body of at least [`GZIP_MIN_BYTES`].
async fn compress(resp: Response<Body>) -> Response<Body> {
    use http_body_util::BodyExt as _;
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

/// The budget of a response's warnings, in characters of their texts (kube's
/// `truncateAtTotalRunes`): past it, every warning is cut to [`WARNING_ITEM_CHARS`] and
/// further ones are dropped once the cut ones fill it again.
const WARNING_TOTAL_CHARS: usize = 4 * 1024;
/// The length a warning is cut to once the total went past [`WARNING_TOTAL_CHARS`]
/// (kube's `truncateItemRunes`).
const WARNING_ITEM_CHARS: usize = 256;

/// The `Warning` headers of one response, as kube-apiserver's warning recorder
/// (`filters.WithWarningRecorder`) writes them: empty and repeated texts are dropped;
/// warnings are kept whole while their texts total at most [`WARNING_TOTAL_CHARS`]
/// characters; the warning that goes past it turns truncation on, and every warning, the
/// earlier ones included, is then cut to [`WARNING_ITEM_CHARS`] characters, added until
/// the cut ones reach the budget again; the rest are dropped. So the headers of a
/// response carry at most about 4,400 characters of warnings (plus quoting), whatever
/// plugins, policies and webhooks add: 20,000 warnings of 1 KB go out as 16 warnings of
/// 256 characters.
///
/// One difference from kube: a control character (a newline) in a text is sent as a
/// space, where kube drops the whole warning.
pub(crate) struct WarningRecorder {
    /// Texts seen, for deduplication.
    recorded: std::collections::HashSet<String>,
    /// The texts to send, in order: whole until truncation starts, then cut (those
    /// before it too).
    out: Vec<String>,
    /// Characters in `out`.
    written: usize,
    truncating: bool,
    total: usize,
    item: usize,
}

impl Default for WarningRecorder {
    fn default() -> WarningRecorder {
        WarningRecorder::with_budget(WARNING_TOTAL_CHARS, WARNING_ITEM_CHARS)
    }
}

impl WarningRecorder {
    fn with_budget(total: usize, item: usize) -> WarningRecorder {
        WarningRecorder {
            recorded: Default::default(),
            out: Vec::new(),
            written: 0,
            truncating: false,
            total,
            item,
        }
    }

    /// Records one warning (kube's `AddWarning`).
    pub(crate) fn add(&mut self, text: &str) {
        if text.is_empty() || (self.truncating && self.written >= self.total) {
            return;
        }
        if !self.recorded.insert(text.to_owned()) {
            return;
        }
        let len = text.chars().count();
        if self.truncating {
            let (cut, len) = cut(text, self.item);
            self.out.push(cut.to_owned());
            self.written += len;
            return;
        }
        self.out.push(text.to_owned());
        if self.written + len <= self.total {
            self.written += len;
            return;
        }
        // Past the budget: truncation on, and everything so far written again, cut.
        tracing::debug!(
            warnings = self.out.len(),
            "exceeded max warning header size, truncating"
        );
        self.truncating = true;
        self.written = 0;
        for t in &mut self.out {
            let (cut, len) = cut(t, self.item);
            let at = cut.len();
            t.truncate(at);
            self.written += len;
        }
    }

    /// The texts to send, in order.
    #[cfg(test)]
    fn texts(&self) -> &[String] {
        &self.out
    }

    /// The `Warning` header values (`299 - "text"`).
    pub(crate) fn header_values(&self) -> impl Iterator<Item = HeaderValue> + '_ {
        self.out
            .iter()
            .filter_map(|w| HeaderValue::from_str(&format!("299 - {}", go_quote_header(w))).ok())
    }
}

/// The first `max` characters of `s`, and how many characters that is.
fn cut(s: &str, max: usize) -> (&str, usize) {
    match s.char_indices().nth(max) {
        Some((at, _)) => (&s[..at], max),
        None => (s, s.chars().count()),
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    /// A list or watch of `metadata.name=X` is authorized for X (AUTH-01).
    #[test]
    fn exact_name_terms() {
        assert_eq!(selected_name(Some("metadata.name=a")), Some("a".into()));
        assert_eq!(
            selected_name(Some("x=y,metadata.name==b")),
            Some("b".into())
        );
        assert_eq!(selected_name(Some("metadata.name!=c")), None);
        assert_eq!(selected_name(Some("metadata.namespace=d")), None);
        assert_eq!(selected_name(None), None);
    }

    /// Issue 12, panic recovery: a panicking handler is a 500 Status, kube's wording.
    #[tokio::test]
    async fn a_panic_is_a_500() {
        let r: ApiResult<()> = recover(async { panic!("boom") }).await;
        let e = r.unwrap_err();
        assert_eq!(
            (e.status.code, e.status.reason.as_str()),
            (500, "InternalError")
        );
        assert!(e.status.message.contains("caused apiserver to panic"));
        assert!(recover(async { Ok(7) }).await.is_ok());
    }

    /// Issue 25 item 3: warnings are deduplicated, kept whole within the budget, and past
    /// it cut (the earlier ones too) and then dropped, as kube's recorder does.
    #[test]
    fn warnings_are_truncated_as_kube_truncates_them() {
        let mut r = WarningRecorder::with_budget(20, 4);
        for w in ["", "abcdefg", "abcdefg", "xy", "élégant"] {
            r.add(w);
        }
        // 7 + 2 + 7 = 16 characters: all whole, the repeat and the empty one dropped.
        assert_eq!(r.texts(), ["abcdefg", "xy", "élégant"]);
        // 16 + 5 > 20: truncation starts, every warning cut to 4 characters (14 in all).
        r.add("12345");
        assert_eq!(r.texts(), ["abcd", "xy", "élég", "1234"]);
        // Added cut while the total is under 20 (the last one may pass it), then dropped.
        for w in ["k", "lmnopq", "lmnopq", "rstu", "v"] {
            r.add(w);
        }
        assert_eq!(
            r.texts(),
            ["abcd", "xy", "élég", "1234", "k", "lmno", "rstu"]
        );
    }

    /// Issue 25 item 3: a flood of warnings (20,000 of 1 KB, as one plugin sent) goes out
    /// as a few kilobytes of headers.
    #[test]
    fn a_flood_of_warnings_stays_within_the_budget() {
        let mut r = WarningRecorder::default();
        for i in 0..20_000 {
            r.add(&format!("{i:05} {}", "w".repeat(1000)));
        }
        let values: Vec<HeaderValue> = r.header_values().collect();
        let bytes: usize = values.iter().map(HeaderValue::len).sum();
        // Four whole (4,024 characters), the fifth starts truncation: 16 × 256 = 4,096.
        assert_eq!(values.len(), 16);
        assert!(bytes < 5 * 1024, "{bytes} bytes of Warning headers");
        assert!(values[0].to_str().unwrap().starts_with("299 - \"00000 www"));
    }

    /// Issue 12, per-request timeouts: `timeout=` shortens the server's deadline, never
    /// lengthens it; 0 or negative means the server's; a malformed one is kube's 400.
    #[test]
    fn timeout_parameter() {
        let max = Duration::from_secs(60);
        let at = |q: &str| request_deadline(&Query::parse(Some(q)), max);
        assert_eq!(at("").unwrap(), max);
        assert_eq!(at("timeout=").unwrap(), max);
        assert_eq!(at("timeout=1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(at("timeout=2m").unwrap(), max);
        assert_eq!(at("timeout=0s").unwrap(), max);
        assert_eq!(at("timeout=-5s").unwrap(), max);
        let e = at("timeout=foo").unwrap_err();
        assert_eq!(e.status.code, 400);
        assert_eq!(
            e.status.message,
            "invalid timeout specified in the request URL - time: invalid duration \"foo\""
        );
    }
}
