//! # wasmgate-rbac
//!
//! RBAC authorization (`rbac.authorization.k8s.io/v1`, issue 12), as kube-apiserver's
//! authorizer chain decides: members of `system:masters` may do anything; everyone else
//! what the rules of the roles bound to them allow — every ClusterRoleBinding, and for a
//! request in a namespace the RoleBindings there (a RoleBinding may name a ClusterRole,
//! whose rules then hold in that namespace only). Rules only add; nothing denies.
//!
//! The bindings and roles are kept in memory ([`Index`]), rebuilt from the store whenever
//! one changes; a write of one waits until the index has it, so the next request sees it.
//! An aggregated ClusterRole (`aggregationRule`) holds its own rules plus those of every
//! ClusterRole its selectors match, computed when the index is built (kube's controller
//! writes them into the object; here `kubectl get` shows the ones written at bootstrap).
//!
//! The default roles and bindings (`cluster-admin`, `admin`, `edit`, `view`,
//! `system:discovery`, `system:basic-user`, `system:public-info-viewer`,
//! `system:auth-delegator` (unbound, for extension API servers: `AGG-09`), and the roles
//! of the gateway's own controllers), and the Role `extension-apiserver-authentication-reader`
//! in `kube-system` (`AGG-05`) are created at start when missing ([`bootstrap`],
//! `rbac/bootstrap.rs`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};

use serde::Deserialize;
use serde_json::Value;
use wasmgate_storage::ReadAt;

use wasmgate_apimachinery::validation::FieldError;

use wasmgate_apiserver_core::{User, client, error, object};
use wasmgate_controllers as controller;
use wasmgate_registry as registry;

mod bootstrap;

/// What the authorizer needs of the server: the controllers' context (the store to build
/// the index from, the loopback client for the default policy) and the index it keeps.
pub trait Context: wasmgate_controllers::Context {
    /// The roles and bindings in force, rebuilt on every change.
    fn rbac(&self) -> &tokio::sync::watch::Sender<Arc<Index>>;
}

/// A shared server is a context too.
impl<C: Context + ?Sized> Context for Arc<C> {
    fn rbac(&self) -> &tokio::sync::watch::Sender<Arc<Index>> {
        (**self).rbac()
    }
}

pub use bootstrap::bootstrap;

/// The API group.
pub const GROUP: &str = crate::registry::RBAC_GROUP;
/// Where the RBAC objects are stored.
const PREFIX: &str = "rbac.authorization.k8s.io/";
/// The group that may do anything.
pub const MASTERS: &str = "system:masters";

/// One rule of a role.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    #[serde(rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct Subject {
    kind: String,
    name: String,
    namespace: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct RoleRef {
    kind: String,
    name: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct BindingMeta {
    name: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct Binding {
    metadata: BindingMeta,
    subjects: Vec<Subject>,
    #[serde(rename = "roleRef")]
    role_ref: RoleRef,
}

/// A resource request's part of the attributes.
#[derive(Debug, Clone, Default)]
pub struct ResourceAttributes {
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

/// What a request asks to do (kube's `authorizer.Attributes`).
#[derive(Debug, Clone)]
pub struct Attributes<'a> {
    pub user: &'a User,
    pub verb: String,
    /// `None`: a non-resource request for `path`.
    pub resource: Option<ResourceAttributes>,
    pub path: String,
}

impl PolicyRule {
    fn allows(&self, a: &Attributes<'_>) -> bool {
        let has = |list: &[String], v: &str| list.iter().any(|x| x == "*" || x == v);
        if !has(&self.verbs, &a.verb) {
            return false;
        }
        match &a.resource {
            Some(r) => {
                has(&self.api_groups, &r.group)
                    && self.resource_matches(r)
                    && (self.resource_names.is_empty()
                        || (!r.name.is_empty() && self.resource_names.contains(&r.name)))
            }
            None => self.non_resource_urls.iter().any(|u| {
                u == "*"
                    || *u == a.path
                    || u.strip_suffix('*').is_some_and(|p| a.path.starts_with(p))
            }),
        }
    }

    /// `*`, the exact `resource[/subresource]`, or `*/<subresource>`.
    fn resource_matches(&self, r: &ResourceAttributes) -> bool {
        let combined = if r.subresource.is_empty() {
            r.resource.clone()
        } else {
            format!("{}/{}", r.resource, r.subresource)
        };
        self.resources.iter().any(|x| {
            x == "*"
                || *x == combined
                || (!r.subresource.is_empty()
                    && x.strip_prefix("*/") == Some(r.subresource.as_str()))
        })
    }
}

impl Subject {
    /// Whether the subject names `user` (`binding_ns`: the RoleBinding's namespace, the
    /// default of a ServiceAccount subject's).
    fn applies_to(&self, user: &Who<'_>, binding_ns: &str) -> bool {
        match self.kind.as_str() {
            "User" => self.name == user.name,
            "Group" => user.groups.iter().any(|g| *g == self.name),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    binding_ns
                } else {
                    &self.namespace
                };
                !ns.is_empty() && user.name == format!("system:serviceaccount:{ns}:{}", self.name)
            }
            _ => false,
        }
    }
}

