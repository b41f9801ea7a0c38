//! Server-side apply and field management at the protocol level (issue 11): bad apply
//! bodies, dry runs, the `Update` entries every other write records, resets and
//! rewrites of `managedFields`, the precondition kubectl's migration patch relies on.
//! In-process, no sockets; item ids from SEED-CHECKLIST.md.
#![allow(clippy::unwrap_used, reason = "test code")]

use http::Method;
use serde_json::{Value, json};

mod common;
use common::{Server, admin, rv};

const CM: &str = "/api/v1/namespaces/demo/configmaps";
const APPLY: &str = "application/apply-patch+yaml";

async fn server() -> Server {
    let s = Server::new().await;
    s.create_ns("demo").await;
    s
}

/// The managers and operations of `obj`'s entries, in order.
fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap().to_owned(),
                        e["operation"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn fields_of<'a>(obj: &'a Value, manager: &str) -> &'a Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["manager"] == manager))
        .map(|e| &e["fieldsV1"])
        .unwrap_or_else(|| panic!("no entry for {manager} in {obj}"))
}

/// Bad apply bodies get 400 with kube's wording (invalid YAML with its line, another
/// name, kind or apiVersion than the URL's, `managedFields` set), and nothing is stored
/// (SSA-02, SSA-06, SSA-16).
#[tokio::test]
async fn ssa_02_bad_apply_bodies_store_nothing() {
    let s = server().await;
    let at = format!("{CM}/x?fieldManager=me");
    let bad_yaml = s
        .patch(&at, APPLY, "apiVersion: v1\nkind: ConfigMap\ndata: [\n")
        .await
        .expect(400)
        .json();
    let msg = bad_yaml["message"].as_str().unwrap();
    assert!(
        msg.starts_with("error decoding YAML:") && msg.contains("line"),
        "{msg}"
    );
    let other_name = s
        .patch(
            &at,
            APPLY,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n",
        )
        .await
        .expect(400)
        .json();
    assert_eq!(
        other_name["message"],
        "the name of the object (other) does not match the name on the URL (x)"
    );
    let other_kind = s
        .patch(&at, APPLY, "apiVersion: apps/v1\nkind: Deployment\n")
        .await
        .expect(400)
        .json();
    assert_eq!(
        other_kind["message"],
        "invalid object type: apps/v1, Kind=Deployment"
    );
    let with_entries = s
        .patch(
            &at,
            APPLY,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  managedFields: [{manager: x}]\n",
        )
        .await
        .expect(400)
        .json();
    assert_eq!(
        with_entries["message"],
        "metadata.managedFields must be nil"
    );
    s.get(&format!("{CM}/x")).await.expect(404);
}

