//! The storage engine lost while serving (issue 10, "Bad input / faults"): what a TiKV
//! cluster going away looks like to the layers above the engine, with the embedded engine
//! behind a switch that makes every new snapshot and transaction fail as an unreachable
//! cluster does (`EngineError::Unavailable`). This tests the store and the API server's
//! reaction, not TiKV: the TiKV engine's own mapping of its errors is unit-tested in
//! `wasmgate-storage-tikv`, and its suites run against a real cluster when one is named.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use http::Method;
use serde_json::json;
use wasmgate_storage::{Engine, EngineError, Snapshot, Transaction};
use wasmgate_storage_embedded::EmbeddedEngine;

mod common;
use common::Server;

/// An engine that can be switched off.
struct Switched {
    inner: EmbeddedEngine,
    down: Arc<AtomicBool>,
}

impl Switched {
    fn check(&self) -> Result<(), EngineError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(EngineError::Unavailable(
                "injected: the cluster is unreachable".into(),
            ));
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Engine for Switched {
    fn name(&self) -> &'static str {
        "switched"
    }
    async fn snapshot(&self) -> Result<Box<dyn Snapshot>, EngineError> {
        self.check()?;
        self.inner.snapshot().await
    }
    async fn begin(&self) -> Result<Box<dyn Transaction>, EngineError> {
        self.check()?;
        self.inner.begin().await
    }
    async fn allocate(&self, n: u64) -> Result<u64, EngineError> {
        self.check()?;
        self.inner.allocate(n).await
    }
    async fn allocate_in(
        &self,
        txn: &mut dyn Transaction,
        n: u64,
    ) -> Result<Option<u64>, EngineError> {
        self.inner.allocate_in(txn, n).await
    }
}

