//! Hostile and malformed input (issue 7, section 5): each case gets a `Status` with kube's
//! reason and code, in bounded time, and leaves the store as it was.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::time::{Duration, Instant};

use http::Method;
use serde_json::{Map, Value, json};

mod common;
use common::Server;

const CM: &str = "/api/v1/namespaces/default/configmaps";

fn many_keys(n: usize) -> Value {
    let data: Map<String, Value> = (0..n)
        .map(|i| (format!("k{i:06}"), Value::String(String::new())))
        .collect();
    Value::Object(data)
}

/// ConfigMap keys are checked for duplicates in linear time, and a large body is decoded
/// and validated without starving the runtime: `/readyz` answers while two 100,000-key
/// creates run (a quadratic check took 11 s of CPU per request). Valid, they are then too
/// large to store (2.8 MB with their managed fields; etcd's 1.5 MiB limit): 413.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_thousand_keys_are_validated_in_linear_time() {
    let s = std::sync::Arc::new(Server::new().await);
    let started = Instant::now();
    let creates: Vec<_> = (0..2)
        .map(|i| {
            let s = s.clone();
            tokio::spawn(async move {
                s.req(
                    Method::POST,
                    CM,
                    json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":format!("big{i}")},"data":many_keys(100_000)}),
                )
                .await
                .expect(413);
            })
        })
        .collect();
    let mut slowest = Duration::ZERO;
    while !creates.iter().all(|c| c.is_finished()) {
        let t = Instant::now();
        s.get("/readyz").await.expect(200);
        slowest = slowest.max(t.elapsed());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for c in creates {
        c.await.unwrap();
    }
    // Generous bounds (debug build, shared 2-core machine): the quadratic check needed
    // minutes here; the linear one needs a fraction of a second per request.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    assert!(
        slowest < Duration::from_secs(5),
        "readyz waited {slowest:?}"
    );
    s.get(&format!("{CM}/big0")).await.expect(404);
}

/// A key in both `data` and `binaryData` is reported once per duplicate, as kube does.
#[tokio::test]
async fn duplicate_keys_across_data_and_binary_data() {
    let s = Server::new().await;
    let r = s
        .req(
            Method::POST,
            CM,
            json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup"},"data":{"a":"x","b":"y"},"binaryData":{"a":"eA=="}}),
        )
        .await
        .expect(422);
    let causes = r.json()["details"]["causes"].as_array().unwrap().clone();
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(
        causes[0]["message"],
        "Invalid value: \"a\": duplicate of key present in data"
    );
}

/// Once an object is being deleted, finalizers can only be removed: one error names every
/// new one, sorted (kube's `ValidateObjectMetaUpdate`).
#[tokio::test]
async fn no_new_finalizers_while_deleting() {
    let s = Server::new().await;
    s.req(
        Method::POST,
        CM,
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"f","finalizers":["example.com/a"]}}),
    )
    .await
    .expect(201);
    s.req(Method::DELETE, &format!("{CM}/f"), Value::Null)
        .await
        .expect(200);
    let r = s
        .patch(
            &format!("{CM}/f"),
            "application/merge-patch+json",
            r#"{"metadata":{"finalizers":["example.com/a","example.com/z","example.com/b"]}}"#,
        )
        .await
        .expect(422);
    let message = r.json()["message"].as_str().unwrap().to_owned();
    assert!(
        message.ends_with(
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/b\", \"example.com/z\"}"
        ),
        "{message}"
    );
}

