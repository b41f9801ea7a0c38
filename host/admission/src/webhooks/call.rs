//! One call of an admission webhook: the `AdmissionReview` (`admission.k8s.io/v1`) sent,
//! the answer checked as kube-apiserver checks it, and the outcomes worded as kube words
//! them (`admission webhook "NAME" denied the request: …`, `failed calling webhook "NAME":
//! …`).

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Value, json};
use wasmgate_apimachinery::status::{Status, StatusCause};
use wasmgate_plugin_runtime::wit::{self, AdmissionRequest, Mutation, Operation};

use super::config::Webhook;
use crate::outbound::Outbound;

/// Largest answer read from a webhook.
const MAX_REPLY_BYTES: usize = 6 << 20;

/// Why a webhook call gave no usable answer (its failure policy decides what follows).
#[derive(Debug)]
pub enum CallFailure {
    /// It could not be called: connection, TLS, timeout, an uncallable client config.
    Call(String),
    /// It answered, but not a valid `AdmissionReview` for this request.
    Invalid(String),
}

impl CallFailure {
    /// kube's text after `failed calling webhook "NAME": `.
    pub fn message(&self) -> String {
        match self {
            CallFailure::Call(e) => format!("failed to call webhook: {e}"),
            CallFailure::Invalid(e) => format!("received invalid webhook response: {e}"),
        }
    }

    /// A short cause for metrics and logs.
    pub fn cause(&self) -> &'static str {
        match self {
            CallFailure::Call(_) => "call",
            CallFailure::Invalid(_) => "invalid-response",
        }
    }
}

/// The `Status` of a failed call under `failurePolicy: Fail` (kube: an internal error).
pub fn failure_status(hook: &Webhook, f: &CallFailure) -> Status {
    Status::failure(
        500,
        "InternalError",
        format!(
            "Internal error occurred: failed calling webhook {:?}: {}",
            hook.name,
            f.message()
        ),
    )
}

/// The `Status` of a denial (kube's `webhookerrors.ToStatusErr`): the webhook's own code
/// (400 when it gives none or one below 400), reason and details; the message prefixed
/// with who denied it.
pub fn denial_status(hook: &Webhook, status: Option<&wit::Status>) -> Status {
    let denied = format!("admission webhook {:?} denied the request", hook.name);
    let (code, reason, message, causes) = match status {
        Some(s) => (
            s.code,
            s.reason.as_str(),
            s.message.as_str(),
            s.causes.as_slice(),
        ),
        None => (0, "", "", &[][..]),
    };
    let message = if !message.is_empty() {
        format!("{denied}: {message}")
    } else if !reason.is_empty() {
        format!("{denied}: {reason}")
    } else {
        format!("{denied} without explanation")
    };
    let mut s = Status::failure(code.max(400), reason, message);
    s.details.causes = causes_of(causes);
    s
}

/// A webhook's or a plugin's causes, as the `Status` a client gets lists them.
pub(crate) fn causes_of(causes: &[wit::StatusCause]) -> Vec<StatusCause> {
    causes
        .iter()
        .map(|c| StatusCause {
            reason: c.reason.clone(),
            message: c.message.clone(),
            field: c.field.clone(),
        })
        .collect()
}

/// The `AdmissionReview` request for `req` (whose `object` and `old_object` are JSON).
pub fn review(req: &AdmissionRequest) -> Result<Value, CallFailure> {
    review_of(req, true)
}