/// `dryRun=All` on an apply runs it (create or update) and stores nothing (DRY-01,
/// SSA-01).
#[tokio::test]
async fn dry_01_apply_dry_run_stores_nothing() {
    let s = server().await;
    let body = |v: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\ndata:\n  a: \"{v}\"\n")
    };
    let created = s
        .patch(
            &format!("{CM}/d?fieldManager=me&dryRun=All"),
            APPLY,
            &body("1"),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(created["data"]["a"], "1");
    assert_eq!(managers(&created), [("me".into(), "Apply".into())]);
    s.get(&format!("{CM}/d")).await.expect(404);
    let real = s
        .patch(&format!("{CM}/d?fieldManager=me"), APPLY, &body("1"))
        .await
        .expect(201)
        .json();
    let dry = s
        .patch(
            &format!("{CM}/d?fieldManager=me&dryRun=All"),
            APPLY,
            &body("2"),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(dry["data"]["a"], "2");
    let stored = s.get(&format!("{CM}/d")).await.expect(200).json();
    assert_eq!(stored["data"]["a"], "1");
    assert_eq!(rv(&stored), rv(&real));
}

/// Every write records an `Update` entry for its manager: `fieldManager`, else the
/// User-Agent's product, else `unknown`; a write that changes a field takes it from its
/// other owners, one that changes nothing records nothing (SSA-13, SSA-14).
#[tokio::test]
async fn ssa_14_every_write_records_an_update_entry() {
    let s = server().await;
    let created = s
        .req(
            Method::POST,
            &format!("{CM}?fieldManager=maker"),
            json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u"},"data":{"a":"1","b":"1"}}),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(managers(&created), [("maker".into(), "Update".into())]);
    assert_eq!(
        fields_of(&created, "maker"),
        &json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}})
    );
    // A PUT (with the maker's entries as read) changing a: a moves to the updater.
    let mut changed = created.clone();
    changed["data"]["a"] = json!("2");
    let put = s
        .req(Method::PUT, &format!("{CM}/u?fieldManager=editor"), changed)
        .await
        .expect(200)
        .json();
    assert_eq!(
        fields_of(&put, "maker"),
        &json!({"f:data": {".": {}, "f:b": {}}})
    );
    assert_eq!(fields_of(&put, "editor"), &json!({"f:data": {"f:a": {}}}));
    // No fieldManager: the User-Agent's product names the manager.
    let patched = s
        .raw(
            Method::PATCH,
            &format!("{CM}/u"),
            &[
                ("content-type", "application/merge-patch+json"),
                ("user-agent", "tool/1.2 (linux/amd64)"),
            ],
            r#"{"metadata":{"labels":{"x":"y"}}}"#,
            Some(admin()),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        fields_of(&patched, "tool"),
        &json!({"f:metadata": {"f:labels": {".": {}, "f:x": {}}}})
    );
    // A patch that changes nothing adds no entry and keeps the resourceVersion.
    let same = s
        .patch(
            &format!("{CM}/u?fieldManager=idle"),
            "application/merge-patch+json",
            r#"{"data":{"b":"1"}}"#,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(rv(&same), rv(&patched));
    assert!(!managers(&same).iter().any(|(m, _)| m == "idle"));
    // Deleting b only: the maker loses it (keeping the map itself, `{}` in FieldsV1), the
    // deleter gets no entry.
    let deleted = s
        .patch(
            &format!("{CM}/u?fieldManager=remover"),
            "application/merge-patch+json",
            r#"{"data":{"b":null}}"#,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(fields_of(&deleted, "maker"), &json!({"f:data": {}}));
    assert!(!managers(&deleted).iter().any(|(m, _)| m == "remover"));
}

/// `managedFields: [{}]` stops tracking (later updates stay unrecorded, the next apply
/// starts from `before-first-apply`); valid entries in a write replace the stored ones;
/// a JSON patch of the entries with a stale resourceVersion is a 409, as kubectl's
/// client-side-apply migration expects (SSA-12, SSA-14, wire §7).
#[tokio::test]
async fn ssa_14_resetting_and_rewriting_entries() {
    let s = server().await;
    let at = format!("{CM}/r");
    s.req(
        Method::POST,
        &format!("{CM}?fieldManager=maker"),
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"r"},"data":{"a":"1"}}),
    )
    .await
    .expect(201);
    let reset = s
        .patch(
            &format!("{at}?fieldManager=x"),
            "application/merge-patch+json",
            r#"{"metadata":{"managedFields":[{}]},"data":{"b":"2"}}"#,
        )
        .await
        .expect(200)
        .json();
    assert!(reset["metadata"].get("managedFields").is_none(), "{reset}");
    let untracked = s
        .patch(
            &format!("{at}?fieldManager=y"),
            "application/merge-patch+json",
            r#"{"data":{"c":"3"}}"#,
        )
        .await
        .expect(200)
        .json();
    assert!(untracked["metadata"].get("managedFields").is_none());
    let conflict = s
        .patch(
            &format!("{at}?fieldManager=applier"),
            APPLY,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: r\ndata:\n  a: \"9\"\n",
        )
        .await
        .expect(409)
        .json();
    assert_eq!(
        conflict["message"],
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .data.a"
    );

    // Rewriting: the entries sent replace the stored ones.
    let entries = json!([{"manager":"chosen","operation":"Update","apiVersion":"v1",
        "fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}}]);
    let current = s.get(&at).await.expect(200).json();
    let rewrite = json!([
        {"op": "add", "path": "/metadata/managedFields", "value": entries},
        {"op": "replace", "path": "/metadata/resourceVersion", "value": current["metadata"]["resourceVersion"]},
    ])
    .to_string();
    let rewritten = s
        .patch(&at, "application/json-patch+json", &rewrite)
        .await
        .expect(200)
        .json();
    assert_eq!(managers(&rewritten), [("chosen".into(), "Update".into())]);
    // The same patch again: the rewrite was a write, so its resourceVersion is stale.
    let stale = s
        .patch(&at, "application/json-patch+json", &rewrite)
        .await
        .expect(409);
    assert_eq!(stale.reason(), "Conflict");
}

const GADGETS: &str = "/apis/ssa.example.com/v1/namespaces/demo/gadgets";

/// A CRD with a status subresource, for the subresource tests.
async fn with_gadgets() -> Server {
    let s = server().await;
    let obj = |props: Value| json!({"type": "object", "properties": props});
    let schema = obj(json!({
        "spec": obj(json!({"size": {"type": "integer"}})),
        "status": obj(json!({"ready": {"type": "boolean"}})),
    }));
    s.req(
        Method::POST,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
            "metadata":{"name":"gadgets.ssa.example.com"},
            "spec":{"group":"ssa.example.com","scope":"Namespaced",
                "names":{"plural":"gadgets","kind":"Gadget"},
                "versions":[{"name":"v1","served":true,"storage":true,
                    "subresources":{"status":{}},"schema":{"openAPIV3Schema":schema}}]}}),
    )
    .await
    .expect(201);
    s
}

