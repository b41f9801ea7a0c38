//! The aggregation layer's proxy (issue 13, item 1), in process: requests for an
//! `APIService`'s group/version reach the extension API server (`wasmgate-fixtures`) with
//! the front-proxy client certificate and `X-Remote-*` headers, and a watch streams through
//! event by event, not buffered.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::time::{Duration, Instant};

use http::Method;
use serde_json::json;
use wasmgate_apiserver::{FrontProxy, Options};

mod common;
use common::Server;

/// A front-proxy CA and the client certificate it issued (`CN=front-proxy-client`), PEM.
fn front_proxy() -> FrontProxy {
    let (ca_pem, client_cert_pem, client_key_pem) =
        wasmgate_fixtures::client_certificate("front-proxy-client").unwrap();
    FrontProxy {
        ca_pem,
        client_cert_pem,
        client_key_pem,
        allowed_names: vec!["front-proxy-client".into()],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_and_watches_reach_the_extension_server() {
    let front = front_proxy();
    let ext = wasmgate_fixtures::ExtensionServer::start(0, &front.ca_pem)
        .await
        .unwrap();
    let s = Server::with(Options {
        front_proxy: Some(front),
        ..Options::default()
    })
    .await;
    s.req(
        Method::POST,
        "/apis/apiregistration.k8s.io/v1/apiservices",
        json!({
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": "v1alpha1.wardle.example.com", "annotations": {"wasmgate.dev/backend": ext.url()}},
            "spec": {"group": "wardle.example.com", "version": "v1alpha1",
                     "service": {"namespace": "wardle", "name": "api"}, "caBundle": ext.ca_bundle(),
                     "groupPriorityMinimum": 1000, "versionPriority": 15},
        }),
    )
    .await
    .expect(201);
    let list = s
        .get("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders")
        .await
        .expect(200)
        .json();
    assert_eq!(list["items"][0]["spec"]["reference"], "admin");
    // The backend sends ADDED at once and MODIFIED a second later: the first must arrive
    // before the second is sent.
    let mut w = s
        .watch("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders?watch=true")
        .await;
    let started = Instant::now();
    let first = w.next().await.unwrap();
    let first_at = started.elapsed();
    assert_eq!(first["type"], "ADDED");
    assert!(first_at < Duration::from_millis(800), "{first_at:?}");
    let second = w.next().await.unwrap();
    assert_eq!(second["type"], "MODIFIED");
    assert!(started.elapsed() >= Duration::from_millis(800));
    assert!(
        w.next().await.is_none(),
        "the stream ends with the backend's"
    );
}
