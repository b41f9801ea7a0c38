//! Garbage collection of dependents (`GAP-06`, issue 7): background, foreground and orphan
//! propagation, uid matching, scope rules, custom resources, restarts and a large fan-out.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::{Value, json};

mod common;
use common::Server;

const CM: &str = "/api/v1/namespaces/default/configmaps";
const WAIT: Duration = Duration::from_secs(20);

fn owner_ref(owner: &Value, block: bool) -> Value {
    json!({
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": block,
    })
}

async fn create_dependent(s: &Server, name: &str, owners: Vec<Value>, finalizers: Value) -> Value {
    s.req(
        Method::POST,
        CM,
        json!({"metadata":{"name":name,"ownerReferences":owners,"finalizers":finalizers},"apiVersion":"v1","kind":"ConfigMap","data":{"k":"v"}}),
    )
    .await
    .expect(201)
    .json()
}

/// Polls `check` on GET `uri` until it holds; panics after [`WAIT`].
async fn wait_until(s: &Server, uri: &str, what: &str, check: impl Fn(&common::Resp) -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let r = s.get(uri).await;
        if check(&r) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{uri}: {what} not reached: {}",
            r.text()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Removes every finalizer of ConfigMap `name`.
async fn release(s: &Server, name: &str) {
    s.patch(
        &format!("{CM}/{name}"),
        "application/merge-patch+json",
        r#"{"metadata":{"finalizers":null}}"#,
    )
    .await
    .expect(200);
}

async fn delete_with(s: &Server, uri: &str, policy: &str) -> common::Resp {
    s.req(
        Method::DELETE,
        uri,
        json!({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":policy}),
    )
    .await
}

#[tokio::test]
async fn gap_06_background_deletes_dependents_after_the_owner() {
    let s = Server::new().await;
    let owner = s.create_cm("default", "owner", json!({})).await;
    create_dependent(&s, "dep1", vec![owner_ref(&owner, false)], json!([])).await;
    create_dependent(&s, "dep2", vec![owner_ref(&owner, true)], json!([])).await;
    // The default policy: the owner goes at once.
    s.req(Method::DELETE, &format!("{CM}/owner"), Value::Null)
        .await
        .expect(200);
    s.get(&format!("{CM}/owner")).await.expect(404);
    s.wait_gone(&format!("{CM}/dep1"), WAIT).await;
    s.wait_gone(&format!("{CM}/dep2"), WAIT).await;
}

#[tokio::test]
async fn gap_06_foreground_keeps_the_owner_until_blocking_dependents_are_gone() {
    let s = Server::new().await;
    let owner = s.create_cm("default", "owner", json!({})).await;
    // A blocking dependent held by a finalizer of its own, and a free one.
    create_dependent(
        &s,
        "held",
        vec![owner_ref(&owner, true)],
        json!(["example.com/hold"]),
    )
    .await;
    create_dependent(&s, "free", vec![owner_ref(&owner, false)], json!([])).await;
    let r = delete_with(&s, &format!("{CM}/owner"), "Foreground")
        .await
        .expect(200)
        .json();
    assert!(r["metadata"]["deletionTimestamp"].is_string(), "{r}");
    assert_eq!(r["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    s.wait_gone(&format!("{CM}/free"), WAIT).await;
    wait_until(&s, &format!("{CM}/held"), "deletionTimestamp", |r| {
        r.json()["metadata"]["deletionTimestamp"].is_string()
    })
    .await;
    // The owner waits on the blocking dependent.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let o = s.get(&format!("{CM}/owner")).await.expect(200).json();
    assert_eq!(o["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    // Release it: the dependent goes, then the owner.
    release(&s, "held").await;
    s.wait_gone(&format!("{CM}/held"), WAIT).await;
    s.wait_gone(&format!("{CM}/owner"), WAIT).await;
}

#[tokio::test]
async fn gap_06_orphan_removes_the_reference_and_keeps_dependents() {
    let s = Server::new().await;
    let owner = s.create_cm("default", "owner", json!({})).await;
    let other = s.create_cm("default", "other", json!({})).await;
    create_dependent(
        &s,
        "dep",
        vec![owner_ref(&owner, true), owner_ref(&other, false)],
        json!([]),
    )
    .await;
    let r = delete_with(&s, &format!("{CM}/owner"), "Orphan")
        .await
        .expect(200)
        .json();
    assert_eq!(r["metadata"]["finalizers"], json!(["orphan"]));
    s.wait_gone(&format!("{CM}/owner"), WAIT).await;
    let dep = s.get(&format!("{CM}/dep")).await.expect(200).json();
    assert_eq!(
        dep["metadata"]["ownerReferences"],
        json!([owner_ref(&other, false)]),
        "only the orphaning owner's reference goes"
    );
    // The deprecated `orphanDependents=true` orphans as well.
    create_dependent(&s, "dep2", vec![owner_ref(&other, false)], json!([])).await;
    s.req(
        Method::DELETE,
        &format!("{CM}/other?orphanDependents=true"),
        Value::Null,
    )
    .await
    .expect(200);
    s.wait_gone(&format!("{CM}/other"), WAIT).await;
    let dep2 = s.get(&format!("{CM}/dep2")).await.expect(200).json();
    assert!(dep2["metadata"].get("ownerReferences").is_none(), "{dep2}");
}

#[tokio::test]
async fn gap_06_orphan_dependents_false_answers_202_while_the_owner_waits() {
    let s = Server::new().await;
    let owner = create_dependent(&s, "owner", vec![], json!(["example.com/hold"])).await;
    create_dependent(&s, "dep", vec![owner_ref(&owner, true)], json!([])).await;
    // kube answers 202 when a delete asking to cascade with the deprecated
    // `orphanDependents: false` leaves the object in place.
    let r = s
        .req(
            Method::DELETE,
            &format!("{CM}/owner?orphanDependents=false"),
            Value::Null,
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text());
    // The owner still exists, so its dependent stays.
    tokio::time::sleep(Duration::from_millis(300)).await;
    s.get(&format!("{CM}/dep")).await.expect(200);
    release(&s, "owner").await;
    s.wait_gone(&format!("{CM}/owner"), WAIT).await;
    s.wait_gone(&format!("{CM}/dep"), WAIT).await;
}

#[tokio::test]
async fn gap_06_references_match_by_uid() {
    let s = Server::new().await;
    let owner = s.create_cm("default", "owner", json!({})).await;
    // A reference to an owner that never existed, and one to a name whose uid differs.
    let mut ghost = owner_ref(&owner, false);
    ghost["name"] = json!("never-existed");
    create_dependent(&s, "ghostly", vec![ghost], json!([])).await;
    let mut stale = owner_ref(&owner, false);
    stale["uid"] = json!("00000000-0000-0000-0000-000000000000");
    create_dependent(&s, "stale", vec![stale.clone()], json!([])).await;
    // With a live owner beside the gone one, only the gone reference is dropped.
    create_dependent(
        &s,
        "mixed",
        vec![stale, owner_ref(&owner, false)],
        json!([]),
    )
    .await;
    s.wait_gone(&format!("{CM}/ghostly"), WAIT).await;
    s.wait_gone(&format!("{CM}/stale"), WAIT).await;
    wait_until(&s, &format!("{CM}/mixed"), "one reference left", |r| {
        r.json()["metadata"]["ownerReferences"] == json!([owner_ref(&owner, false)])
    })
    .await;
    // The owner replaced by a namesake: its dependents go.
    s.req(Method::DELETE, &format!("{CM}/owner"), Value::Null)
        .await
        .expect(200);
    s.create_cm("default", "owner", json!({})).await;
    s.wait_gone(&format!("{CM}/mixed"), WAIT).await;
}

#[tokio::test]
async fn gap_06_namespaced_owners_only_in_the_same_namespace_and_not_of_cluster_objects() {
    let s = Server::new().await;
    s.create_ns("other").await;
    let owner = s.create_cm("default", "owner", json!({})).await;
    // A namespaced owner is looked up in the dependent's namespace: not there, collected.
    s.req(
        Method::POST,
        "/api/v1/namespaces/other/configmaps",
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"elsewhere","ownerReferences":[owner_ref(&owner, false)]}}),
    )
    .await
    .expect(201);
    s.wait_gone("/api/v1/namespaces/other/configmaps/elsewhere", WAIT)
        .await;
    // A cluster-scoped dependent cannot have a namespaced owner: kept, and reported.
    s.req(
        Method::POST,
        "/api/v1/namespaces",
        json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"owned-ns","ownerReferences":[owner_ref(&owner, false)]}}),
    )
    .await
    .expect(201);
    let deadline = tokio::time::Instant::now() + WAIT;
    let event = loop {
        let events = s
            .get("/api/v1/namespaces/default/events")
            .await
            .expect(200)
            .json();
        if let Some(e) = events["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["involvedObject"]["name"] == "owned-ns")
        {
            break e.clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "no event");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(event["reason"], "OwnerRefInvalidNamespace");
    assert_eq!(event["type"], "Warning");
    assert_eq!(event["involvedObject"]["kind"], "Namespace");
    assert!(
        event["message"]
            .as_str()
            .unwrap()
            .contains("does not exist in namespace \"\""),
        "{event}"
    );
    s.get("/api/v1/namespaces/owned-ns").await.expect(200);
}

#[tokio::test]
async fn gap_06_custom_resources_own_and_are_owned() {
    let s = Server::new().await;
    let crd = json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
        "metadata":{"name":"apps.gc.example.com"},
        "spec":{"group":"gc.example.com","scope":"Namespaced","names":{"plural":"apps","kind":"App"},
            "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}});
    s.req(
        Method::POST,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        crd,
    )
    .await
    .expect(201);
    let apps = "/apis/gc.example.com/v1/namespaces/default/apps";
    let app = s
        .req(
            Method::POST,
            apps,
            json!({"apiVersion":"gc.example.com/v1","kind":"App","metadata":{"name":"a"}}),
        )
        .await
        .expect(201)
        .json();
    create_dependent(&s, "cfg", vec![owner_ref(&app, true)], json!([])).await;
    let child = s
        .req(
            Method::POST,
            apps,
            json!({"apiVersion":"gc.example.com/v1","kind":"App","metadata":{"name":"child","ownerReferences":[owner_ref(&app, true)]}}),
        )
        .await
        .expect(201)
        .json();
    create_dependent(&s, "grandchild", vec![owner_ref(&child, true)], json!([])).await;
    delete_with(&s, &format!("{apps}/a"), "Foreground")
        .await
        .expect(200);
    // Foreground cascades through the custom child to its own dependent, then the owner.
    s.wait_gone(&format!("{CM}/grandchild"), WAIT).await;
    s.wait_gone(&format!("{apps}/child"), WAIT).await;
    s.wait_gone(&format!("{CM}/cfg"), WAIT).await;
    s.wait_gone(&format!("{apps}/a"), WAIT).await;
}

#[tokio::test]
async fn gap_06_collection_resumes_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    {
        let s = Server::on_disk(&path).await;
        let owner = s.create_cm("default", "owner", json!({})).await;
        create_dependent(&s, "dep", vec![owner_ref(&owner, false)], json!([])).await;
        // An orphaning delete whose collector stops before it finishes: the object keeps
        // its finalizer in the store.
        s.api.begin_shutdown();
        tokio::time::sleep(Duration::from_millis(50)).await;
        delete_with(&s, &format!("{CM}/owner"), "Orphan")
            .await
            .expect(200);
    }
    let s = Server::on_disk(&path).await;
    // The new collector finds the pending orphaning in its scan and completes it.
    s.wait_gone(&format!("{CM}/owner"), WAIT).await;
    let dep = s.get(&format!("{CM}/dep")).await.expect(200).json();
    assert!(dep["metadata"].get("ownerReferences").is_none(), "{dep}");
    // A dependent whose owner went while no collector ran is collected after a restart.
    let owner2 = s.create_cm("default", "owner2", json!({})).await;
    create_dependent(&s, "dep2", vec![owner_ref(&owner2, false)], json!([])).await;
    s.api.begin_shutdown();
    tokio::time::sleep(Duration::from_millis(50)).await;
    s.req(Method::DELETE, &format!("{CM}/owner2"), Value::Null)
        .await
        .expect(200);
    tokio::time::sleep(Duration::from_millis(200)).await;
    s.get(&format!("{CM}/dep2")).await.expect(200);
    drop(s);
    let s = Server::on_disk(&path).await;
    s.wait_gone(&format!("{CM}/dep2"), WAIT).await;
}

#[tokio::test]
async fn gap_06_ten_thousand_dependents_of_one_owner() {
    let s = std::sync::Arc::new(Server::new().await);
    let owner = s.create_cm("default", "owner", json!({})).await;
    let n = 10_000;
    let mut tasks = Vec::new();
    for t in 0..16 {
        let s = s.clone();
        let r = owner_ref(&owner, true);
        tasks.push(tokio::spawn(async move {
            for i in (t..n).step_by(16) {
                create_dependent(&s, &format!("d{i:05}"), vec![r.clone()], json!([])).await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    delete_with(&s, &format!("{CM}/owner"), "Foreground")
        .await
        .expect(200);
    s.wait_gone(&format!("{CM}/owner"), Duration::from_secs(300))
        .await;
    let left = s.get(CM).await.expect(200).json();
    assert_eq!(
        left["items"].as_array().unwrap().len(),
        0,
        "every dependent went first"
    );
}

#[tokio::test]
async fn gap_06_owner_of_a_kind_not_served_yet_is_resolved_when_its_crd_arrives() {
    let s = Server::new().await;
    let thing = json!({"apiVersion":"later.example.com/v1","kind":"Thing","name":"t","uid":"1234"});
    create_dependent(&s, "waits", vec![thing], json!([])).await;
    // The kind is unknown: the collector cannot tell whether the owner exists, so it waits.
    tokio::time::sleep(Duration::from_millis(300)).await;
    s.get(&format!("{CM}/waits")).await.expect(200);
    let crd = json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
        "metadata":{"name":"things.later.example.com"},
        "spec":{"group":"later.example.com","scope":"Namespaced","names":{"plural":"things","kind":"Thing"},
            "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}});
    s.req(
        Method::POST,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        crd,
    )
    .await
    .expect(201);
    // Now served, and no Thing "t" exists: the dependent is collected.
    s.wait_gone(&format!("{CM}/waits"), WAIT).await;
}
