//! Admission webhooks (issue 13, item 3) and conversion webhooks (item 2), against a real
//! HTTPS webhook served by this test:
//! configurations validated and defaulted as kube does; validating and mutating webhooks
//! called with an `AdmissionReview` v1 and obeyed; denials and failures worded as
//! kube-apiserver words them; a webhook that hangs, answers garbage, answers for another
//! uid or presents a certificate the caBundle does not trust is decided by its
//! `failurePolicy` within `timeoutSeconds`.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use base64::Engine as _;
use http::Method;
use serde_json::{Value, json};
use wasmgate_fixtures::Webhook as Fixture;

mod common;
use common::Server;

async fn fixture() -> Fixture {
    Fixture::start().await.unwrap()
}

const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn configmap_rule() -> Value {
    json!([{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}])
}

fn configuration(name: &str, hook: &str, client: Value, extra: Value) -> Value {
    let mut h = json!({
        "name": hook,
        "clientConfig": client,
        "rules": configmap_rule(),
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    for (k, v) in extra.as_object().unwrap() {
        h[k] = v.clone();
    }
    json!({"metadata": {"name": name}, "webhooks": [h]})
}

fn cm(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}})
}

/// Issue 13: a validating webhook denies with kube's wording and the webhook's own
/// code; an allowed request carries its warnings; the configuration is defaulted.
#[tokio::test]
async fn a_validating_webhook_denies_and_warns() {
    let s = Server::new().await;
    let f = fixture().await;
    let created = s
        .req(
            Method::POST,
            VALIDATING,
            configuration(
                "deny",
                "deny.example.com",
                f.client_config("/deny-labelled"),
                json!({}),
            ),
        )
        .await
        .expect(201)
        .json();
    let hook = &created["webhooks"][0];
    assert_eq!(hook["failurePolicy"], "Fail");
    assert_eq!(hook["matchPolicy"], "Equivalent");
    assert_eq!(hook["timeoutSeconds"], 10);
    assert_eq!(hook["rules"][0]["scope"], "*");
    let r = s
        .req(Method::POST, CMS, cm("bad", json!({"deny": "yes"})))
        .await
        .expect(403);
    assert_eq!(r.reason(), "Forbidden");
    assert_eq!(
        r.json()["message"],
        "admission webhook \"deny.example.com\" denied the request: objects labelled deny=yes are refused"
    );
    s.get(&format!("{CMS}/bad")).await.expect(404);
    let ok = s
        .req(Method::POST, CMS, cm("good", json!({"deny": "no"})))
        .await
        .expect(201);
    assert_eq!(ok.headers["warning"], "299 - \"checked by the webhook\"");
    let metrics = s.get("/metrics").await.expect(200).text();
    assert!(
        metrics.contains(
            r#"wasmgate_webhook_calls_total{webhook="deny.example.com",type="validating",outcome="denied"} 1"#
        ),
        "{metrics}"
    );
    // Other kinds are not sent to it.
    let before = f.calls.load(Ordering::SeqCst);
    s.req(
        Method::POST,
        "/api/v1/namespaces/default/secrets",
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "labels": {"deny": "yes"}}}),
    )
    .await
    .expect(201);
    assert_eq!(f.calls.load(Ordering::SeqCst), before);
    // Removing the configuration takes effect at once.
    s.req(Method::DELETE, &format!("{VALIDATING}/deny"), Value::Null)
        .await
        .expect(200);
    s.req(Method::POST, CMS, cm("bad", json!({"deny": "yes"})))
        .await
        .expect(201);
}