/// A user as bindings see it: the name and every group.
pub struct Who<'a> {
    name: &'a str,
    groups: Vec<&'a str>,
}

impl<'a> Who<'a> {
    /// An authenticated user (`system:authenticated` added, as kube's authenticators do).
    pub fn of(user: &'a User) -> Who<'a> {
        Who {
            name: &user.name,
            groups: user.groups_with_authenticated().collect(),
        }
    }

    /// A `SubjectAccessReview`'s subject: the groups exactly as given.
    pub fn literal(user: &'a User) -> Who<'a> {
        Who {
            name: &user.name,
            groups: user.groups.iter().map(String::as_str).collect(),
        }
    }
}

/// The authorizer's decision: `system:masters` may do anything, everyone else what the
/// current index allows.
pub fn permits(inner: &dyn Context, a: &Attributes<'_>) -> bool {
    is_master(a.user) || inner.rbac().borrow().allows(a)
}

/// The authorizer's decision with its reason, as kube's audit annotation
/// `authorization.k8s.io/reason` gives it: `Some("")` for `system:masters` (kube's
/// privileged-group authorizer gives none), `Some("RBAC: allowed by …")` naming the
/// binding, role and subject that allow it, `None` when nothing does.
pub fn decide(inner: &dyn Context, a: &Attributes<'_>) -> Option<String> {
    if is_master(a.user) {
        return Some(String::new());
    }
    inner.rbac().borrow().allowed_by(a, &Who::of(a.user))
}

/// Whether `user` is in `system:masters`.
pub fn is_master(user: &User) -> bool {
    user.groups.iter().any(|g| g == MASTERS)
}

/// The roles and bindings, as of one store revision.
#[derive(Debug, Default)]
pub struct Index {
    /// The store revision this was built at.
    pub revision: u64,
    cluster_roles: HashMap<String, Vec<PolicyRule>>,
    roles: HashMap<(String, String), Vec<PolicyRule>>,
    cluster_bindings: Vec<Binding>,
    bindings: HashMap<String, Vec<Binding>>,
}

impl Index {
    /// Builds the index from the stored RBAC objects (as JSON).
    fn build(revision: u64, objects: impl IntoIterator<Item = Value>) -> Index {
        let mut ix = Index {
            revision,
            ..Index::default()
        };
        let mut cluster_roles: Vec<Value> = Vec::new();
        for obj in objects {
            let ns = crate::object::meta_str(&obj, "namespace")
                .unwrap_or("")
                .to_owned();
            let name = crate::object::meta_str(&obj, "name")
                .unwrap_or("")
                .to_owned();
            match obj.get("kind").and_then(Value::as_str) {
                Some("ClusterRole") => cluster_roles.push(obj),
                Some("Role") => {
                    ix.roles.insert((ns, name), rules_of(&obj));
                }
                Some("ClusterRoleBinding") => {
                    if let Ok(b) = serde_json::from_value(obj) {
                        ix.cluster_bindings.push(b);
                    }
                }
                Some("RoleBinding") => {
                    if let Ok(b) = serde_json::from_value(obj) {
                        ix.bindings.entry(ns).or_default().push(b);
                    }
                }
                _ => {}
            }
        }
        ix.cluster_roles = aggregate(&cluster_roles);
        ix
    }

    /// The rules of the role `r` names, for a binding in `ns` ("" for a ClusterRoleBinding).
    fn role_rules(&self, r: &RoleRef, ns: &str) -> &[PolicyRule] {
        let rules = match r.kind.as_str() {
            "ClusterRole" => self.cluster_roles.get(&r.name),
            "Role" if !ns.is_empty() => self.roles.get(&(ns.to_owned(), r.name.clone())),
            _ => None,
        };
        rules.map_or(&[], Vec::as_slice)
    }

    /// Every rule that holds for `user` in `namespace` ("": cluster-wide ones only).
    pub fn rules_for<'a>(&'a self, user: &'a User, namespace: &'a str) -> Vec<&'a PolicyRule> {
        self.rules_of_subject(&Who::of(user), namespace)
    }

