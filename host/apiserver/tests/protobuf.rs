//! Protobuf responses, in process (issue 24 item 7): content negotiation (ENC-02), objects,
//! lists, Status and watch streams of built-in kinds in `application/vnd.kubernetes.protobuf`
//! (ENC-04), and none for custom resources: 406 for protobuf alone, the JSON fallback when
//! the client lists it (ENC-05). Replies are decoded with the request-body decoder of
//! `wasmgate-apimachinery` and compared with the same reads in JSON.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use wasmgate_apimachinery::protobuf;

mod common;
use common::{Resp, Server, admin};

const PB: &str = "application/vnd.kubernetes.protobuf";
/// client-go's Accept for a client configured with protobuf.
const PB_THEN_JSON: &str = "application/vnd.kubernetes.protobuf, application/json";
const CM: &str = "/api/v1/namespaces/demo/configmaps";

async fn get(s: &Server, uri: &str, accept: &str) -> Resp {
    s.raw(Method::GET, uri, &[("accept", accept)], "", Some(admin()))
        .await
}

fn content_type(r: &Resp) -> &str {
    r.headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// The reply as protobuf, decoded (panics unless it is protobuf).
fn decoded(r: &Resp) -> Value {
    assert_eq!(content_type(r), PB, "{}", r.text());
    assert!(
        r.body.starts_with(b"k8s\0"),
        "{:?}",
        &r.body[..r.body.len().min(16)]
    );
    protobuf::decode(&r.body).unwrap_or_else(|e| panic!("{e}"))
}

/// Every member of `json` (what the JSON reply shows) is in `pb` (what the protobuf
/// reply decodes to, with Go's zero values besides), recursively.
#[track_caller]
fn assert_shows(json: &Value, pb: &Value, path: &str) {
    match (json, pb) {
        (Value::Object(j), Value::Object(p)) => {
            for (k, v) in j {
                let here = format!("{path}.{k}");
                match p.get(k) {
                    Some(pv) => assert_shows(v, pv, &here),
                    None => assert!(v.is_null(), "{here} missing from the protobuf reply"),
                }
            }
        }
        (Value::Array(j), Value::Array(p)) => {
            assert_eq!(j.len(), p.len(), "{path}");
            for (i, (a, b)) in j.iter().zip(p).enumerate() {
                assert_shows(a, b, &format!("{path}[{i}]"));
            }
        }
        (j, p) => assert_eq!(j, p, "{path}"),
    }
}

async fn with_configmaps(n: usize) -> Server {
    let s = Server::new().await;
    s.create_ns("demo").await;
    for i in 0..n {
        s.req(
            Method::POST,
            CM,
            json!({"apiVersion":"v1","kind":"ConfigMap",
                "metadata":{"name":format!("cm{i}"),"labels":{"i":i.to_string(),"app":"web"},"annotations":{"a":"b"}},
                "data":{"k":"v","z":""},"binaryData":{"b":"AAEC"}}),
        )
        .await
        .expect(201);
    }
    s
}

/// ENC-04: a GET in protobuf is the object's protobuf encoding: `k8s\0`, the envelope with
/// apiVersion and kind, the ConfigMap message; it decodes to what the JSON GET shows.
#[tokio::test]
async fn enc04_get_builtin_object() {
    let s = with_configmaps(1).await;
    let json = s.get(&format!("{CM}/cm0")).await.expect(200).json();
    let r = get(&s, &format!("{CM}/cm0"), PB).await.expect(200);
    let pb = decoded(&r);
    assert_eq!(pb["apiVersion"], "v1");
    assert_eq!(pb["kind"], "ConfigMap");
    assert_shows(&json, &pb, "ConfigMap");
    assert_eq!(pb["binaryData"]["b"], "AAEC");
    assert!(pb["metadata"]["managedFields"][0]["fieldsV1"].is_object());
    // The same bytes for client-go's Accept (protobuf first, JSON as fallback).
    let again = get(&s, &format!("{CM}/cm0"), PB_THEN_JSON)
        .await
        .expect(200);
    assert_eq!(again.body, r.body);
    // JSON first: JSON.
    let r = get(
        &s,
        &format!("{CM}/cm0"),
        "application/json, application/vnd.kubernetes.protobuf",
    )
    .await
    .expect(200);
    assert_eq!(content_type(&r), "application/json");
    // A cluster-scoped kind, bootstrapped at start.
    let r = get(&s, "/api/v1/namespaces/default", PB).await.expect(200);
    assert_eq!(decoded(&r)["metadata"]["name"], "default");
}

/// ENC-04: a LIST in protobuf: `ConfigMapList` with its ListMeta (resourceVersion,
/// continue) and items without type fields, the same objects as the JSON list, whether
/// whole or in pages, of one namespace or all.
#[tokio::test]
async fn enc04_list_builtin_objects() {
    let s = with_configmaps(5).await;
    let json = s.get(CM).await.expect(200).json();
    let pb = decoded(&get(&s, CM, PB).await.expect(200));
    assert_eq!(pb["kind"], "ConfigMapList");
    assert_eq!(
        pb["metadata"]["resourceVersion"],
        json["metadata"]["resourceVersion"]
    );
    let mut json_items = json.clone();
    // List items carry no apiVersion and kind in protobuf.
    for item in json_items["items"].as_array_mut().unwrap() {
        let o = item.as_object_mut().unwrap();
        o.remove("apiVersion");
        o.remove("kind");
    }
    assert_shows(&json_items["items"], &pb["items"], "items");
    // A page: the continue token and remaining count are in the ListMeta.
    let page = decoded(&get(&s, &format!("{CM}?limit=2"), PB).await.expect(200));
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    let token = page["metadata"]["continue"].as_str().unwrap().to_owned();
    assert_eq!(page["metadata"]["remainingItemCount"], 3);
    let rest = decoded(
        &get(&s, &format!("{CM}?limit=10&continue={token}"), PB)
            .await
            .expect(200),
    );
    assert_eq!(rest["items"].as_array().unwrap().len(), 3);
    assert_eq!(rest["items"][2]["metadata"]["name"], "cm4");
    // All namespaces, with a label selector.
    let all = decoded(
        &get(&s, "/api/v1/configmaps?labelSelector=i%3D3", PB)
            .await
            .expect(200),
    );
    assert_eq!(all["items"].as_array().unwrap().len(), 1);
    // Empty lists, and every other built-in kind's list.
    for uri in [
        "/api/v1/namespaces/demo/secrets",
        "/api/v1/namespaces/demo/events",
        "/api/v1/namespaces/demo/serviceaccounts",
        "/api/v1/namespaces",
        "/apis/coordination.k8s.io/v1/leases",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        "/apis/rbac.authorization.k8s.io/v1/roles",
        "/apis/rbac.authorization.k8s.io/v1/rolebindings",
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "/apis/apiregistration.k8s.io/v1/apiservices",
    ] {
        let json = s.get(uri).await.expect(200).json();
        let pb = decoded(&get(&s, uri, PB).await.expect(200));
        assert_eq!(pb["kind"], json["kind"], "{uri}");
        assert_eq!(
            pb["items"].as_array().map_or(0, Vec::len),
            json["items"].as_array().map_or(0, Vec::len),
            "{uri}"
        );
        for (j, p) in json["items"]
            .as_array()
            .unwrap()
            .iter()
            .zip(pb["items"].as_array().unwrap())
        {
            let mut j = j.clone();
            j.as_object_mut().unwrap().remove("apiVersion");
            j.as_object_mut().unwrap().remove("kind");
            assert_shows(&j, p, uri);
        }
    }
}

/// ENC-04: writes answer in protobuf too: a create with a protobuf body (as kubectl's
/// generators send) and a protobuf answer, an update, and a delete whose success Status
/// is protobuf.
#[tokio::test]
async fn enc04_writes_answer_in_protobuf() {
    let s = with_configmaps(1).await;
    let json = s.get(&format!("{CM}/cm0")).await.expect(200).json();
    let body = protobuf::encode(
        "v1",
        "ConfigMap",
        &json!({"metadata": {"name": "made"}, "data": {"x": "y"}}),
    )
    .unwrap();
    let r = s
        .raw(
            Method::POST,
            CM,
            &[("content-type", PB), ("accept", PB)],
            body,
            Some(admin()),
        )
        .await
        .expect(201);
    let made = decoded(&r);
    assert_eq!(made["data"]["x"], "y");
    assert_eq!(made["metadata"]["namespace"], "demo");
    let mut changed = json.clone();
    changed["data"]["k"] = json!("w");
    let r = s
        .raw(
            Method::PUT,
            &format!("{CM}/cm0"),
            &[
                ("content-type", "application/json"),
                ("accept", PB_THEN_JSON),
            ],
            changed.to_string(),
            Some(admin()),
        )
        .await
        .expect(200);
    assert_eq!(decoded(&r)["data"]["k"], "w");
    let r = s
        .raw(
            Method::DELETE,
            &format!("{CM}/made"),
            &[("accept", PB)],
            "",
            Some(admin()),
        )
        .await
        .expect(200);
    let status = decoded(&r);
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["status"], "Success");
    assert_eq!(status["details"]["name"], "made");
}

