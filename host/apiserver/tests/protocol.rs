//! In-process protocol tests: requests go straight to `ApiServer::handle` over an
//! in-memory store, no sockets. Each test names the spec items it checks.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::{Value, json};
use wasmgate_apiserver::Options;

mod common;
use common::{Server, admin, item_names, rv};

#[tokio::test]
async fn gap_01_version_and_discovery() {
    let s = Server::new().await;
    let v = s.get("/version").await.expect(200).json();
    assert_eq!(
        (v["major"].as_str(), v["minor"].as_str()),
        (Some("1"), Some("32"))
    );
    let agg =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let r = s
        .raw(Method::GET, "/apis", &[("accept", agg)], "", Some(admin()))
        .await
        .expect(200);
    assert_eq!(
        r.headers["content-type"],
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    let etag = r.headers["etag"].to_str().unwrap().to_owned();
    let r2 = s
        .raw(
            Method::GET,
            "/apis",
            &[("accept", agg), ("if-none-match", &etag)],
            "",
            Some(admin()),
        )
        .await;
    assert_eq!(r2.status, StatusCode::NOT_MODIFIED);
    let legacy = s.get("/api").await.expect(200).json();
    assert_eq!(legacy["kind"], "APIVersions");
    assert_eq!(
        s.get("/api/v1").await.expect(200).json()["kind"],
        "APIResourceList"
    );
    assert_eq!(
        s.get("/apis/coordination.k8s.io").await.expect(200).json()["kind"],
        "APIGroup"
    );
    s.get("/apis/nope.io/v1").await.expect(404);
    let r = s
        .raw(
            Method::GET,
            "/api",
            &[("accept", "application/xml")],
            "",
            Some(admin()),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE);
}

#[tokio::test]
async fn gap_01_openapi_v3_index_and_documents() {
    let s = Server::new().await;
    let index = s.get("/openapi/v3").await.expect(200).json();
    let url = index["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = s.get(&url).await.expect(200);
    assert_eq!(r.headers["cache-control"], "public, immutable");
    assert!(r.json()["components"]["schemas"]["io.k8s.api.core.v1.Secret"].is_object());
    s.get("/openapi/v3/apis/nope/v1").await.expect(404);
}

#[tokio::test]
async fn err_401_without_identity_but_health_is_public() {
    let s = Server::new().await;
    let r = s
        .raw(Method::GET, "/api/v1/namespaces", &[], "", None)
        .await
        .expect(401);
    assert_eq!(r.reason(), "Unauthorized");
    s.raw(Method::GET, "/readyz", &[], "", None)
        .await
        .expect(200);
    s.raw(Method::GET, "/version", &[], "", None)
        .await
        .expect(200);
}

#[tokio::test]
async fn health_01_to_04() {
    let s = Server::new().await;
    let r = s.get("/readyz?verbose").await.expect(200);
    assert!(r.text().contains("[+]storage ok"), "{}", r.text());
    assert!(r.text().ends_with("readyz check passed\n"));
    assert!(
        s.get("/livez?verbose&exclude=storage")
            .await
            .expect(200)
            .text()
            .contains("[+]storage excluded: ok")
    );
    s.get("/livez/ping").await.expect(200);
    s.get("/livez/nope").await.expect(404);
    assert_eq!(s.get("/healthz").await.expect(200).text(), "ok");
    s.api.begin_shutdown();
    s.get("/readyz").await.expect(500);
    s.get("/livez").await.expect(200);
}

#[tokio::test]
async fn meta_crud_round_trip_and_status_codes() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    let cm = s.create_cm("demo", "a", json!({"app":"x"})).await;
    assert!(
        cm["metadata"]["uid"].as_str().unwrap().len() == 36,
        "META-04"
    );
    assert!(
        cm["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap()
            .ends_with('Z'),
        "META-06"
    );
    let got = s
        .get("/api/v1/namespaces/demo/configmaps/a")
        .await
        .expect(200)
        .json();
    assert_eq!(got, cm);
    // ERR-05: AlreadyExists.
    let r = s
        .req(
            Method::POST,
            "/api/v1/namespaces/demo/configmaps",
            json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}),
        )
        .await
        .expect(409);
    assert_eq!(r.reason(), "AlreadyExists");
    // UPD-01: update with the current RV works, with a stale one conflicts.
    let mut upd = got.clone();
    upd["data"]["k"] = json!("w");
    let upd1 = s
        .req(
            Method::PUT,
            "/api/v1/namespaces/demo/configmaps/a",
            upd.clone(),
        )
        .await
        .expect(200)
        .json();
    assert!(rv(&upd1) > rv(&cm));
    let r = s
        .req(Method::PUT, "/api/v1/namespaces/demo/configmaps/a", upd)
        .await
        .expect(409);
    assert_eq!(r.reason(), "Conflict");
    // A no-op update keeps the RV.
    let same = s
        .req(
            Method::PUT,
            "/api/v1/namespaces/demo/configmaps/a",
            upd1.clone(),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(rv(&same), rv(&upd1));
    // Delete returns a success Status; then 404.
    let d = s
        .req(
            Method::DELETE,
            "/api/v1/namespaces/demo/configmaps/a",
            Value::Null,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        (d["kind"].as_str(), d["status"].as_str()),
        (Some("Status"), Some("Success"))
    );
    let r = s
        .get("/api/v1/namespaces/demo/configmaps/a")
        .await
        .expect(404);
    assert_eq!(r.json()["message"], "configmaps \"a\" not found");
    // ERR-04: unknown resource type.
    assert_eq!(
        s.get("/api/v1/namespaces/demo/widgets")
            .await
            .expect(404)
            .reason(),
        "NotFound"
    );
    // 405: POST to an object.
    s.req(
        Method::POST,
        "/api/v1/namespaces/demo/configmaps/a",
        json!({}),
    )
    .await
    .expect(405);
}

#[tokio::test]
async fn meta_02_generate_name_and_name_validation() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    let r = s
        .req(
            Method::POST,
            "/api/v1/namespaces/demo/configmaps",
            json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"web-"}}),
        )
        .await
        .expect(201)
        .json();
    let name = r["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("web-") && name.len() == 9);
    let r = s
        .req(
            Method::POST,
            "/api/v1/namespaces/demo/configmaps",
            json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}),
        )
        .await
        .expect(422);
    let j = r.json();
    assert_eq!(j["reason"], "Invalid");
    assert_eq!(j["details"]["causes"][0]["field"], "metadata.name");
    assert!(
        j["message"]
            .as_str()
            .unwrap()
            .starts_with("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value")
    );
    let r = s.req(Method::POST, "/api/v1/namespaces/demo/configmaps", json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name","labels":{"bad key!":"x"}}})).await.expect(422);
    assert!(
        r.json()["details"]["causes"].as_array().unwrap().len() >= 2,
        "one cause per error: {}",
        r.text()
    );
}

