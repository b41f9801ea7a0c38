//! `Warning` headers (issue 25, item 3, the response side): however many warnings
//! admission adds (ValidatingAdmissionPolicies bound with `Warn`, webhooks, plugins), the
//! response carries them within kube-apiserver's budget, so that it always goes out.
#![allow(clippy::unwrap_used, reason = "test code")]

use http::Method;
use serde_json::{Value, json};
use wasmgate_fixtures::Webhook as Fixture;

mod common;
use common::Server;

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// A policy of `n` validations that all fail, each with a message of about 1 KB, bound
/// with `Warn`.
async fn warning_policy(s: &Server, name: &str, n: usize) {
    let validations: Vec<Value> = (0..n)
        .map(|i| json!({"expression": "false", "message": format!("{name} {i:03} {}", "x".repeat(1000))}))
        .collect();
    s.req(
        Method::POST,
        POLICIES,
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
               "metadata": {"name": name},
               "spec": {"matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
                        "validations": validations}}),
    )
    .await
    .expect(201);
    s.req(
        Method::POST,
        BINDINGS,
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": name},
               "spec": {"policyName": name, "validationActions": ["Warn"]}}),
    )
    .await
    .expect(201);
}

/// Issue 25 item 3: three policies (150 warnings of 1 KB) and a webhook's warning on one
/// allowed create: the object is stored and the answer carries kube's budget of
/// warnings, the first ones whole until 4,096 characters, then all cut to 256, then no
/// more; the repeats of the same text once.
#[tokio::test]
async fn many_warnings_are_truncated_and_the_response_goes_out() {
    let s = Server::new().await;
    let f = Fixture::start().await.unwrap();
    s.req(
        Method::POST,
        VALIDATING,
        json!({"metadata": {"name": "warns"}, "webhooks": [{
            "name": "warns.example.com",
            "clientConfig": f.client_config("/deny-labelled"),
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }]}),
    )
    .await
    .expect(201);
    for p in ["flood-a", "flood-b", "flood-c"] {
        warning_policy(&s, p, 50).await;
    }
    let r = s
        .req(
            Method::POST,
            CMS,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "warned"}}),
        )
        .await
        .expect(201);
    let warnings: Vec<String> = r
        .headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    let bytes: usize = warnings.iter().map(String::len).sum();
    assert!(
        (10..=20).contains(&warnings.len()),
        "{} warnings",
        warnings.len()
    );
    assert!(bytes < 5 * 1024, "{bytes} bytes of Warning headers");
    for w in &warnings {
        let text = w
            .strip_prefix("299 - \"")
            .and_then(|t| t.strip_suffix('"'))
            .unwrap();
        assert!(text.chars().count() <= 256, "{w}");
    }
    assert!(
        warnings[0].starts_with("299 - \"Validation failed for ValidatingAdmissionPolicy '"),
        "{}",
        warnings[0]
    );
    let unique: std::collections::HashSet<_> = warnings.iter().collect();
    assert_eq!(unique.len(), warnings.len(), "{warnings:?}");
    s.get(&format!("{CMS}/warned")).await.expect(200);

    // A few short warnings are all sent whole, each once.
    let s = Server::new().await;
    s.req(
        Method::POST,
        POLICIES,
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
               "metadata": {"name": "short"},
               "spec": {"matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
                        "validations": [{"expression": "false", "message": "same"}, {"expression": "false", "message": "same"}, {"expression": "false", "message": "other"}]}}),
    )
    .await
    .expect(201);
    s.req(
        Method::POST,
        BINDINGS,
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": "short"},
               "spec": {"policyName": "short", "validationActions": ["Warn"]}}),
    )
    .await
    .expect(201);
    let r = s
        .req(
            Method::POST,
            CMS,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "short"}}),
        )
        .await
        .expect(201);
    let warnings: Vec<&str> = r
        .headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(
        warnings,
        [
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'short' with binding 'short': same\"",
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'short' with binding 'short': other\"",
        ]
    );
}
