//! `events.k8s.io/v1` (issue 24, item 5): the events API served over the core Events'
//! storage, as kube stores one resource and presents both — conversion both ways, watches
//! that see writes made through the other group, field selectors of each group, kube's
//! events.k8s.io/v1 validation (422 causes), discovery, OpenAPI and the Table printer.
#![allow(clippy::unwrap_used, reason = "test code")]

use http::Method;
use serde_json::{Value, json};

mod common;
use common::{Server, item_names, type_and_name};

const V1: &str = "/apis/events.k8s.io/v1/namespaces/team/events";
const CORE: &str = "/api/v1/namespaces/team/events";

/// What kube-rs's `Recorder` (and client-go's events broadcaster) POSTs.
fn recorded(name: &str) -> Value {
    json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": name, "namespace": "team"},
        "eventTime": "2025-06-01T10:00:00.000000Z",
        "reportingController": "example.com/ctl", "reportingInstance": "ctl-1",
        "action": "Reconcile", "reason": "Synced", "type": "Normal",
        "regarding": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "team", "uid": "u-1"},
        "related": {"kind": "Secret", "name": "s", "namespace": "team"},
        "note": "reconciled cm",
    })
}

/// ISSUE-24.5: an events.k8s.io/v1 Event is a core Event and back, field for field
/// (`note`/`message`, `regarding`/`involvedObject`, `reportingController`/
/// `reportingComponent`, `deprecated*`); one storage, so a delete through either group
/// removes it from both.
#[tokio::test]
async fn issue_24_5_one_event_two_groups() {
    let s = Server::new().await;
    s.create_ns("team").await;
    let made = s
        .req(Method::POST, V1, recorded("cm.1"))
        .await
        .expect(201)
        .json();
    assert_eq!(made["apiVersion"], "events.k8s.io/v1");
    assert_eq!(made["note"], "reconciled cm");
    assert_eq!(made["regarding"]["name"], "cm");
    assert_eq!(made["reportingController"], "example.com/ctl");
    assert!(made.get("message").is_none() && made.get("involvedObject").is_none());
    let core = s.get(&format!("{CORE}/cm.1")).await.expect(200).json();
    assert_eq!(core["apiVersion"], "v1");
    assert_eq!(core["message"], "reconciled cm");
    assert_eq!(core["involvedObject"]["uid"], "u-1");
    assert_eq!(core["reportingComponent"], "example.com/ctl");
    assert_eq!(core["reportingInstance"], "ctl-1");
    assert_eq!(core["action"], "Reconcile");
    assert_eq!(core["related"]["name"], "s");
    assert_eq!(core["eventTime"], "2025-06-01T10:00:00.000000Z");
    assert!(core.get("note").is_none() && core.get("regarding").is_none());
    assert_eq!(core["metadata"]["uid"], made["metadata"]["uid"]);
    assert_eq!(
        core["metadata"]["resourceVersion"],
        made["metadata"]["resourceVersion"]
    );

    // A legacy core event, read through events.k8s.io: the deprecated fields.
    s.req(
        Method::POST,
        CORE,
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "old"},
               "involvedObject": {"kind": "ConfigMap", "name": "cm", "namespace": "team"},
               "reason": "Created", "message": "hi", "type": "Warning", "count": 3,
               "source": {"component": "kubelet", "host": "n1"},
               "firstTimestamp": "2025-06-01T09:00:00Z", "lastTimestamp": "2025-06-01T09:30:00Z"}),
    )
    .await
    .expect(201);
    let old = s.get(&format!("{V1}/old")).await.expect(200).json();
    assert_eq!(old["deprecatedCount"], 3);
    assert_eq!(
        old["deprecatedSource"],
        json!({"component": "kubelet", "host": "n1"})
    );
    assert_eq!(old["deprecatedFirstTimestamp"], "2025-06-01T09:00:00Z");
    assert_eq!(old["deprecatedLastTimestamp"], "2025-06-01T09:30:00Z");
    assert_eq!(old["note"], "hi");
    assert_eq!(old["regarding"]["kind"], "ConfigMap");

    // Lists of both groups hold both, each in its own form.
    let list = s.get(V1).await.expect(200).json();
    assert_eq!(list["kind"], "EventList");
    assert_eq!(list["apiVersion"], "events.k8s.io/v1");
    assert_eq!(item_names(&list), ["cm.1", "old"]);
    assert!(
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["apiVersion"] == "events.k8s.io/v1" && i.get("message").is_none())
    );
    let all = s
        .get("/apis/events.k8s.io/v1/events")
        .await
        .expect(200)
        .json();
    assert_eq!(item_names(&all), ["cm.1", "old"]);
    let core_list = s.get(CORE).await.expect(200).json();
    assert!(
        core_list["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["apiVersion"] == "v1")
    );

    // A repeated event: the series patched through events.k8s.io (as client-go's
    // broadcaster sends it), seen by the core API as its series.
    let patched = s
        .patch(
            &format!("{V1}/cm.1"),
            "application/strategic-merge-patch+json",
            r#"{"series":{"count":2,"lastObservedTime":"2025-06-01T10:05:00.000000Z"}}"#,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(patched["series"]["count"], 2);
    assert_eq!(patched["note"], "reconciled cm");
    let core = s.get(&format!("{CORE}/cm.1")).await.expect(200).json();
    assert_eq!(core["series"]["count"], 2);
    // A merge patch (kube-rs's Recorder) of the same.
    s.patch(
        &format!("{V1}/cm.1"),
        "application/merge-patch+json",
        r#"{"series":{"count":3,"lastObservedTime":"2025-06-01T10:06:00.000000Z"}}"#,
    )
    .await
    .expect(200);

    // Deleted through the core API: gone from both.
    s.req(Method::DELETE, &format!("{CORE}/cm.1"), Value::Null)
        .await
        .expect(200);
    s.get(&format!("{V1}/cm.1")).await.expect(404);
    let gone = s
        .req(Method::DELETE, &format!("{V1}/old"), Value::Null)
        .await
        .expect(200)
        .json();
    assert_eq!(gone["status"], "Success");
    s.get(&format!("{CORE}/old")).await.expect(404);
}

/// ISSUE-24.5: a watch on one group sees the writes made through the other, each event's
/// object in the watch's own form; field selectors of each group filter both.
#[tokio::test]
async fn issue_24_5_watches_and_selectors_cross_groups() {
    let s = Server::new().await;
    s.create_ns("team").await;
    let start = s.get(CORE).await.expect(200).json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut v1_watch = s
        .watch(&format!("{V1}?watch=1&resourceVersion={start}"))
        .await;
    let mut core_watch = s
        .watch(&format!("{CORE}?watch=1&resourceVersion={start}"))
        .await;
    let mut selected = s
        .watch(&format!(
            "{V1}?watch=1&resourceVersion={start}&fieldSelector=regarding.name%3Dcm,reportingController%3Dexample.com%2Fctl"
        ))
        .await;
    // Written through events.k8s.io; then a legacy event through the core API.
    s.req(Method::POST, V1, recorded("cm.1")).await.expect(201);
    s.req(
        Method::POST,
        CORE,
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "legacy"},
               "involvedObject": {"kind": "Secret", "name": "other", "namespace": "team"},
               "reason": "Created", "message": "core write", "type": "Normal"}),
    )
    .await
    .expect(201);
    let ev = v1_watch.next().await.unwrap();
    assert_eq!(type_and_name(&ev), ("ADDED", "cm.1"));
    assert_eq!(ev["object"]["apiVersion"], "events.k8s.io/v1");
    let ev = v1_watch.next().await.unwrap();
    assert_eq!(type_and_name(&ev), ("ADDED", "legacy"));
    assert_eq!(ev["object"]["note"], "core write");
    assert_eq!(ev["object"]["regarding"]["kind"], "Secret");
    let ev = core_watch.next().await.unwrap();
    assert_eq!(type_and_name(&ev), ("ADDED", "cm.1"));
    assert_eq!(ev["object"]["apiVersion"], "v1");
    assert_eq!(ev["object"]["message"], "reconciled cm");
    assert_eq!(ev["object"]["involvedObject"]["name"], "cm");
    assert_eq!(
        type_and_name(&core_watch.next().await.unwrap()),
        ("ADDED", "legacy")
    );
    // The selecting watch saw the first only.
    let ev = selected.next().await.unwrap();
    assert_eq!(type_and_name(&ev), ("ADDED", "cm.1"));
    assert!(
        selected
            .quiet_for(std::time::Duration::from_millis(300))
            .await
    );

    // Field selectors in lists: each group's labels, on events written through either.
    let names = |q: &str| {
        let s = &s;
        let q = q.to_owned();
        async move { item_names(&s.get(&q).await.expect(200).json()) }
    };
    assert_eq!(
        names(&format!("{V1}?fieldSelector=regarding.kind%3DSecret")).await,
        ["legacy"]
    );
    assert_eq!(
        names(&format!(
            "{V1}?fieldSelector=reportingController%3Dexample.com%2Fctl"
        ))
        .await,
        ["cm.1"]
    );
    assert_eq!(
        names(&format!("{V1}?fieldSelector=source%3Dexample.com%2Fctl")).await,
        ["cm.1"]
    );
    assert_eq!(
        names(&format!(
            "{V1}?fieldSelector=type%3DNormal,reason%3DCreated"
        ))
        .await,
        ["legacy"]
    );
    assert_eq!(
        names(&format!("{CORE}?fieldSelector=involvedObject.name%3Dcm")).await,
        ["cm.1"]
    );
    assert_eq!(
        names(&format!(
            "{CORE}?fieldSelector=reportingComponent%3Dexample.com%2Fctl"
        ))
        .await,
        ["cm.1"]
    );
    // Each group's own labels only, as kube's field label conversions have them.
    let bad = s
        .get(&format!("{V1}?fieldSelector=involvedObject.name%3Dcm"))
        .await
        .expect(400)
        .json();
    assert_eq!(
        bad["message"],
        "field label not supported: involvedObject.name"
    );
    s.get(&format!("{CORE}?fieldSelector=regarding.name%3Dcm"))
        .await
        .expect(400);
}

