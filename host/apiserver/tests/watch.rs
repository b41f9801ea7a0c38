//! In-process watch tests (`WATCH-*`, `STREAM-*`): requests go straight to
//! `ApiServer::handle` over an in-memory store, no sockets.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::Full;
use serde_json::{Value, json};
use wasmgate_apiserver::Options;

mod common;
use common::{Server, WatchReader, admin, rv, type_and_name};

/// A change to ConfigMap `name` of namespace `demo` (a merge patch of `data.x`).
async fn modify(s: &Server, name: &str) {
    s.patch(
        &format!("/api/v1/namespaces/demo/configmaps/{name}"),
        "application/merge-patch+json",
        r#"{"data":{"x":"1"}}"#,
    )
    .await
    .expect(200);
}

#[tokio::test]
async fn watch_01_03_initial_events_and_start_points() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    let a = s.create_cm("demo", "a", json!({})).await;
    // rv unset: synthetic ADDED for current state, then changes.
    let mut w = s.watch("/api/v1/namespaces/demo/configmaps?watch=1").await;
    let ev = w.next().await.unwrap();
    assert_eq!(type_and_name(&ev), ("ADDED", "a"));
    // rv=R: only later changes, no synthetic events.
    let mut after = s
        .watch(&format!(
            "/api/v1/namespaces/demo/configmaps?watch=1&resourceVersion={}",
            rv(&a)
        ))
        .await;
    assert!(after.quiet_for(Duration::from_millis(200)).await);
    s.create_cm("demo", "b", json!({})).await;
    s.req(
        Method::DELETE,
        "/api/v1/namespaces/demo/configmaps/a",
        Value::Null,
    )
    .await
    .expect(200);
    for w in [&mut w, &mut after] {
        let e1 = w.next().await.unwrap();
        assert_eq!(type_and_name(&e1), ("ADDED", "b"));
        let e2 = w.next().await.unwrap();
        assert_eq!(e2["type"], "DELETED", "GAP-02");
        assert!(
            rv(&e2["object"]) > rv(&e1["object"]),
            "DELETED carries the deletion's RV"
        );
    }
}

#[tokio::test]
async fn watch_03_single_object_watch_with_rv_0_sends_current_state_first() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    s.create_cm("demo", "one", json!({})).await;
    s.create_cm("demo", "two", json!({})).await;
    let mut w = s.watch("/api/v1/namespaces/demo/configmaps?fieldSelector=metadata.name%3Dtwo&resourceVersion=0&watch=true").await;
    let first = w.next().await.unwrap();
    assert_eq!(type_and_name(&first), ("ADDED", "two"));
    modify(&s, "one").await;
    modify(&s, "two").await;
    let ev = w.next().await.unwrap();
    assert_eq!(type_and_name(&ev), ("MODIFIED", "two"));
}

#[tokio::test]
async fn watch_label_selector_transitions() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    let mut w = s
        .watch("/api/v1/namespaces/demo/configmaps?watch=1&labelSelector=team%3Dx")
        .await;
    s.create_cm("demo", "m", json!({})).await;
    for labels in [
        r#"{"metadata":{"labels":{"team":"x"}}}"#,
        r#"{"metadata":{"labels":{"other":"1"}}}"#,
        r#"{"metadata":{"labels":{"team":"y"}}}"#,
    ] {
        s.patch(
            "/api/v1/namespaces/demo/configmaps/m",
            "application/merge-patch+json",
            labels,
        )
        .await
        .expect(200);
    }
    let types: Vec<String> = [
        w.next().await.unwrap(),
        w.next().await.unwrap(),
        w.next().await.unwrap(),
    ]
    .iter()
    .map(|e| e["type"].as_str().unwrap().to_owned())
    .collect();
    assert_eq!(types, vec!["ADDED", "MODIFIED", "DELETED"]);
}

