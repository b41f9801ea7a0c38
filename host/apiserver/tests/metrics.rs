//! kube-apiserver's metrics on `/metrics` (issue 24, item 8): requests of every kind are
//! counted under kube's names, with exactly kube's label set and values, whoever answers
//! them (the handler, authentication, authorization, the in-flight limit); watches,
//! the store and admission too. `OBS-01` (the endpoint, stability classes in the help
//! texts), `OBS-02` (`apiserver_request_total` and the metrics dashboards read).
#![allow(clippy::unwrap_used, reason = "test code")]

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request};
use serde_json::{Value, json};
use wasmgate_apiserver::{Options, User};

mod common;
use common::{Server, admin};

/// One sample of the exposition.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

fn parse(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let (name, labels) = match series.split_once('{') {
                Some((n, rest)) => (n, rest.strip_suffix('}').unwrap()),
                None => (series, ""),
            };
            let mut map = BTreeMap::new();
            let mut rest = labels;
            while !rest.is_empty() {
                let (k, v) = rest.split_once("=\"").unwrap();
                let end = v.find('"').unwrap();
                map.insert(k.to_owned(), v[..end].to_owned());
                rest = v[end + 1..].trim_start_matches(',');
            }
            Sample {
                name: name.to_owned(),
                labels: map,
                value: value.parse().unwrap(),
            }
        })
        .collect()
}

struct Metrics {
    text: String,
    samples: Vec<Sample>,
}

impl Metrics {
    async fn scrape(s: &Server) -> Metrics {
        let text = s.get("/metrics").await.expect(200).text();
        Metrics {
            samples: parse(&text),
            text,
        }
    }

    /// The value of the sample named `name` whose labels are exactly `labels`.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let want: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        self.samples
            .iter()
            .find(|s| s.name == name && s.labels == want)
            .map(|s| s.value)
    }

    fn get(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.value(name, labels)
            .unwrap_or_else(|| panic!("no {name}{labels:?} in\n{}", self.text))
    }

    /// `apiserver_request_total` of a core `v1` resource request.
    fn requests(&self, verb: &str, resource: &str, scope: &str, code: &str) -> Option<f64> {
        self.value(
            "apiserver_request_total",
            &request_labels(verb, "", resource, scope, Some(code)),
        )
    }
}

/// kube's labels of a core `v1` request series (without `code` for the histogram).
fn request_labels<'a>(
    verb: &'a str,
    dry_run: &'a str,
    resource: &'a str,
    scope: &'a str,
    code: Option<&'a str>,
) -> Vec<(&'a str, &'a str)> {
    let mut l = vec![
        ("verb", verb),
        ("dry_run", dry_run),
        ("group", ""),
        ("version", "v1"),
        ("resource", resource),
        ("subresource", ""),
        ("scope", scope),
        ("component", "apiserver"),
    ];
    if let Some(c) = code {
        l.push(("code", c));
    }
    l
}

fn alice() -> User {
    User {
        name: "alice".into(),
        groups: vec!["system:authenticated".into()],
    }
}

const CMS: &str = "/api/v1/namespaces/demo/configmaps";

