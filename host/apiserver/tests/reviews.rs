//! LocalSubjectAccessReview (issue 12): a SubjectAccessReview about one namespace, created
//! in it, checked as kube checks it.
#![allow(clippy::unwrap_used, reason = "test code")]

use http::Method;
use serde_json::{Value, json};

mod common;
use common::Server;

const LSAR: &str = "/apis/authorization.k8s.io/v1/namespaces/team/localsubjectaccessreviews";

fn review(ns: Option<&str>, attrs: Value) -> Value {
    let mut r = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "LocalSubjectAccessReview",
        "metadata": {},
        "spec": {"user": "alice", "resourceAttributes": attrs},
    });
    if let Some(ns) = ns {
        r["metadata"]["namespace"] = json!(ns);
    }
    r
}

#[tokio::test]
async fn local_subject_access_reviews_answer_for_their_namespace() {
    let s = Server::new().await;
    s.create_ns("team").await;
    s.req(
        Method::POST,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "read"},
               "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
    )
    .await
    .expect(201);
    s.req(
        Method::POST,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "alice-read"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read"},
               "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]}),
    )
    .await
    .expect(201);
    let allowed = |verb: &str| json!({"namespace": "team", "verb": verb, "resource": "configmaps"});
    let r = s
        .req(Method::POST, LSAR, review(None, allowed("get")))
        .await
        .expect(201)
        .json();
    assert_eq!(r["kind"], "LocalSubjectAccessReview");
    assert_eq!(r["metadata"]["namespace"], "team");
    assert_eq!(r["status"]["allowed"], true);
    let r = s
        .req(Method::POST, LSAR, review(Some("team"), allowed("delete")))
        .await
        .expect(201)
        .json();
    assert_eq!(r["status"]["allowed"], false);
    // Another namespace in the attributes: 422; in the object: 400.
    let r = s
        .req(
            Method::POST,
            LSAR,
            review(
                None,
                json!({"namespace": "other", "verb": "get", "resource": "configmaps"}),
            ),
        )
        .await
        .expect(422)
        .json();
    assert_eq!(
        r["details"]["causes"][0]["field"],
        "spec.resourceAttributes.namespace"
    );
    s.req(Method::POST, LSAR, review(Some("other"), allowed("get")))
        .await
        .expect(400);
    let mut non_resource = review(None, Value::Null);
    non_resource["spec"] =
        json!({"user": "alice", "nonResourceAttributes": {"path": "/x", "verb": "get"}});
    s.req(Method::POST, LSAR, non_resource).await.expect(422);
}
