//! `TokenReview` and `system:auth-delegator` (issue 24, item 9; `AGG-09`): an extension API
//! server bound to `system:auth-delegator` asks who a bearer token is, and the gateway
//! answers with its own authenticators (token file, service account tokens it signed),
//! audiences handled as kube handles them.
#![allow(clippy::unwrap_used, reason = "test code")]

use http::Method;
use serde_json::{Value, json};
use wasmgate_apiserver::{Options, User};
use wasmgate_auth::authn_token::Tokens;

mod common;
use common::Server;

const REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

async fn server() -> Server {
    Server::with(Options {
        tokens: Tokens::parse("alice-token,alice,1001,\"dev,ops\"\n").unwrap(),
        ..Options::default()
    })
    .await
}

fn review(token: &str, audiences: &[&str]) -> Value {
    let mut r = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}});
    if !audiences.is_empty() {
        r["spec"]["audiences"] = json!(audiences);
    }
    r
}

async fn post(s: &Server, body: Value, as_user: User) -> common::Resp {
    s.raw(
        Method::POST,
        REVIEWS,
        &[("content-type", "application/json")],
        body.to_string(),
        Some(as_user),
    )
    .await
}

fn user(name: &str) -> User {
    User {
        name: name.into(),
        groups: vec![],
    }
}