#[tokio::test]
async fn bad_input_gets_status_and_store_is_unchanged() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    let before = s.api.store().revision();
    let post = |body: &'static str, ct: &'static str| {
        let s = &s;
        async move {
            s.raw(
                Method::POST,
                "/api/v1/namespaces/demo/configmaps",
                &[("content-type", ct)],
                body,
                Some(admin()),
            )
            .await
        }
    };
    assert_eq!(
        post("{\"apiVersion\":", "application/json")
            .await
            .expect(400)
            .reason(),
        "BadRequest"
    );
    assert_eq!(
        post("apiVersion: [", "application/yaml")
            .await
            .expect(400)
            .reason(),
        "BadRequest"
    );
    assert_eq!(
        post("k8s\0garbage", "application/vnd.kubernetes.protobuf")
            .await
            .expect(400)
            .reason(),
        "BadRequest"
    );
    assert_eq!(
        post("{}", "text/plain").await.expect(415).reason(),
        "UnsupportedMediaType"
    );
    // Wrong apiVersion/kind for the URL.
    let r = post(
        r#"{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"x"}}"#,
        "application/json",
    )
    .await
    .expect(400);
    assert!(r.text().contains("does not match the expected API version"));
    post(
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}"#,
        "application/json",
    )
    .await
    .expect(400);
    // A missing apiVersion is filled from the URL (issue 7); the kind must still match.
    post(
        r#"{"kind":"Secret","metadata":{"name":"x"}}"#,
        "application/json",
    )
    .await
    .expect(400);
    // Type errors are 400 (FV-05).
    let r = post(
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":1}}"#,
        "application/json",
    )
    .await
    .expect(400);
    assert!(r.text().contains("cannot unmarshal number"), "{}", r.text());
    // resourceVersion set on create.
    post(
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","resourceVersion":"5"}}"#,
        "application/json",
    )
    .await
    .expect(400);
    // Namespace mismatch.
    post(
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"other"}}"#,
        "application/json",
    )
    .await
    .expect(400);
    // 413 (> 3 MiB).
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"k":"{}"}}}}"#,
        "x".repeat(3 * 1024 * 1024 + 10)
    );
    let r = s
        .raw(
            Method::POST,
            "/api/v1/namespaces/demo/configmaps",
            &[("content-type", "application/json")],
            big,
            Some(admin()),
        )
        .await
        .expect(413);
    assert_eq!(r.reason(), "RequestEntityTooLarge");
    // 406: nothing acceptable (a Table has no protobuf form; ENC-04 protobuf itself is
    // tested in protobuf.rs).
    let r = s
        .raw(
            Method::GET,
            "/api/v1/namespaces/demo/configmaps",
            &[(
                "accept",
                "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1",
            )],
            "",
            Some(admin()),
        )
        .await
        .expect(406);
    assert_eq!(r.reason(), "NotAcceptable");
    // Unknown query parameter values.
    s.get("/api/v1/namespaces/demo/configmaps?limit=abc")
        .await
        .expect(400);
    s.get("/api/v1/namespaces/demo/configmaps?watch=maybe")
        .await
        .expect(400);
    s.get("/api/v1/namespaces/demo/configmaps?labelSelector=a%20in")
        .await
        .expect(400);
    s.get("/api/v1/namespaces/demo/configmaps?fieldSelector=spec.x%3Dy")
        .await
        .expect(400);
    s.req(
        Method::POST,
        "/api/v1/namespaces/demo/configmaps?fieldValidation=Maybe",
        json!({}),
    )
    .await
    .expect(400);
    s.req(
        Method::POST,
        "/api/v1/namespaces/demo/configmaps?dryRun=Some",
        json!({}),
    )
    .await
    .expect(400);
    assert_eq!(s.api.store().revision(), before, "nothing was written");
}

