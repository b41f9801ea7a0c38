//! ValidatingAdmissionPolicy (issue 13, item 4): CEL validations with variables,
//! parameters, match conditions and messages, bound with `Deny` or `Warn`; denials worded
//! as kube-apiserver words them; compile errors reported in `status.typeChecking`;
//! bindings validated as kube validates them.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::time::Duration;

use http::Method;
use serde_json::{Value, json};

mod common;
use common::Server;

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn policy(name: &str, spec: Value) -> Value {
    let mut s = json!({
        "matchConstraints": {"resourceRules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
    });
    for (k, v) in spec.as_object().unwrap() {
        s[k] = v.clone();
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name}, "spec": s})
}

fn binding(name: &str, policy: &str, spec: Value) -> Value {
    let mut s = json!({"policyName": policy, "validationActions": ["Deny"]});
    for (k, v) in spec.as_object().unwrap() {
        s[k] = v.clone();
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name}, "spec": s})
}

fn cm(name: &str, keys: usize) -> Value {
    let data: serde_json::Map<String, Value> =
        (0..keys).map(|i| (format!("k{i}"), json!("v"))).collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"checked": "yes"}}, "data": data})
}

/// A policy with a parameter object, a variable, a match condition and a message
/// expression denies with kube's wording and code; a `Warn` binding warns instead.
#[tokio::test]
async fn a_policy_denies_or_warns_with_kubes_wording() {
    let s = Server::new().await;
    s.req(
        Method::POST,
        CMS,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "limits"}, "data": {"max": "2"}}),
    )
    .await
    .expect(201);
    let created = s
        .req(
            Method::POST,
            POLICIES,
            policy(
                "max-keys",
                json!({
                    "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                    "matchConditions": [{"name": "checked", "expression": "has(object.metadata.labels) && 'checked' in object.metadata.labels && object.metadata.labels['checked'] == 'yes'"}],
                    "variables": [{"name": "keys", "expression": "has(object.data) ? size(object.data) : 0"}],
                    "validations": [{
                        "expression": "variables.keys <= int(params.data.max)",
                        "messageExpression": "'at most ' + params.data.max + ' keys, not ' + string(variables.keys)",
                        "reason": "Forbidden",
                    }],
                }),
            ),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(created["spec"]["failurePolicy"], "Fail");
    assert_eq!(
        created["spec"]["matchConstraints"]["matchPolicy"],
        "Equivalent"
    );
    s.req(
        Method::POST,
        BINDINGS,
        binding(
            "max-keys",
            "max-keys",
            json!({"paramRef": {"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"}}),
        ),
    )
    .await
    .expect(201);
    let r = s.req(Method::POST, CMS, cm("three", 3)).await.expect(403);
    let status = r.json();
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        "configmaps \"three\" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys' denied request: at most 2 keys, not 3"
    );
    assert_eq!(status["details"]["kind"], "configmaps");
    s.get(&format!("{CMS}/three")).await.expect(404);
    s.req(Method::POST, CMS, cm("two", 2)).await.expect(201);
    // The match condition: unlabelled objects are not checked.
    let mut free = cm("free", 5);
    free["metadata"]["labels"] = json!({});
    s.req(Method::POST, CMS, free).await.expect(201);
    // The parameter decides: raised, the same object passes.
    let mut limits = s.get(&format!("{CMS}/limits")).await.expect(200).json();
    limits["data"]["max"] = json!("3");
    s.req(Method::PUT, &format!("{CMS}/limits"), limits)
        .await
        .expect(200);
    s.req(Method::POST, CMS, cm("three", 3)).await.expect(201);
    // Warn instead of Deny: allowed, with kube's warning.
    s.req(Method::DELETE, &format!("{BINDINGS}/max-keys"), Value::Null)
        .await
        .expect(200);
    s.req(
        Method::POST,
        BINDINGS,
        binding(
            "warn-keys",
            "max-keys",
            json!({"validationActions": ["Warn"], "paramRef": {"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"}}),
        ),
    )
    .await
    .expect(201);
    let ok = s.req(Method::POST, CMS, cm("four", 4)).await.expect(201);
    assert_eq!(
        ok.headers["warning"],
        "299 - \"Validation failed for ValidatingAdmissionPolicy 'max-keys' with binding 'warn-keys': at most 3 keys, not 4\""
    );
}

/// A binding whose parameter is missing denies under `parameterNotFoundAction: Deny`
/// and lets the request through under `Allow`.
#[tokio::test]
async fn missing_parameters_follow_the_binding() {
    let s = Server::new().await;
    s.req(
        Method::POST,
        POLICIES,
        policy(
            "needs-params",
            json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}, "validations": [{"expression": "true"}]}),
        ),
    )
    .await
    .expect(201);
    s.req(
        Method::POST,
        BINDINGS,
        binding(
            "needs-params",
            "needs-params",
            json!({"paramRef": {"name": "absent", "namespace": "default", "parameterNotFoundAction": "Deny"}}),
        ),
    )
    .await
    .expect(201);
    let r = s.req(Method::POST, CMS, cm("c", 1)).await.expect(422);
    assert!(
        r.text()
            .contains("no params found for policy binding with `Deny` parameterNotFoundAction"),
        "{}",
        r.text()
    );
    let mut b = s
        .get(&format!("{BINDINGS}/needs-params"))
        .await
        .expect(200)
        .json();
    b["spec"]["paramRef"]["parameterNotFoundAction"] = json!("Allow");
    s.req(Method::PUT, &format!("{BINDINGS}/needs-params"), b)
        .await
        .expect(200);
    s.req(Method::POST, CMS, cm("c", 1)).await.expect(201);
}

