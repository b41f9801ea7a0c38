//! Requests shaped as stock clients send them (issue 7): the Python `kubernetes` client and
//! typed clients send bodies without `kind`/`apiVersion`; error wording that clients and
//! scripts match on, as kube-apiserver words it.
#![allow(clippy::unwrap_used, reason = "test code")]

use http::Method;
use serde_json::{Value, json};

mod common;
use common::Server;

const CM: &str = "/api/v1/namespaces/default/configmaps";
const WIDGETS_CRD: &str = include_str!("../../../examples/crds/widgets.yaml");
const W: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// Built-in kinds: a body without `kind` and `apiVersion` takes them from the URL, for
/// create, update and patch (kube's `gvkWithDefaults`).
#[tokio::test]
async fn kindless_bodies_of_builtin_kinds_take_the_urls_type() {
    let s = Server::new().await;
    // The Python client's dict body, and a model with both fields unset (None is dropped).
    let created = s
        .req(
            Method::POST,
            CM,
            json!({"metadata":{"name":"py"},"data":{"k":"v"}}),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(
        (created["kind"].as_str(), created["apiVersion"].as_str()),
        (Some("ConfigMap"), Some("v1"))
    );
    s.req(
        Method::POST,
        CM,
        json!({"apiVersion":"","kind":"","metadata":{"name":"empty-strings"}}),
    )
    .await
    .expect(201);
    // Only one of the two given.
    s.req(
        Method::POST,
        CM,
        json!({"kind":"ConfigMap","metadata":{"name":"only-kind"}}),
    )
    .await
    .expect(201);
    s.req(
        Method::POST,
        CM,
        json!({"apiVersion":"v1","metadata":{"name":"only-av"}}),
    )
    .await
    .expect(201);
    // Update: the stored object keeps its type; a stale resourceVersion is still 409.
    let rv = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let updated = s
        .req(
            Method::PUT,
            &format!("{CM}/py"),
            json!({"metadata":{"name":"py","resourceVersion":rv},"data":{"k":"w"}}),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(updated["kind"], "ConfigMap");
    let stale = s
        .req(
            Method::PUT,
            &format!("{CM}/py"),
            json!({"metadata":{"name":"py","resourceVersion":rv},"data":{"k":"x"}}),
        )
        .await
        .expect(409);
    assert_eq!(stale.reason(), "Conflict");
    // A merge patch that removes the type fields leaves them as the URL says.
    let patched = s
        .patch(
            &format!("{CM}/py"),
            "application/merge-patch+json",
            r#"{"kind":null,"apiVersion":null,"data":{"p":"1"}}"#,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        (patched["kind"].as_str(), patched["apiVersion"].as_str()),
        (Some("ConfigMap"), Some("v1"))
    );
    let stored = s.get(&format!("{CM}/py")).await.expect(200).json();
    assert_eq!(stored["kind"], "ConfigMap");
    // A wrong type is still refused.
    let r = s
        .req(
            Method::POST,
            CM,
            json!({"apiVersion":"v2","metadata":{"name":"x"}}),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json()["message"],
        "the API version in the data (v2) does not match the expected API version (v1)"
    );
}

/// Custom resources are decoded as unstructured objects: kube needs the `kind` in the data
/// and checks the version against the URL's.
#[tokio::test]
async fn kindless_bodies_of_custom_resources_are_refused_as_kube_does() {
    let s = Server::new().await;
    s.yaml(
        Method::POST,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        WIDGETS_CRD.split("\n---").next().unwrap(),
    )
    .await
    .expect(201);
    let body = r#"{"metadata":{"name":"w"},"spec":{"color":"red"}}"#;
    let r = s
        .raw(
            Method::POST,
            W,
            &[("content-type", "application/json")],
            body,
            Some(common::admin()),
        )
        .await
        .expect(400);
    assert_eq!(r.reason(), "BadRequest");
    assert_eq!(
        r.json()["message"],
        format!(
            "the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing in '{body}' ({} ...)",
            &body[..30]
        )
    );
    let r = s
        .req(
            Method::POST,
            W,
            json!({"kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red"}}),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json()["message"],
        "the API version in the data () does not match the expected API version (example.com/v1)"
    );
    // Field selectors of custom resources: kube's custom resource converter wording.
    let r = s
        .get(&format!("{W}?fieldSelector=spec.color%3Dred"))
        .await
        .expect(400);
    assert_eq!(r.json()["message"], "field label not supported: spec.color");
    s.get(&format!("{W}?fieldSelector=metadata.namespace%3Ddefault"))
        .await
        .expect(200);
}

/// A body that is not JSON, sent as JSON (YAML without a content type): kube's
/// `transformDecodeError` wording with the body summarized in hex.
#[tokio::test]
async fn undecodable_bodies_are_unrecognized_objects() {
    let s = Server::new().await;
    let yaml = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: from-yaml\n";
    let r = s
        .raw(
            Method::POST,
            "/api/v1/namespaces",
            &[("content-type", "application/json")],
            yaml,
            Some(common::admin()),
        )
        .await
        .expect(400);
    let message = r.json()["message"].as_str().unwrap().to_owned();
    let hex: String = yaml.as_bytes()[..30]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(
        message.starts_with(
            "the object provided is unrecognized (must be of type Namespace): couldn't get version/kind; json parse error: "
        ),
        "{message}"
    );
    assert!(message.ends_with(&format!("({hex} ...)")), "{message}");
    // The same body with its content type is fine.
    s.yaml(Method::POST, "/api/v1/namespaces", yaml)
        .await
        .expect(201);
    let empty = s
        .raw(
            Method::POST,
            CM,
            &[("content-type", "application/json")],
            "",
            Some(common::admin()),
        )
        .await
        .expect(400);
    assert!(
        empty.json()["message"]
            .as_str()
            .unwrap()
            .ends_with("(<empty>)"),
        "{}",
        empty.text()
    );
    let _: Value = empty.json();
}