#[tokio::test]
async fn fv_01_to_04_field_validation_modes() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"v"},"bogusField":1,"data":{"a":"1"},"data":{"a":"2"}}"#;
    let post = |q: &'static str| {
        let s = &s;
        async move {
            s.raw(
                Method::POST,
                &format!("/api/v1/namespaces/demo/configmaps{q}"),
                &[("content-type", "application/json")],
                body,
                Some(admin()),
            )
            .await
        }
    };
    let r = post("?fieldValidation=Strict").await.expect(400);
    assert!(
        r.text().contains(r#"unknown field \"bogusField\""#),
        "{}",
        r.text()
    );
    assert!(
        r.text().contains(r#"duplicate field \"data\""#),
        "{}",
        r.text()
    );
    let r = post("?fieldValidation=Warn").await.expect(201);
    let warnings: Vec<_> = r
        .headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].starts_with("299 - \""));
    assert!(r.json().get("bogusField").is_none(), "FV-06: pruned");
    assert_eq!(r.json()["data"]["a"], "2", "last duplicate wins");
    s.req(
        Method::DELETE,
        "/api/v1/namespaces/demo/configmaps/v",
        Value::Null,
    )
    .await
    .expect(200);
    let r = post("?fieldValidation=Ignore").await.expect(201);
    assert!(r.headers.get("warning").is_none());
}

#[tokio::test]
async fn dry_01_to_03_dry_run_writes_nothing() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    let before = s.api.store().revision();
    let r = s
        .req(
            Method::POST,
            "/api/v1/namespaces/demo/configmaps?dryRun=All",
            json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"}}),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(r["metadata"]["name"], "d");
    s.get("/api/v1/namespaces/demo/configmaps/d")
        .await
        .expect(404);
    s.create_cm("demo", "e", json!({})).await;
    let mid = s.api.store().revision();
    // A PATCH with a non-patch Content-Type is refused before anything runs.
    s.req(
        Method::PATCH,
        "/api/v1/namespaces/demo/configmaps/e?dryRun=All",
        json!({"data":{"k":"changed"}}),
    )
    .await
    .expect(415);
    let r = s
        .patch(
            "/api/v1/namespaces/demo/configmaps/e?dryRun=All",
            "application/merge-patch+json",
            r#"{"data":{"k":"changed"}}"#,
        )
        .await
        .expect(200);
    assert_eq!(r.json()["data"]["k"], "changed");
    let r = s
        .raw(
            Method::DELETE,
            "/api/v1/namespaces/demo/configmaps/e",
            &[("content-type", "application/json")],
            r#"{"dryRun":["All"]}"#,
            Some(admin()),
        )
        .await
        .expect(200);
    assert_eq!(r.json()["status"], "Success");
    assert_eq!(
        s.get("/api/v1/namespaces/demo/configmaps/e")
            .await
            .expect(200)
            .json()["data"]["k"],
        "v"
    );
    assert_eq!(s.api.store().revision(), mid);
    assert!(mid > before);
}

