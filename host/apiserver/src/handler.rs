//! The handler at the bottom of the request stack (`stack.rs`): by the time a request is
//! here it is authenticated, audited, within its deadline and its in-flight share, and
//! authorized. This routes it: health checks, `/version`, `/metrics`, OpenAPI, discovery,
//! the access reviews, plugin module uploads, and resources (lookup 404, scope, verb 405,
//! body limit 413, then the verb).

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use serde_json::Value;
use wasmgate_apimachinery::media;
use wasmgate_apimachinery::options::Query;
use wasmgate_apimachinery::request_info::{RequestInfo, RequestInfoError, ResourceRequest, Verb};
use wasmgate_apimachinery::status::Status;

use crate::body::{Body, discard_body, read_body, within_body_timeout};
use crate::error::{ApiError, ApiResult};
use crate::health::{self, Check};
use crate::inner::Inner;
use crate::request::Call;
use crate::response::{bytes_response, header_str};
use crate::{discovery, version};

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

/// Routes an authorized request (`call.user` is whom it acts as).
pub(crate) async fn route<B>(
    inner: &Arc<Inner>,
    call: &mut Call,
    req: Request<B>,
) -> ApiResult<Response<Body>>
where
    B: crate::body::RequestBody,
{
    let path = call.path.as_str();
    let query = &call.query;
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    if let Some(endpoint) = health::Endpoint::from_segment(segments[0]) {
        if segments.len() > 2 {
            return Ok(text_response(404, "404 page not found\n".into()));
        }
        let (code, text) = health::render(
            endpoint,
            segments.get(1).copied(),
            query,
            &health_checks(inner, endpoint).await,
        );
        return Ok(text_response(code, text));
    }
    if path == "/version" || path == "/version/" {
        return Ok(json_value_response(&version::info()));
    }
    if let Some(name) = crate::plugins::upload::module_path(path) {
        let name = name.to_owned();
        let method = req.method().clone();
        let limit = inner.options.max_request_body_bytes;
        let body = within_body_timeout(
            inner.options.body_read_timeout,
            read_body(req.into_body(), limit),
        )
        .await?;
        return crate::plugins::upload::handle(
            inner.as_ref(),
            call.user.clone(),
            &method,
            &name,
            body,
        )
        .await;
    }
    if path == "/metrics" {
        if !matches!(*req.method(), Method::GET | Method::HEAD) {
            return Err(method_not_allowed());
        }
        let plugins = (inner.plugins.snapshot().iter())
            .map(|b| b.plugin.instance_stats())
            .collect();
        let types = inner.registry.snapshot();
        let text = inner.metrics.render(&inner.store, &types, plugins).await;
        let mut resp = bytes_response(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Bytes::from(text),
        );
        resp.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        return Ok(resp);
    }
    if segments[0] == "openapi" {
        // An extension API server's document is its own: proxied.
        if let ["openapi", "v3", "apis", group, version] = segments[..] {
            let aggregated = inner.aggregator.borrow().clone();
            if let Some(service) = aggregated.remote(group, version) {
                return crate::aggregator::proxy(inner, &call.user, req, service).await;
            }
        }
        return openapi_route(inner, &segments[1..], query, req.headers());
    }
    let info = match &call.info {
        Ok(i) => i.clone(),
        Err(RequestInfoError::MethodNotAllowed) => return Err(method_not_allowed()),
        Err(RequestInfoError::NotFound) => return Err(Status::not_found_path().into()),
    };
    let catalog = inner.registry.snapshot();
    let get_only = |m: &Method| *m == Method::GET || *m == Method::HEAD;
    // The aggregation layer: a group/version an APIService puts elsewhere is proxied.
    let aggregated = inner.aggregator.borrow().clone();
    if !aggregated.is_empty() {
        let remote = match &info {
            RequestInfo::Resource(r) => aggregated.remote(&r.group, &r.version),
            RequestInfo::GroupVersion { group, version } => aggregated.remote(group, version),
            _ => None,
        };
        if let Some(service) = remote {
            return crate::aggregator::proxy(inner, &call.user, req, service).await;
        }
        if let RequestInfo::Group(g) = &info
            && aggregated.serves_group(g)
            && get_only(req.method())
            && discovery::api_group(&catalog, g).is_none()
            && let Some(doc) = crate::aggregator::api_group(inner, g)
        {
            return Ok(json_value_response(&doc));
        }
    }
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
            // The groups of extension API servers join `/apis`.
            let merged;
            let (bytes, etag) = if !core && !aggregated.is_empty() {
                let mut doc: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
                crate::aggregator::merge_discovery(
                    inner,
                    &mut doc,
                    !matches!(out, media::DiscoveryOutput::Legacy),
                );
                let b = Bytes::from(serde_json::to_vec(&doc).unwrap_or_default());
                let tag = format!("\"{:x}\"", <sha2::Sha256 as sha2::Digest>::digest(&b));
                merged = (b, tag);
                (&merged.0, &merged.1)
            } else {
                (bytes, etag)
            };
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
            let accept = header_str(req.headers(), header::ACCEPT).map(str::to_owned);
            let limit = inner.options.max_request_body_bytes;
            let body = within_body_timeout(
                inner.options.body_read_timeout,
                read_body(req.into_body(), limit),
            )
            .await?;
            crate::reviews::handle(inner, &r, &call.user, &body, accept.as_deref()).await
        }
        RequestInfo::Resource(r) => resource(inner, catalog, r, call, req).await,
    }
}

/// Percent-decodes a request path. A `%` not followed by two hex digits, or bytes that
/// are not UTF-8 once decoded, are a 400 (Go's URL parser refuses such a path).
pub(crate) fn decode_path(raw: &str) -> ApiResult<String> {
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

fn insert_header(h: &mut HeaderMap, name: header::HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        h.insert(name, v);
    }
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
        ["v3"] => {
            let aggregated = inner.aggregator.borrow().clone();
            if aggregated.is_empty() {
                return Ok(bytes_response(
                    StatusCode::OK,
                    "application/json",
                    docs.index.clone(),
                ));
            }
            // The group/versions of extension API servers, whose documents are proxied.
            let mut index: Value = serde_json::from_slice(&docs.index).unwrap_or(Value::Null);
            if let Some(paths) = index.get_mut("paths").and_then(Value::as_object_mut) {
                for (group, version) in aggregated.remote_group_versions() {
                    paths.insert(
                        format!("apis/{group}/{version}"),
                        serde_json::json!({"serverRelativeURL": format!("/openapi/v3/apis/{group}/{version}")}),
                    );
                }
            }
            Ok(json_value_response(&index))
        }
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
    call: &mut Call,
    req: Request<B>,
) -> ApiResult<Response<Body>>
where
    B: crate::body::RequestBody,
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
        within_body_timeout(inner.options.body_read_timeout, async {
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
    let query = std::mem::take(&mut call.query);
    let served = wasmgate_endpoints::serve(
        wasmgate_endpoints::Request {
            server: inner.clone(),
            rt,
            req: r,
            query,
            headers: parts.headers,
            user: call.user.clone(),
        },
        body,
    )
    .await;
    call.warnings.extend(served.warnings);
    call.audit_annotations.extend(served.audit_annotations);
    served.response
}