fn cm(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

fn rv(v: &serde_json::Value) -> u64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// Requests fail with a 503 `Status` while the engine is unreachable, `/readyz` reports
/// the storage check failing, and service resumes by itself when it is back: no
/// acknowledged write lost, no revision reused, a watch opened before goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_engine_fails_requests_and_service_resumes_when_it_returns() {
    let down = Arc::new(AtomicBool::new(false));
    let engine = Switched {
        inner: EmbeddedEngine::in_memory().unwrap(),
        down: down.clone(),
    };
    let s = Server::over(Arc::new(engine)).await;
    // The server's own background write (the WasmPlugin CRD's Established condition) is
    // done before the outage, so every revision after `a` is this test's.
    let crd = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/wasmplugins.wasmgate.dev";
    for _ in 0..500 {
        let c = s.get(crd).await.expect(200).json();
        let established = c["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        });
        if established {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.create_ns("f").await;
    let coll = "/api/v1/namespaces/f/configmaps";
    let a = s.req(Method::POST, coll, cm("a")).await.expect(201).json();
    let mut watch = s
        .watch(&format!("{coll}?watch=1&resourceVersion={}", rv(&a)))
        .await;

    down.store(true, Ordering::SeqCst);
    for r in [
        s.get(&format!("{coll}/a")).await,
        s.get(coll).await,
        s.req(Method::POST, coll, cm("lost")).await,
        s.req(Method::DELETE, &format!("{coll}/a"), json!({})).await,
    ] {
        let r = r.expect(503);
        let st = r.json();
        assert_eq!(
            (st["kind"].as_str(), st["reason"].as_str()),
            (Some("Status"), Some("ServiceUnavailable")),
            "{st}"
        );
        assert!(r.headers.contains_key("retry-after"));
    }
    let ready = s.get("/readyz?verbose").await;
    assert_eq!(ready.status.as_u16(), 500, "{}", ready.text());
    assert!(
        ready.text().contains("[-]storage failed"),
        "{}",
        ready.text()
    );

    down.store(false, Ordering::SeqCst);
    s.get("/readyz").await.expect(200);
    let b = s.req(Method::POST, coll, cm("b")).await.expect(201).json();
    assert_eq!(rv(&b), rv(&a) + 1, "the failed writes took no revision");
    let list = s.get(coll).await.expect(200).json();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["a", "b"],
        "nothing acknowledged lost, nothing refused kept"
    );
    let ev = tokio::time::timeout(Duration::from_secs(5), watch.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            ev["type"].as_str(),
            ev["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("b"))
    );
}

/// An engine whose commits lose to another writer while `contended` is on, as a replica's
/// do when other replicas commit at the same moment.
struct Contended {
    inner: EmbeddedEngine,
    contended: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl Engine for Contended {
    fn name(&self) -> &'static str {
        "contended"
    }
    async fn snapshot(&self) -> Result<Box<dyn Snapshot>, EngineError> {
        self.inner.snapshot().await
    }
    async fn begin(&self) -> Result<Box<dyn Transaction>, EngineError> {
        Ok(Box::new(Losing {
            inner: self.inner.begin().await?,
            contended: self.contended.clone(),
        }))
    }
    async fn allocate(&self, n: u64) -> Result<u64, EngineError> {
        self.inner.allocate(n).await
    }
    async fn allocate_in(
        &self,
        txn: &mut dyn Transaction,
        n: u64,
    ) -> Result<Option<u64>, EngineError> {
        self.inner.allocate_in(txn, n).await
    }
}

struct Losing {
    inner: Box<dyn Transaction>,
    contended: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl Transaction for Losing {
    async fn get(&mut self, key: &[u8]) -> Result<Option<bytes::Bytes>, EngineError> {
        self.inner.get(key).await
    }
    fn put(&mut self, key: Vec<u8>, value: bytes::Bytes) {
        self.inner.put(key, value);
    }
    fn delete(&mut self, key: Vec<u8>) {
        self.inner.delete(key);
    }
    async fn commit(self: Box<Self>) -> Result<(), EngineError> {
        if self.contended.load(Ordering::SeqCst) {
            return Err(EngineError::Conflict);
        }
        self.inner.commit().await
    }
}

/// A write whose commit conflicts with other writers for the store's whole retry budget
/// gets kube's `429 TooManyRequests` with `Retry-After`, not a 500 nor a 409 (issue 28,
/// item 1: 409 stays for resourceVersion preconditions); nothing of it is stored, and a
/// write succeeds again once the contention ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_contended_past_the_budget_gets_429_with_retry_after() {
    let contended = Arc::new(AtomicBool::new(false));
    let engine = Contended {
        inner: EmbeddedEngine::in_memory().unwrap(),
        contended: contended.clone(),
    };
    let s = Server::over(Arc::new(engine)).await;
    s.create_ns("f").await;
    let coll = "/api/v1/namespaces/f/configmaps";
    contended.store(true, Ordering::SeqCst);
    let started = tokio::time::Instant::now();
    let r = s.req(Method::POST, coll, cm("busy")).await.expect(429);
    assert!(
        started.elapsed() >= wasmgate_storage::CONFLICT_RETRY_BUDGET,
        "retried for the whole budget first: {:?}",
        started.elapsed()
    );
    let st = r.json();
    assert_eq!(
        (
            st["kind"].as_str(),
            st["reason"].as_str(),
            st["code"].as_u64(),
            st["details"]["retryAfterSeconds"].as_u64()
        ),
        (Some("Status"), Some("TooManyRequests"), Some(429), Some(1)),
        "{st}"
    );
    assert_eq!(
        r.headers.get("retry-after").and_then(|v| v.to_str().ok()),
        Some("1")
    );
    // The cause, typed, in the metrics (issue 28, item 2).
    let metrics = s.get("/metrics").await.expect(200).text();
    let counter = |prefix: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|n| n.trim().parse::<u64>().ok())
    };
    // This write, and maybe the server's own background writes meanwhile.
    let failed = counter("wasmgate_storage_failed_writes_total{cause=\"contended\"}");
    assert!(failed.is_some_and(|n| n >= 1), "{metrics}");
    let conflicts = counter("wasmgate_storage_commit_conflicts_total");
    assert!(conflicts.is_some_and(|n| n > 1), "{metrics}");
    contended.store(false, Ordering::SeqCst);
    s.get(&format!("{coll}/busy")).await.expect(404);
    s.req(Method::POST, coll, cm("busy")).await.expect(201);
}