#[tokio::test]
async fn patch_01_to_04_patch_types() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    let cm = s.create_cm("demo", "p", json!({"a":"1"})).await;
    const P: &str = "/api/v1/namespaces/demo/configmaps/p";
    let r = s
        .patch(
            P,
            "application/json-patch+json",
            r#"[{"op":"test","path":"/data/k","value":"v"},{"op":"add","path":"/data/j","value":"1"}]"#,
        )
        .await
        .expect(200);
    assert_eq!(r.json()["data"]["j"], "1");
    let r = s.patch(P, "application/json-patch+json", r#"[{"op":"test","path":"/data/k","value":"nope"},{"op":"add","path":"/data/z","value":"1"}]"#).await.expect(422);
    assert_eq!(r.reason(), "Invalid");
    let r = s
        .patch(
            P,
            "application/merge-patch+json",
            r#"{"metadata":{"labels":{"a":null,"b":"2"}}}"#,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r["metadata"]["labels"], json!({"b":"2"}));
    let r = s
        .patch(
            P,
            "application/strategic-merge-patch+json",
            r#"{"data":{"k":null,"s":"1"},"metadata":{"finalizers":["x.io/f"]}}"#,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r["data"], json!({"j":"1","s":"1"}));
    assert_eq!(r["metadata"]["finalizers"], json!(["x.io/f"]));
    // A patch carrying a stale resourceVersion is a precondition (409).
    let stale = format!(
        r#"{{"metadata":{{"resourceVersion":"{}"}},"data":{{"q":"1"}}}}"#,
        rv(&cm)
    );
    assert_eq!(
        s.patch(P, "application/merge-patch+json", &stale)
            .await
            .expect(409)
            .reason(),
        "Conflict"
    );
    // A no-op patch does not bump the resourceVersion.
    let cur = s.get("/api/v1/namespaces/demo/configmaps/p").await.json();
    let r = s
        .patch(P, "application/merge-patch+json", r#"{"data":{"s":"1"}}"#)
        .await
        .expect(200)
        .json();
    assert_eq!(rv(&r), rv(&cur));
    // Apply (`SSA-02`, `SSA-16`): a field manager is required (422), and the body must be
    // an object of this endpoint's type (400).
    let no_manager = s
        .patch(P, "application/apply-patch+yaml", "{}")
        .await
        .expect(422)
        .json();
    assert_eq!(
        no_manager["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    let wrong_type = s
        .patch(
            &format!("{P}?fieldManager=t"),
            "application/apply-patch+yaml",
            "{}",
        )
        .await
        .expect(400)
        .json();
    assert_eq!(wrong_type["message"], "invalid object type: /, Kind=");
    s.patch(P, "application/json", "{}").await.expect(415);
    s.patch(P, "application/merge-patch+json", "[1]")
        .await
        .expect(400);
    assert_eq!(
        s.req(
            Method::PATCH,
            "/api/v1/namespaces/demo/configmaps/missing",
            json!({})
        )
        .await
        .status,
        415
    );
    s.patch(P, "application/merge-patch+json", r#"{"data":{"bad":1}}"#)
        .await
        .expect(400);
}

#[tokio::test]
async fn del_01_02_finalizers_hold_deletion() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    s.req(Method::POST, "/api/v1/namespaces/demo/configmaps", json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"f","finalizers":["example.com/hold"]}})).await.expect(201);
    let r = s
        .req(
            Method::DELETE,
            "/api/v1/namespaces/demo/configmaps/f",
            Value::Null,
        )
        .await
        .expect(200)
        .json();
    assert!(r["metadata"]["deletionTimestamp"].is_string(), "META-08");
    assert_eq!(r["kind"], "ConfigMap");
    let cur = s
        .get("/api/v1/namespaces/demo/configmaps/f")
        .await
        .expect(200)
        .json();
    // DEL-02: no new finalizers while deleting.
    let r = s
        .patch(
            "/api/v1/namespaces/demo/configmaps/f",
            "application/merge-patch+json",
            r#"{"metadata":{"finalizers":["example.com/hold","example.com/more"]}}"#,
        )
        .await
        .expect(422);
    assert!(r.text().contains("no new finalizers"));
    // Removing the last finalizer removes the object.
    let mut w = s
        .watch(&format!(
            "/api/v1/namespaces/demo/configmaps?watch=1&resourceVersion={}",
            rv(&cur)
        ))
        .await;
    s.patch(
        "/api/v1/namespaces/demo/configmaps/f",
        "application/merge-patch+json",
        r#"{"metadata":{"finalizers":null}}"#,
    )
    .await
    .expect(200);
    s.get("/api/v1/namespaces/demo/configmaps/f")
        .await
        .expect(404);
    assert_eq!(w.next().await.unwrap()["type"], "DELETED");
}

#[tokio::test]
async fn gap_06_delete_preconditions() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    let cm = s.create_cm("demo", "c", json!({})).await;
    let r = s
        .raw(
            Method::DELETE,
            "/api/v1/namespaces/demo/configmaps/c",
            &[("content-type", "application/json")],
            r#"{"preconditions":{"uid":"nope"}}"#,
            Some(admin()),
        )
        .await
        .expect(409);
    assert!(
        r.text()
            .contains("Precondition failed: UID in precondition")
    );
    let body = format!(r#"{{"preconditions":{{"resourceVersion":"{}"}}}}"#, rv(&cm));
    s.raw(
        Method::DELETE,
        "/api/v1/namespaces/demo/configmaps/c",
        &[("content-type", "application/json")],
        body,
        Some(admin()),
    )
    .await
    .expect(200);
    s.raw(
        Method::DELETE,
        "/api/v1/namespaces/demo/configmaps/c?propagationPolicy=Sometimes",
        &[],
        "",
        Some(admin()),
    )
    .await
    .expect(400);
}

#[tokio::test]
async fn url_10_namespace_deletion_cascades() {
    let s = Server::with(Options {
        namespace_resync: Duration::from_millis(100),
        ..Options::default()
    })
    .await;
    s.create_ns("gone").await;
    s.create_cm("gone", "a", json!({})).await;
    s.req(
        Method::POST,
        "/api/v1/namespaces/gone/secrets",
        json!({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"a":"b"}}),
    )
    .await
    .expect(201);
    let r = s
        .req(Method::DELETE, "/api/v1/namespaces/gone", Value::Null)
        .await
        .expect(200)
        .json();
    assert_eq!(r["status"]["phase"], "Terminating");
    // No new content in a terminating namespace (or it is gone already: NotFound).
    let r = s
        .req(
            Method::POST,
            "/api/v1/namespaces/gone/configmaps",
            json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late"}}),
        )
        .await;
    assert!(
        r.status == StatusCode::FORBIDDEN || r.status == StatusCode::NOT_FOUND,
        "{}",
        r.text()
    );
    s.wait_gone("/api/v1/namespaces/gone", Duration::from_secs(10))
        .await;
    assert_eq!(
        s.get("/api/v1/namespaces/gone/configmaps").await.json()["items"],
        json!([])
    );
    assert_eq!(
        s.req(
            Method::DELETE,
            "/api/v1/namespaces/kube-system",
            Value::Null
        )
        .await
        .expect(403)
        .reason(),
        "Forbidden"
    );
    s.req(
        Method::POST,
        "/api/v1/namespaces/nowhere/configmaps",
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}),
    )
    .await
    .expect(404);
}