/// ENC-04: errors are Status objects in protobuf when protobuf is what the client takes
/// first (kube-apiserver's error writer negotiates them), in JSON otherwise; a 406 for a
/// Table in protobuf is JSON (that writer skips ranges with `as=`).
#[tokio::test]
async fn enc04_errors_are_protobuf_status() {
    let s = with_configmaps(0).await;
    for accept in [PB, PB_THEN_JSON] {
        let r = get(&s, &format!("{CM}/nosuch"), accept).await.expect(404);
        let status = decoded(&r);
        assert_eq!(status["apiVersion"], "v1");
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["status"], "Failure");
        assert_eq!(status["reason"], "NotFound");
        assert_eq!(status["code"], 404);
        assert_eq!(status["details"]["name"], "nosuch");
        assert_eq!(status["details"]["kind"], "configmaps");
        assert_eq!(status["message"], "configmaps \"nosuch\" not found");
    }
    // 409 on a protobuf create.
    let body = protobuf::encode("v1", "ConfigMap", &json!({"metadata": {"name": "a"}})).unwrap();
    for code in [201, 409] {
        let r = s
            .raw(
                Method::POST,
                CM,
                &[("content-type", PB), ("accept", PB_THEN_JSON)],
                body.clone(),
                Some(admin()),
            )
            .await
            .expect(code);
        if code == 409 {
            assert_eq!(decoded(&r)["reason"], "AlreadyExists");
        }
    }
    // JSON clients keep JSON errors.
    let r = get(&s, &format!("{CM}/nosuch"), "application/json")
        .await
        .expect(404);
    assert_eq!(r.reason(), "NotFound");
    // Unauthenticated: 401 in protobuf too.
    let r = s
        .raw(Method::GET, CM, &[("accept", PB)], "", None)
        .await
        .expect(401);
    assert_eq!(decoded(&r)["reason"], "Unauthorized");
    // Table has no protobuf form: 406 (in JSON), or the next range.
    let table = "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1";
    let r = get(&s, CM, table).await.expect(406);
    assert_eq!(content_type(&r), "application/json");
    assert_eq!(r.reason(), "NotAcceptable");
    let r = get(&s, CM, &format!("{table}, application/json"))
        .await
        .expect(200);
    assert_eq!(r.json()["kind"], "ConfigMapList");
}