/// Issue 13: a mutating webhook's JSON patch is applied before validation and storage;
/// `kubectl get` shows the configuration's webhook count.
#[tokio::test]
async fn a_mutating_webhook_patches_the_object() {
    let s = Server::new().await;
    let f = fixture().await;
    s.req(
        Method::POST,
        MUTATING,
        configuration(
            "label",
            "label.example.com",
            f.client_config("/label"),
            json!({}),
        ),
    )
    .await
    .expect(201);
    let created = s
        .req(Method::POST, CMS, cm("plain", json!({"a": "b"})))
        .await
        .expect(201)
        .json();
    assert_eq!(created["metadata"]["labels"]["mutated"], "by-webhook");
    assert_eq!(created["metadata"]["labels"]["a"], "b");
    let stored = s.get(&format!("{CMS}/plain")).await.expect(200).json();
    assert_eq!(stored["metadata"]["labels"]["mutated"], "by-webhook");
    let table = s
        .raw(
            Method::GET,
            MUTATING,
            &[("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")],
            "",
            Some(common::admin()),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(table["columnDefinitions"][1]["name"], "Webhooks");
    assert_eq!(table["rows"][0]["cells"][1], 1);
}

/// Issue 13, bad input and faults: each failure is decided by `failurePolicy` within
/// `timeoutSeconds`, with a Status naming the webhook (kube's wording).
#[tokio::test]
async fn failing_webhooks_follow_their_failure_policy() {
    let s = Server::new().await;
    let f = fixture().await;
    let other_ca = wasmgate_fixtures::certificates().unwrap().0;
    let untrusted = json!({
        "url": format!("https://127.0.0.1:{}/deny-labelled", f.port),
        "caBundle": base64::engine::general_purpose::STANDARD.encode(other_ca),
    });
    let cases = [
        (
            "hang",
            f.client_config("/hang"),
            "context deadline exceeded",
        ),
        (
            "garbage",
            f.client_config("/garbage"),
            "received invalid webhook response: the response is not JSON",
        ),
        (
            "uid",
            f.client_config("/wrong-uid"),
            "received invalid webhook response: expected response.uid=",
        ),
        (
            "tls",
            untrusted,
            "failed to call webhook: Post \"https://127.0.0.1:",
        ),
    ];
    for (name, client, expected) in cases {
        let hook = format!("{name}.example.com");
        s.req(
            Method::POST,
            VALIDATING,
            configuration(name, &hook, client.clone(), json!({"timeoutSeconds": 1})),
        )
        .await
        .expect(201);
        let started = Instant::now();
        let r = s
            .req(Method::POST, CMS, cm(&format!("{name}-fail"), json!({})))
            .await
            .expect(500);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{name}: {:?}",
            started.elapsed()
        );
        let msg = r.json()["message"].as_str().unwrap().to_owned();
        assert!(
            msg.starts_with(&format!(
                "Internal error occurred: failed calling webhook \"{hook}\": "
            )),
            "{msg}"
        );
        assert!(msg.contains(expected), "{name}: {msg}");
        // Under Ignore the request goes on, with a warning.
        s.req(Method::PUT, &format!("{VALIDATING}/{name}"), {
            let mut c = configuration(
                name,
                &hook,
                client,
                json!({"timeoutSeconds": 1, "failurePolicy": "Ignore"}),
            );
            let current = s
                .get(&format!("{VALIDATING}/{name}"))
                .await
                .expect(200)
                .json();
            c["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
            c
        })
        .await
        .expect(200);
        let ok = s
            .req(Method::POST, CMS, cm(&format!("{name}-ignored"), json!({})))
            .await
            .expect(201);
        assert!(
            ok.headers["warning"]
                .to_str()
                .unwrap()
                .contains(&format!("failed calling webhook \\\"{hook}\\\"")),
            "{:?}",
            ok.headers
        );
        s.req(Method::DELETE, &format!("{VALIDATING}/{name}"), Value::Null)
            .await
            .expect(200);
    }
}

/// Issue 13: configurations are validated as kube validates them (422 with the field).
#[tokio::test]
async fn bad_configurations_are_refused() {
    let s = Server::new().await;
    let bad = |client: Value, extra: Value| configuration("bad", "bad.example.com", client, extra);
    let cases = [
        (
            bad(json!({"url": "http://127.0.0.1:1/x"}), json!({})),
            "webhooks[0].clientConfig.url",
            "'https' is the only allowed URL scheme",
        ),
        (
            bad(json!({}), json!({})),
            "webhooks[0].clientConfig",
            "exactly one of url or service is required",
        ),
        (
            bad(
                json!({"url": "https://127.0.0.1:1/x"}),
                json!({"sideEffects": null}),
            ),
            "webhooks[0].sideEffects",
            "must specify one of None, NoneOnDryRun",
        ),
        (
            bad(
                json!({"url": "https://127.0.0.1:1/x"}),
                json!({"timeoutSeconds": 31}),
            ),
            "webhooks[0].timeoutSeconds",
            "the timeout value must be between 1 and 30 seconds",
        ),
        (
            configuration(
                "bad",
                "two-segments.com",
                json!({"url": "https://127.0.0.1:1/x"}),
                json!({}),
            ),
            "webhooks[0].name",
            "should be a domain with at least three segments separated by dots",
        ),
    ];
    for (obj, field, message) in cases {
        let r = s.req(Method::POST, VALIDATING, obj).await.expect(422);
        let causes = r.json()["details"]["causes"].clone();
        assert!(
            causes
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["field"] == field && c["message"].as_str().unwrap().contains(message)),
            "{field}: {causes}"
        );
    }
}