/// With a status subresource, status is no one's on the main resource and only status
/// counts on `/status`, whose entries say `subresource: status`; an apply to `/status`
/// conflicts with the status writer, named as kube names it (SSA-04, SSA-14, SUB-01).
#[tokio::test]
async fn ssa_14_status_subresource_entries() {
    let s = with_gadgets().await;
    let created = s
        .req(
            Method::POST,
            &format!("{GADGETS}?fieldManager=maker"),
            json!({"apiVersion":"ssa.example.com/v1","kind":"Gadget","metadata":{"name":"g"},
                "spec":{"size":1},"status":{"ready":true}}),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(
        fields_of(&created, "maker"),
        &json!({"f:spec": {".": {}, "f:size": {}}})
    );
    let status = s
        .patch(
            &format!("{GADGETS}/g/status?fieldManager=ctrl"),
            "application/merge-patch+json",
            r#"{"status":{"ready":true},"spec":{"size":5}}"#,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        status["spec"]["size"], 1,
        "spec is not written through /status"
    );
    let entry = status["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "ctrl")
        .unwrap()
        .clone();
    assert_eq!(entry["subresource"], "status");
    assert_eq!(entry["operation"], "Update");
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:status": {".": {}, "f:ready": {}}})
    );
    let conflict = s
        .patch(
            &format!("{GADGETS}/g/status?fieldManager=other"),
            APPLY,
            "apiVersion: ssa.example.com/v1\nkind: Gadget\nmetadata:\n  name: g\nstatus:\n  ready: false\n",
        )
        .await
        .expect(409)
        .json();
    assert_eq!(
        conflict["message"],
        "Apply failed with 1 conflict: conflict with \"ctrl\" with subresource \"status\" using ssa.example.com/v1: .status.ready"
    );
}

/// `fieldValidation=Strict` refuses an apply configuration with an unknown field (400,
/// kube's wording), as it does for the other writes (SSA-01, FV-01).
#[tokio::test]
async fn fv_01_strict_field_validation_of_apply_bodies() {
    let s = with_gadgets().await;
    let r = s
        .patch(
            &format!("{GADGETS}/g?fieldManager=me&fieldValidation=Strict"),
            APPLY,
            "apiVersion: ssa.example.com/v1\nkind: Gadget\nmetadata:\n  name: g\nspec:\n  size: 1\n  bogus: 2\n",
        )
        .await
        .expect(400)
        .json();
    assert_eq!(
        r["message"],
        "strict decoding error: unknown field \"spec.bogus\""
    );
    s.get(&format!("{GADGETS}/g")).await.expect(404);
}