#[tokio::test]
async fn rv_03_to_09_get_and_list_resource_versions() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    let a = s.create_cm("demo", "a", json!({})).await;
    let list = s
        .get("/api/v1/namespaces/demo/configmaps")
        .await
        .expect(200)
        .json();
    assert_eq!(list["kind"], "ConfigMapList");
    let list_rv: u64 = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(list_rv >= rv(&a));
    s.create_cm("demo", "b", json!({})).await;
    // Exact shows the past (RV-07), NotOlderThan the present.
    let exact = s.get(&format!("/api/v1/namespaces/demo/configmaps?resourceVersion={list_rv}&resourceVersionMatch=Exact")).await.expect(200).json();
    assert_eq!(exact["items"].as_array().unwrap().len(), 1);
    assert_eq!(exact["metadata"]["resourceVersion"], list_rv.to_string());
    let not_older = s
        .get(&format!(
            "/api/v1/namespaces/demo/configmaps?resourceVersion={list_rv}"
        ))
        .await
        .expect(200)
        .json();
    assert_eq!(not_older["items"].as_array().unwrap().len(), 2);
    // RV-05 invalid combinations → 400.
    s.get("/api/v1/namespaces/demo/configmaps?resourceVersionMatch=Exact")
        .await
        .expect(400);
    s.get("/api/v1/namespaces/demo/configmaps?resourceVersionMatch=Exact&resourceVersion=0")
        .await
        .expect(400);
    // RV-09: too new → 504 with Retry-After.
    let fast = Server::with(Options {
        resource_version_wait: Duration::from_millis(50),
        ..Options::default()
    })
    .await;
    let r = fast
        .get("/api/v1/namespaces?resourceVersion=999999")
        .await
        .expect(504);
    assert!(r.text().contains("Too large resource version"));
    assert_eq!(r.headers["retry-after"], "1");
    fast.get("/api/v1/namespaces/default?resourceVersion=999999")
        .await
        .expect(504);
    fast.get("/api/v1/namespaces?resourceVersion=999999&resourceVersionMatch=Exact")
        .await
        .expect(504);
    // Any (0) and a get at a known RV work.
    s.get("/api/v1/namespaces/demo/configmaps/a?resourceVersion=0")
        .await
        .expect(200);
    s.get(&format!(
        "/api/v1/namespaces/demo/configmaps/a?resourceVersion={}",
        rv(&a)
    ))
    .await
    .expect(200);
}

#[tokio::test]
async fn rv_08_exact_list_below_compaction_is_410() {
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
            "/api/v1/namespaces/demo/configmaps?resourceVersion={}&resourceVersionMatch=Exact",
            rv(&a)
        ))
        .await
        .expect(410);
    assert_eq!(r.reason(), "Expired");
}

#[tokio::test]
async fn chunk_01_to_06_pages_share_one_snapshot() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    for i in 0..7 {
        s.create_cm("demo", &format!("c{i}"), json!({})).await;
    }
    let first = s
        .get("/api/v1/namespaces/demo/configmaps?limit=3")
        .await
        .expect(200)
        .json();
    assert_eq!(first["items"].as_array().unwrap().len(), 3);
    assert_eq!(first["metadata"]["remainingItemCount"], 4, "CHUNK-04");
    let snapshot = first["metadata"]["resourceVersion"].clone();
    s.req(
        Method::DELETE,
        "/api/v1/namespaces/demo/configmaps/c5",
        Value::Null,
    )
    .await
    .expect(200);
    s.create_cm("demo", "c9", json!({})).await;
    let mut names = item_names(&first);
    let mut token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    loop {
        let page = s
            .get(&format!(
                "/api/v1/namespaces/demo/configmaps?limit=3&continue={token}"
            ))
            .await
            .expect(200)
            .json();
        assert_eq!(page["metadata"]["resourceVersion"], snapshot, "CHUNK-02");
        names.extend(item_names(&page));
        match page["metadata"]["continue"].as_str() {
            Some(t) if !t.is_empty() => token = t.to_owned(),
            _ => {
                assert!(page["metadata"].get("remainingItemCount").is_none());
                break;
            }
        }
    }
    assert_eq!(names, (0..7).map(|i| format!("c{i}")).collect::<Vec<_>>());
    // CHUNK-05: continue with a non-zero resourceVersion is 400; garbage tokens are 400.
    s.get(&format!(
        "/api/v1/namespaces/demo/configmaps?limit=3&continue={token}&resourceVersion=5"
    ))
    .await
    .expect(400);
    s.get("/api/v1/namespaces/demo/configmaps?limit=3&continue=notatoken")
        .await
        .expect(400);
    // CHUNK-03/06: a token whose revision is compacted is 410.
    s.api
        .store()
        .compact(s.api.store().revision())
        .await
        .unwrap();
    let r = s
        .get(&format!(
            "/api/v1/namespaces/demo/configmaps?limit=3&continue={token}"
        ))
        .await
        .expect(410);
    assert_eq!(r.reason(), "Expired");
    // Selectors: remainingItemCount omitted.
    let sel = s
        .get("/api/v1/namespaces/demo/configmaps?limit=2&labelSelector=x%21%3Dy")
        .await
        .expect(200)
        .json();
    assert!(sel["metadata"].get("remainingItemCount").is_none());
    assert!(sel["metadata"]["continue"].is_string());
}