#[tokio::test]
async fn watch_06_bookmarks_and_stream_01_04_streaming_list() {
    let s = Server::with(Options {
        bookmark_interval: Duration::from_millis(100),
        ..Options::default()
    })
    .await;
    s.create_ns("demo").await;
    s.create_cm("demo", "a", json!({})).await;
    s.create_cm("demo", "b", json!({})).await;
    let mut w = s.watch("/api/v1/namespaces/demo/configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersion=&resourceVersionMatch=NotOlderThan").await;
    assert_eq!(w.next().await.unwrap()["type"], "ADDED");
    assert_eq!(w.next().await.unwrap()["type"], "ADDED");
    let bm = w.next().await.unwrap();
    assert_eq!(bm["type"], "BOOKMARK");
    assert_eq!(bm["object"]["kind"], "ConfigMap");
    assert_eq!(
        bm["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    // Periodic bookmarks follow.
    let next = w.next().await.unwrap();
    assert_eq!(next["type"], "BOOKMARK");
    assert!(next["object"]["metadata"].get("annotations").is_none());
    s.get("/api/v1/namespaces/demo/configmaps?watch=1&sendInitialEvents=true")
        .await
        .expect(400);
}

#[tokio::test]
async fn watch_05_compacted_start_is_410_and_watch_08_timeout_ends_stream() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    let a = s.create_cm("demo", "a", json!({})).await;
    s.create_cm("demo", "b", json!({})).await;
    s.api
        .store()
        .compact(s.api.store().revision())
        .await
        .unwrap();
    let r = s
        .get(&format!(
            "/api/v1/namespaces/demo/configmaps?watch=1&resourceVersion={}",
            rv(&a) - 1
        ))
        .await
        .expect(410);
    assert_eq!(r.reason(), "Expired");
    let mut w = s
        .watch(&format!(
            "/api/v1/namespaces/demo/configmaps?watch=1&timeoutSeconds=1&resourceVersion={}",
            s.api.store().revision()
        ))
        .await;
    assert!(
        w.next().await.is_none(),
        "stream ends cleanly after timeoutSeconds"
    );
}

#[tokio::test]
async fn watch_table_output_for_get_w() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    let list = s.get("/api/v1/namespaces/demo/configmaps").await.json();
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let req = Request::builder()
        .uri(format!(
            "/api/v1/namespaces/demo/configmaps?resourceVersion={}&watch=true",
            list["metadata"]["resourceVersion"].as_str().unwrap()
        ))
        .header("accept", accept)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let resp = s.api.handle(req, Some(admin())).await;
    let mut w = WatchReader {
        body: resp.into_body(),
        buf: Vec::new(),
    };
    s.create_cm("demo", "x", json!({})).await;
    s.create_cm("demo", "y", json!({})).await;
    let e1 = w.next().await.unwrap();
    assert_eq!(e1["object"]["kind"], "Table");
    assert_eq!(
        e1["object"]["columnDefinitions"].as_array().unwrap().len(),
        3
    );
    assert_eq!(e1["object"]["rows"][0]["cells"][0], "x");
    let e2 = w.next().await.unwrap();
    assert_eq!(e2["object"]["columnDefinitions"], json!([]));
}

#[tokio::test]
async fn shutdown_ends_watches_cleanly() {
    let s = Server::new().await;
    let mut w = s
        .watch("/api/v1/namespaces?watch=1&resourceVersion=1")
        .await;
    s.api.begin_shutdown();
    assert!(w.next().await.is_none());
}

#[tokio::test]
async fn gap_03_watch_path_with_a_name_watches_one_object() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    let a = s.create_cm("demo", "a", json!({})).await;
    let mut w = s
        .watch(&format!(
            "/api/v1/watch/namespaces/demo/configmaps/a?resourceVersion={}",
            rv(&a)
        ))
        .await;
    s.create_cm("demo", "other", json!({})).await;
    modify(&s, "a").await;
    let ev = w.next().await.unwrap();
    assert_eq!(type_and_name(&ev), ("MODIFIED", "a"));
}
