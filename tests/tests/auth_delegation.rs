//! What an extension API server built with k8s.io/apiserver needs to delegate
//! authentication and authorization to the gateway (issue 24, item 9; `AGG-09`), with
//! kubectl 1.32 against the real binary: the `system:auth-delegator` ClusterRole, bound
//! to the server's account, lets it create `TokenReview`s and `SubjectAccessReview`s
//! (`kubectl auth can-i create tokenreviews --as=…`), and a `TokenReview` authenticates
//! with the gateway's own authenticators.

use wasmgate_e2e::{assert_contains, gateway_builder};

const EXT: &str = "--as=system:serviceaccount:wardle:apiserver";

/// AGG-09: before the binding the extension server's account may not review; bound to
/// `system:auth-delegator` it may create tokenreviews and subjectaccessreviews and
/// nothing else; bound to `extension-apiserver-authentication-reader` (AGG-05) it reads
/// the client CAs; its TokenReview of a service account token names that account.
#[test]
fn agg_09_auth_delegator_binding_and_token_reviews_with_kubectl() {
    let gw = gateway_builder!().start();
    assert_contains(
        &gw.kubectl_ok(&["get", "clusterrole", "system:auth-delegator", "-o", "yaml"]),
        &[
            "- authentication.k8s.io\n  resources:\n  - tokenreviews\n  verbs:\n  - create",
            "- authorization.k8s.io\n  resources:\n  - subjectaccessreviews\n  verbs:\n  - create",
            "kubernetes.io/bootstrapping: rbac-defaults",
        ],
    );
    let can = |args: &[&str]| {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        all.push(EXT);
        let out = gw.kubectl(&all);
        (
            String::from_utf8_lossy(&out.stdout).trim().to_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (answer, stderr) = can(&["create", "tokenreviews"]);
    assert_eq!(answer, "no");
    // Found in discovery (cluster-scoped, in authentication.k8s.io): no "doesn't have a
    // resource type" warning.
    assert!(!stderr.contains("doesn't have a resource type"), "{stderr}");
    assert_contains(
        &stderr,
        &["resource 'tokenreviews' is not namespace scoped in group 'authentication.k8s.io'"],
    );
    gw.kubectl_ok(&["create", "namespace", "wardle"]);
    gw.kubectl_ok(&["create", "serviceaccount", "apiserver", "-n", "wardle"]);
    assert_eq!(
        gw.kubectl_ok(&[
            "create",
            "clusterrolebinding",
            "wardle:system:auth-delegator",
            "--clusterrole=system:auth-delegator",
            "--serviceaccount=wardle:apiserver",
        ]),
        "clusterrolebinding.rbac.authorization.k8s.io/wardle:system:auth-delegator created\n"
    );
    assert_eq!(can(&["create", "tokenreviews"]).0, "yes");
    assert_eq!(
        can(&["create", "tokenreviews.authentication.k8s.io"]).0,
        "yes"
    );
    assert_eq!(can(&["create", "subjectaccessreviews"]).0, "yes");
    assert_eq!(can(&["create", "selfsubjectaccessreviews"]).0, "yes");
    assert_eq!(
        can(&["create", "localsubjectaccessreviews", "-n", "wardle"]).0,
        "no"
    );
    assert_eq!(can(&["get", "configmaps", "-n", "wardle"]).0, "no");
    // The recipe's other binding (AGG-05, CTX-05): the client CAs, readable through
    // kube's `extension-apiserver-authentication-reader` Role in kube-system.
    gw.kubectl_ok(&[
        "create",
        "rolebinding",
        "wardle-auth-reader",
        "-n",
        "kube-system",
        "--role=extension-apiserver-authentication-reader",
        "--serviceaccount=wardle:apiserver",
    ]);
    let ca = gw.kubectl_ok(&[
        "get",
        "configmap",
        "extension-apiserver-authentication",
        "-n",
        "kube-system",
        EXT,
        "-o",
        "jsonpath={.data.client-ca-file}",
    ]);
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");
    assert_eq!(can(&["get", "configmaps", "-n", "kube-system"]).0, "no");

    // A TokenReview of a service account token, as the extension server sends it.
    gw.kubectl_ok(&["create", "serviceaccount", "client"]);
    let token = gw.kubectl_ok(&["create", "token", "client"]);
    let review = gw.write_file(
        "review.yaml",
        &format!(
            "apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec:\n  token: {}\n",
            token.trim()
        ),
    );
    let path = review.to_str().unwrap();
    // --validate=false: kubectl's validation lists CRDs, which the account may not (as
    // against kube); an extension server sends the review with its client library.
    let out = gw.kubectl_ok(&[
        "create",
        "-f",
        path,
        EXT,
        "--validate=false",
        "-o",
        "jsonpath={.status.authenticated} {.status.user.username} {.status.user.groups} {.status.audiences}",
    ]);
    assert_eq!(
        out,
        r#"true system:serviceaccount:default:client ["system:serviceaccounts","system:serviceaccounts:default","system:authenticated"] ["https://kubernetes.default.svc.cluster.local"]"#
    );
    // For an audience the token was not issued for: not authenticated, kube's error.
    let other = gw.write_file(
        "other.yaml",
        &format!(
            "apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec:\n  token: {}\n  audiences: [wardle]\n",
            token.trim()
        ),
    );
    let out = gw.kubectl_ok(&[
        "create",
        "-f",
        other.to_str().unwrap(),
        "-o",
        "jsonpath={.status.authenticated}|{.status.error}",
    ]);
    assert_eq!(
        out,
        r#"|token audiences ["https://kubernetes.default.svc.cluster.local"] is invalid for the target audiences ["wardle"]"#
    );
    // Another account may not review.
    assert_contains(
        &gw.kubectl_err(&[
            "create",
            "-f",
            path,
            "--validate=false",
            "--as=system:serviceaccount:default:client",
        ]),
        &[
            "tokenreviews.authentication.k8s.io is forbidden",
            "cannot create resource \"tokenreviews\" in API group \"authentication.k8s.io\" at the cluster scope",
        ],
    );
}