/// AGG-09: a token of the token file and a service account token the gateway signed are
/// reviewed as the gateway authenticates them (user, uid, groups with
/// `system:authenticated`, extra, audiences); an unknown token, a token for other
/// audiences and a revoked one are `authenticated` false with kube's `error`.
#[tokio::test]
async fn agg_09_token_reviews_authenticate_with_the_gateways_authenticators() {
    let s = server().await;
    let admin = common::admin();
    let r = post(&s, review("alice-token", &[]), admin.clone())
        .await
        .expect(201)
        .json();
    assert_eq!(r["kind"], "TokenReview");
    assert_eq!(r["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(r["spec"]["token"], "alice-token");
    assert_eq!(
        r["status"],
        json!({"authenticated": true,
               "user": {"username": "alice", "uid": "1001", "groups": ["dev", "ops", "system:authenticated"]},
               "audiences": [ISSUER]})
    );
    // A static token is audience-agnostic: for another audience it is not accepted.
    let r = post(&s, review("alice-token", &["vault"]), admin.clone())
        .await
        .expect(201)
        .json();
    assert_eq!(
        r["status"],
        json!({"user": {}, "error": "invalid bearer token"})
    );
    let r = post(&s, review("nobody", &[]), admin.clone())
        .await
        .expect(201)
        .json();
    assert_eq!(
        r["status"],
        json!({"user": {}, "error": "invalid bearer token"})
    );

    // A service account token, for the API server and for another audience.
    s.req(
        Method::POST,
        "/api/v1/namespaces/default/serviceaccounts",
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot"}}),
    )
    .await
    .expect(201);
    let token = |audiences: Value| {
        let s = &s;
        async move {
            let tr = s
                .req(
                    Method::POST,
                    "/api/v1/namespaces/default/serviceaccounts/bot/token",
                    json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"audiences": audiences}}),
                )
                .await
                .expect(201)
                .json();
            tr["status"]["token"].as_str().unwrap().to_owned()
        }
    };
    let sa_uid = s
        .get("/api/v1/namespaces/default/serviceaccounts/bot")
        .await
        .expect(200)
        .json()["metadata"]["uid"]
        .clone();
    let for_us = token(Value::Null).await;
    let r = post(&s, review(&for_us, &[]), admin.clone())
        .await
        .expect(201)
        .json();
    let st = &r["status"];
    assert_eq!(st["authenticated"], true);
    assert_eq!(st["user"]["username"], "system:serviceaccount:default:bot");
    assert_eq!(st["user"]["uid"], sa_uid);
    assert_eq!(
        st["user"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    let credential = st["user"]["extra"]["authentication.kubernetes.io/credential-id"][0]
        .as_str()
        .unwrap();
    assert!(credential.starts_with("JTI="), "{credential}");
    assert_eq!(st["audiences"], json!([ISSUER]));
    // Asked for other audiences: not accepted, with kube's error.
    let r = post(&s, review(&for_us, &["vault"]), admin.clone())
        .await
        .expect(201)
        .json();
    assert_eq!(
        r["status"],
        json!({"user": {}, "error": format!("token audiences [\"{ISSUER}\"] is invalid for the target audiences [\"vault\"]")})
    );
    // A token for `vault`: accepted for a review that asks for vault (the intersection is
    // reported), not for the API server's audience, and not as a request's credential.
    let for_vault = token(json!(["vault", "other"])).await;
    let r = post(&s, review(&for_vault, &["vault", "third"]), admin.clone())
        .await
        .expect(201)
        .json();
    assert_eq!(r["status"]["authenticated"], true);
    assert_eq!(r["status"]["audiences"], json!(["vault"]));
    let r = post(&s, review(&for_vault, &[]), admin.clone())
        .await
        .expect(201)
        .json();
    assert!(r["status"].get("authenticated").is_none(), "{r}");
    let as_request = s
        .raw(
            Method::GET,
            "/api/v1/namespaces",
            &[("authorization", &format!("Bearer {for_vault}"))],
            "",
            None,
        )
        .await;
    assert_eq!(as_request.status, 401);
    // The account deleted: its tokens are refused.
    s.req(
        Method::DELETE,
        "/api/v1/namespaces/default/serviceaccounts/bot",
        Value::Null,
    )
    .await
    .expect(200);
    let r = post(&s, review(&for_us, &[]), admin.clone())
        .await
        .expect(201)
        .json();
    assert_eq!(
        r["status"],
        json!({"user": {}, "error": "serviceaccounts \"bot\" not found"})
    );

    // No token: 400 as kube words it; a namespaced path does not exist; read verbs 405.
    let r = post(&s, review("", &[]), admin.clone())
        .await
        .expect(400)
        .json();
    assert_eq!(
        r["message"],
        "token is required for TokenReview in authentication"
    );
    s.raw(
        Method::POST,
        "/apis/authentication.k8s.io/v1/namespaces/default/tokenreviews",
        &[("content-type", "application/json")],
        review("alice-token", &[]).to_string(),
        Some(admin.clone()),
    )
    .await
    .expect(404);
    s.raw(Method::GET, REVIEWS, &[], "", Some(admin.clone()))
        .await
        .expect(405);
}

/// AGG-09: `system:auth-delegator` exists at start with kube's rules (create tokenreviews
/// and subjectaccessreviews); bound to an extension server's account it lets it review
/// tokens and access, and nothing else; without it a review is 403.
#[tokio::test]
async fn agg_09_auth_delegator_role_lets_a_bound_account_review() {
    let s = server().await;
    let role = s
        .get("/apis/rbac.authorization.k8s.io/v1/clusterroles/system:auth-delegator")
        .await
        .expect(200)
        .json();
    assert_eq!(
        role["rules"],
        json!([
            {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
            {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
        ])
    );
    assert_eq!(
        role["metadata"]["labels"]["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    let ext = user("system:serviceaccount:wardle:apiserver");
    let r = post(&s, review("alice-token", &[]), ext.clone())
        .await
        .expect(403)
        .json();
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("cannot create resource \"tokenreviews\" in API group \"authentication.k8s.io\" at the cluster scope"),
        "{r}"
    );
    s.req(
        Method::POST,
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "wardle:system:auth-delegator"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:auth-delegator"},
               "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": ext.name}]}),
    )
    .await
    .expect(201);
    let r = post(&s, review("alice-token", &[]), ext.clone())
        .await
        .expect(201)
        .json();
    assert_eq!(r["status"]["user"]["username"], "alice");
    let sar = s
        .raw(
            Method::POST,
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            &[("content-type", "application/json")],
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                   "spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "configmaps", "namespace": "default"}}})
            .to_string(),
            Some(ext.clone()),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(sar["status"]["allowed"], false);
    s.raw(
        Method::GET,
        "/api/v1/namespaces/default/configmaps",
        &[],
        "",
        Some(ext),
    )
    .await
    .expect(403);
}

/// AGG-09 (the reviews in discovery, so `kubectl auth can-i create tokenreviews` finds the
/// group): every review kind, `create` only, without a storage version hash; OpenAPI has
/// the create path and no item path.
#[tokio::test]
async fn agg_09_reviews_are_in_discovery_and_openapi() {
    let s = server().await;
    let authn = s
        .get("/apis/authentication.k8s.io/v1")
        .await
        .expect(200)
        .json();
    let names: Vec<&str> = authn["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["selfsubjectreviews", "tokenreviews"]);
    let tr = &authn["resources"][1];
    assert_eq!(tr["kind"], "TokenReview");
    assert_eq!(tr["namespaced"], false);
    assert_eq!(tr["verbs"], json!(["create"]));
    assert!(tr.get("storageVersionHash").is_none());
    let authz = s
        .get("/apis/authorization.k8s.io/v1")
        .await
        .expect(200)
        .json();
    let scoped: Vec<(&str, bool)> = authz["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap(),
                r["namespaced"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        scoped,
        [
            ("localsubjectaccessreviews", true),
            ("selfsubjectaccessreviews", false),
            ("selfsubjectrulesreviews", false),
            ("subjectaccessreviews", false),
        ]
    );
    let doc = s
        .get("/openapi/v3/apis/authentication.k8s.io/v1")
        .await
        .expect(200)
        .json();
    assert!(doc["paths"]["/apis/authentication.k8s.io/v1/tokenreviews"]["post"].is_object());
    assert!(
        doc["paths"]
            .get("/apis/authentication.k8s.io/v1/tokenreviews/{name}")
            .is_none()
    );
    assert!(doc["components"]["schemas"]["io.k8s.api.authentication.v1.TokenReview"].is_object());
    assert!(
        doc["components"]["schemas"]
            .get("io.k8s.api.authentication.v1.TokenReviewList")
            .is_none()
    );
}

/// AGG-05: the Role `extension-apiserver-authentication-reader` exists in `kube-system`
/// at start (kube's namespaced default); bound to an extension server's account (the
/// setup recipe's RoleBinding, CTX-05) it reads the `extension-apiserver-authentication`
/// ConfigMap and no other.
#[tokio::test]
async fn agg_05_authentication_reader_role_reads_the_configmap_only() {
    let s = server().await;
    let role = s
        .get("/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles/extension-apiserver-authentication-reader")
        .await
        .expect(200)
        .json();
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"],
                "resourceNames": ["extension-apiserver-authentication"]}])
    );
    let ext = user("system:serviceaccount:wardle:apiserver");
    let cm = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication";
    s.raw(Method::GET, cm, &[], "", Some(ext.clone()))
        .await
        .expect(403);
    s.req(
        Method::POST,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "wardle-auth-reader"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "extension-apiserver-authentication-reader"},
               "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": ext.name}]}),
    )
    .await
    .expect(201);
    s.create_cm("kube-system", "other", json!({})).await;
    s.raw(
        Method::GET,
        "/api/v1/namespaces/kube-system/configmaps/other",
        &[],
        "",
        Some(ext.clone()),
    )
    .await
    .expect(403);
    // The gateway publishes the ConfigMap when it has CAs to publish; this in-process
    // server has none, so the read is authorized and finds nothing.
    s.raw(Method::GET, cm, &[], "", Some(ext)).await.expect(404);
}
