//! The in-process harness shared by the protocol tests: requests go straight to
//! `ApiServer::handle` over an in-memory (or on-disk) store, no sockets.
#![allow(dead_code, reason = "each test binary uses a part")]
#![allow(clippy::unwrap_used, reason = "test code")]

use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use wasmgate_apiserver::{ApiServer, Options, User};
use wasmgate_storage::{Store, StoreOptions};
use wasmgate_storage_embedded::EmbeddedEngine;

pub struct Server {
    pub api: ApiServer,
}

pub struct Resp {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn expect(self, code: u16) -> Resp {
        assert_eq!(self.status.as_u16(), code, "{}", self.text());
        self
    }
    pub fn reason(&self) -> String {
        self.json()["reason"].as_str().unwrap_or("").to_owned()
    }
}

pub fn admin() -> User {
    User {
        name: "admin".into(),
        groups: vec!["system:masters".into()],
    }
}

impl Server {
    pub async fn new() -> Server {
        Self::with(Options::default()).await
    }

    /// A server over an on-disk store at `path` (reopening it keeps its data). While a
    /// dropped server's background tasks still hold the file, opening is retried for up
    /// to 2 s.
    pub async fn on_disk(path: &std::path::Path) -> Server {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        let engine = loop {
            match EmbeddedEngine::open_path(path) {
                Ok(e) => break std::sync::Arc::new(e),
                Err(e) => {
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "opening {}: {e}",
                        path.display()
                    );
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        };
        let store = Store::open(engine, StoreOptions::default()).await.unwrap();
        Server {
            api: ApiServer::new(store, Options::default()).await.unwrap(),
        }
    }

    pub async fn with(options: Options) -> Server {
        Server::with_store(options, StoreOptions::default()).await
    }

    /// A server over `engine` (a wrapper that injects faults, for example).
    pub async fn over(engine: std::sync::Arc<dyn wasmgate_storage::Engine>) -> Server {
        let store = Store::open(engine, StoreOptions::default()).await.unwrap();
        Server {
            api: ApiServer::new(store, Options::default()).await.unwrap(),
        }
    }

    pub async fn with_store(options: Options, store: StoreOptions) -> Server {
        let engine = std::sync::Arc::new(EmbeddedEngine::in_memory().unwrap());
        let store = Store::open(engine, store).await.unwrap();
        Server {
            api: ApiServer::new(store, options).await.unwrap(),
        }
    }

    pub async fn raw(
        &self,
        method: Method,
        uri: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
        user: Option<User>,
    ) -> Resp {
        let mut b = Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let req = b.body(Full::new(body.into())).unwrap();
        let resp = self.api.handle(req, user).await;
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        Resp {
            status,
            headers,
            body,
        }
    }

    /// A request with a YAML body.
    pub async fn yaml(&self, method: Method, uri: &str, body: &str) -> Resp {
        self.raw(
            method,
            uri,
            &[("content-type", "application/yaml")],
            body.to_owned(),
            Some(admin()),
        )
        .await
    }

    /// A PATCH with the given patch type.
    pub async fn patch(&self, uri: &str, content_type: &str, body: &str) -> Resp {
        self.raw(
            Method::PATCH,
            uri,
            &[("content-type", content_type)],
            body.to_owned(),
            Some(admin()),
        )
        .await
    }

    pub async fn req(&self, method: Method, uri: &str, body: Value) -> Resp {
        let bytes = if body.is_null() {
            Bytes::new()
        } else {
            Bytes::from(body.to_string())
        };
        self.raw(
            method,
            uri,
            &[("content-type", "application/json")],
            bytes,
            Some(admin()),
        )
        .await
    }

    pub async fn get(&self, uri: &str) -> Resp {
        self.req(Method::GET, uri, Value::Null).await
    }

    /// Polls until GET `uri` is 404; panics after `timeout`.
    pub async fn wait_gone(&self, uri: &str, timeout: Duration) {
        let deadline = tokio::time::Instant::now() + timeout;
        while self.get(uri).await.status != StatusCode::NOT_FOUND {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{uri} not removed within {timeout:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub async fn create_ns(&self, name: &str) {
        self.req(
            Method::POST,
            "/api/v1/namespaces",
            json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":name}}),
        )
        .await
        .expect(201);
    }

    pub async fn create_cm(&self, ns: &str, name: &str, labels: Value) -> Value {
        self.req(
            Method::POST,
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":name,"labels":labels},"data":{"k":"v"}}),
        )
        .await
        .expect(201)
        .json()
    }

    /// Opens a watch and returns a reader of its lines.
    pub async fn watch(&self, uri: &str) -> WatchReader {
        let req = Request::builder()
            .uri(uri)
            .body(Full::new(Bytes::new()))
            .unwrap();
        let resp = self.api.handle(req, Some(admin())).await;
        assert_eq!(resp.status(), StatusCode::OK);
        WatchReader {
            body: resp.into_body(),
            buf: Vec::new(),
        }
    }
}

pub struct WatchReader {
    pub body: wasmgate_apiserver::Body,
    pub buf: Vec<u8>,
}

impl WatchReader {
    /// The next event, or None when the stream ended.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                return Some(serde_json::from_slice(&line).unwrap());
            }
            let frame = tokio::time::timeout(Duration::from_secs(10), self.body.frame())
                .await
                .expect("watch event within 10s")?;
            if let Ok(data) = frame.unwrap().into_data() {
                self.buf.extend_from_slice(&data);
            }
        }
    }

    /// Whether nothing arrives within `d`. What does arrive stays buffered for
    /// [`WatchReader::next`].
    pub async fn quiet_for(&mut self, d: Duration) -> bool {
        if self.buf.contains(&b'\n') {
            return false;
        }
        match tokio::time::timeout(d, self.body.frame()).await {
            Err(_) => true,
            Ok(Some(frame)) => {
                if let Ok(data) = frame.unwrap().into_data() {
                    self.buf.extend_from_slice(&data);
                }
                false
            }
            Ok(None) => false,
        }
    }
}

pub fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// `metadata.name` of each item of a list.
pub fn item_names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A watch event's type and its object's name.
pub fn type_and_name(ev: &Value) -> (&str, &str) {
    let name = ev["object"]["metadata"]["name"].as_str();
    match (ev["type"].as_str(), name) {
        (Some(t), Some(n)) => (t, n),
        _ => panic!("not a watch event of a named object: {ev}"),
    }
}