#[tokio::test]
async fn gap_04_label_and_field_selectors() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    s.create_cm("demo", "a", json!({"app":"a","tier":"web"}))
        .await;
    s.create_cm("demo", "b", json!({"app":"b"})).await;
    s.create_cm("demo", "c", json!({})).await;
    let q = |sel: &str| {
        format!(
            "/api/v1/namespaces/demo/configmaps?labelSelector={}",
            sel.replace(' ', "%20")
                .replace('=', "%3D")
                .replace('!', "%21")
        )
    };
    assert_eq!(
        item_names(&s.get(&q("app in (a,b)")).await.json()),
        vec!["a", "b"]
    );
    assert_eq!(
        item_names(&s.get(&q("app notin (a)")).await.json()),
        vec!["b", "c"]
    );
    assert_eq!(item_names(&s.get(&q("!app")).await.json()), vec!["c"]);
    assert_eq!(
        item_names(&s.get(&q("app,tier=web")).await.json()),
        vec!["a"]
    );
    assert_eq!(
        item_names(&s.get(&q("app!=a")).await.json()),
        vec!["b", "c"]
    );
    assert_eq!(
        item_names(
            &s.get("/api/v1/namespaces/demo/configmaps?fieldSelector=metadata.name%3Db")
                .await
                .json()
        ),
        vec!["b"]
    );
    assert_eq!(
        item_names(
            &s.get("/api/v1/configmaps?fieldSelector=metadata.namespace%3Ddemo,metadata.name!%3Db")
                .await
                .json()
        ),
        vec!["a", "c"]
    );
    // Events: involvedObject.* as `kubectl describe` sends them.
    s.req(Method::POST, "/api/v1/namespaces/demo/events", json!({"apiVersion":"v1","kind":"Event","metadata":{"name":"e1"},"involvedObject":{"kind":"ConfigMap","name":"a","namespace":"demo","uid":"u1"},"reason":"Tested","message":"hi","type":"Normal"})).await.expect(201);
    let r = s.get("/api/v1/namespaces/demo/events?fieldSelector=involvedObject.name%3Da,involvedObject.namespace%3Ddemo,involvedObject.kind%3DConfigMap,involvedObject.uid%3Du1&limit=500").await.expect(200);
    assert_eq!(item_names(&r.json()), vec!["e1"]);
    let r = s
        .get("/api/v1/namespaces/demo/events?fieldSelector=involvedObject.uid%3Dother")
        .await
        .expect(200);
    assert!(item_names(&r.json()).is_empty());
}