/// ISSUE-24.5: kube's events.k8s.io/v1 validation, 422 with one cause each, field paths as
/// kube reports them (the core type's); the core API keeps its legacy rules.
#[tokio::test]
async fn issue_24_5_events_v1_validation() {
    let s = Server::new().await;
    s.create_ns("team").await;
    let causes = |r: &Value| -> Vec<(String, String)> {
        r["details"]["causes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["field"].as_str().unwrap().to_owned(),
                    c["message"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let mut bad = recorded("bad");
    let m = bad.as_object_mut().unwrap();
    m.remove("eventTime");
    m.remove("reportingController");
    m.insert("type".into(), json!("Fatal"));
    m.insert("deprecatedCount".into(), json!(2));
    let r = s.req(Method::POST, V1, bad).await.expect(422).json();
    assert_eq!(r["reason"], "Invalid");
    assert_eq!(r["details"]["kind"], "Event");
    assert_eq!(r["details"]["group"], "events.k8s.io");
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .starts_with("Event.events.k8s.io \"bad\" is invalid: "),
        "{r}"
    );
    assert_eq!(
        causes(&r),
        [
            ("eventTime".into(), "Required value".into()),
            (
                "type".into(),
                "Invalid value: \"\": has invalid value: Fatal".into()
            ),
            (
                "count".into(),
                "Invalid value: \"\": needs to be unset".into()
            ),
        ]
    );
    // With eventTime: the reporter and the lengths.
    let mut bad = recorded("bad");
    bad["reportingInstance"] = json!("");
    bad["action"] = json!("a".repeat(129));
    bad["reason"] = json!("r".repeat(129));
    bad["note"] = json!("n".repeat(1025));
    let r = s.req(Method::POST, V1, bad).await.expect(422).json();
    assert_eq!(
        causes(&r),
        [
            ("reportingInstance".into(), "Required value".into()),
            (
                "action".into(),
                "Invalid value: \"\": can have at most 128 characters".into()
            ),
            (
                "reason".into(),
                "Invalid value: \"\": can have at most 128 characters".into()
            ),
            (
                "message".into(),
                "Invalid value: \"\": can have at most 1024 characters".into()
            ),
        ]
    );
    let mut bad = recorded("bad");
    bad["reportingController"] = json!("not a name!");
    bad["series"] = json!({"count": 1});
    let r = s.req(Method::POST, V1, bad).await.expect(422).json();
    let got = causes(&r);
    assert_eq!(got[0].0, "reportingController");
    assert!(
        got[0]
            .1
            .contains("name part must consist of alphanumeric characters"),
        "{got:?}"
    );
    assert_eq!(
        got[1..],
        [
            (
                "series.count".into(),
                "Invalid value: \"\": should be at least 2".into()
            ),
            ("series.lastObservedTime".into(), "Required value".into()),
        ]
    );
    // The core API: no eventTime needed, any type; only the legacy namespace rule.
    s.req(
        Method::POST,
        CORE,
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "loose"},
               "involvedObject": {"kind": "Pod", "name": "p", "namespace": "team"}, "type": "Custom"}),
    )
    .await
    .expect(201);
    let r = s
        .req(
            Method::POST,
            CORE,
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "elsewhere"},
                   "involvedObject": {"kind": "Node", "name": "n"}}),
        )
        .await
        .expect(422)
        .json();
    assert_eq!(
        causes(&r),
        [(
            "involvedObject.namespace".into(),
            "Invalid value: \"\": does not match event.namespace".into()
        )]
    );
    // An update through events.k8s.io: the series may change, the note not.
    s.req(Method::POST, V1, recorded("cm.1")).await.expect(201);
    let r = s
        .patch(
            &format!("{V1}/cm.1"),
            "application/merge-patch+json",
            r#"{"note":"rewritten"}"#,
        )
        .await
        .expect(422)
        .json();
    assert_eq!(
        causes(&r),
        [(
            "message".into(),
            "Invalid value: \"rewritten\": field is immutable".into()
        )]
    );
}