/// OBS-02: requests of each kind, each answered by a different part of the stack, are
/// counted once each under the series kube gives them, durations in kube's buckets; a
/// path nothing serves makes no series.
#[tokio::test]
async fn obs_02_requests_are_counted_as_kube_counts_them() {
    let s = Server::new().await;
    // The bootstrap's own writes count too (as kube's loopback client's): compare.
    let before = Metrics::scrape(&s).await;
    s.create_ns("demo").await;
    s.create_cm("demo", "a", json!({})).await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"}});
    s.req(Method::POST, &format!("{CMS}?dryRun=All"), cm)
        .await
        .expect(201);
    s.get(CMS).await.expect(200);
    s.get("/api/v1/configmaps").await.expect(200);
    s.get(&format!("{CMS}/missing")).await.expect(404);
    s.raw(Method::GET, CMS, &[], Bytes::new(), Some(alice()))
        .await
        .expect(403);
    s.raw(Method::GET, &format!("{CMS}/a"), &[], Bytes::new(), None)
        .await
        .expect(401);
    s.patch(
        &format!("{CMS}/b?fieldManager=test"),
        "application/apply-patch+yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n",
    )
    .await
    .expect(201);
    s.req(
        Method::DELETE,
        &format!("{CMS}?labelSelector=none"),
        Value::Null,
    )
    .await
    .expect(200);
    s.get("/api/v1/namespaces/demo/nonsense").await.expect(404);
    s.get("/readyz").await.expect(200);

    let m = Metrics::scrape(&s).await;
    let one = Some(1.0);
    assert_eq!(m.requests("POST", "configmaps", "resource", "201"), one);
    assert_eq!(
        m.value(
            "apiserver_request_total",
            &request_labels("POST", "All", "configmaps", "resource", Some("201"))
        ),
        one,
        "a dry run is its own series"
    );
    let created = |m: &Metrics| m.requests("POST", "namespaces", "resource", "201");
    assert_eq!(created(&m).unwrap() - created(&before).unwrap_or(0.0), 1.0);
    assert_eq!(m.requests("LIST", "configmaps", "namespace", "200"), one);
    assert_eq!(m.requests("LIST", "configmaps", "cluster", "200"), one);
    assert_eq!(m.requests("GET", "configmaps", "resource", "404"), one);
    assert_eq!(
        m.requests("LIST", "configmaps", "namespace", "403"),
        one,
        "refused by authorization"
    );
    assert_eq!(
        m.requests("GET", "configmaps", "resource", "401"),
        one,
        "refused by authentication"
    );
    assert_eq!(m.requests("APPLY", "configmaps", "resource", "201"), one);
    assert_eq!(m.requests("DELETE", "configmaps", "namespace", "200"), one);
    assert!(
        !m.text.contains("nonsense"),
        "nothing serves it: no series\n{}",
        m.text
    );
    assert_eq!(
        m.value(
            "apiserver_request_total",
            &[
                ("verb", "GET"),
                ("dry_run", ""),
                ("group", ""),
                ("version", ""),
                ("resource", ""),
                ("subresource", "/readyz"),
                ("scope", ""),
                ("component", ""),
                ("code", "200"),
            ]
        ),
        one,
        "health checks: the path as the subresource, no component"
    );

    // Durations: one observation per request, in kube's buckets.
    let post = request_labels("POST", "", "configmaps", "resource", None);
    assert_eq!(
        m.get("apiserver_request_duration_seconds_count", &post),
        1.0
    );
    let bounds: Vec<f64> = m
        .samples
        .iter()
        .filter(|x| x.name == "apiserver_request_duration_seconds_bucket")
        .filter(|x| post.iter().all(|(k, v)| x.labels[*k] == *v))
        .map(|x| x.labels["le"].parse::<f64>().unwrap())
        .collect();
    let kube = [
        0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
        10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
    ];
    assert_eq!(&bounds[..kube.len()], &kube);
    assert_eq!(bounds.len(), kube.len() + 1, "and +Inf");

    // The store, under etcd's names and kube 1.32's labels.
    let all = s.get("/api/v1/configmaps").await.expect(200).json();
    let configmaps = all["items"].as_array().unwrap().len() as f64;
    assert_eq!(
        m.get("apiserver_storage_objects", &[("resource", "configmaps")]),
        configmaps
    );
    assert!(m.get("apiserver_storage_objects", &[("resource", "namespaces")]) >= 1.0);
    assert_eq!(
        m.get(
            "apiserver_storage_objects",
            &[("resource", "customresourcedefinitions.apiextensions.k8s.io")]
        ),
        1.0,
        "every served resource, by kube's group-resource string (the WasmPlugin CRD)"
    );
    // Only what is stored, each once: no reviews, and events.k8s.io's Events are core's.
    for line in m
        .text
        .lines()
        .filter(|l| l.starts_with("apiserver_storage_objects{"))
    {
        assert!(
            !line.contains("reviews") && !line.contains("events.events.k8s.io"),
            "{line}"
        );
    }
    for op in ["create", "get", "list"] {
        let n = m.get(
            "etcd_request_duration_seconds_count",
            &[("operation", op), ("type", "configmaps")],
        );
        assert!(n >= 1.0, "{op}: {n}");
    }
    assert!(
        m.text
            .contains("# HELP etcd_request_duration_seconds [ALPHA]")
    );

    // OBS-01: kube's stability classes.
    for stable in [
        "apiserver_request",
        "apiserver_request_duration_seconds",
        "apiserver_longrunning_requests",
        "apiserver_current_inflight_requests",
        "apiserver_storage_objects",
    ] {
        assert!(
            m.text.contains(&format!("# HELP {stable} [STABLE] ")),
            "{stable}"
        );
    }
    assert!(
        m.get(
            "apiserver_current_inflight_requests",
            &[("request_kind", "readOnly")]
        ) >= 1.0,
        "the scrape itself"
    );
    assert!(
        m.value(
            "apiserver_current_inflight_requests",
            &[("request_kind", "mutating")]
        )
        .is_some()
    );
}