/// [`review`], with `object` and `oldObject` left `null` unless `objects` (a caller that
/// has them decoded already).
pub fn review_of(req: &AdmissionRequest, objects: bool) -> Result<Value, CallFailure> {
    let json_of = |s: &Option<String>| -> Result<Value, CallFailure> {
        match s {
            Some(s) if objects => serde_json::from_str(s)
                .map_err(|e| CallFailure::Call(format!("encoding the request: {e}"))),
            _ => Ok(Value::Null),
        }
    };
    let gvk =
        |k: &wit::GroupVersionKind| json!({"group": k.group, "version": k.version, "kind": k.kind});
    let gvr = |r: &wit::GroupVersionResource| json!({"group": r.group, "version": r.version, "resource": r.resource});
    let (operation, options) = match req.operation {
        Operation::Create => ("CREATE", "CreateOptions"),
        Operation::Update => ("UPDATE", "UpdateOptions"),
        Operation::Delete => ("DELETE", "DeleteOptions"),
        Operation::Connect => ("CONNECT", "ConnectOptions"),
    };
    let mut r = json!({
        "uid": req.uid,
        "kind": gvk(&req.kind),
        "resource": gvr(&req.resource),
        "requestKind": req.request_kind.as_ref().map(gvk),
        "requestResource": req.request_resource.as_ref().map(gvr),
        "name": req.name,
        "operation": operation,
        "userInfo": {
            "username": req.user_info.username,
            "groups": req.user_info.groups,
        },
        "object": json_of(&req.object)?,
        "oldObject": json_of(&req.old_object)?,
        "dryRun": req.dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": options},
    });
    if let Some(ns) = &req.namespace {
        r["namespace"] = json!(ns);
    }
    if let Some(sub) = &req.sub_resource {
        r["subResource"] = json!(sub);
    }
    if let Some(sub) = &req.request_sub_resource {
        r["requestSubResource"] = json!(sub);
    }
    Ok(json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": r,
    }))
}

/// Calls `hook` with `req` and returns its answer as a plugin's would be; counted and
/// timed in the metrics.
pub async fn call(
    inner: &dyn crate::Context,
    hook: &Webhook,
    req: &AdmissionRequest,
) -> Result<wit::AdmissionResponse, CallFailure> {
    use tracing::Instrument as _;
    let review = review(req)?;
    if !hook.match_conditions.is_empty() && !conditions_hold(hook, &review)? {
        // Not this webhook's request: as if it allowed it, with nothing to say.
        return Ok(wit::AdmissionResponse {
            allowed: true,
            status: None,
            mutation: None,
            warnings: Vec::new(),
            audit_annotations: Vec::new(),
        });
    }
    let started = std::time::Instant::now();
    let r = call_once(inner.outbound(), hook, req, &review)
        .instrument(tracing::debug_span!("webhook", webhook = %hook.name))
        .await;
    let outcome = match &r {
        Ok(a) if a.allowed => "allowed",
        Ok(_) => "denied",
        Err(f) => f.cause(),
    };
    // Refused for this webhook: a denial, or no answer under `failurePolicy: Fail`.
    let rejected = match &r {
        Ok(a) => !a.allowed,
        Err(_) => hook.failure_policy == super::config::FailurePolicy::Fail,
    };
    inner.metrics().webhook_call(
        &hook.name,
        hook.mutating,
        started.elapsed(),
        outcome,
        crate::metrics::operation_name(req.operation),
        rejected,
    );
    r
}

/// Whether every `matchConditions` entry holds for `req` (kube evaluates them before
/// calling; an error is the webhook's failure, under its failure policy).
fn conditions_hold(hook: &Webhook, review: &Value) -> Result<bool, CallFailure> {
    let request = &review["request"];
    for (name, cond) in &hook.match_conditions {
        let fail = |e: String| {
            CallFailure::Call(format!("failed to evaluate matchCondition '{name}': {e}"))
        };
        let cond = cond.as_ref().map_err(|e| fail(e.clone()))?;
        match cond.evaluate(&[
            ("object", &request["object"]),
            ("oldObject", &request["oldObject"]),
            ("request", request),
        ]) {
            Ok(wasmgate_cel::Output::Bool(true)) => {}
            Ok(wasmgate_cel::Output::Bool(false)) => return Ok(false),
            Ok(_) => return Err(fail("did not evaluate to a bool".into())),
            Err(e) => return Err(fail(e)),
        }
    }
    Ok(true)
}

