//! CustomResourceDefinitions, in process: the CRD kind, live registration, and custom
//! resources (schemas, subresources, printer columns, versions). Item ids from
//! SEED-CHECKLIST.md sections 22–25.
#![allow(clippy::unwrap_used, reason = "test code")]

use http::{Method, StatusCode};
use serde_json::{Value, json};

mod common;
use common::{Server, item_names, rv};

const WIDGETS_EXAMPLE: &str = include_str!("../../../examples/crds/widgets.yaml");

/// The example CRD with conversion strategy `None` (these tests check the CRD machinery
/// and `None` conversion; conversion by the widgets plugin is tested end to end).
fn widgets_crd() -> Value {
    let mut crd = wasmgate_apimachinery::json::from_yaml(WIDGETS_EXAMPLE.as_bytes())
        .unwrap()
        .value;
    crd["spec"].as_object_mut().unwrap().remove("conversion");
    crd
}
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const W: &str = "/apis/example.com/v1/namespaces/default/widgets";

async fn with_widgets() -> Server {
    let s = Server::new().await;
    let crd = s
        .req(Method::POST, CRDS, widgets_crd())
        .await
        .expect(201)
        .json();
    assert_eq!(crd["metadata"]["generation"], 1);
    s
}

async fn create_widget(s: &Server, name: &str, spec: Value) -> common::Resp {
    s.req(
        Method::POST,
        W,
        json!({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":name},"spec":spec}),
    )
    .await
}

fn minimal_crd(group: &str, plural: &str, kind: &str, schema: Value) -> Value {
    json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
        "metadata":{"name":format!("{plural}.{group}")},
        "spec":{"group":group,"scope":"Namespaced","names":{"plural":plural,"kind":kind},
            "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":schema}}]}})
}