/// OBS-02: a watch is long-running while it streams (and its watcher registered, its
/// events counted); it is counted in `apiserver_request_total` when it ends.
#[tokio::test]
async fn obs_02_watches_are_long_running_then_counted() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    s.create_cm("demo", "a", json!({})).await;
    let mut w = s.watch(&format!("{CMS}?watch=true")).await;
    assert_eq!(w.next().await.unwrap()["type"], "ADDED");
    let m = Metrics::scrape(&s).await;
    let lr = request_labels("WATCH", "", "configmaps", "namespace", None);
    let lr: Vec<(&str, &str)> = lr.into_iter().filter(|(k, _)| *k != "dry_run").collect();
    assert_eq!(m.get("apiserver_longrunning_requests", &lr), 1.0);
    let kind = [("group", ""), ("version", "v1"), ("kind", "ConfigMap")];
    assert_eq!(m.get("apiserver_registered_watchers", &kind), 1.0);
    assert!(m.get("apiserver_watch_events_total", &kind) >= 1.0);
    assert!(m.get("apiserver_watch_events_sizes_count", &kind) >= 1.0);
    assert_eq!(
        m.requests("WATCH", "configmaps", "namespace", "200"),
        None,
        "counted when it ends"
    );

    drop(w);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let m = loop {
        let m = Metrics::scrape(&s).await;
        if m.value("apiserver_registered_watchers", &kind) == Some(0.0) {
            break m;
        }
        assert!(tokio::time::Instant::now() < deadline, "{}", m.text);
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        m.requests("WATCH", "configmaps", "namespace", "200"),
        Some(1.0)
    );
    assert_eq!(m.get("apiserver_longrunning_requests", &lr), 0.0);
}

/// OBS-02: a request refused by the in-flight limit is counted with its 429 (as kube's
/// `RecordDroppedRequest`); the request holding the place was a mutating one.
#[tokio::test]
async fn obs_02_a_429_is_counted() {
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
    s.get("/api/v1/namespaces").await.expect(429);
    stalled.abort();
    let _ = stalled.await;
    let m = Metrics::scrape(&s).await;
    assert_eq!(
        m.requests("LIST", "namespaces", "cluster", "429"),
        Some(1.0)
    );
    assert_eq!(
        m.get(
            "apiserver_current_inflight_requests",
            &[("request_kind", "mutating")]
        ),
        1.0,
        "the stalled create, within the last second"
    );
}

/// A request body that never finishes: the request holds its in-flight place.
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

/// OBS-02: admission by a webhook is timed as kube's admission step and webhook
/// metrics, `rejected` telling a denial from an admission.
#[tokio::test]
async fn obs_02_admission_steps_and_webhooks_are_timed() {
    let s = Server::new().await;
    let f = wasmgate_fixtures::Webhook::start().await.unwrap();
    s.req(
        Method::POST,
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        json!({"metadata": {"name": "deny"}, "webhooks": [{
            "name": "deny.example.com",
            "clientConfig": f.client_config("/deny-labelled"),
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }]}),
    )
    .await
    .expect(201);
    let cm = |name: &str, deny: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"deny": deny}}});
    let cms = "/api/v1/namespaces/default/configmaps";
    s.req(Method::POST, cms, cm("bad", "yes")).await.expect(403);
    s.req(Method::POST, cms, cm("good", "no")).await.expect(201);
    let m = Metrics::scrape(&s).await;
    for rejected in ["true", "false"] {
        let step = [
            ("type", "validate"),
            ("operation", "CREATE"),
            ("rejected", rejected),
        ];
        assert_eq!(
            m.get(
                "apiserver_admission_step_admission_duration_seconds_count",
                &step
            ),
            1.0
        );
        let hook = [
            ("name", "deny.example.com"),
            ("type", "validating"),
            ("operation", "CREATE"),
            ("rejected", rejected),
        ];
        assert_eq!(
            m.get(
                "apiserver_admission_webhook_admission_duration_seconds_count",
                &hook
            ),
            1.0
        );
    }
    assert_eq!(
        m.get(
            "apiserver_admission_step_admission_duration_seconds_count",
            &[
                ("type", "admit"),
                ("operation", "CREATE"),
                ("rejected", "false")
            ]
        ),
        2.0
    );
    assert!(
        m.text.contains("wasmgate_webhook_calls_total{"),
        "Wasmgate's own beside kube's"
    );
    let bounds: Vec<&str> = m
        .samples
        .iter()
        .filter(|x| x.name == "apiserver_admission_step_admission_duration_seconds_bucket")
        .filter(|x| x.labels["type"] == "validate" && x.labels["rejected"] == "true")
        .map(|x| x.labels["le"].as_str())
        .collect();
    assert_eq!(
        bounds,
        ["0.005", "0.025", "0.1", "0.5", "1.0", "2.5", "+Inf"],
        "kube's buckets"
    );
}
