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
    // Empty strings, and only one of the two given.
    for body in [
        json!({"apiVersion":"","kind":"","metadata":{"name":"empty-strings"}}),
        json!({"kind":"ConfigMap","metadata":{"name":"only-kind"}}),
        json!({"apiVersion":"v1","metadata":{"name":"only-av"}}),
    ] {
        s.req(Method::POST, CM, body).await.expect(201);
    }
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
    // A JSON value that is not an object: Go's decoder reading the type fields.
    let r = s
        .raw(
            Method::POST,
            CM,
            &[("content-type", "application/json")],
            "[1,2]",
            Some(common::admin()),
        )
        .await
        .expect(400);
    assert_eq!(
        r.json()["message"],
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" } (5b312c325d)"
    );
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

/// Legacy discovery carries kube's `storageVersionHash` (sha256 of the storage
/// group/version/kind, first 8 bytes, base64); it follows a CRD's storage version.
#[tokio::test]
async fn discovery_storage_version_hash_as_kube_computes_it() {
    let s = Server::new().await;
    let hash_of = |list: &Value, name: &str| {
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .map(|r| r["storageVersionHash"].clone())
            .unwrap()
    };
    let core = s.get("/api/v1").await.expect(200).json();
    // The values a real kube-apiserver publishes.
    assert_eq!(hash_of(&core, "configmaps"), "qFsyl6wFWjQ=");
    assert_eq!(hash_of(&core, "namespaces"), "Q3oi5N2YM8M=");
    assert_eq!(hash_of(&core, "secrets"), "S6u1pOWzb84=");
    assert_eq!(
        hash_of(&core, "namespaces/status"),
        Value::Null,
        "not on subresources"
    );
    let lease = s
        .get("/apis/coordination.k8s.io/v1")
        .await
        .expect(200)
        .json();
    assert_eq!(hash_of(&lease, "leases"), "gqkMMb/YqFM=");
    // A CRD: the hash names the storage version, for every served version.
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    s.yaml(
        Method::POST,
        crds,
        WIDGETS_CRD.split("\n---").next().unwrap(),
    )
    .await
    .expect(201);
    let crd = s
        .get(&format!("{crds}/widgets.example.com"))
        .await
        .expect(200)
        .json();
    let storage = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["storage"] == true)
        .unwrap()["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let expected = |version: &str| {
        use base64::Engine as _;
        use sha2::Digest as _;
        let d = sha2::Sha256::digest(format!("example.com/{version}/Widget"));
        base64::engine::general_purpose::STANDARD.encode(&d[..8])
    };
    let v1 = s.get("/apis/example.com/v1").await.expect(200).json();
    let v1alpha1 = s.get("/apis/example.com/v1alpha1").await.expect(200).json();
    assert_eq!(hash_of(&v1, "widgets"), expected(&storage));
    assert_eq!(hash_of(&v1alpha1, "widgets"), expected(&storage));
    // Switch the storage version: the hash follows.
    let mut updated = crd.clone();
    // Unconditional: the CRD controller updates the status meanwhile.
    updated["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    let other = if storage == "v1" { "v1alpha1" } else { "v1" };
    for v in updated["spec"]["versions"].as_array_mut().unwrap() {
        v["storage"] = json!(v["name"] == other);
    }
    s.req(Method::PUT, &format!("{crds}/widgets.example.com"), updated)
        .await
        .expect(200);
    let v1 = s.get("/apis/example.com/v1").await.expect(200).json();
    assert_eq!(hash_of(&v1, "widgets"), expected(other));
    assert_ne!(expected(other), expected(&storage));
}

/// OpenAPI v3 and v2 carry kube's descriptions of operations and parameters, for built-in
/// kinds and custom resources alike (what `kubectl explain` and generators show).
#[tokio::test]
async fn openapi_operations_and_parameters_are_described() {
    let s = Server::new().await;
    s.yaml(
        Method::POST,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        WIDGETS_CRD.split("\n---").next().unwrap(),
    )
    .await
    .expect(201);
    let core = s.get("/openapi/v3/api/v1").await.expect(200).json();
    let coll = &core["paths"]["/api/v1/namespaces/{namespace}/configmaps"];
    assert_eq!(
        coll["get"]["description"],
        "list or watch objects of kind ConfigMap"
    );
    assert_eq!(coll["post"]["description"], "create a ConfigMap");
    assert_eq!(
        coll["delete"]["description"],
        "delete collection of ConfigMap"
    );
    let param = |op: &Value, name: &str| {
        op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .map(|p| p["description"].as_str().unwrap_or("").to_owned())
            .unwrap_or_default()
    };
    assert!(param(&coll["get"], "limit").starts_with("limit is a maximum number of responses"));
    assert!(param(&coll["get"], "watch").starts_with("Watch for changes"));
    assert!(
        param(&coll["delete"], "propagationPolicy")
            .starts_with("Whether and how garbage collection")
    );
    assert_eq!(
        param(coll, "namespace"),
        "object name and auth scope, such as for teams and projects"
    );
    let item = &core["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"];
    assert_eq!(item["get"]["description"], "read the specified ConfigMap");
    assert_eq!(
        item["put"]["description"],
        "replace the specified ConfigMap"
    );
    assert_eq!(
        item["patch"]["description"],
        "partially update the specified ConfigMap"
    );
    assert_eq!(item["delete"]["description"], "delete a ConfigMap");
    assert_eq!(param(item, "name"), "name of the ConfigMap");
    assert!(param(&item["patch"], "fieldManager").contains("required for apply requests"));
    assert!(!param(&item["put"], "fieldManager").contains("apply"));
    // Every parameter of every operation is described.
    for (path, ops) in core["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let params = if method == "parameters" {
                op
            } else {
                &op["parameters"]
            };
            for p in params.as_array().into_iter().flatten() {
                assert!(
                    !p["description"].as_str().unwrap_or("").is_empty(),
                    "{path} {method} {}",
                    p["name"]
                );
            }
        }
    }
    let custom = s
        .get("/openapi/v3/apis/example.com/v1")
        .await
        .expect(200)
        .json();
    let scale =
        &custom["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/scale"];
    assert_eq!(
        scale["patch"]["description"],
        "partially update scale of the specified Widget"
    );
    assert_eq!(
        custom["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets"]["get"]["description"],
        "list or watch objects of kind Widget"
    );
    // Swagger 2.0 (JSON) carries them too.
    let v2 = s.get("/openapi/v2").await.expect(200).json();
    let list = &v2["paths"]["/api/v1/namespaces/{namespace}/configmaps"]["get"];
    assert_eq!(
        list["description"],
        "list or watch objects of kind ConfigMap"
    );
    assert!(list["parameters"].as_array().unwrap().iter().any(|p| {
        p["name"] == "limit"
            && p["description"]
                .as_str()
                .unwrap()
                .starts_with("limit is a maximum")
    }));
}
