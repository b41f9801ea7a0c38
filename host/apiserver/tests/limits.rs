//! Limits on a request's time and size (issue 12): `timeout=` and the server's request
//! timeout (504), the store's object size limit (413); requests in flight (429, per user
//! too) and request bodies that never arrive (504).
#![allow(clippy::unwrap_used, reason = "test code")]

use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use serde_json::json;
use wasmgate_apiserver::Options;

mod common;
use common::{Server, admin};

/// Per-request deadlines (issue 12, kube's `WithRequestDeadline`): a request still
/// running at its `timeout=` is 504 `Timeout` worded as kube's; `timeout=` cannot extend
/// the server's `request_timeout`; a malformed one is 400; watches are long-running and
/// not cut by it.
#[tokio::test]
async fn requests_end_at_their_timeout_with_504() {
    let s = Server::with(Options {
        // A read of a future revision waits this long before its own 504.
        resource_version_wait: Duration::from_millis(2500),
        request_timeout: Duration::from_secs(2),
        ..Options::default()
    })
    .await;
    let started = std::time::Instant::now();
    let r = s
        .get("/api/v1/namespaces?resourceVersion=999999&timeout=300ms")
        .await
        .expect(504);
    assert_eq!(r.reason(), "Timeout");
    assert_eq!(
        r.json()["message"],
        "Timeout: request did not complete within requested timeout - context deadline exceeded"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // Longer than the server allows: the server's 2 s.
    let started = std::time::Instant::now();
    s.get("/api/v1/namespaces?resourceVersion=999999&timeout=1h")
        .await
        .expect(504);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(4),
        "{took:?}"
    );
    let r = s.get("/api/v1/namespaces?timeout=soon").await.expect(400);
    assert_eq!(
        r.json()["message"],
        "invalid timeout specified in the request URL - time: invalid duration \"soon\""
    );
    s.get("/api/v1/namespaces?timeout=10s").await.expect(200);
    // Watches are long-running: no deadline. One that waits for a future revision ends
    // with its own 504 after the wait, not with the request timeout's.
    let r = s
        .get("/api/v1/namespaces?watch=true&resourceVersion=999999&timeout=300ms")
        .await
        .expect(504);
    assert!(
        r.text().contains("Too large resource version"),
        "{}",
        r.text()
    );
}

/// An object under the body limit (3 MiB) but over the store's (1.5 MiB, etcd's) is 413
/// and not stored; one just under it is stored (issue 12, "object <= 1.5 MiB in the
/// store"). A Role, since ConfigMaps and Secrets stop at 1 MiB of data.
#[tokio::test]
async fn objects_over_the_store_limit_are_413() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    let post = |name: &str, n: usize| {
        let body = format!(
            r#"{{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{{"name":"{name}"}},"rules":[{{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","{}"]}}]}}"#,
            "x".repeat(n)
        );
        let s = &s;
        async move {
            s.raw(
                Method::POST,
                "/apis/rbac.authorization.k8s.io/v1/namespaces/demo/roles",
                &[("content-type", "application/json")],
                body,
                Some(admin()),
            )
            .await
        }
    };
    let limit = wasmgate_storage::DEFAULT_MAX_VALUE_BYTES;
    let r = post("stored-big", limit + 1).await.expect(413);
    assert_eq!(r.reason(), "RequestEntityTooLarge");
    assert!(r.text().contains("limit is 1572864"), "{}", r.text());
    s.get("/apis/rbac.authorization.k8s.io/v1/namespaces/demo/roles/stored-big")
        .await
        .expect(404);
    post("stored-fits", limit - 4096).await.expect(201);
}

/// A request body that never finishes: the request holds its in-flight slot.
struct Stalled;

impl http_body::Body for Stalled {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        std::task::Poll::Pending
    }
}

#[tokio::test]
async fn gap_11_err_429_when_in_flight_limit_is_exhausted() {
    let s = Server::with(Options {
        max_in_flight: 1,
        ..Options::default()
    })
    .await;
    let api = s.api.clone();
    let stalled = tokio::spawn(async move {
        let req = Request::builder()
            .method(Method::POST)
            .uri("/api/v1/namespaces/default/configmaps")
            .body(Stalled)
            .unwrap();
        api.handle(req, Some(admin())).await
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let r = s.get("/api/v1/namespaces").await.expect(429);
    assert_eq!(r.reason(), "TooManyRequests");
    assert_eq!(r.headers["retry-after"], "1");
    // Watches are exempt.
    let _w = s
        .watch("/api/v1/namespaces?watch=1&resourceVersion=1")
        .await;
    stalled.abort();
    let _ = stalled.await;
    s.get("/api/v1/namespaces").await.expect(200);
}

/// One user's stalled requests (bodies that never arrive) use up its share of the
/// in-flight budget only: its next request is a 429, another user's is served (issue 12,
/// fairness).
#[tokio::test]
async fn gap_11_one_user_cannot_take_the_whole_in_flight_budget() {
    let s = Server::with(Options {
        max_in_flight: 10,
        max_in_flight_per_user: 2,
        ..Options::default()
    })
    .await;
    let user = |name: &str| wasmgate_apiserver::User {
        name: name.into(),
        groups: vec!["system:authenticated".into()],
    };
    for name in ["greedy", "patient"] {
        s.req(
            Method::POST,
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding",
                "metadata":{"name":name},
                "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},
                "subjects":[{"kind":"User","name":name}]}),
        )
        .await
        .expect(201);
    }
    let mut stalled = Vec::new();
    for _ in 0..2 {
        let api = s.api.clone();
        let greedy = user("greedy");
        stalled.push(tokio::spawn(async move {
            let req = Request::builder()
                .method(Method::POST)
                .uri("/api/v1/namespaces/default/configmaps")
                .body(Stalled)
                .unwrap();
            api.handle(req, Some(greedy)).await
        }));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let get = |who: &str| {
        s.raw(
            Method::GET,
            "/api/v1/namespaces/default/configmaps",
            &[],
            "",
            Some(user(who)),
        )
    };
    let refused = get("greedy").await.expect(429);
    assert_eq!(refused.reason(), "TooManyRequests");
    assert_eq!(refused.headers["retry-after"], "1");
    get("patient").await.expect(200);
    for t in stalled {
        t.abort();
        let _ = t.await;
    }
    get("greedy").await.expect(200);
}

#[tokio::test]
async fn gap_11_a_stalled_request_body_times_out() {
    let s = Server::with(Options {
        body_read_timeout: Duration::from_millis(200),
        ..Options::default()
    })
    .await;
    let req = Request::builder()
        .method(Method::POST)
        .uri("/api/v1/namespaces/default/configmaps")
        .body(Stalled)
        .unwrap();
    let resp = tokio::time::timeout(Duration::from_secs(5), s.api.handle(req, Some(admin())))
        .await
        .expect("answered");
    assert_eq!(resp.status(), StatusCode::GATEWAY_TIMEOUT);
}