    /// Why `who` may do `a` (kube's RBAC reason), if a binding allows it.
    fn allowed_by(&self, a: &Attributes<'_>, who: &Who<'_>) -> Option<String> {
        let ns = a.resource.as_ref().map_or("", |r| r.namespace.as_str());
        let cluster = self.cluster_bindings.iter().map(|b| (b, ""));
        let local = self.bindings.get(ns).into_iter().flatten().map(|b| (b, ns));
        cluster.chain(local).find_map(|(b, binding_ns)| {
            let subject = b.subjects.iter().find(|s| s.applies_to(who, binding_ns))?;
            if !self
                .role_rules(&b.role_ref, binding_ns)
                .iter()
                .any(|r| r.allows(a))
            {
                return None;
            }
            let binding = if binding_ns.is_empty() {
                format!("ClusterRoleBinding {:?}", b.metadata.name)
            } else {
                format!(
                    "RoleBinding {:?}",
                    format!("{}/{binding_ns}", b.metadata.name)
                )
            };
            let subject = match subject.kind.as_str() {
                "ServiceAccount" => {
                    let sa_ns = if subject.namespace.is_empty() {
                        binding_ns
                    } else {
                        &subject.namespace
                    };
                    format!("ServiceAccount {:?}", format!("{}/{sa_ns}", subject.name))
                }
                kind => format!("{kind} {:?}", subject.name),
            };
            Some(format!(
                "RBAC: allowed by {binding} of {} {:?} to {subject}",
                b.role_ref.kind, b.role_ref.name
            ))
        })
    }

    fn rules_of_subject<'a>(&'a self, user: &Who<'_>, namespace: &'a str) -> Vec<&'a PolicyRule> {
        let cluster = self
            .cluster_bindings
            .iter()
            .filter(|b| b.subjects.iter().any(|s| s.applies_to(user, "")))
            .flat_map(|b| self.role_rules(&b.role_ref, ""));
        let local = self
            .bindings
            .get(namespace)
            .into_iter()
            .flatten()
            .filter(|b| b.subjects.iter().any(|s| s.applies_to(user, namespace)))
            .flat_map(|b| self.role_rules(&b.role_ref, namespace));
        cluster.chain(local).collect()
    }

    /// Whether the request is allowed.
    pub fn allows(&self, a: &Attributes<'_>) -> bool {
        self.allows_subject(a, &Who::of(a.user))
    }

    /// [`Index::allows`] for `who` (a `SubjectAccessReview`'s literal subject).
    pub fn allows_subject(&self, a: &Attributes<'_>, who: &Who<'_>) -> bool {
        if who.groups.contains(&MASTERS) {
            return true;
        }
        let ns = a.resource.as_ref().map_or("", |r| r.namespace.as_str());
        self.rules_of_subject(who, ns).iter().any(|r| r.allows(a))
    }
}

fn rules_of(obj: &Value) -> Vec<PolicyRule> {
    obj.get("rules")
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default()
}

/// Each ClusterRole's effective rules: its own, and for an aggregated one those of every
/// ClusterRole its selectors match (by name order, nested aggregation followed, each rule
/// once).
fn aggregate(roles: &[Value]) -> HashMap<String, Vec<PolicyRule>> {
    let by_name: BTreeMap<&str, &Value> = roles
        .iter()
        .filter_map(|r| Some((crate::object::meta_str(r, "name")?, r)))
        .collect();
    let mut out = HashMap::new();
    for name in by_name.keys() {
        let mut rules = Vec::new();
        let mut seen = vec![*name];
        collect_rules(name, &by_name, &mut seen, &mut rules);
        out.insert((*name).to_owned(), rules);
    }
    out
}

fn collect_rules<'a>(
    name: &'a str,
    by_name: &BTreeMap<&'a str, &'a Value>,
    seen: &mut Vec<&'a str>,
    rules: &mut Vec<PolicyRule>,
) {
    let Some(role) = by_name.get(name) else {
        return;
    };
    for r in rules_of(role) {
        if !rules.contains(&r) {
            rules.push(r);
        }
    }
    let Some(selectors) = role
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
    else {
        return;
    };
    for sel in selectors {
        for (other, obj) in by_name {
            if seen.contains(other) || !selector_matches(sel, obj) {
                continue;
            }
            seen.push(other);
            collect_rules(other, by_name, seen, rules);
        }
    }
}

