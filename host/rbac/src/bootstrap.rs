//! The default roles and bindings of kube's bootstrap policy, written at start when
//! missing (see the parent module).

use serde_json::{Value, json};

use super::{GROUP, Index, MASTERS, PolicyRule, sync};
use crate::Context;

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

/// What every controller role of kube's may do with events.
fn events_rule() -> Value {
    rule(
        &["", "events.k8s.io"],
        &["events"],
        &["create", "patch", "update"],
    )
}

fn urls(paths: &[&str], verbs: &[&str]) -> Value {
    json!({"nonResourceURLs": paths, "verbs": verbs})
}

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = &crate::registry::ALL_VERBS;

/// One default ClusterRole: (name, labels, the `aggregate-to-<x>` label it aggregates, its
/// own rules).
type DefaultRole = (
    &'static str,
    Vec<(&'static str, &'static str)>,
    Option<&'static str>,
    Vec<Value>,
);

/// One default ClusterRoleBinding: (name, role, subjects as (kind, name, namespace)).
type DefaultBinding = (
    &'static str,
    &'static str,
    Vec<(&'static str, &'static str, &'static str)>,
);

/// The default ClusterRoles, as kube's bootstrap policy has them for the resources
/// Wasmgate serves (and some it does not, so that roles written for kube read the same).
fn default_cluster_roles() -> Vec<DefaultRole> {
    vec![
        (
            "cluster-admin",
            vec![],
            None,
            vec![rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
        ),
        ("admin", vec![], Some("admin"), vec![]),
        (
            "edit",
            vec![("rbac.authorization.k8s.io/aggregate-to-admin", "true")],
            Some("edit"),
            vec![],
        ),
        (
            "view",
            vec![("rbac.authorization.k8s.io/aggregate-to-edit", "true")],
            Some("view"),
            vec![],
        ),
        (
            "system:aggregate-to-admin",
            vec![("rbac.authorization.k8s.io/aggregate-to-admin", "true")],
            None,
            vec![
                rule(
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                    &["create"],
                ),
                rule(&[GROUP], &["rolebindings", "roles"], READ_WRITE),
            ],
        ),
        (
            "system:aggregate-to-edit",
            vec![("rbac.authorization.k8s.io/aggregate-to-edit", "true")],
            None,
            vec![
                rule(
                    &[""],
                    &[
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                        "secrets",
                        "services/proxy",
                    ],
                    READ,
                ),
                rule(&[""], &["serviceaccounts"], &["impersonate"]),
                rule(
                    &[""],
                    &[
                        "pods",
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                    ],
                    WRITE,
                ),
                rule(&[""], &["pods/eviction"], &["create"]),
                rule(
                    &[""],
                    &[
                        "configmaps",
                        "events",
                        "persistentvolumeclaims",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "secrets",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                    ],
                    WRITE,
                ),
                rule(&[""], &["serviceaccounts/token"], &["create"]),
                rule(&["coordination.k8s.io"], &["leases"], READ_WRITE),
            ],
        ),
        (
            "system:aggregate-to-view",
            vec![("rbac.authorization.k8s.io/aggregate-to-view", "true")],
            None,
            vec![
                rule(
                    &[""],
                    &[
                        "configmaps",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                    ],
                    READ,
                ),
                rule(
                    &[""],
                    &[
                        "bindings",
                        "events",
                        "limitranges",
                        "namespaces/status",
                        "pods/log",
                        "pods/status",
                        "replicationcontrollers/status",
                        "resourcequotas",
                        "resourcequotas/status",
                    ],
                    READ,
                ),
                rule(&[""], &["namespaces"], READ),
            ],
        ),
        (
            "system:discovery",
            vec![],
            None,
            vec![urls(
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
                &["get"],
            )],
        ),
        (
            "system:public-info-viewer",
            vec![],
            None,
            vec![urls(
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
                &["get"],
            )],
        ),
        (
            // What an extension API server needs to delegate authentication and
            // authorization to this one (`AGG-09`); bound by whoever runs one.
            "system:auth-delegator",
            vec![],
            None,
            vec![
                rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
                rule(
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                    &["create"],
                ),
            ],
        ),
        (
            "system:basic-user",
            vec![],
            None,
            vec![
                rule(
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    &["create"],
                ),
                rule(
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                    &["create"],
                ),
            ],
        ),
        (
            "system:monitoring",
            vec![],
            None,
            vec![urls(
                &[
                    "/healthz",
                    "/healthz/*",
                    "/livez",
                    "/livez/*",
                    "/metrics",
                    "/readyz",
                    "/readyz/*",
                ],
                &["get"],
            )],
        ),
        (
            "system:controller:generic-garbage-collector",
            vec![],
            None,
            vec![
                rule(
                    &["*"],
                    &["*"],
                    &["delete", "get", "list", "patch", "update", "watch"],
                ),
                events_rule(),
            ],
        ),
        (
            "system:controller:namespace-controller",
            vec![],
            None,
            vec![
                rule(&[""], &["namespaces"], &["delete", "get", "list", "watch"]),
                rule(
                    &[""],
                    &["namespaces/finalize", "namespaces/status"],
                    &["update"],
                ),
                rule(
                    &["*"],
                    &["*"],
                    &["delete", "deletecollection", "get", "list"],
                ),
                events_rule(),
            ],
        ),
    ]
}

/// The default ClusterRoleBindings.
fn default_bindings() -> Vec<DefaultBinding> {
    vec![
        (
            "cluster-admin",
            "cluster-admin",
            vec![("Group", MASTERS, "")],
        ),
        (
            "system:discovery",
            "system:discovery",
            vec![("Group", "system:authenticated", "")],
        ),
        (
            "system:basic-user",
            "system:basic-user",
            vec![("Group", "system:authenticated", "")],
        ),
        (
            "system:public-info-viewer",
            "system:public-info-viewer",
            vec![
                ("Group", "system:authenticated", ""),
                ("Group", "system:unauthenticated", ""),
            ],
        ),
        (
            "system:monitoring",
            "system:monitoring",
            vec![("Group", "system:monitoring", "")],
        ),
        (
            "system:controller:generic-garbage-collector",
            "system:controller:generic-garbage-collector",
            vec![("ServiceAccount", "generic-garbage-collector", "kube-system")],
        ),
        (
            "system:controller:namespace-controller",
            "system:controller:namespace-controller",
            vec![("ServiceAccount", "namespace-controller", "kube-system")],
        ),
    ]
}

/// Creates the default roles and bindings that are missing (kube's `rbac/bootstrap-roles`
/// post-start hook; existing ones are left as they are), then builds the index.
pub async fn bootstrap(inner: &dyn Context) -> Result<(), String> {
    let defaults = json!({"kubernetes.io/bootstrapping": "rbac-defaults"});
    let annotations = json!({"rbac.authorization.kubernetes.io/autoupdate": "true"});
    let mut objects = Vec::new();
    let all = default_cluster_roles();
    for (name, labels, aggregated_from, own) in &all {
        let mut l = defaults.clone();
        for (k, v) in labels {
            l[*k] = json!(v);
        }
        let mut role = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name, "labels": l, "annotations": annotations},
            "rules": own,
        });
        if let Some(from) = aggregated_from {
            let label = format!("rbac.authorization.k8s.io/aggregate-to-{from}");
            role["aggregationRule"] =
                json!({"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]});
        }
        objects.push(("clusterroles", role));
    }
    // The aggregated roles' rules written in, as kube's aggregation controller does.
    let with_rules = Index::build(0, objects.iter().map(|(_, o)| o.clone()));
    for (_, role) in &mut objects {
        if role.get("aggregationRule").is_some()
            && let Some(name) = crate::object::meta_str(role, "name")
            && let Some(rules) = with_rules.cluster_roles.get(name)
        {
            let rules: Vec<Value> = rules.iter().map(rule_json).collect();
            role["rules"] = Value::Array(rules);
        }
    }
    for (name, role, subjects) in default_bindings() {
        let subjects: Vec<Value> = subjects
            .iter()
            .map(|(kind, n, ns)| {
                let mut s = json!({"kind": kind, "name": n});
                if ns.is_empty() {
                    s["apiGroup"] = json!(GROUP);
                } else {
                    s["namespace"] = json!(ns);
                }
                s
            })
            .collect();
        objects.push((
            "clusterrolebindings",
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name, "labels": defaults, "annotations": annotations},
                "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
                "subjects": subjects,
            }),
        ));
    }
    // kube's namespaced default: what an extension API server reads its client CAs with
    // (`AGG-05`; bound by whoever runs one, next to `system:auth-delegator`).
    objects.push((
        "namespaces/kube-system/roles",
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "extension-apiserver-authentication-reader", "namespace": "kube-system",
                         "labels": defaults, "annotations": annotations},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": READ,
                       "resourceNames": ["extension-apiserver-authentication"]}],
        }),
    ));
    for (resource, obj) in objects {
        let path = format!("/apis/{GROUP}/v1/{resource}");
        let (code, v) = inner
            .call(
                crate::client::system_user(),
                http::Method::POST,
                &path,
                "application/json",
                Some(&obj),
            )
            .await?;
        if code >= 300 && code != 409 {
            return Err(format!(
                "creating {resource} {}: {}",
                crate::object::meta_str(&obj, "name").unwrap_or(""),
                crate::client::failure(code, &v)
            ));
        }
    }
    sync(inner).await.map(|_| ())
}

fn rule_json(r: &PolicyRule) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("verbs".into(), json!(r.verbs));
    if !r.api_groups.is_empty() {
        m.insert("apiGroups".into(), json!(r.api_groups));
    }
    if !r.resources.is_empty() {
        m.insert("resources".into(), json!(r.resources));
    }
    if !r.resource_names.is_empty() {
        m.insert("resourceNames".into(), json!(r.resource_names));
    }
    if !r.non_resource_urls.is_empty() {
        m.insert("nonResourceURLs".into(), json!(r.non_resource_urls));
    }
    Value::Object(m)
}