#[tokio::test]
async fn table_01_04_and_gap_07_table_output() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    s.create_cm("demo", "t", json!({"a":"b"})).await;
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
    let r = s
        .raw(
            Method::GET,
            "/api/v1/namespaces/demo/configmaps?limit=500",
            &[("accept", accept)],
            "",
            Some(admin()),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        (r["kind"].as_str(), r["apiVersion"].as_str()),
        (Some("Table"), Some("meta.k8s.io/v1"))
    );
    let cols: Vec<&str> = r["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols, vec!["Name", "Data", "Age"]);
    assert_eq!(r["rows"][0]["cells"][0], "t");
    assert_eq!(r["rows"][0]["cells"][1], 1);
    assert_eq!(r["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(
        r["rows"][0]["object"]["metadata"]["labels"],
        json!({"a":"b"})
    );
    let b1 = "application/json;as=Table;g=meta.k8s.io;v=v1beta1";
    let r = s
        .raw(
            Method::GET,
            "/api/v1/namespaces/demo/configmaps/t?includeObject=Object",
            &[("accept", b1)],
            "",
            Some(admin()),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(r["rows"][0]["object"]["kind"], "ConfigMap");
    s.raw(
        Method::GET,
        "/api/v1/namespaces/demo/configmaps?includeObject=All",
        &[("accept", accept)],
        "",
        Some(admin()),
    )
    .await
    .expect(400);
    let pom = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
    let r = s
        .raw(
            Method::GET,
            "/api/v1/namespaces/demo/configmaps",
            &[("accept", pom)],
            "",
            Some(admin()),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r["kind"], "PartialObjectMetadataList");
    let yaml = s
        .raw(
            Method::GET,
            "/api/v1/namespaces/demo/configmaps/t",
            &[("accept", "application/yaml")],
            "",
            Some(admin()),
        )
        .await
        .expect(200);
    assert!(
        yaml.text().contains("kind: ConfigMap"),
        "ENC-03: {}",
        yaml.text()
    );
}

#[tokio::test]
async fn enc_03_yaml_request_bodies() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    let body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yaml-made\ndata:\n  k: v\n";
    let r = s
        .raw(
            Method::POST,
            "/api/v1/namespaces/demo/configmaps",
            &[("content-type", "application/yaml")],
            body,
            Some(admin()),
        )
        .await
        .expect(201);
    assert_eq!(r.json()["data"]["k"], "v");
}

#[tokio::test]
async fn deletecollection_respects_selectors() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    s.create_cm("demo", "a", json!({"del":"yes"})).await;
    s.create_cm("demo", "b", json!({"del":"yes"})).await;
    s.create_cm("demo", "c", json!({})).await;
    let r = s
        .req(
            Method::DELETE,
            "/api/v1/namespaces/demo/configmaps?labelSelector=del%3Dyes",
            Value::Null,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r["kind"], "ConfigMapList");
    assert_eq!(r["items"].as_array().unwrap().len(), 2);
    let left = s.get("/api/v1/namespaces/demo/configmaps").await.json();
    assert_eq!(left["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn builtin_secret_namespace_and_lease_strategies() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    let ns = s.get("/api/v1/namespaces/demo").await.json();
    assert_eq!(ns["status"]["phase"], "Active");
    assert_eq!(
        ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "demo"
    );
    let sec = s.req(Method::POST, "/api/v1/namespaces/demo/secrets", json!({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"p":"x"}})).await.expect(201).json();
    assert_eq!(
        (sec["type"].as_str(), sec["data"]["p"].as_str()),
        (Some("Opaque"), Some("eA=="))
    );
    let r = s.req(Method::POST, "/api/v1/namespaces/demo/secrets", json!({"apiVersion":"v1","kind":"Secret","metadata":{"name":"t"},"data":{"p":"not base64!"}})).await.expect(400);
    assert!(r.text().contains("base64"), "{}", r.text());
    let r = s.req(Method::POST, "/apis/coordination.k8s.io/v1/namespaces/demo/leases", json!({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"leaseDurationSeconds":0}})).await.expect(422);
    assert_eq!(
        r.json()["details"]["causes"][0]["field"],
        "spec.leaseDurationSeconds"
    );
    // Namespace status is set only through /status.
    let mut upd = ns.clone();
    upd["status"]["phase"] = json!("Terminating");
    let r = s
        .req(Method::PUT, "/api/v1/namespaces/demo", upd)
        .await
        .expect(200)
        .json();
    assert_eq!(r["status"]["phase"], "Active");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_03_concurrent_merge_patches_without_a_resource_version_all_apply() {
    let s = std::sync::Arc::new(Server::new().await);
    s.create_ns("demo").await;
    s.create_cm("demo", "busy", json!({})).await;
    let mut tasks = Vec::new();
    for i in 0..20 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let body = format!(r#"{{"metadata":{{"labels":{{"l{i}":"x"}}}}}}"#);
            s.patch(
                "/api/v1/namespaces/demo/configmaps/busy",
                "application/merge-patch+json",
                &body,
            )
            .await
            .status
        }));
    }
    for t in tasks {
        assert_eq!(
            t.await.unwrap(),
            StatusCode::OK,
            "patches without a resourceVersion never conflict"
        );
    }
    let got = s
        .get("/api/v1/namespaces/demo/configmaps/busy")
        .await
        .json();
    assert_eq!(got["metadata"]["labels"].as_object().unwrap().len(), 20);
}

#[tokio::test]
async fn gzip_01_large_lists_are_compressed_when_accepted() {
    use std::io::Read as _;
    let s = Server::new().await;
    s.create_ns("demo").await;
    let blob = "x".repeat(40 * 1024);
    for i in 0..4 {
        s.req(Method::POST, "/api/v1/namespaces/demo/configmaps", json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":format!("big{i}")},"data":{"blob":blob}})).await.expect(201);
    }
    let r = s
        .raw(
            Method::GET,
            "/api/v1/namespaces/demo/configmaps",
            &[("accept-encoding", "gzip")],
            "",
            Some(admin()),
        )
        .await
        .expect(200);
    assert_eq!(r.headers["content-encoding"], "gzip");
    let mut out = String::new();
    flate2::read::GzDecoder::new(&r.body[..])
        .read_to_string(&mut out)
        .unwrap();
    let list: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 4);
    let plain = s
        .get("/api/v1/namespaces/demo/configmaps")
        .await
        .expect(200);
    assert!(plain.headers.get("content-encoding").is_none());
    let small = s
        .raw(
            Method::GET,
            "/api/v1/namespaces",
            &[("accept-encoding", "gzip")],
            "",
            Some(admin()),
        )
        .await
        .expect(200);
    assert!(
        small.headers.get("content-encoding").is_none(),
        "small responses stay plain"
    );
}