#[tokio::test]
async fn crd_02_established_served_and_discovered_at_once() {
    let s = Server::new().await;
    let agg = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let before = s
        .raw(
            Method::GET,
            "/apis",
            &[("accept", agg)],
            "",
            Some(common::admin()),
        )
        .await;
    let etag_before = before.headers["etag"].clone();
    s.req(Method::POST, CRDS, widgets_crd()).await.expect(201);
    // Served as soon as the create returned (DISC-02).
    s.get(W).await.expect(200);
    let after = s
        .raw(
            Method::GET,
            "/apis",
            &[("accept", agg)],
            "",
            Some(common::admin()),
        )
        .await
        .expect(200);
    assert_ne!(after.headers["etag"], etag_before, "discovery ETag changes");
    let doc = after.json();
    let group = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "example.com")
        .unwrap();
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, vec!["v1", "v1alpha1"], "DISC-04 version priority");
    let res = &group["versions"][0]["resources"][0];
    assert_eq!(res["shortNames"], json!(["wd"]));
    assert_eq!(res["categories"], json!(["all"]));
    let subs: Vec<&str> = res["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["subresource"].as_str().unwrap())
        .collect();
    assert_eq!(subs, vec!["scale", "status"]);
    // Status conditions and accepted names (CRD-01).
    let mut crd = Value::Null;
    for _ in 0..100 {
        crd = s
            .get(&format!("{CRDS}/widgets.example.com"))
            .await
            .expect(200)
            .json();
        if crd["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.len() == 2)
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let conds: Vec<(&str, &str)> = crd["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["type"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        conds,
        vec![("NamesAccepted", "True"), ("Established", "True")]
    );
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "Widget");
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList", "defaulted");
    // OpenAPI v3 document for the new group-version, with the published schema.
    let index = s.get("/openapi/v3").await.json();
    let url = index["paths"]["apis/example.com/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_owned();
    let oa = s.get(&url).await.expect(200).json();
    let schema = &oa["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        schema["x-kubernetes-group-version-kind"],
        json!([{"group":"example.com","version":"v1","kind":"Widget"}])
    );
    assert_eq!(
        schema["properties"]["spec"]["properties"]["replicas"]["description"],
        "How many copies of the widget to run."
    );
    let patch = &oa["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
    assert!(
        patch["requestBody"]["content"]
            .get("application/strategic-merge-patch+json")
            .is_none()
    );
    assert!(patch["requestBody"]["content"]["application/merge-patch+json"].is_object());
}

#[tokio::test]
async fn crd_bad_input_is_422_with_causes() {
    let s = Server::new().await;
    let post = |v: Value| {
        let s = &s;
        async move { s.req(Method::POST, CRDS, v).await }
    };
    // Not structural: a property without a type (CRD-03).
    let r = post(minimal_crd(
        "x.io",
        "things",
        "Thing",
        json!({"type":"object","properties":{"spec":{"properties":{"a":{"type":"string"}}}}}),
    ))
    .await
    .expect(422);
    let j = r.json();
    assert_eq!(j["reason"], "Invalid");
    assert!(
        j["details"]["causes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["field"]
                .as_str()
                .unwrap()
                .starts_with("spec.versions[0].schema.openAPIV3Schema.properties[spec].type")),
        "{j}"
    );
    // Two storage versions.
    let mut two = minimal_crd("x.io", "things", "Thing", json!({"type":"object"}));
    two["spec"]["versions"] = json!([
        {"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}},
        {"name":"v2","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]);
    let r = post(two).await.expect(422);
    assert!(
        r.text()
            .contains("must have exactly one version marked as storage version"),
        "{}",
        r.text()
    );
    // Name must be plural.group; group needs a dot.
    let mut bad = minimal_crd("x.io", "things", "Thing", json!({"type":"object"}));
    bad["metadata"]["name"] = json!("wrong.x.io");
    assert!(
        post(bad)
            .await
            .expect(422)
            .text()
            .contains("must be spec.names.plural+\\\".\\\"+spec.group")
    );
    assert!(
        post(minimal_crd(
            "nodot",
            "things",
            "Thing",
            json!({"type":"object"})
        ))
        .await
        .expect(422)
        .text()
        .contains("should be a domain with at least one dot")
    );
    // A conversion webhook needs a client config (a `wasm://NAME` plugin or an https URL)
    // and `conversionReviewVersions` including v1; an http URL is refused (kube's fields).
    let cases = [
        (
            json!({"strategy":"Webhook"}),
            "spec.conversion.webhook.clientConfig",
        ),
        (
            json!({"strategy":"Webhook","webhook":{"clientConfig":{"url":"https://conv.example.com/convert"}}}),
            "spec.conversion.webhook.conversionReviewVersions",
        ),
        (
            json!({"strategy":"Webhook","webhook":{"clientConfig":{"url":"http://conv.example.com/convert"},"conversionReviewVersions":["v1"]}}),
            "spec.conversion.webhook.clientConfig.url",
        ),
    ];
    for (conversion, field) in cases {
        let mut hook = minimal_crd("x.io", "things", "Thing", json!({"type":"object"}));
        hook["spec"]["conversion"] = conversion;
        let r = post(hook).await.expect(422).json();
        assert!(
            r["details"]["causes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["field"] == field),
            "{field}: {r}"
        );
    }
    // Collisions with names in use in the same group.
    post(minimal_crd(
        "x.io",
        "things",
        "Thing",
        json!({"type":"object"}),
    ))
    .await
    .expect(201);
    let mut clash = minimal_crd("x.io", "gizmos", "Thing", json!({"type":"object"}));
    clash["spec"]["names"]["shortNames"] = json!(["things"]);
    let r = post(clash).await.expect(422);
    let causes: Vec<String> = r.json()["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        causes.contains(&"spec.names.kind".to_owned())
            && causes.contains(&"spec.names.shortNames".to_owned()),
        "{causes:?}"
    );
    let mut taken = minimal_crd(
        "coordination.k8s.io",
        "leases",
        "Lease",
        json!({"type":"object"}),
    );
    // A protected group: approved, so that only the name collision is refused.
    taken["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "unapproved, test"});
    let r = post(taken).await.expect(422);
    assert!(r.text().contains("is already in use"));
    // A schema restricting metadata beyond name/generateName is not structural.
    let r = post(minimal_crd("y.io", "ones", "One", json!({"type":"object","properties":{"metadata":{"type":"object","properties":{"labels":{"type":"object"}}}}}))).await.expect(422);
    assert!(r.text().contains("metadata"), "{}", r.text());
}

#[tokio::test]
async fn crd_05_crdv_04_prune_default_and_validate() {
    let s = with_widgets().await;
    let r = create_widget(&s, "w", json!({"color":"blue","someRandomField":42}))
        .await
        .expect(201);
    let w = r.json();
    assert!(w["spec"].get("someRandomField").is_none(), "CRD-05 pruned");
    assert_eq!(
        (w["spec"]["replicas"].as_i64(), w["spec"]["size"].as_i64()),
        (Some(1), Some(3)),
        "CRDV-04 defaults"
    );
    assert_eq!(w["metadata"]["generation"], 1, "META-07");
    // Strict field validation names the pruned field.
    let r = s.req(Method::POST, &format!("{W}?fieldValidation=Strict"), json!({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"},"spec":{"color":"red","bogus":1}})).await.expect(400);
    assert!(
        r.text().contains(r#"unknown field \"spec.bogus\""#),
        "{}",
        r.text()
    );
    // 422 with one cause per violation (ERR-08).
    let r = create_widget(
        &s,
        "bad",
        json!({"color":"purple","replicas":1000,"size":"big"}),
    )
    .await
    .expect(422);
    let j = r.json();
    assert_eq!(j["reason"], "Invalid");
    let causes = j["details"]["causes"].as_array().unwrap();
    assert_eq!(causes.len(), 3, "{j}");
    assert!(j["message"].as_str().unwrap().contains("spec.replicas: Invalid value: 1000: spec.replicas in body should be less than or equal to 100"), "{j}");
    assert!(
        j["message"]
            .as_str()
            .unwrap()
            .contains("spec.color: Unsupported value: \"purple\""),
        "{j}"
    );
    let r = create_widget(&s, "nocolor", json!({})).await.expect(422);
    assert!(
        r.text().contains("spec.color: Required value"),
        "{}",
        r.text()
    );
    // Protobuf bodies are not accepted for custom resources (ENC-05).
    let r = s
        .raw(
            Method::POST,
            W,
            &[("content-type", "application/vnd.kubernetes.protobuf")],
            "k8s\0",
            Some(common::admin()),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

#[tokio::test]
async fn sub_01_status_subresource_and_generation() {
    let s = with_widgets().await;
    create_widget(&s, "w", json!({"color":"blue"}))
        .await
        .expect(201);
    // Status in a create or a main-resource update is ignored.
    let r = s
        .patch(
            &format!("{W}/w"),
            "application/merge-patch+json",
            r#"{"status":{"replicas":4}}"#,
        )
        .await
        .expect(200)
        .json();
    assert!(r.get("status").is_none());
    assert_eq!(
        r["metadata"]["generation"], 1,
        "no spec change, no generation bump"
    );
    // /status changes status only.
    let r = s
        .patch(
            &format!("{W}/w/status"),
            "application/merge-patch+json",
            r#"{"status":{"replicas":4},"spec":{"color":"red"}}"#,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        (
            r["status"]["replicas"].as_i64(),
            r["spec"]["color"].as_str()
        ),
        (Some(4), Some("blue"))
    );
    assert_eq!(r["metadata"]["generation"], 1);
    // /status validates status.
    let r = s
        .patch(
            &format!("{W}/w/status"),
            "application/merge-patch+json",
            r#"{"status":{"replicas":"many"}}"#,
        )
        .await
        .expect(422);
    assert!(r.text().contains("status.replicas"), "{}", r.text());
    // A spec change bumps generation.
    let r = s
        .patch(
            &format!("{W}/w"),
            "application/merge-patch+json",
            r#"{"spec":{"size":9}}"#,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r["metadata"]["generation"], 2);
    let r = s
        .patch(
            &format!("{W}/w"),
            "application/merge-patch+json",
            r#"{"metadata":{"labels":{"a":"b"}}}"#,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        r["metadata"]["generation"], 2,
        "metadata changes do not bump generation"
    );
    // Strategic merge patch is not for custom resources (PATCH-04).
    assert_eq!(
        s.patch(
            &format!("{W}/w"),
            "application/strategic-merge-patch+json",
            "{}"
        )
        .await
        .status,
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
    // JSON patch works.
    s.patch(
        &format!("{W}/w"),
        "application/json-patch+json",
        r#"[{"op":"replace","path":"/spec/color","value":"green"}]"#,
    )
    .await
    .expect(200);
}

#[tokio::test]
async fn sub_02_scale_subresource() {
    let s = with_widgets().await;
    create_widget(&s, "w", json!({"color":"blue","replicas":2}))
        .await
        .expect(201);
    s.patch(
        &format!("{W}/w/status"),
        "application/merge-patch+json",
        r#"{"status":{"replicas":2,"selector":"app=w"}}"#,
    )
    .await
    .expect(200);
    let scale = s.get(&format!("{W}/w/scale")).await.expect(200).json();
    assert_eq!(
        (scale["kind"].as_str(), scale["apiVersion"].as_str()),
        (Some("Scale"), Some("autoscaling/v1"))
    );
    assert_eq!(
        (
            scale["spec"]["replicas"].as_i64(),
            scale["status"]["replicas"].as_i64()
        ),
        (Some(2), Some(2))
    );
    assert_eq!(scale["status"]["selector"], "app=w");
    let r = s
        .patch(
            &format!("{W}/w/scale"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":5}}"#,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r["spec"]["replicas"], 5);
    let w = s.get(&format!("{W}/w")).await.json();
    assert_eq!(
        (
            w["spec"]["replicas"].as_i64(),
            w["metadata"]["generation"].as_i64()
        ),
        (Some(5), Some(2))
    );
    // PUT with a stale resourceVersion conflicts; the schema still applies.
    let mut stale = scale.clone();
    stale["spec"]["replicas"] = json!(3);
    assert_eq!(
        s.req(Method::PUT, &format!("{W}/w/scale"), stale)
            .await
            .expect(409)
            .json()["reason"],
        "Conflict"
    );
    let r = s
        .patch(
            &format!("{W}/w/scale"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":500}}"#,
        )
        .await
        .expect(422);
    assert!(
        r.text()
            .contains("spec.replicas in body should be less than or equal to 100"),
        "{}",
        r.text()
    );
}

#[tokio::test]
async fn table_05_printer_columns() {
    let s = with_widgets().await;
    create_widget(&s, "w", json!({"color":"blue","replicas":2,"size":7}))
        .await
        .expect(201);
    s.patch(
        &format!("{W}/w/status"),
        "application/merge-patch+json",
        r#"{"status":{"conditions":[{"type":"Ready","status":"True"}]}}"#,
    )
    .await
    .expect(200);
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let t = s
        .raw(
            Method::GET,
            W,
            &[("accept", accept)],
            "",
            Some(common::admin()),
        )
        .await
        .expect(200)
        .json();
    let cols: Vec<(&str, i64)> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["priority"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        cols,
        vec![
            ("Name", 0),
            ("Color", 0),
            ("Replicas", 0),
            ("Size", 1),
            ("Ready", 0),
            ("Age", 0)
        ]
    );
    let cells = &t["rows"][0]["cells"];
    assert_eq!(cells[0], "w");
    assert_eq!(cells[1], "blue");
    assert_eq!(cells[2], 2);
    assert_eq!(cells[3], 7);
    assert_eq!(cells[4], "True");
    assert!(
        cells[5].as_str().unwrap().ends_with('s'),
        "age: {}",
        cells[5]
    );
    // A version without printer columns gets Name and Age.
    let t = s
        .raw(
            Method::GET,
            "/apis/example.com/v1alpha1/namespaces/default/widgets",
            &[("accept", accept)],
            "",
            Some(common::admin()),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(t["columnDefinitions"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn conv_01_02_versions_and_warn_02_deprecation() {
    let s = with_widgets().await;
    // Created through v1alpha1: stored at v1, shown at the version asked for.
    let r = s.req(Method::POST, "/apis/example.com/v1alpha1/namespaces/default/widgets", json!({"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"old"},"spec":{"color":"green"}})).await.expect(201);
    let warning = r.headers["warning"].to_str().unwrap().to_owned();
    assert!(
        warning.contains("example.com/v1alpha1 Widget is deprecated"),
        "{warning}"
    );
    assert_eq!(r.json()["apiVersion"], "example.com/v1alpha1");
    let v1 = s.get(&format!("{W}/old")).await.expect(200).json();
    assert_eq!(v1["apiVersion"], "example.com/v1");
    assert_eq!(
        v1["spec"]["replicas"], 1,
        "storage version defaults apply on read"
    );
    let list = s
        .get("/apis/example.com/v1alpha1/namespaces/default/widgets")
        .await
        .json();
    assert_eq!(list["apiVersion"], "example.com/v1alpha1");
    assert_eq!(list["items"][0]["apiVersion"], "example.com/v1alpha1");
    s.get("/apis/example.com/v2/namespaces/default/widgets")
        .await
        .expect(404);
    // A watch at another version converts each event (WATCH-07).
    let mut w = s
        .watch(&format!(
            "/apis/example.com/v1alpha1/namespaces/default/widgets?watch=1&resourceVersion={}",
            rv(&v1)
        ))
        .await;
    create_widget(&s, "new", json!({"color":"red"}))
        .await
        .expect(201);
    let ev = w.next().await.unwrap();
    assert_eq!(
        (ev["type"].as_str(), ev["object"]["apiVersion"].as_str()),
        (Some("ADDED"), Some("example.com/v1alpha1"))
    );
}

#[tokio::test]
async fn del_08_deleting_a_crd_deletes_its_objects() {
    let s = with_widgets().await;
    create_widget(&s, "a", json!({"color":"red"}))
        .await
        .expect(201);
    create_widget(&s, "b", json!({"color":"red"}))
        .await
        .expect(201);
    let r = s
        .req(
            Method::DELETE,
            &format!("{CRDS}/widgets.example.com"),
            Value::Null,
        )
        .await
        .expect(200)
        .json();
    assert!(r["metadata"]["deletionTimestamp"].is_string());
    s.wait_gone(
        &format!("{CRDS}/widgets.example.com"),
        std::time::Duration::from_secs(10),
    )
    .await;
    // The endpoint goes when the controller drops the type, just after the CRD itself.
    s.wait_gone(W, std::time::Duration::from_secs(10)).await;
    assert!(
        s.api
            .store()
            .list(
                "example.com/widgets/",
                wasmgate_storage::ReadAt::Latest,
                None,
                0,
                false
            )
            .await
            .unwrap()
            .items
            .is_empty()
    );
    // Re-creating starts empty.
    s.req(Method::POST, CRDS, widgets_crd()).await.expect(201);
    assert_eq!(s.get(W).await.expect(200).json()["items"], json!([]));
}

#[tokio::test]
async fn crd_restart_keeps_every_crd() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    {
        let s = Server::on_disk(&path).await;
        s.req(Method::POST, CRDS, widgets_crd()).await.expect(201);
        create_widget(&s, "kept", json!({"color":"blue"}))
            .await
            .expect(201);
        s.api.begin_shutdown();
    }
    // Reopening waits for the first server's tasks to let go of the file.
    let s = Server::on_disk(&path).await;
    assert_eq!(
        s.get(&format!("{W}/kept")).await.expect(200).json()["spec"]["color"],
        "blue"
    );
}

#[tokio::test]
async fn chunk_10000_custom_resources_list_in_chunks() {
    let s = with_widgets().await;
    let n = 10_000;
    let mut tasks = Vec::new();
    let s = std::sync::Arc::new(s);
    for t in 0..8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            for i in (t..n).step_by(8) {
                create_widget(&s, &format!("w{i:05}"), json!({"color":"red"}))
                    .await
                    .expect(201);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut names = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    let mut snapshot = None;
    loop {
        let uri = if token.is_empty() {
            format!("{W}?limit=500")
        } else {
            format!("{W}?limit=500&continue={token}")
        };
        let page = s.get(&uri).await.expect(200).json();
        pages += 1;
        let rv = page["metadata"]["resourceVersion"].clone();
        assert_eq!(snapshot.get_or_insert(rv.clone()), &rv, "CHUNK-02");
        names.extend(item_names(&page));
        match page["metadata"]["continue"].as_str() {
            Some(t) if !t.is_empty() => {
                assert_eq!(
                    page["metadata"]["remainingItemCount"].as_u64().unwrap() as usize,
                    n - names.len(),
                    "CHUNK-04"
                );
                token = t.to_owned();
            }
            _ => break,
        }
    }
    assert_eq!(pages, 20);
    let want: Vec<String> = (0..n).map(|i| format!("w{i:05}")).collect();
    assert_eq!(names, want, "every object once, in order");
}

#[tokio::test]
async fn crdv_02_err_09_cel_rules_compile_at_crd_write_and_run_on_objects() {
    let s = Server::new().await;
    let with_rule = |rule: &str, schema_extra: Value| {
        let mut spec = json!({"type":"object","properties":{"replicas":{"type":"integer"},"items":{"type":"array","items":{"type":"string"}}},
            "x-kubernetes-validations":[{"rule":rule}]});
        if let Value::Object(extra) = schema_extra {
            spec.as_object_mut().unwrap().extend(extra);
        }
        minimal_crd(
            "cel.io",
            "checks",
            "Check",
            json!({"type":"object","properties":{"spec":spec}}),
        )
    };
    let cases = [
        (
            "self.replicas == true",
            "found no matching overload for '_==_' applied to '(int, bool)'",
        ),
        (
            "self.nonExistingField > 0",
            "undefined field 'nonExistingField'",
        ),
        ("has(self)", "invalid argument to has() macro"),
    ];
    for (rule, want) in cases {
        let r = s
            .req(Method::POST, CRDS, with_rule(rule, Value::Null))
            .await
            .expect(422);
        let text = r.text();
        assert!(
            text.contains("compilation failed: ERROR: <input>:1:"),
            "{rule}: {text}"
        );
        assert!(text.contains(want), "{rule}: {text}");
        assert!(text.contains("x-kubernetes-validations[0].rule"), "{text}");
    }
    // Cost: a quadratic rule over an unbounded list is refused at write.
    let r = s
        .req(
            Method::POST,
            CRDS,
            with_rule("self.items.all(x, self.items.all(y, x == y))", Value::Null),
        )
        .await
        .expect(422);
    assert!(
        r.text().contains("estimated rule cost exceeds budget"),
        "{}",
        r.text()
    );
    // The same rule with bounds is fine.
    let bounded = with_rule(
        "self.items.all(x, self.items.all(y, x == y || x != y))",
        Value::Null,
    );
    let mut bounded = bounded;
    bounded["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["items"]["maxItems"] = json!(10);
    bounded["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["items"]["items"]["maxLength"] = json!(10);
    s.req(Method::POST, CRDS, bounded).await.expect(201);
}

#[tokio::test]
async fn crdv_02_rules_and_transition_rules_on_widgets() {
    let s = with_widgets().await;
    let r = create_widget(&s, "w", json!({"color":"blue","replicas":20}))
        .await
        .expect(422);
    let j = r.json();
    assert_eq!(
        j["message"],
        "Widget.example.com \"w\" is invalid: spec: Invalid value: \"object\": replicas must not exceed maxReplicas"
    );
    assert_eq!(j["details"]["causes"][0]["field"], "spec");
    create_widget(
        &s,
        "w",
        json!({"color":"blue","replicas":20,"maxReplicas":30,"label":"keep"}),
    )
    .await
    .expect(201);
    // Transition rule: oldSelf.label set, new one missing.
    let r = s
        .patch(
            &format!("{W}/w"),
            "application/json-patch+json",
            r#"[{"op":"remove","path":"/spec/label"}]"#,
        )
        .await
        .expect(422);
    assert!(
        r.text().contains("label cannot be removed once set"),
        "{}",
        r.text()
    );
    s.patch(
        &format!("{W}/w"),
        "application/merge-patch+json",
        r#"{"spec":{"label":"other"}}"#,
    )
    .await
    .expect(200);
}

/// A request body released by the test: the request is routed (and its type looked up)
/// first, and its body arrives later.
struct Gated(Option<tokio::sync::oneshot::Receiver<bytes::Bytes>>);

impl http_body::Body for Gated {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, Self::Error>>> {
        use std::future::Future as _;
        let Some(rx) = self.0.as_mut() else {
            return std::task::Poll::Ready(None);
        };
        match std::pin::Pin::new(rx).poll(cx) {
            std::task::Poll::Ready(Ok(b)) => {
                self.0 = None;
                std::task::Poll::Ready(Some(Ok(http_body::Frame::data(b))))
            }
            std::task::Poll::Ready(Err(_)) => std::task::Poll::Ready(None),
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn del_08_a_create_in_flight_when_its_crd_goes_is_not_stored() {
    let s = std::sync::Arc::new(with_widgets().await);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let api = s.api.clone();
    let pending = tokio::spawn(async move {
        let req = http::Request::builder()
            .method(Method::POST)
            .uri(W)
            .header("content-type", "application/json")
            .body(Gated(Some(rx)))
            .unwrap();
        api.handle(req, Some(common::admin())).await.status()
    });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    s.req(
        Method::DELETE,
        &format!("{CRDS}/widgets.example.com"),
        Value::Null,
    )
    .await
    .expect(200);
    s.wait_gone(
        &format!("{CRDS}/widgets.example.com"),
        std::time::Duration::from_secs(10),
    )
    .await;
    let body = json!({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"late"},"spec":{"color":"red"}});
    tx.send(bytes::Bytes::from(body.to_string())).unwrap();
    let status = pending.await.unwrap();
    assert_ne!(
        status,
        StatusCode::CREATED,
        "a create must not land after its CRD is gone"
    );
    s.req(Method::POST, CRDS, widgets_crd()).await.expect(201);
    assert_eq!(
        s.get(W).await.expect(200).json()["items"],
        json!([]),
        "DEL-08: re-created CRD starts empty"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_02_served_when_create_returns_even_during_a_large_cleanup() {
    let s = std::sync::Arc::new(with_widgets().await);
    let mut tasks = Vec::new();
    for t in 0..4 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            for i in (t..3000).step_by(4) {
                create_widget(&s, &format!("w{i}"), json!({"color":"red"}))
                    .await
                    .expect(201);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    s.req(
        Method::DELETE,
        &format!("{CRDS}/widgets.example.com"),
        Value::Null,
    )
    .await
    .expect(200);
    let started = std::time::Instant::now();
    s.req(
        Method::POST,
        CRDS,
        minimal_crd("other.io", "gadgets", "Gadget", json!({"type":"object"})),
    )
    .await
    .expect(201);
    s.get("/apis/other.io/v1/namespaces/default/gadgets")
        .await
        .expect(200);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn crd_update_cannot_rename_or_change_its_uid() {
    let s = with_widgets().await;
    let r = s
        .patch(
            &format!("{CRDS}/widgets.example.com"),
            "application/merge-patch+json",
            r#"{"metadata":{"name":"gizmos.example.com"},"spec":{"names":{"plural":"gizmos"}}}"#,
        )
        .await
        .expect(422);
    assert!(r.text().contains("field is immutable"), "{}", r.text());
    let r = s
        .patch(
            &format!("{CRDS}/widgets.example.com"),
            "application/merge-patch+json",
            r#"{"metadata":{"uid":"00000000-0000-0000-0000-000000000000"}}"#,
        )
        .await
        .expect(422);
    assert!(r.text().contains("metadata.uid"), "{}", r.text());
}

#[tokio::test]
async fn del_05_deletecollection_of_custom_resources() {
    let s = with_widgets().await;
    for (n, app) in [("a", "x"), ("b", "x"), ("c", "y")] {
        s.req(Method::POST, W, json!({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":n,"labels":{"app":app}},"spec":{"color":"red"}})).await.expect(201);
    }
    let r = s
        .req(
            Method::DELETE,
            &format!("{W}?labelSelector=app%3Dx"),
            Value::Null,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r["items"].as_array().unwrap().len(), 2);
    let left = item_names(&s.get(W).await.json());
    assert_eq!(left, vec!["c"]);
}