/// `format: int32` fields refuse numbers that do not fit, as Go's decoder does in
/// kube-apiserver: 400, naming the number and the Go struct that holds the field.
#[tokio::test]
async fn int32_fields_refuse_numbers_that_do_not_fit() {
    let s = Server::new().await;
    let r = s
        .req(
            Method::POST,
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            json!({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"leaseDurationSeconds":4294967296u64}}),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json()["message"],
        "Lease in version \"v1\" cannot be handled as a Lease: json: cannot unmarshal number 4294967296 into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32"
    );
    let r = s
        .req(
            Method::POST,
            "/api/v1/namespaces/default/events",
            json!({"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},"involvedObject":{"name":"x"},"count":8589934592u64}),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json()["message"],
        "Event in version \"v1\" cannot be handled as a Event: json: cannot unmarshal number 8589934592 into Go struct field Event.count of type int32"
    );
    // The bounds themselves fit; int64 fields take what int32 ones refuse.
    s.req(
        Method::POST,
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        json!({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"leaseDurationSeconds":2147483647}}),
    )
    .await
    .expect(201);
    let r = s
        .req(
            Method::POST,
            "/api/v1/namespaces",
            json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":true}}),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json()["message"],
        "Namespace in version \"v1\" cannot be handled as a Namespace: json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.name of type string"
    );
    s.get("/api/v1/namespaces/default/events/e")
        .await
        .expect(404);
}