/// A label selector (`matchLabels`, `matchExpressions`) against an object's labels.
fn selector_matches(sel: &Value, obj: &Value) -> bool {
    let labels = obj.pointer("/metadata/labels");
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let by_labels = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .is_none_or(|m| m.iter().all(|(k, v)| label(k) == v.as_str()));
    let by_expressions = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .is_none_or(|exprs| {
            exprs.iter().all(|e| {
                let key = e.get("key").and_then(Value::as_str).unwrap_or("");
                let values: Vec<&str> = e
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|v| v.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                match e.get("operator").and_then(Value::as_str) {
                    Some("In") => label(key).is_some_and(|l| values.contains(&l)),
                    Some("NotIn") => label(key).is_none_or(|l| !values.contains(&l)),
                    Some("Exists") => label(key).is_some(),
                    Some("DoesNotExist") => label(key).is_none(),
                    _ => false,
                }
            })
        });
    by_labels && by_expressions
}

/// Reads every RBAC object and rebuilds the index.
pub async fn sync(inner: &dyn Context) -> Result<u64, String> {
    let page = inner
        .store()
        .list(PREFIX, ReadAt::Latest, None, 0, false)
        .await
        .map_err(|e| crate::error::error_chain(&e))?;
    let objects = page
        .items
        .iter()
        .filter_map(|item| crate::object::from_stored(&item.value).ok());
    let ix = Index::build(page.revision, objects);
    let revision = ix.revision;
    inner.rbac().send_replace(Arc::new(ix));
    Ok(revision)
}

/// Keeps the index current.
pub async fn run(inner: Weak<dyn Context>) {
    crate::controller::run(inner, "rbac", PREFIX, |i| async move {
        sync(&i).await.map(crate::controller::Reconciled::settled)
    })
    .await;
}

/// Waits (briefly) until the index includes `revision`, after a write of an RBAC object.
pub async fn wait_for(inner: &dyn Context, revision: u64) {
    crate::controller::wait_for_index(inner.rbac(), revision, |ix| ix.revision).await;
}

/// One atomic permission a rule grants (kube's rule breakdown for `Covers`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Atom {
    /// (group, resource, resource name or "", verb)
    Resource(String, String, String, String),
    /// (URL, verb)
    Url(String, String),
}

impl PolicyRule {
    fn atoms(&self) -> Vec<Atom> {
        let mut out = Vec::new();
        for verb in &self.verbs {
            for g in &self.api_groups {
                for r in &self.resources {
                    if self.resource_names.is_empty() {
                        out.push(Atom::Resource(
                            g.clone(),
                            r.clone(),
                            String::new(),
                            verb.clone(),
                        ));
                    }
                    for n in &self.resource_names {
                        out.push(Atom::Resource(
                            g.clone(),
                            r.clone(),
                            n.clone(),
                            verb.clone(),
                        ));
                    }
                }
            }
            for u in &self.non_resource_urls {
                out.push(Atom::Url(u.clone(), verb.clone()));
            }
        }
        out
    }

    /// Whether this (owner's) rule grants `atom` (kube's `ruleCovers`).
    fn covers(&self, atom: &Atom) -> bool {
        let has = |list: &[String], v: &str| list.iter().any(|x| x == "*" || x == v);
        match atom {
            Atom::Resource(g, r, n, verb) => {
                has(&self.verbs, verb)
                    && has(&self.api_groups, g)
                    && self.resources.iter().any(|x| {
                        x == "*"
                            || x == r
                            || x.strip_prefix("*/")
                                .is_some_and(|sub| r.split_once('/').is_some_and(|(_, s)| s == sub))
                    })
                    && (self.resource_names.is_empty()
                        || (!n.is_empty() && self.resource_names.contains(n)))
            }
            Atom::Url(u, verb) => {
                has(&self.verbs, verb)
                    && self.non_resource_urls.iter().any(|x| {
                        x == "*" || x == u || x.strip_suffix('*').is_some_and(|p| u.starts_with(p))
                    })
            }
        }
    }
}