#[tokio::test]
async fn url_10_updates_to_a_terminating_namespace_do_not_skip_content_cleanup() {
    let s = Server::with(Options {
        namespace_resync: Duration::from_millis(50),
        ..Options::default()
    })
    .await;
    s.create_ns("t").await;
    s.req(Method::POST, "/api/v1/namespaces/t/configmaps", json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","finalizers":["example.com/hold"]}})).await.expect(201);
    s.req(Method::DELETE, "/api/v1/namespaces/t", Value::Null)
        .await
        .expect(200);
    // Any write to the terminating namespace keeps it (its spec.finalizers still hold it).
    let r = s
        .patch(
            "/api/v1/namespaces/t",
            "application/merge-patch+json",
            r#"{"metadata":{"labels":{"x":"y"}}}"#,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r["status"]["phase"], "Terminating");
    s.get("/api/v1/namespaces/t").await.expect(200);
    s.get("/api/v1/namespaces/t/configmaps/held")
        .await
        .expect(200);
    // Releasing the content lets the namespace go, content first.
    s.patch(
        "/api/v1/namespaces/t/configmaps/held",
        "application/merge-patch+json",
        r#"{"metadata":{"finalizers":null}}"#,
    )
    .await
    .expect(200);
    s.wait_gone("/api/v1/namespaces/t", Duration::from_secs(10))
        .await;
    s.get("/api/v1/namespaces/t/configmaps/held")
        .await
        .expect(404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_10_creates_racing_a_namespace_deletion_leave_nothing_behind() {
    let s = std::sync::Arc::new(
        Server::with(Options {
            namespace_resync: Duration::from_millis(50),
            ..Options::default()
        })
        .await,
    );
    for round in 0..5 {
        let ns = format!("race{round}");
        s.create_ns(&ns).await;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut tasks = Vec::new();
        for t in 0..8 {
            let (s, stop, ns) = (s.clone(), stop.clone(), ns.clone());
            tasks.push(tokio::spawn(async move {
                let mut i = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let r = s.req(Method::POST, &format!("/api/v1/namespaces/{ns}/configmaps"), json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":format!("c{t}-{i}")}})).await;
                    assert!([201, 403, 404].contains(&r.status.as_u16()), "{}", r.text());
                    i += 1;
                    // A refused create completes without awaiting anything: let others run.
                    tokio::task::yield_now().await;
                }
            }));
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
        s.req(
            Method::DELETE,
            &format!("/api/v1/namespaces/{ns}"),
            Value::Null,
        )
        .await
        .expect(200);
        s.wait_gone(&format!("/api/v1/namespaces/{ns}"), Duration::from_secs(15))
            .await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in tasks {
            t.await.unwrap();
        }
        let left = s
            .api
            .store()
            .list(
                &format!("core/configmaps/{ns}/"),
                wasmgate_storage::ReadAt::Latest,
                None,
                0,
                false,
            )
            .await
            .unwrap();
        assert!(
            left.items.is_empty(),
            "round {round}: {} objects left in a deleted namespace",
            left.items.len()
        );
    }
}

#[tokio::test]
async fn controllers_do_not_rewrite_what_they_already_wrote() {
    let s = Server::with(Options {
        namespace_resync: Duration::from_millis(50),
        ..Options::default()
    })
    .await;
    s.req(Method::POST, "/api/v1/namespaces", json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kept","finalizers":["example.com/keep"]}})).await.expect(201);
    s.req(Method::DELETE, "/api/v1/namespaces/kept", Value::Null)
        .await
        .expect(200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = s.api.store().revision();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        s.api.store().revision(),
        before,
        "no writes while nothing changes"
    );
    s.get("/api/v1/namespaces/kept").await.expect(200);
}

#[tokio::test]
async fn patch_02_json_patch_copies_are_bounded() {
    let s = Server::new().await;
    s.create_ns("demo").await;
    s.create_cm("demo", "bomb", json!({})).await;
    let mut ops: Vec<Value> =
        vec![json!({"op":"add","path":"/data","value":{"a":"x".repeat(1000)}})];
    for i in 0..30 {
        ops.push(json!({"op":"copy","from":"/data","path":format!("/data/n{i}")}));
    }
    let started = std::time::Instant::now();
    let r = s
        .patch(
            "/api/v1/namespaces/demo/configmaps/bomb",
            "application/json-patch+json",
            &Value::Array(ops).to_string(),
        )
        .await;
    assert!(
        r.status == StatusCode::PAYLOAD_TOO_LARGE || r.status == StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        r.text()
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    let many: Vec<Value> = (0..10_001)
        .map(|_| json!({"op":"test","path":"/kind","value":"ConfigMap"}))
        .collect();
    s.patch(
        "/api/v1/namespaces/demo/configmaps/bomb",
        "application/json-patch+json",
        &Value::Array(many).to_string(),
    )
    .await
    .expect(413);
}