/// A watch from a revision the store has not reached is too new, not too old: after a
/// short wait, 504 "Too large resource version" as a get or list answers (`RV-09`).
#[tokio::test]
async fn rv_09_watch_from_a_future_revision_is_too_large_not_expired() {
    let s = Server::with(wasmgate_apiserver::Options {
        resource_version_wait: Duration::from_millis(300),
        ..Default::default()
    })
    .await;
    let r = s
        .get(&format!("{CM}?watch=true&resourceVersion={}", u64::MAX))
        .await
        .expect(504);
    let status = r.json();
    assert_eq!(status["reason"], "Timeout");
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
    assert_eq!(status["details"]["retryAfterSeconds"], 1);
    assert!(status["message"].as_str().unwrap().starts_with(&format!(
        "Too large resource version: {}, current: ",
        u64::MAX
    )));
    let current = s.create_cm("default", "a", json!({})).await["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse::<u64>()
        .unwrap();
    let t = Instant::now();
    s.get(&format!(
        "{CM}?watch=true&resourceVersion={}",
        current + 100
    ))
    .await
    .expect(504);
    assert!(t.elapsed() >= Duration::from_millis(250), "it waits first");
    // A revision reached while waiting starts the watch.
    let writer = {
        let api = s.api.clone();
        tokio::spawn(async move {
            let mut codes = Vec::new();
            for name in ["b", "c"] {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let req = http::Request::builder()
                    .method(Method::POST)
                    .uri(CM)
                    .header("content-type", "application/json")
                    .body(http_body_util::Full::new(bytes::Bytes::from(format!(
                        r#"{{"metadata":{{"name":"{name}"}}}}"#
                    ))))
                    .unwrap();
                codes.push(
                    api.handle(req, Some(common::admin()))
                        .await
                        .status()
                        .as_u16(),
                );
            }
            codes
        })
    };
    let mut w = s
        .watch(&format!("{CM}?watch=true&resourceVersion={}", current + 1))
        .await;
    assert_eq!(writer.await.unwrap(), [201, 201]);
    let ev = w.next().await.unwrap();
    assert_eq!(
        ev["object"]["metadata"]["name"], "c",
        "events after the revision waited for"
    );
}

/// `metadata.resourceVersion` that is not a revision is a bad request, not a conflict
/// (a client retrying a 409 would never succeed).
#[tokio::test]
async fn a_resource_version_that_is_not_a_number_is_400() {
    let s = Server::new().await;
    s.create_cm("default", "a", json!({})).await;
    for (rv, why) in [
        ("abc", "invalid syntax"),
        ("99999999999999999999", "value out of range"),
    ] {
        let r = s
            .req(
                Method::PUT,
                &format!("{CM}/a"),
                json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":rv}}),
            )
            .await
            .expect(400);
        assert_eq!(
            r.json()["message"],
            format!(
                "metadata.resourceVersion: Invalid value: \"{rv}\": strconv.ParseUint: parsing \"{rv}\": {why}"
            )
        );
    }
    s.patch(
        &format!("{CM}/a"),
        "application/merge-patch+json",
        r#"{"metadata":{"resourceVersion":"abc"}}"#,
    )
    .await
    .expect(400);
}

/// Path segments are percent-decoded before routing (`a%2Db` is `a-b`); a malformed escape
/// is 400.
#[tokio::test]
async fn percent_encoded_path_segments_are_decoded() {
    let s = Server::new().await;
    s.create_cm("default", "a-b", json!({})).await;
    let got = s.get(&format!("{CM}/a%2Db")).await.expect(200).json();
    assert_eq!(got["metadata"]["name"], "a-b");
    s.get("/api/v1/namespaces/def%61ult/configmaps/a-b")
        .await
        .expect(200);
    s.get(&format!("{CM}/a%2Fb")).await.expect(404);
    assert_eq!(
        s.get(&format!("{CM}/a%zzb")).await.expect(400).reason(),
        "BadRequest"
    );
}

/// Tampered `continue` tokens are 400 with kube's wording, before anything is read.
#[tokio::test]
async fn chunk_06_tampered_continue_tokens_are_400() {
    use base64::Engine as _;
    let s = Server::new().await;
    let token = |json: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json);
    for (json, tail) in [
        (
            r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#,
            ": incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ),
        (
            r#"{"v":"meta.k8s.io/v1","rv":3,"start":""}"#,
            ": encoded start key empty (version meta.k8s.io/v1)",
        ),
        (
            r#"{"v":"meta.k8s.io/v1","rv":3,"start":"../../secrets/default/x"}"#,
            ": ../../secrets/default/x",
        ),
    ] {
        let r = s
            .get(&format!("{CM}?limit=1&continue={}", token(json)))
            .await
            .expect(400);
        assert_eq!(
            r.json()["message"],
            format!("invalid continue token: continue key is not valid{tail}")
        );
    }
}

/// A CRD in a Kubernetes-owned group (`*.k8s.io`, `*.kubernetes.io`) needs the
/// `api-approved.kubernetes.io` annotation: a URL or a reason starting with `unapproved`.
#[tokio::test]
async fn crd_in_a_protected_group_needs_api_approval() {
    let s = Server::new().await;
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let crd = |group: &str, annotation: Option<&str>| {
        let mut c = json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
            "metadata":{"name":format!("things.{group}")},
            "spec":{"group":group,"scope":"Namespaced","names":{"plural":"things","kind":"Thing"},
                "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}});
        if let Some(a) = annotation {
            c["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": a});
        }
        c
    };
    let r = s
        .req(Method::POST, crds, crd("x.k8s.io", None))
        .await
        .expect(422);
    let cause = &r.json()["details"]["causes"][0];
    assert_eq!(
        cause["field"],
        "metadata.annotations[api-approved.kubernetes.io]"
    );
    assert_eq!(cause["reason"], "FieldValueRequired");
    assert_eq!(
        cause["message"],
        "Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
    );
    let r = s
        .req(Method::POST, crds, crd("kubernetes.io", Some("sure")))
        .await
        .expect(422);
    assert_eq!(
        r.json()["details"]["causes"][0]["reason"],
        "FieldValueInvalid"
    );
    s.req(
        Method::POST,
        crds,
        crd(
            "a.k8s.io",
            Some("https://github.com/kubernetes/kubernetes/pull/78458"),
        ),
    )
    .await
    .expect(201);
    s.req(
        Method::POST,
        crds,
        crd("b.k8s.io", Some("unapproved, experimental")),
    )
    .await
    .expect(201);
    // Other groups need nothing.
    s.req(Method::POST, crds, crd("k8s.example.com", None))
        .await
        .expect(201);
    s.get(&format!("{crds}/things.x.k8s.io")).await.expect(404);
}