async fn call_once(
    outbound: &Outbound,
    hook: &Webhook,
    req: &AdmissionRequest,
    review: &Value,
) -> Result<wit::AdmissionResponse, CallFailure> {
    let target = hook
        .target
        .as_ref()
        .map_err(|e| CallFailure::Call(e.clone()))?;
    let body = serde_json::to_vec(review)
        .map_err(|e| CallFailure::Call(format!("encoding the request: {e}")))?;
    let reply = outbound
        .post(
            target,
            "application/json",
            Bytes::from(body),
            hook.timeout,
            MAX_REPLY_BYTES,
        )
        .await
        .map_err(|e| CallFailure::Call(e.to_string()))?;
    if !reply.status.is_success() {
        return Err(CallFailure::Invalid(format!(
            "the server responded with the status code {} but did not return an AdmissionReview",
            reply.status.as_u16()
        )));
    }
    answer(hook, req, &reply.body)
}

/// Checks a webhook's answer as kube does and turns it into a plugin-shaped response.
fn answer(
    hook: &Webhook,
    req: &AdmissionRequest,
    body: &[u8],
) -> Result<wit::AdmissionResponse, CallFailure> {
    let invalid = |m: String| CallFailure::Invalid(m);
    let review: Value = serde_json::from_slice(body)
        .map_err(|e| invalid(format!("the response is not JSON: {e}")))?;
    let api_version = review
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = review.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        return Err(invalid(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        )));
    }
    let Some(resp) = review.get("response").filter(|r| r.is_object()) else {
        return Err(invalid("webhook response was absent".into()));
    };
    let uid = resp.get("uid").and_then(Value::as_str).unwrap_or("");
    if uid != req.uid {
        return Err(invalid(format!(
            "expected response.uid={:?}, got {uid:?}",
            req.uid
        )));
    }
    let allowed = resp
        .get("allowed")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let warnings = resp
        .get("warnings")
        .and_then(Value::as_array)
        .map(|w| {
            w.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let status = resp.get("status").filter(|s| s.is_object()).map(|s| {
        let st = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        wit::Status {
            code: s
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(0),
            reason: st("reason"),
            message: st("message"),
            causes: s
                .pointer("/details/causes")
                .and_then(Value::as_array)
                .map(|cs| {
                    cs.iter()
                        .map(|c| {
                            let f =
                                |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                            wit::StatusCause {
                                reason: f("reason"),
                                message: f("message"),
                                field: f("field"),
                            }
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
    });
    let patch = resp
        .get("patch")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty());
    let patch_type = resp.get("patchType").and_then(Value::as_str);
    let mutation = match (patch, patch_type) {
        (None, _) => None,
        (Some(_), _) if !hook.mutating => {
            return Err(invalid("validating webhooks may not return patches".into()));
        }
        (Some(_), None) => {
            return Err(invalid(
                "webhook returned response.patch but not response.patchType".into(),
            ));
        }
        (Some(p), Some("JSONPatch")) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(p)
                .map_err(|e| invalid(format!("response.patch is not base64: {e}")))?;
            let text = String::from_utf8(bytes)
                .map_err(|_| invalid("response.patch is not UTF-8".into()))?;
            Some(Mutation::JsonPatch(text))
        }
        (Some(_), Some(t)) => {
            return Err(invalid(format!(
                "webhook returned invalid response.patchType of {t:?}"
            )));
        }
    };
    let audit_annotations = resp
        .get("auditAnnotations")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    Ok(wit::AdmissionResponse {
        allowed,
        status,
        mutation: if allowed { mutation } else { None },
        warnings,
        audit_annotations,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use crate::webhooks::config;

    fn hook(mutating: bool) -> Webhook {
        let obj = json!({"metadata": {"name": "cfg"}, "webhooks": [{
            "name": "check.example.com",
            "clientConfig": {"url": "https://127.0.0.1:9443/check"},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }]});
        config::parse(&obj, mutating).pop().unwrap()
    }

    fn request() -> AdmissionRequest {
        let gvk = wit::GroupVersionKind {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
        };
        let gvr = wit::GroupVersionResource {
            group: String::new(),
            version: "v1".into(),
            resource: "configmaps".into(),
        };
        AdmissionRequest {
            uid: "u-1".into(),
            kind: gvk.clone(),
            resource: gvr.clone(),
            sub_resource: None,
            request_kind: Some(gvk),
            request_resource: Some(gvr),
            request_sub_resource: None,
            name: "c".into(),
            namespace: Some("default".into()),
            operation: Operation::Create,
            user_info: wit::UserInfo {
                username: "alice".into(),
                uid: String::new(),
                groups: vec!["system:authenticated".into()],
                extra: Vec::new(),
            },
            object: Some(r#"{"kind":"ConfigMap"}"#.into()),
            old_object: None,
            dry_run: false,
            options: None,
        }
    }

    fn reply(resp: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp})).unwrap()
    }

    #[test]
    fn the_review_carries_the_request() {
        let r = review(&request()).unwrap();
        assert_eq!(r["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(r["request"]["operation"], "CREATE");
        assert_eq!(r["request"]["object"]["kind"], "ConfigMap");
        assert_eq!(r["request"]["oldObject"], Value::Null);
        assert_eq!(r["request"]["namespace"], "default");
        assert_eq!(r["request"]["userInfo"]["username"], "alice");
        assert_eq!(r["request"]["options"]["kind"], "CreateOptions");
    }

    #[test]
    fn answers_are_checked_as_kube_checks_them() {
        let req = request();
        let h = hook(true);
        let ok = answer(&h, &req, &reply(json!({"uid": "u-1", "allowed": true}))).unwrap();
        assert!(ok.allowed && ok.mutation.is_none());
        let patch = base64::engine::general_purpose::STANDARD
            .encode(r#"[{"op":"add","path":"/data","value":{}}]"#);
        let m = answer(
            &h,
            &req,
            &reply(
                json!({"uid": "u-1", "allowed": true, "patch": patch, "patchType": "JSONPatch"}),
            ),
        )
        .unwrap();
        assert!(matches!(m.mutation, Some(Mutation::JsonPatch(p)) if p.contains("/data")));
        let err = |body: Vec<u8>, h: &Webhook| match answer(h, &req, &body) {
            Err(e) => e.message(),
            Ok(_) => panic!("accepted"),
        };
        assert_eq!(
            err(reply(json!({"uid": "other", "allowed": true})), &h),
            "received invalid webhook response: expected response.uid=\"u-1\", got \"other\""
        );
        assert!(err(b"not json".to_vec(), &h).contains("not JSON"));
        assert!(
            err(br#"{"apiVersion":"v1","kind":"Status"}"#.to_vec(), &h)
                .contains("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got v1, Kind=Status")
        );
        assert!(
            err(
                reply(json!({"uid": "u-1", "allowed": true, "patch": patch})),
                &h
            )
            .contains("but not response.patchType")
        );
        assert!(
            err(
                reply(
                    json!({"uid": "u-1", "allowed": true, "patch": patch, "patchType": "JSONPatch"})
                ),
                &hook(false)
            )
            .contains("validating webhooks may not return patches")
        );
        assert!(err(reply(Value::Null), &h).contains("webhook response was absent"));
    }

    #[test]
    fn denials_are_worded_as_kube_words_them() {
        let h = hook(false);
        let s = denial_status(&h, None);
        assert_eq!(s.code, 400);
        assert_eq!(
            s.message,
            "admission webhook \"check.example.com\" denied the request without explanation"
        );
        let s = denial_status(
            &h,
            Some(&wit::Status {
                code: 403,
                reason: "Forbidden".into(),
                message: "size too big".into(),
                causes: Vec::new(),
            }),
        );
        assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
        assert_eq!(
            s.message,
            "admission webhook \"check.example.com\" denied the request: size too big"
        );
        let f = failure_status(
            &h,
            &CallFailure::Call("Post \"https://x\": context deadline exceeded".into()),
        );
        assert_eq!(f.code, 500);
        assert_eq!(
            f.message,
            "Internal error occurred: failed calling webhook \"check.example.com\": failed to call webhook: Post \"https://x\": context deadline exceeded"
        );
    }
}