/// An expression that does not compile is in `status.typeChecking`, and fails requests
/// under `failurePolicy: Fail` (not under `Ignore`).
#[tokio::test]
async fn compile_errors_are_reported_in_status() {
    let s = Server::new().await;
    s.req(
        Method::POST,
        POLICIES,
        policy(
            "broken",
            json!({"validations": [{"expression": "object.data.size( >"}]}),
        ),
    )
    .await
    .expect(201);
    s.req(
        Method::POST,
        BINDINGS,
        binding("broken", "broken", json!({})),
    )
    .await
    .expect(201);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let warnings = loop {
        let p = s
            .get(&format!("{POLICIES}/broken"))
            .await
            .expect(200)
            .json();
        let w = p["status"]["typeChecking"]["expressionWarnings"].clone();
        if w.is_array() || tokio::time::Instant::now() > deadline {
            break w;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(warnings[0]["fieldRef"], "spec.validations[0].expression");
    assert!(
        warnings[0]["warning"]
            .as_str()
            .unwrap()
            .contains("Syntax error"),
        "{warnings}"
    );
    let r = s.req(Method::POST, CMS, cm("c", 1)).await.expect(422);
    assert!(r.text().contains("Syntax error"), "{}", r.text());
    let mut p = s
        .get(&format!("{POLICIES}/broken"))
        .await
        .expect(200)
        .json();
    p["spec"]["failurePolicy"] = json!("Ignore");
    s.req(Method::PUT, &format!("{POLICIES}/broken"), p)
        .await
        .expect(200);
    s.req(Method::POST, CMS, cm("c", 1)).await.expect(201);
}

/// Policies and bindings are validated as kube validates them (422 with the field).
#[tokio::test]
async fn bad_policies_and_bindings_are_refused() {
    let s = Server::new().await;
    let cases = [
        (
            POLICIES,
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "p"}, "spec": {"validations": [{"expression": "true"}]}}),
            "spec.matchConstraints",
        ),
        (POLICIES, policy("p", json!({})), "spec.validations"),
        (
            POLICIES,
            policy(
                "p",
                json!({"validations": [{"expression": "true", "reason": "Teapot"}]}),
            ),
            "spec.validations[0].reason",
        ),
        (
            BINDINGS,
            binding("b", "p", json!({"validationActions": ["Deny", "Warn"]})),
            "spec.validationActions",
        ),
        (
            BINDINGS,
            binding("b", "p", json!({"validationActions": []})),
            "spec.validationActions",
        ),
        (
            BINDINGS,
            binding("b", "p", json!({"paramRef": {"name": "x"}})),
            "spec.paramRef.parameterNotFoundAction",
        ),
    ];
    for (path, obj, field) in cases {
        let r = s.req(Method::POST, path, obj).await.expect(422).json();
        assert!(
            r["details"]["causes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["field"] == field),
            "{field}: {r}"
        );
    }
}

/// `auditAnnotations` and the `Audit` action: the request goes through, and its audit
/// event carries `<policy>/<key>` and kube's `validation_failure` annotation.
#[tokio::test]
async fn audit_annotations_and_the_audit_action_reach_the_audit_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let log =
        wasmgate_apiserver::audit::Log::open(&path, wasmgate_apiserver::audit::Policy::default())
            .unwrap();
    let s = Server::with(wasmgate_apiserver::Options {
        audit: Some(std::sync::Arc::new(log)),
        ..wasmgate_apiserver::Options::default()
    })
    .await;
    s.req(
        Method::POST,
        POLICIES,
        policy(
            "keys",
            json!({
                "auditAnnotations": [{"key": "count", "valueExpression": "string(size(object.data))"}],
                "validations": [{"expression": "size(object.data) <= 2", "message": "too many keys"}],
            }),
        ),
    )
    .await
    .expect(201);
    s.req(
        Method::POST,
        BINDINGS,
        binding("keys", "keys", json!({"validationActions": ["Audit"]})),
    )
    .await
    .expect(201);
    s.req(Method::POST, CMS, cm("three", 3)).await.expect(201);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let event = loop {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let found = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| {
                e["verb"] == "create"
                    && e["objectRef"]["resource"] == "configmaps"
                    && e["user"]["username"] == "admin"
            });
        if let Some(e) = found {
            break e;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no audit event: {text}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(event["annotations"]["keys/count"], "3");
    let failures: Value = serde_json::from_str(
        event["annotations"]["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        failures,
        json!([{"message": "too many keys", "policy": "keys", "binding": "keys", "expressionIndex": 0, "validationActions": ["Audit"]}])
    );
}
