//! The create-only review resources (issue 12): `SelfSubjectReview`
//! (`authentication.k8s.io/v1`, `kubectl auth whoami`), `SelfSubjectAccessReview` and
//! `SubjectAccessReview` (`authorization.k8s.io/v1`, `kubectl auth can-i`), its namespaced
//! form `LocalSubjectAccessReview`, `SelfSubjectRulesReview` (`kubectl auth can-i
//! --list`), and `TokenReview` (`authentication.k8s.io/v1`: who a bearer token is, for
//! extension API servers that delegate authentication, `AGG-09`). A POST answers 201 with
//! the request and its `status`; nothing is stored. They are in discovery and OpenAPI as
//! kube lists them (`create` only; `registry::Builtin::Review`).

use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::{Value, json};
use wasmgate_apimachinery::media;
use wasmgate_apimachinery::request_info::{ResourceRequest, Verb};
use wasmgate_apimachinery::status::Status;

use crate::User;
use crate::authn::TokenAuth;
use crate::body::Body;
use crate::error::ApiResult;
use crate::inner::Inner;
use crate::rbac::{self, Attributes, ResourceAttributes};

/// Whether `r` names a review resource.
pub(crate) fn is_review(r: &ResourceRequest) -> bool {
    matches!(
        (r.group.as_str(), r.resource.as_str()),
        (
            "authentication.k8s.io",
            "selfsubjectreviews" | "tokenreviews"
        ) | (
            "authorization.k8s.io",
            "selfsubjectaccessreviews"
                | "subjectaccessreviews"
                | "localsubjectaccessreviews"
                | "selfsubjectrulesreviews"
        )
    )
}