/// Escalation prevention (`escalation_check.go`, `ConfirmNoEscalation`): writing a Role or
/// ClusterRole needs every permission it grants (or the `escalate` verb on it), binding a
/// role needs every permission of the role (or `bind` on it); `system:masters` may always.
/// `rt_resource`: `roles`, `clusterroles`, `rolebindings` or `clusterrolebindings`.
pub fn confirm_no_escalation(
    index: &Index,
    user: &User,
    rt_resource: &str,
    namespace: &str,
    request_name: &str,
    obj: &Value,
    old: Option<&Value>,
) -> Result<(), crate::error::ApiError> {
    if is_master(user) {
        return Ok(());
    }
    // An update that grants nothing new (the same rules, aggregation, role and subjects:
    // labels, finalizers, owner references — the garbage collector's edits) is not checked.
    let grants =
        |o: &Value| ["rules", "aggregationRule", "roleRef", "subjects"].map(|f| o.get(f).cloned());
    if old.is_some_and(|old| grants(old) == grants(obj)) {
        return Ok(());
    }
    let name = crate::object::meta_str(obj, "name")
        .unwrap_or("")
        .to_owned();
    let binding = rt_resource.ends_with("bindings");
    let (verb, check_resource, check_name) = if binding {
        let r: RoleRef = serde_json::from_value(obj["roleRef"].clone()).unwrap_or_default();
        let res = if r.kind == "Role" {
            "roles"
        } else {
            "clusterroles"
        };
        ("bind", res, r.name)
    } else {
        // The request's name: empty on a create, as kube authorizes it.
        ("escalate", rt_resource, request_name.to_owned())
    };
    let permitted = Attributes {
        user,
        verb: verb.into(),
        resource: Some(ResourceAttributes {
            group: GROUP.into(),
            resource: check_resource.into(),
            subresource: String::new(),
            namespace: namespace.into(),
            name: check_name,
        }),
        path: String::new(),
    };
    if index.allows(&permitted) {
        return Ok(());
    }
    // An aggregated ClusterRole grants whatever its selectors will match: only a writer who
    // may do everything may set, change or remove one.
    let aggregated = |o: &Value| o.get("aggregationRule").is_some_and(|a| !a.is_null());
    if rt_resource == "clusterroles" && (aggregated(obj) || old.is_some_and(aggregated)) {
        let owner = index.rules_for(user, "");
        let everything = [
            Atom::Resource("*".into(), "*".into(), String::new(), "*".into()),
            Atom::Url("*".into(), "*".into()),
        ];
        if !everything.iter().all(|a| owner.iter().any(|o| o.covers(a))) {
            let msg = format!(
                "clusterroles.{GROUP} {name:?} is forbidden: must have cluster-admin privileges to use the aggregationRule"
            );
            let mut st = wasmgate_apimachinery::status::Status::failure(403, "Forbidden", msg);
            st.details.name = name;
            st.details.group = GROUP.into();
            st.details.kind = rt_resource.into();
            return Err(st.into());
        }
    }
    let granted: Vec<PolicyRule> = if binding {
        let r: RoleRef = serde_json::from_value(obj["roleRef"].clone()).unwrap_or_default();
        let known = match r.kind.as_str() {
            "ClusterRole" => index.cluster_roles.contains_key(&r.name),
            _ => index
                .roles
                .contains_key(&(namespace.to_owned(), r.name.clone())),
        };
        if !known {
            let plural = if r.kind == "Role" {
                "roles"
            } else {
                "clusterroles"
            };
            return Err(wasmgate_apimachinery::status::Status::not_found(
                wasmgate_apimachinery::status::Target {
                    group: GROUP,
                    resource: plural,
                    name: &r.name,
                },
            )
            .into());
        }
        index.role_rules(&r, namespace).to_vec()
    } else {
        rules_of(obj)
    };
    let owner = index.rules_for(user, namespace);
    let mut missing: Vec<Atom> = granted
        .iter()
        .flat_map(PolicyRule::atoms)
        .filter(|a| !owner.iter().any(|o| o.covers(a)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    missing.sort();
    missing.dedup();
    let groups: Vec<String> = user
        .groups_with_authenticated()
        .map(|g| format!("{g:?}"))
        .collect();
    let mut lines: Vec<String> = compact(&missing);
    lines.sort();
    lines.dedup();
    let msg = format!(
        "{rt_resource}.{GROUP} {name:?} is forbidden: user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        groups.join(" "),
        lines.join("\n")
    );
    let mut st = wasmgate_apimachinery::status::Status::failure(403, "Forbidden", msg);
    st.details.name = name;
    st.details.group = GROUP.into();
    st.details.kind = rt_resource.into();
    Err(st.into())
}

/// kube's `CompactRules` + `CompactString` of uncovered permissions: the verbs of one
/// (group, resource) without names merged, each rule as
/// `{APIGroups:["g"], Resources:["r"], ResourceNames:["n"], Verbs:["get" "list"]}`.
fn compact(atoms: &[Atom]) -> Vec<String> {
    let q = |v: &[&str]| {
        v.iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut merged: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    let mut out = Vec::new();
    for a in atoms {
        match a {
            Atom::Resource(g, r, n, v) if n.is_empty() => {
                merged.entry((g, r)).or_default().push(v);
            }
            Atom::Resource(g, r, n, v) => out.push(format!(
                "{{APIGroups:[{}], Resources:[{}], ResourceNames:[{}], Verbs:[{}]}}",
                q(&[g]),
                q(&[r]),
                q(&[n]),
                q(&[v])
            )),
            Atom::Url(u, v) => out.push(format!(
                "{{NonResourceURLs:[{}], Verbs:[{}]}}",
                q(&[u]),
                q(&[v])
            )),
        }
    }
    for ((g, r), verbs) in merged {
        out.push(format!(
            "{{APIGroups:[{}], Resources:[{}], Verbs:[{}]}}",
            q(&[g]),
            q(&[r]),
            q(&verbs)
        ));
    }
    out
}

/// kube's 403 for a refused request (`responsewriters.Forbidden`).
pub fn forbidden(a: &Attributes<'_>) -> crate::error::ApiError {
    use wasmgate_apimachinery::status::Status;
    let user = &a.user.name;
    let Some(r) = &a.resource else {
        let msg = format!(
            "forbidden: User {user:?} cannot {} path {:?}",
            a.verb, a.path
        );
        return Status::failure(403, "Forbidden", msg).into();
    };
    let resource = if r.subresource.is_empty() {
        r.resource.clone()
    } else {
        format!("{}/{}", r.resource, r.subresource)
    };
    let scope = if r.namespace.is_empty() {
        "at the cluster scope".to_owned()
    } else {
        format!("in the namespace {:?}", r.namespace)
    };
    let why = format!(
        "User {user:?} cannot {} resource {resource:?} in API group {:?} {scope}",
        a.verb, r.group
    );
    let qualified = if r.group.is_empty() {
        r.resource.clone()
    } else {
        format!("{}.{}", r.resource, r.group)
    };
    let msg = if r.name.is_empty() {
        format!("{qualified} is forbidden: {why}")
    } else {
        format!("{qualified} {:?} is forbidden: {why}", r.name)
    };
    let mut st = Status::failure(403, "Forbidden", msg);
    st.details.name = r.name.clone();
    st.details.group = r.group.clone();
    st.details.kind = r.resource.clone();
    st.into()
}

/// kube's `ValidatePolicyRule` for each rule of a Role (`namespaced`) or ClusterRole.
pub fn validate_rules(obj: &Value, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let rules = obj.get("rules").and_then(Value::as_array);
    for (i, r) in rules.into_iter().flatten().enumerate() {
        let path = |f: &str| format!("rules[{i}].{f}");
        let len = |f: &str| r.get(f).and_then(Value::as_array).map_or(0, Vec::len);
        if len("verbs") == 0 {
            errs.push(FieldError::required(
                path("verbs"),
                "verbs must contain at least one value",
            ));
        }
        let urls = len("nonResourceURLs");
        if urls > 0 {
            if namespaced {
                errs.push(FieldError::invalid(
                    path("nonResourceURLs"),
                    r["nonResourceURLs"].clone(),
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if len("apiGroups") > 0 || len("resources") > 0 {
                errs.push(FieldError::invalid(
                    path("nonResourceURLs"),
                    r["nonResourceURLs"].clone(),
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if len("apiGroups") == 0 {
            errs.push(FieldError::required(
                path("apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if len("resources") == 0 {
            errs.push(FieldError::required(
                path("resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
    errs
}

/// kube's RoleBinding / ClusterRoleBinding validation: a role reference of the right
/// kind and group that never changes, subjects of the known kinds.
pub fn validate_binding(obj: &Value, old: Option<&Value>, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let r = &obj["roleRef"];
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    let kind = r.get("kind").and_then(Value::as_str).unwrap_or("");
    if !kinds.contains(&kind) {
        errs.push(FieldError::not_supported("roleRef.kind", kind, kinds));
    }
    let group = r.get("apiGroup").and_then(Value::as_str).unwrap_or("");
    if group != GROUP {
        errs.push(FieldError::not_supported(
            "roleRef.apiGroup",
            group,
            &[GROUP],
        ));
    }
    if r.get("name")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        errs.push(FieldError::required("roleRef.name", ""));
    }
    if let Some(old) = old
        && old.get("roleRef") != obj.get("roleRef")
    {
        errs.push(FieldError::invalid(
            "roleRef",
            obj["roleRef"].clone(),
            "cannot change roleRef",
        ));
    }
    let subjects = obj.get("subjects").and_then(Value::as_array);
    for (i, s) in subjects.into_iter().flatten().enumerate() {
        let str_of = |f: &str| s.get(f).and_then(Value::as_str).unwrap_or("");
        if str_of("name").is_empty() {
            errs.push(FieldError::required(format!("subjects[{i}].name"), ""));
        }
        match str_of("kind") {
            "User" | "Group" => {}
            "ServiceAccount" => {
                if !namespaced && str_of("namespace").is_empty() {
                    errs.push(FieldError::required(format!("subjects[{i}].namespace"), ""));
                }
            }
            other => errs.push(FieldError::not_supported(
                format!("subjects[{i}].kind"),
                other,
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use serde_json::json;

    fn user(name: &str, groups: &[&str]) -> User {
        User {
            name: name.into(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        }
    }

    fn res<'a>(
        u: &'a User,
        verb: &str,
        group: &str,
        resource: &str,
        sub: &str,
        ns: &str,
        name: &str,
    ) -> Attributes<'a> {
        Attributes {
            user: u,
            verb: verb.into(),
            resource: Some(ResourceAttributes {
                group: group.into(),
                resource: resource.into(),
                subresource: sub.into(),
                namespace: ns.into(),
                name: name.into(),
            }),
            path: String::new(),
        }
    }

    fn index() -> Index {
        let objs = vec![
            json!({"kind":"ClusterRole","metadata":{"name":"view","labels":{}},
                "aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"v":"true"}}]}}),
            json!({"kind":"ClusterRole","metadata":{"name":"read-cm","labels":{"v":"true"}},
                "rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","list"]}]}),
            json!({"kind":"ClusterRole","metadata":{"name":"status","labels":{}},
                "rules":[{"apiGroups":["*"],"resources":["*/status"],"verbs":["update"]},
                         {"apiGroups":[""],"resources":["secrets"],"resourceNames":["one"],"verbs":["get"]},
                         {"nonResourceURLs":["/apis/*","/metrics"],"verbs":["get"]}]}),
            json!({"kind":"Role","metadata":{"name":"writer","namespace":"a"},
                "rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["create"]}]}),
            json!({"kind":"RoleBinding","metadata":{"name":"b1","namespace":"a"},
                "roleRef":{"kind":"Role","name":"writer"},"subjects":[{"kind":"User","name":"alice"}]}),
            json!({"kind":"RoleBinding","metadata":{"name":"b2","namespace":"a"},
                "roleRef":{"kind":"ClusterRole","name":"view"},"subjects":[{"kind":"ServiceAccount","name":"bot"}]}),
            json!({"kind":"ClusterRoleBinding","metadata":{"name":"b3"},
                "roleRef":{"kind":"ClusterRole","name":"status"},"subjects":[{"kind":"Group","name":"ops"}]}),
        ];
        Index::build(1, objs)
    }

    /// RBAC rule matching and binding resolution (AUTH-01: rules add up, a RoleBinding's
    /// ClusterRole holds in its namespace only, aggregation, `*/status`, resourceNames,
    /// non-resource URL prefixes, ServiceAccount subjects, `system:masters`).
    #[test]
    fn rules_bindings_and_aggregation() {
        let ix = index();
        let alice = user("alice", &[]);
        assert!(ix.allows(&res(&alice, "create", "", "configmaps", "", "a", "")));
        assert!(!ix.allows(&res(&alice, "create", "", "configmaps", "", "b", "")));
        assert!(!ix.allows(&res(&alice, "get", "", "configmaps", "", "a", "x")));
        let bot = user("system:serviceaccount:a:bot", &[]);
        assert!(
            ix.allows(&res(&bot, "list", "", "configmaps", "", "a", "")),
            "aggregated into view"
        );
        assert!(!ix.allows(&res(&bot, "list", "", "configmaps", "", "b", "")));
        assert!(!ix.allows(&res(&bot, "list", "", "configmaps", "", "", "")));
        let ops = user("carol", &["ops"]);
        assert!(ix.allows(&res(
            &ops,
            "update",
            "example.com",
            "widgets",
            "status",
            "z",
            "w"
        )));
        assert!(!ix.allows(&res(&ops, "update", "example.com", "widgets", "", "z", "w")));
        assert!(ix.allows(&res(&ops, "get", "", "secrets", "", "z", "one")));
        assert!(!ix.allows(&res(&ops, "get", "", "secrets", "", "z", "two")));
        assert!(!ix.allows(&res(&ops, "list", "", "secrets", "", "z", "")));
        let path = |p: &str| Attributes {
            user: &ops,
            verb: "get".into(),
            resource: None,
            path: p.into(),
        };
        assert!(ix.allows(&path("/apis/example.com")));
        assert!(!ix.allows(&path("/apis")));
        assert!(ix.allows(&path("/metrics")));
        let root = user("root", &[MASTERS]);
        assert!(ix.allows(&res(&root, "delete", "", "namespaces", "", "", "x")));
    }

    /// Escalation prevention: a role granting more than the writer holds is refused with
    /// kube's wording; what the writer holds, or `escalate`/`bind`, or `system:masters`
    /// passes; a binding to a missing role is a 404 (AUTH-01).
    #[test]
    fn escalation_is_refused() {
        let ix = index();
        let alice = user("alice", &[]);
        let role = |rules: Value| json!({"kind":"Role","metadata":{"name":"r","namespace":"a"},"rules": rules});
        let mine = role(json!([{"apiGroups":[""],"resources":["configmaps"],"verbs":["create"]}]));
        assert!(confirm_no_escalation(&ix, &alice, "roles", "a", "", &mine, None).is_ok());
        let more = role(
            json!([{"apiGroups":[""],"resources":["configmaps","secrets"],"verbs":["create","delete"]}]),
        );
        let err = confirm_no_escalation(&ix, &alice, "roles", "a", "", &more, None).unwrap_err();
        assert_eq!(err.status.code, 403);
        assert_eq!(
            err.status.message,
            "roles.rbac.authorization.k8s.io \"r\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"delete\"]}\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"create\" \"delete\"]}"
        );
        let root = user("root", &[MASTERS]);
        assert!(confirm_no_escalation(&ix, &root, "roles", "a", "", &more, None).is_ok());
        let binding = |role: &str| {
            json!({"kind":"RoleBinding","metadata":{"name":"b","namespace":"a"},
            "roleRef":{"apiGroup":GROUP,"kind":"ClusterRole","name":role}})
        };
        assert!(
            confirm_no_escalation(
                &ix,
                &alice,
                "rolebindings",
                "a",
                "",
                &binding("status"),
                None
            )
            .is_err()
        );
        let missing =
            confirm_no_escalation(&ix, &alice, "rolebindings", "a", "", &binding("nope"), None)
                .unwrap_err();
        assert_eq!(missing.status.code, 404);
        // An update that grants nothing new (the garbage collector dropping a finalizer).
        let mut held = more.clone();
        held["metadata"]["finalizers"] = json!(["x"]);
        assert!(confirm_no_escalation(&ix, &alice, "roles", "a", "r", &more, Some(&held)).is_ok());
        // Aggregation needs every permission.
        let agg = json!({"kind":"ClusterRole","metadata":{"name":"grab"},
            "aggregationRule":{"clusterRoleSelectors":[{}]}});
        let err =
            confirm_no_escalation(&ix, &alice, "clusterroles", "", "", &agg, None).unwrap_err();
        assert!(
            err.status
                .message
                .ends_with("must have cluster-admin privileges to use the aggregationRule")
        );
        // The writer's own Role bound again: held.
        let own = json!({"kind":"RoleBinding","metadata":{"name":"b","namespace":"a"},
            "roleRef":{"apiGroup":GROUP,"kind":"Role","name":"writer"}});
        assert!(confirm_no_escalation(&ix, &alice, "rolebindings", "a", "", &own, None).is_ok());
    }

    /// A SubjectAccessReview's subject has exactly its groups; a request's user also has
    /// `system:authenticated` (AUTH-02).
    #[test]
    fn review_subjects_are_literal() {
        let ix = Index::build(
            1,
            vec![
                json!({"kind":"ClusterRole","metadata":{"name":"r"},
                    "rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]}),
                json!({"kind":"ClusterRoleBinding","metadata":{"name":"b"},
                    "roleRef":{"kind":"ClusterRole","name":"r"},
                    "subjects":[{"kind":"Group","name":"system:authenticated"}]}),
            ],
        );
        let bob = user("bob", &[]);
        let a = res(&bob, "get", "", "configmaps", "", "x", "c");
        assert!(ix.allows(&a));
        assert!(!ix.allows_subject(&a, &Who::literal(&bob)));
    }

    /// kube's 403 wording (`responsewriters.Forbidden`).
    #[test]
    fn forbidden_messages() {
        let alice = user("alice", &[]);
        let msg = |a: &Attributes<'_>| forbidden(a).status.message;
        assert_eq!(
            msg(&res(&alice, "create", "", "configmaps", "", "default", "")),
            "configmaps is forbidden: User \"alice\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\""
        );
        assert_eq!(
            msg(&res(
                &alice,
                "get",
                "coordination.k8s.io",
                "leases",
                "",
                "kube-system",
                "x"
            )),
            "leases.coordination.k8s.io \"x\" is forbidden: User \"alice\" cannot get resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"kube-system\""
        );
        assert_eq!(
            msg(&res(&alice, "update", "", "namespaces", "status", "", "n")),
            "namespaces \"n\" is forbidden: User \"alice\" cannot update resource \"namespaces/status\" in API group \"\" at the cluster scope"
        );
        let a = Attributes {
            user: &alice,
            verb: "get".into(),
            resource: None,
            path: "/metrics".into(),
        };
        assert_eq!(
            msg(&a),
            "forbidden: User \"alice\" cannot get path \"/metrics\""
        );
    }
}