/// Issue 13: `namespaceSelector` and `objectSelector` decide which requests a webhook sees.
#[tokio::test]
async fn selectors_choose_the_requests() {
    let s = Server::new().await;
    let f = fixture().await;
    s.req(
        Method::POST,
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "guarded", "labels": {"guard": "on"}}}),
    )
    .await
    .expect(201);
    s.req(
        Method::POST,
        VALIDATING,
        configuration(
            "ns",
            "ns.example.com",
            f.client_config("/deny-labelled"),
            json!({"namespaceSelector": {"matchLabels": {"guard": "on"}}}),
        ),
    )
    .await
    .expect(201);
    s.req(Method::POST, CMS, cm("free", json!({"deny": "yes"})))
        .await
        .expect(201);
    s.req(
        Method::POST,
        "/api/v1/namespaces/guarded/configmaps",
        cm("held", json!({"deny": "yes"})),
    )
    .await
    .expect(403);
}

/// Issue 13, item 2: a CRD whose `spec.conversion` names an HTTPS webhook gets its
/// objects converted by it (`ConversionReview` v1) on every read and write at another
/// version; a refusal is kube's 500 naming the conversion.
#[tokio::test]
async fn a_conversion_webhook_converts_between_versions() {
    let s = Server::new().await;
    let f = fixture().await;
    let schema = |field: &str| json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {field: {"type": "string"}}}}}});
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.conv.example.com"},
        "spec": {
            "group": "conv.example.com",
            "scope": "Namespaced",
            "names": {"plural": "things", "singular": "thing", "kind": "Thing"},
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": f.client_config("/convert"),
                "conversionReviewVersions": ["v1"],
            }},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema("color")},
                {"name": "v2", "served": true, "storage": false, "schema": schema("colour")},
            ],
        },
    });
    s.req(
        Method::POST,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        crd,
    )
    .await
    .expect(201);
    let v2 = "/apis/conv.example.com/v2/namespaces/default/things";
    let v1 = "/apis/conv.example.com/v1/namespaces/default/things";
    // Written at v2: stored at v1 (converted), read back in both.
    s.req(
        Method::POST,
        v2,
        json!({"apiVersion": "conv.example.com/v2", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"colour": "teal"}}),
    )
    .await
    .expect(201);
    let at_v1 = s.get(&format!("{v1}/t")).await.expect(200).json();
    assert_eq!(at_v1["apiVersion"], "conv.example.com/v1");
    assert_eq!(at_v1["spec"], json!({"color": "teal"}));
    let at_v2 = s.get(&format!("{v2}/t")).await.expect(200).json();
    assert_eq!(at_v2["spec"], json!({"colour": "teal"}));
    let list = s.get(v2).await.expect(200).json();
    assert_eq!(list["items"][0]["spec"], json!({"colour": "teal"}));
    // A refusal: 500, kube's wording, nothing stored.
    let r = s
        .req(
            Method::POST,
            v2,
            json!({"apiVersion": "conv.example.com/v2", "kind": "Thing", "metadata": {"name": "p"}, "spec": {"colour": "plaid"}}),
        )
        .await
        .expect(500);
    assert_eq!(
        r.json()["message"],
        "conversion webhook for conv.example.com/v2, Kind=Thing failed: plaid cannot be converted"
    );
    s.get(&format!("{v1}/p")).await.expect(404);
}

/// Issue 13: `matchConditions` (CEL over `object`, `oldObject`, `request`) decide whether
/// a webhook is called; one that does not compile is refused on write (422).
#[tokio::test]
async fn match_conditions_choose_the_requests() {
    let s = Server::new().await;
    let f = fixture().await;
    s.req(
        Method::POST,
        VALIDATING,
        configuration(
            "guard",
            "guard.example.com",
            f.client_config("/deny-labelled"),
            json!({"matchConditions": [
                {"name": "guarded-names", "expression": "object.metadata.name.startsWith('guarded-')"},
                {"name": "creates", "expression": "request.operation == 'CREATE'"},
            ]}),
        ),
    )
    .await
    .expect(201);
    let before = f.calls.load(Ordering::SeqCst);
    s.req(Method::POST, CMS, cm("free", json!({"deny": "yes"})))
        .await
        .expect(201);
    assert_eq!(f.calls.load(Ordering::SeqCst), before, "not called");
    let r = s
        .req(Method::POST, CMS, cm("guarded-one", json!({"deny": "yes"})))
        .await
        .expect(403);
    assert!(r.text().contains("guard.example.com"), "{}", r.text());
    let r = s
        .req(
            Method::POST,
            VALIDATING,
            configuration(
                "broken",
                "broken.example.com",
                f.client_config("/deny-labelled"),
                json!({"matchConditions": [{"name": "x", "expression": "object.metadata.name +"}]}),
            ),
        )
        .await
        .expect(422)
        .json();
    assert_eq!(
        r["details"]["causes"][0]["field"],
        "webhooks[0].matchConditions[0].expression"
    );
}