/// Answers a request for a review resource (already authorized as `create`).
pub(crate) async fn handle(
    inner: &Inner,
    r: &ResourceRequest,
    user: &User,
    body: &Bytes,
    accept: Option<&str>,
) -> ApiResult<Response<Body>> {
    if r.resource == "tokenreviews" && r.namespace.is_some() {
        // Cluster-scoped: kube serves no such path.
        return Err(Status::not_found_path().into());
    }
    if r.verb != Verb::Create || r.name.is_some() || r.version != "v1" {
        return Err(Status::failure(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .into());
    }
    // kubectl's typed clients send these as Protobuf.
    let decoded = if body.starts_with(&wasmgate_apimachinery::protobuf::MAGIC) {
        wasmgate_apimachinery::protobuf::decode(body).map_err(|e| e.to_string())
    } else {
        serde_json::from_slice(body).map_err(|e| e.to_string())
    };
    let mut review: Value =
        decoded.map_err(|e| Status::bad_request(format!("error decoding the review: {e}")))?;
    if !review.is_object() {
        return Err(Status::bad_request("the review is not an object").into());
    }
    let kind = match r.resource.as_str() {
        "selfsubjectreviews" => "SelfSubjectReview",
        "selfsubjectaccessreviews" => "SelfSubjectAccessReview",
        "subjectaccessreviews" => "SubjectAccessReview",
        "localsubjectaccessreviews" => "LocalSubjectAccessReview",
        "tokenreviews" => "TokenReview",
        _ => "SelfSubjectRulesReview",
    };
    review["kind"] = json!(kind);
    review["apiVersion"] = json!(format!("{}/v1", r.group));
    if review.get("metadata").is_none_or(|m| !m.is_object()) {
        review["metadata"] = json!({});
    }
    review["metadata"]["creationTimestamp"] = Value::Null;
    let index = inner.rbac.borrow().clone();
    review["status"] = match kind {
        "SelfSubjectReview" => json!({"userInfo": {
            "username": user.name,
            "groups": user.groups_with_authenticated().collect::<Vec<_>>(),
        }}),
        "SelfSubjectAccessReview" => access(&index, user, &review["spec"], false)?,
        "TokenReview" => token_review(inner, &review["spec"]).await?,
        "SubjectAccessReview" | "LocalSubjectAccessReview" => {
            if kind == "LocalSubjectAccessReview" {
                local_namespace(r, &mut review)?;
            }
            let spec = &review["spec"];
            let subject = User {
                name: spec
                    .get("user")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .into(),
                groups: spec
                    .get("groups")
                    .and_then(Value::as_array)
                    .map(|g| {
                        g.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
            };
            if subject.name.is_empty() && subject.groups.is_empty() {
                return Err(invalid(
                    kind,
                    "spec.user",
                    "at least one of user or group must be specified",
                ));
            }
            access(&index, &subject, spec, true)?
        }
        _ => {
            let ns = review["spec"]["namespace"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            if ns.is_empty() {
                return Err(Status::bad_request("no namespace on request").into());
            }
            // A new object: the spec is not echoed.
            review["spec"] = json!({});
            rules(&index, user, &ns)
        }
    };
    if kind == "SelfSubjectReview" {
        review["metadata"]["creationTimestamp"] = json!(crate::object::now_rfc3339());
    }
    // kubectl's typed clients take protobuf first (`ENC-04`); anything else is JSON.
    let endpoint = media::Endpoint {
        table: false,
        protobuf: true,
    };
    if media::negotiate_output(&media::parse_accept(accept), endpoint)
        == Ok(media::Output::Protobuf)
    {
        let api_version = format!("{}/v1", r.group);
        let bytes = wasmgate_apimachinery::protobuf::encode(&api_version, kind, &review)
            .map_err(crate::error::ApiError::internal)?;
        return Ok(crate::response::bytes_response(
            StatusCode::CREATED,
            "application/vnd.kubernetes.protobuf",
            bytes,
        ));
    }
    let bytes = Bytes::from(serde_json::to_vec(&review).unwrap_or_default());
    Ok(crate::response::bytes_response(
        StatusCode::CREATED,
        "application/json",
        bytes,
    ))
}

/// `status` of a `TokenReview` (kube's `tokenreview` REST): what the gateway's own token
/// authenticators make of `spec.token` for `spec.audiences` (this server's audience when
/// there are none). A token that does not authenticate is `authenticated` false with the
/// `error` (fields Go leaves out when empty are left out).
async fn token_review(inner: &Inner, spec: &Value) -> ApiResult<Value> {
    let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
    if token.is_empty() {
        return Err(
            Status::bad_request("token is required for TokenReview in authentication").into(),
        );
    }
    let asked: Vec<&str> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let audiences = if asked.is_empty() {
        vec![crate::sa_token::ISSUER]
    } else {
        asked
    };
    Ok(
        match crate::authn::authenticate_token(inner, token, &audiences).await? {
            TokenAuth::Authenticated(t) => {
                let mut user = json!({"username": t.user.name});
                if !t.uid.is_empty() {
                    user["uid"] = json!(t.uid);
                }
                user["groups"] = json!(t.user.groups_with_authenticated().collect::<Vec<_>>());
                if !t.extra.is_empty() {
                    let extra: serde_json::Map<String, Value> =
                        t.extra.into_iter().map(|(k, v)| (k, json!(v))).collect();
                    user["extra"] = Value::Object(extra);
                }
                json!({"authenticated": true, "user": user, "audiences": t.audiences})
            }
            TokenAuth::Refused(error) => json!({"user": {}, "error": error}),
        },
    )
}

/// A `LocalSubjectAccessReview` is about its namespace only (kube's REST and validation):
/// the object's namespace is the path's (set when absent, 400 when different); resource
/// attributes must name it (422); non-resource attributes have no namespace (422).
fn local_namespace(r: &ResourceRequest, review: &mut Value) -> ApiResult<()> {
    let Some(ns) = r.namespace.as_deref().filter(|n| !n.is_empty()) else {
        return Err(Status::bad_request("namespace is required on this type: ").into());
    };
    match review["metadata"].get("namespace").and_then(Value::as_str) {
        None | Some("") => review["metadata"]["namespace"] = json!(ns),
        Some(other) if other != ns => {
            return Err(Status::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            )
            .into());
        }
        Some(_) => {}
    }
    let kind = "LocalSubjectAccessReview";
    if review["spec"]
        .get("nonResourceAttributes")
        .is_some_and(|n| !n.is_null())
    {
        return Err(invalid(
            kind,
            "spec.nonResourceAttributes",
            "disallowed on this kind of request",
        ));
    }
    let attr_ns = review["spec"]
        .pointer("/resourceAttributes/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    if attr_ns != ns {
        return Err(invalid(
            kind,
            "spec.resourceAttributes.namespace",
            "must match metadata.namespace",
        ));
    }
    Ok(())
}

fn invalid(kind: &str, field: &str, msg: &str) -> crate::error::ApiError {
    use wasmgate_apimachinery::validation::FieldError;
    Status::invalid(
        kind,
        "authorization.k8s.io",
        "",
        &[FieldError::invalid(field, Value::Null, msg)],
    )
    .into()
}

/// `status` of an access review: whether `user` may do what `spec` describes.
/// `literal`: the subject's groups are exactly the review's (a `SubjectAccessReview`).
fn access(index: &rbac::Index, user: &User, spec: &Value, literal: bool) -> ApiResult<Value> {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let (verb, resource, path) = match (
        spec.get("resourceAttributes"),
        spec.get("nonResourceAttributes"),
    ) {
        (Some(r), None) if r.is_object() => (
            s(r, "verb"),
            Some(ResourceAttributes {
                group: s(r, "group"),
                resource: s(r, "resource"),
                subresource: s(r, "subresource"),
                namespace: s(r, "namespace"),
                name: s(r, "name"),
            }),
            String::new(),
        ),
        (None, Some(n)) if n.is_object() => (s(n, "verb"), None, s(n, "path")),
        _ => {
            return Err(invalid(
                "SelfSubjectAccessReview",
                "spec.resourceAttributes",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ));
        }
    };
    let attrs = Attributes {
        user,
        verb,
        resource,
        path,
    };
    let who = if literal {
        rbac::Who::literal(user)
    } else {
        rbac::Who::of(user)
    };
    Ok(json!({"allowed": index.allows_subject(&attrs, &who)}))
}

/// `status` of a rules review: every rule that holds for `user` in `ns`.
fn rules(index: &rbac::Index, user: &User, ns: &str) -> Value {
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for r in index.rules_for(user, ns) {
        if r.non_resource_urls.is_empty() {
            let mut rule =
                json!({"verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources});
            if !r.resource_names.is_empty() {
                rule["resourceNames"] = json!(r.resource_names);
            }
            resource_rules.push(rule);
        } else {
            non_resource_rules
                .push(json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}));
        }
    }
    json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": false,
    })
}