/// ISSUE-24.5: discovery (legacy and aggregated), OpenAPI (what `kubectl explain` reads),
/// and kube's Table columns for `kubectl get events.events.k8s.io`.
#[tokio::test]
async fn issue_24_5_discovery_openapi_and_table() {
    let s = Server::new().await;
    let groups = s.get("/apis").await.expect(200).json();
    assert!(
        groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "events.k8s.io" && g["preferredVersion"]["version"] == "v1")
    );
    let list = s.get("/apis/events.k8s.io/v1").await.expect(200).json();
    let ev = &list["resources"][0];
    assert_eq!(ev["name"], "events");
    assert_eq!(ev["kind"], "Event");
    assert_eq!(ev["namespaced"], true);
    assert_eq!(ev["shortNames"], json!(["ev"]));
    // One stored resource: the same storage version hash as the core events'.
    let core = s.get("/api/v1").await.expect(200).json();
    let core_ev = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "events")
        .unwrap();
    assert_eq!(ev["storageVersionHash"], core_ev["storageVersionHash"]);
    let agg = s
        .raw(
            Method::GET,
            "/apis",
            &[(
                "accept",
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            )],
            "",
            Some(common::admin()),
        )
        .await
        .expect(200)
        .json();
    let group = agg["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "events.k8s.io")
        .unwrap();
    assert_eq!(group["versions"][0]["resources"][0]["resource"], "events");
    assert_eq!(group["versions"][0]["resources"][0]["scope"], "Namespaced");

    let doc = s
        .get("/openapi/v3/apis/events.k8s.io/v1")
        .await
        .expect(200)
        .json();
    let schema = &doc["components"]["schemas"]["io.k8s.api.events.v1.Event"];
    assert_eq!(
        schema["x-kubernetes-group-version-kind"],
        json!([{"group": "events.k8s.io", "version": "v1", "kind": "Event"}])
    );
    for f in [
        "note",
        "regarding",
        "reportingController",
        "deprecatedCount",
        "series",
    ] {
        assert!(schema["properties"][f].is_object(), "{f}");
    }
    assert!(
        doc["paths"]["/apis/events.k8s.io/v1/namespaces/{namespace}/events"]["post"].is_object()
    );

    s.create_ns("team").await;
    s.req(Method::POST, V1, recorded("cm.1")).await.expect(201);
    let table = s
        .raw(
            Method::GET,
            V1,
            &[("accept", "application/json;as=Table;g=meta.k8s.io;v=v1")],
            "",
            Some(common::admin()),
        )
        .await
        .expect(200)
        .json();
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        columns,
        [
            "Last Seen",
            "Type",
            "Reason",
            "Object",
            "Subobject",
            "Source",
            "Message",
            "First Seen",
            "Count",
            "Name"
        ]
    );
    let cells = &table["rows"][0]["cells"];
    assert_eq!(cells[1], "Normal");
    assert_eq!(cells[2], "Synced");
    assert_eq!(cells[3], "configmap/cm");
    assert_eq!(cells[5], "example.com/ctl, ctl-1");
    assert_eq!(cells[6], "reconciled cm");
    assert_eq!(cells[8], 1);
    assert_eq!(cells[9], "cm.1");
}