/// ENC-04: metadata only, in protobuf (`as=PartialObjectMetadataList`, what client-go's
/// metadata informers and the garbage collector ask for), for one object and lists, at
/// `meta.k8s.io/v1` and `v1beta1` (whose list numbers its fields the other way round).
#[tokio::test]
async fn enc04_partial_object_metadata_in_protobuf() {
    let s = with_configmaps(3).await;
    let accept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    let list = decoded(&get(&s, CM, accept).await.expect(200));
    assert_eq!(list["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["items"].as_array().unwrap().len(), 3);
    assert_eq!(list["items"][1]["metadata"]["name"], "cm1");
    assert_eq!(list["items"][1]["metadata"]["labels"]["i"], "1");
    assert!(list["items"][1].get("data").is_none());
    let accept =
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1";
    let one = decoded(&get(&s, &format!("{CM}/cm2"), accept).await.expect(200));
    assert_eq!(one["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(one["kind"], "PartialObjectMetadata");
    assert_eq!(one["metadata"]["name"], "cm2");
    let list = decoded(&get(&s, CM, accept).await.expect(200));
    assert_eq!(list["items"].as_array().unwrap().len(), 3);
    assert!(
        list["metadata"]["resourceVersion"]
            .as_str()
            .is_some_and(|v| !v.is_empty())
    );
}

/// A protobuf watch stream's frames: 4-byte big-endian length, then a `WatchEvent`.
struct Frames {
    body: wasmgate_apiserver::Body,
    buf: Vec<u8>,
}

impl Frames {
    /// The next event's type and object (decoded from its `k8s\0` envelope).
    async fn next(&mut self) -> (String, Value) {
        loop {
            if self.buf.len() >= 4 {
                let len = u32::from_be_bytes(self.buf[..4].try_into().unwrap()) as usize;
                if self.buf.len() >= 4 + len {
                    let event: Vec<u8> = self.buf.drain(..4 + len).skip(4).collect();
                    let (ty, object) = protobuf::decode_watch_event(&event).unwrap();
                    assert!(
                        object.starts_with(b"k8s\0"),
                        "the object is a whole encoding"
                    );
                    return (ty, protobuf::decode(&object).unwrap());
                }
            }
            let frame = tokio::time::timeout(Duration::from_secs(10), self.body.frame())
                .await
                .expect("a watch event within 10 s")
                .expect("the stream goes on")
                .unwrap();
            if let Ok(data) = frame.into_data() {
                self.buf.extend_from_slice(&data);
            }
        }
    }
}

async fn watch(s: &Server, uri: &str, accept: &str) -> Frames {
    let req = http::Request::builder()
        .uri(uri)
        .header("accept", accept)
        .body(http_body_util::Full::new(Bytes::new()))
        .unwrap();
    let resp = s.api.handle(req, Some(admin())).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()["content-type"],
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    Frames {
        body: resp.into_body(),
        buf: Vec::new(),
    }
}

/// ENC-04: a watch in protobuf is `;stream=watch` framing: each event a 4-byte big-endian
/// length and a `WatchEvent` whose object is the whole `k8s\0` encoding, for the initial
/// state, changes, bookmarks and deletions.
#[tokio::test]
async fn enc04_watch_stream_framing() {
    let s = with_configmaps(2).await;
    let mut w = watch(
        &s,
        &format!("{CM}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"),
        PB,
    )
    .await;
    for name in ["cm0", "cm1"] {
        let (ty, obj) = w.next().await;
        assert_eq!(
            (ty.as_str(), obj["metadata"]["name"].as_str()),
            ("ADDED", Some(name))
        );
        assert_eq!(obj["kind"], "ConfigMap");
        assert_eq!(obj["data"]["k"], "v");
    }
    let (ty, bookmark) = w.next().await;
    assert_eq!(ty, "BOOKMARK");
    assert_eq!(bookmark["kind"], "ConfigMap");
    assert_eq!(
        bookmark["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    s.create_cm("demo", "new", json!({"x": "1"})).await;
    let (ty, obj) = w.next().await;
    assert_eq!(
        (ty.as_str(), obj["metadata"]["name"].as_str()),
        ("ADDED", Some("new"))
    );
    s.patch(
        &format!("{CM}/new"),
        "application/merge-patch+json",
        r#"{"data":{"k":"changed"}}"#,
    )
    .await
    .expect(200);
    let (ty, obj) = w.next().await;
    assert_eq!(
        (ty.as_str(), obj["data"]["k"].as_str()),
        ("MODIFIED", Some("changed"))
    );
    s.req(Method::DELETE, &format!("{CM}/new"), Value::Null)
        .await
        .expect(200);
    let (ty, obj) = w.next().await;
    assert_eq!(
        (ty.as_str(), obj["metadata"]["name"].as_str()),
        ("DELETED", Some("new"))
    );

    // Metadata only, as the garbage collector watches.
    let accept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    let mut w = watch(&s, &format!("{CM}?watch=true&resourceVersion=0"), accept).await;
    let (ty, obj) = w.next().await;
    assert_eq!(ty, "ADDED");
    assert_eq!(obj["kind"], "PartialObjectMetadata");
    assert!(obj.get("data").is_none());
}

/// ENC-04: an expired resourceVersion on a protobuf watch is 410 in protobuf, before the
/// stream starts.
#[tokio::test]
async fn enc04_watch_errors_in_protobuf() {
    let s = with_configmaps(1).await;
    let r = get(&s, &format!("{CM}?watch=true&resourceVersion=99999999"), PB).await;
    assert!(r.status.as_u16() >= 400, "{}", r.status);
    assert_eq!(decoded(&r)["kind"], "Status");
    // YAML has no stream form.
    let r = get(&s, &format!("{CM}?watch=true"), "application/yaml")
        .await
        .expect(406);
    assert!(
        r.text()
            .contains("application/vnd.kubernetes.protobuf;stream=watch")
    );
}

const WIDGETS_EXAMPLE: &str = include_str!("../../../examples/crds/widgets.yaml");
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const W: &str = "/apis/example.com/v1/namespaces/default/widgets";

async fn with_widget() -> Server {
    let s = Server::new().await;
    let mut crd = wasmgate_apimachinery::json::from_yaml(WIDGETS_EXAMPLE.as_bytes())
        .unwrap()
        .value;
    crd["spec"].as_object_mut().unwrap().remove("conversion");
    s.req(Method::POST, CRDS, crd).await.expect(201);
    s.req(
        Method::POST,
        W,
        json!({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"color":"red"}}),
    )
    .await
    .expect(201);
    s
}

/// ENC-05: custom resources have no protobuf form: protobuf alone is kube's 406 (its
/// Status in protobuf, as the client takes nothing else), protobuf then JSON is JSON, for
/// gets, lists and watches; their metadata and their Scale do have one, as in kube; the
/// CRD object itself is a built-in kind.
#[tokio::test]
async fn enc05_custom_resources_stay_json() {
    let s = with_widget().await;
    for uri in [format!("{W}/w1"), W.to_owned(), format!("{W}?watch=true")] {
        let r = get(&s, &uri, PB).await.expect(406);
        let status = decoded(&r);
        assert_eq!(status["reason"], "NotAcceptable", "{uri}");
        assert_eq!(
            status["message"],
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
    }
    let r = get(&s, &format!("{W}/w1"), PB_THEN_JSON).await.expect(200);
    assert_eq!(content_type(&r), "application/json");
    assert_eq!(r.json()["spec"]["color"], "red");
    let r = get(&s, W, PB_THEN_JSON).await.expect(200);
    assert_eq!(r.json()["kind"], "WidgetList");
    // Errors of custom resources follow the client's Accept too.
    let r = get(&s, &format!("{W}/nosuch"), PB_THEN_JSON)
        .await
        .expect(404);
    assert_eq!(decoded(&r)["reason"], "NotFound");
    // Metadata in protobuf: served for custom resources as for built-in ones.
    let accept =
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
    let list = decoded(&get(&s, W, accept).await.expect(200));
    assert_eq!(list["items"][0]["metadata"]["name"], "w1");
    // The scale subresource speaks autoscaling/v1 Scale, a built-in kind.
    let scale = decoded(&get(&s, &format!("{W}/w1/scale"), PB).await.expect(200));
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 1);
    // The CRD itself (JSON schema, doubles, defaults and all).
    let json = s
        .get(&format!("{CRDS}/widgets.example.com"))
        .await
        .expect(200)
        .json();
    let pb = decoded(
        &get(&s, &format!("{CRDS}/widgets.example.com"), PB)
            .await
            .expect(200),
    );
    assert_shows(&json, &pb, "CustomResourceDefinition");
    // A protobuf body for a custom resource stays 415.
    let r = s
        .raw(
            Method::POST,
            W,
            &[("content-type", PB)],
            "k8s\0",
            Some(admin()),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

/// ENC-04: the answers of reviews and tokens (kubectl's typed clients ask for protobuf).
#[tokio::test]
async fn enc04_reviews_and_tokens_in_protobuf() {
    let s = with_configmaps(0).await;
    let body = json!({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview",
        "spec":{"resourceAttributes":{"verb":"get","resource":"configmaps","namespace":"demo"}}});
    let r = s
        .raw(
            Method::POST,
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            &[
                ("content-type", "application/json"),
                ("accept", PB_THEN_JSON),
            ],
            body.to_string(),
            Some(admin()),
        )
        .await
        .expect(201);
    let review = decoded(&r);
    assert_eq!(review["kind"], "SelfSubjectAccessReview");
    assert_eq!(review["status"]["allowed"], true);
    let r = s
        .raw(
            Method::POST,
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &[("content-type", "application/json"), ("accept", PB)],
            json!({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}).to_string(),
            Some(admin()),
        )
        .await
        .expect(201);
    let who = decoded(&r);
    assert_eq!(who["status"]["userInfo"]["username"], "admin");
    s.req(
        Method::POST,
        "/api/v1/namespaces/demo/serviceaccounts",
        json!({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"bot"}}),
    )
    .await
    .expect(201);
    let r = s
        .raw(
            Method::POST,
            "/api/v1/namespaces/demo/serviceaccounts/bot/token",
            &[
                ("content-type", "application/json"),
                ("accept", PB_THEN_JSON),
            ],
            json!({"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}})
                .to_string(),
            Some(admin()),
        )
        .await
        .expect(201);
    let token = decoded(&r);
    assert_eq!(token["kind"], "TokenRequest");
    assert!(
        token["status"]["token"]
            .as_str()
            .is_some_and(|t| t.len() > 20)
    );
    assert!(token["status"]["expirationTimestamp"].is_string());
}
