//! In-process tests of what keeps one gateway scaling (issue 9): lists and a watch's
//! initial state streamed page by page, watch fan-out ending slow watchers, watches that
//! leave taking their tasks with them.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::time::Duration;

use http::Method;
use serde_json::{Value, json};
use wasmgate_apiserver::Options;

mod common;
use common::{Resp, Server, admin};

const COLLECTION: &str = "/api/v1/namespaces/many/configmaps";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const METADATA: &str = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";

/// `GET path` as the admin with one more request header; a 200.
async fn get_with(s: &Server, path: &str, header: (&str, &str)) -> Resp {
    s.raw(Method::GET, path, &[header], "", Some(admin()))
        .await
        .expect(200)
}

/// Issue 9 "Bounded memory": a LIST without `limit` is written page by page at one
/// revision: every item once, in order, as JSON, gzipped, as a Table and as metadata.
#[tokio::test]
async fn whole_lists_stream_page_by_page() {
    use std::io::Read as _;
    let s = Server::new().await;
    s.create_ns("many").await;
    for i in 0..2345 {
        s.req(Method::POST, "/api/v1/namespaces/many/configmaps", json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":format!("cm{i:04}")},"data":{"i":i.to_string()}})).await.expect(201);
    }
    let names = |items: &[Value], at: &[&str]| -> Vec<String> {
        items
            .iter()
            .map(|i| {
                i.pointer(&at.join("/"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            })
            .collect()
    };
    let want: Vec<String> = (0..2345).map(|i| format!("cm{i:04}")).collect();
    let list = s.get(COLLECTION).await.expect(200).json();
    assert_eq!(list["kind"], "ConfigMapList");
    assert!(
        list["metadata"]["resourceVersion"]
            .as_str()
            .is_some_and(|rv| !rv.is_empty())
    );
    assert!(list["metadata"].get("continue").is_none());
    assert_eq!(
        names(list["items"].as_array().unwrap(), &["", "metadata", "name"]),
        want
    );
    let zipped = get_with(&s, COLLECTION, ("accept-encoding", "gzip")).await;
    assert_eq!(zipped.headers["content-encoding"], "gzip");
    let mut out = String::new();
    flate2::read::GzDecoder::new(&zipped.body[..])
        .read_to_string(&mut out)
        .unwrap();
    let unzipped: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(unzipped["items"], list["items"]);
    let table = get_with(&s, COLLECTION, ("accept", TABLE)).await;
    let table: Value = serde_json::from_slice(&table.body).unwrap();
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["columnDefinitions"][0]["name"], "Name");
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(names(rows, &["", "object", "metadata", "name"]), want);
    assert_eq!(rows[7]["cells"][0], "cm0007");
    let metas = get_with(&s, COLLECTION, ("accept", METADATA)).await;
    let metas: Value = serde_json::from_slice(&metas.body).unwrap();
    assert_eq!(metas["kind"], "PartialObjectMetadataList");
    let items = metas["items"].as_array().unwrap();
    assert_eq!(names(items, &["", "metadata", "name"]), want);
    assert_eq!(items[0]["kind"], "PartialObjectMetadata");
    assert!(items[0].get("data").is_none());
    // With a limit (`CHUNK-01`..`CHUNK-04`), a Table's rows and metadata-only items are
    // encoded a page at a time too, after the continue token and remaining count.
    for (accept, at, field) in [
        (TABLE, &["", "object", "metadata", "name"][..], "rows"),
        (METADATA, &["", "metadata", "name"][..], "items"),
    ] {
        let first = get_with(&s, &format!("{COLLECTION}?limit=2300"), ("accept", accept)).await;
        let first: Value = serde_json::from_slice(&first.body).unwrap();
        assert_eq!(first["metadata"]["remainingItemCount"], 45, "{accept}");
        let token = first["metadata"]["continue"].as_str().unwrap();
        let next = format!("{COLLECTION}?limit=2300&continue={token}");
        let rest = get_with(&s, &next, ("accept", accept)).await;
        let rest: Value = serde_json::from_slice(&rest.body).unwrap();
        assert!(rest["metadata"].get("continue").is_none(), "{accept}");
        let mut got = names(first[field].as_array().unwrap(), at);
        assert_eq!(got.len(), 2300, "{accept}");
        got.extend(names(rest[field].as_array().unwrap(), at));
        assert_eq!(got, want, "{accept}");
    }
}

/// Issue 9 "Fan-out": a watch whose client takes nothing is ended once it falls out of the
/// store's in-memory window (as kube's cacher ends unresponsive watchers), and a watch that
/// keeps up beside it loses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_watcher_is_ended_and_a_fast_one_loses_nothing() {
    let s = Server::with_store(
        Options::default(),
        wasmgate_storage::StoreOptions {
            watch_ring: 64,
            ..Default::default()
        },
    )
    .await;
    s.create_ns("w").await;
    let uri = "/api/v1/namespaces/w/configmaps?watch=1";
    let mut slow = s.watch(uri).await;
    let mut fast = s.watch(uri).await;
    const N: usize = 600;
    let reader = tokio::spawn(async move {
        let mut names = Vec::new();
        while names.len() < N {
            let ev = fast.next().await.expect("the fast watch goes on");
            assert_eq!(ev["type"], "ADDED");
            names.push(
                ev["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
        }
        names
    });
    // The slow watch holds at most a few batches; after those, the ring (64 events) moves
    // on past it while it waits for its client.
    for i in 0..N {
        s.create_cm("w", &format!("c{i:03}"), json!({})).await;
    }
    let names = reader.await.unwrap();
    let want: Vec<String> = (0..N).map(|i| format!("c{i:03}")).collect();
    assert_eq!(names, want, "every event, once, in order");
    // The slow one: what it was given before it fell behind, then the end of its stream.
    let mut got = 0;
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while slow.next().await.is_some() {
            got += 1;
        }
    })
    .await;
    assert!(ended.is_ok(), "the slow watch was not ended");
    assert!(
        got > 0 && got < N,
        "the slow watch got {got} of {N} events before it ended"
    );
}

/// Issue 9 "Faults": 1,000 watches whose clients leave at once leave no task behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_watches_that_leave_at_once_leave_no_task_behind() {
    let s = Server::new().await;
    s.create_ns("gone").await;
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let mut watches = Vec::new();
    for _ in 0..1000 {
        watches.push(s.watch("/api/v1/namespaces/gone/configmaps?watch=1").await);
    }
    s.create_cm("gone", "one", json!({})).await;
    for w in watches.iter_mut().step_by(100) {
        assert_eq!(w.next().await.unwrap()["type"], "ADDED");
    }
    assert!(
        metrics.num_alive_tasks() >= before + 1000,
        "a task per watch"
    );
    drop(watches);
    // Each watch notices its client is gone and ends (a few tasks of slack for the
    // server's own background work starting meanwhile).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while metrics.num_alive_tasks() > before + 10 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} tasks left of {before}",
            metrics.num_alive_tasks()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Issue 9 "Bounded memory": a watch's initial state is read and sent page by page
/// (2,000 keys a page): every object once, in order, then the end-of-initial-events
/// bookmark (`GAP-03`) and the live events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watchs_initial_state_streams_page_by_page() {
    let s = Server::new().await;
    s.create_ns("init").await;
    const N: usize = 2345;
    for i in 0..N {
        s.create_cm("init", &format!("c{i:04}"), json!({})).await;
    }
    let mut w = s
        .watch("/api/v1/namespaces/init/configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan")
        .await;
    let mut names = Vec::new();
    for _ in 0..N {
        let ev = w.next().await.unwrap();
        assert_eq!(ev["type"], "ADDED");
        names.push(
            ev["object"]["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let want: Vec<String> = (0..N).map(|i| format!("c{i:04}")).collect();
    assert_eq!(names, want);
    let end = w.next().await.unwrap();
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(
        end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    s.create_cm("init", "live", json!({})).await;
    let live = w.next().await.unwrap();
    assert_eq!(
        (
            live["type"].as_str(),
            live["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("live"))
    );
}
