//! Resource types as data: names, scope, verbs, versions, subresources, schemas.
//!
//! Built-in types are registered at start from a static table; later, CRDs are added and
//! removed live. Readers take an `Arc<Catalog>` snapshot, so a request sees one consistent
//! set of types from start to end. A catalog never changes once built, so the documents
//! derived from it (root discovery, OpenAPI) are built once and kept on it.
#![forbid(unsafe_code)]

pub mod custom_type;
pub mod discovery;
pub mod openapi;
mod openapi_text;
pub mod version;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use bytes::Bytes;
use custom_type::CustomType;
use wasmgate_apimachinery::media::DiscoveryOutput;

/// The built-in kinds this server implements natively.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// core/v1 Namespace.
    Namespace,
    /// core/v1 ConfigMap.
    ConfigMap,
    /// core/v1 Secret.
    Secret,
    /// core/v1 ServiceAccount.
    ServiceAccount,
    /// core/v1 Event.
    Event,
    /// events.k8s.io/v1 Event: the core Events, as the events API shows them (one stored
    /// resource, see [`ResourceType::storage_group`]).
    EventsApiEvent,
    /// coordination.k8s.io/v1 Lease.
    Lease,
    /// apiextensions.k8s.io/v1 CustomResourceDefinition.
    CustomResourceDefinition,
    /// rbac.authorization.k8s.io/v1 Role.
    Role,
    /// rbac.authorization.k8s.io/v1 RoleBinding.
    RoleBinding,
    /// rbac.authorization.k8s.io/v1 ClusterRole.
    ClusterRole,
    /// rbac.authorization.k8s.io/v1 ClusterRoleBinding.
    ClusterRoleBinding,
    /// admissionregistration.k8s.io/v1 MutatingWebhookConfiguration.
    MutatingWebhookConfiguration,
    /// admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration.
    ValidatingWebhookConfiguration,
    /// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy.
    ValidatingAdmissionPolicy,
    /// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding.
    ValidatingAdmissionPolicyBinding,
    /// apiregistration.k8s.io/v1 APIService.
    ApiService,
    /// A create-only review (`TokenReview`, `SubjectAccessReview`, …): answered by
    /// `reviews.rs`, never stored; registered for discovery and OpenAPI.
    Review,
}

/// Who implements a resource type.
#[derive(Debug, Clone)]
pub enum Behavior {
    /// A built-in kind with native strategies.
    Builtin(Builtin),
    /// A custom resource defined by a CRD.
    Custom(Arc<CustomType>),
}

/// A subresource of a resource type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subresource {
    /// `status`, `scale`, `finalize`.
    pub name: String,
    /// The kind the subresource speaks (the parent's kind for `status`).
    pub kind: String,
    /// Its group-version, `""` meaning the parent's.
    pub group_version: String,
    /// Its verbs.
    pub verbs: Vec<&'static str>,
}

/// One resource type.
#[derive(Debug, Clone)]
pub struct ResourceType {
    /// API group ("" for core).
    pub group: String,
    /// Served versions, in preference order (the first is preferred).
    pub versions: Vec<String>,
    /// The version objects are stored at.
    pub storage_version: String,
    /// Lower-case plural, as in URLs.
    pub resource: String,
    /// Lower-case singular.
    pub singular: String,
    /// Kind.
    pub kind: String,
    /// Kind of lists.
    pub list_kind: String,
    /// Short names (`cm`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Verbs served on the main resource.
    pub verbs: Vec<&'static str>,
    /// Subresources.
    pub subresources: Vec<Subresource>,
    /// The OpenAPI definition name of the kind (`io.k8s.api.core.v1.ConfigMap`); for custom
    /// resources, that of the storage version (see [`ResourceType::schema_name_for`]).
    pub schema_name: String,
    /// Which implementation serves it.
    pub behavior: Behavior,
    /// `Some(group)`: the objects are those of the resource of the same name in `group`,
    /// stored in that resource's form (kube stores one resource and presents both:
    /// `events.k8s.io` events are core events). Keys and the storage version hash are that
    /// resource's; reads convert what is stored, writes store what they convert back.
    pub storage_group: Option<String>,
}

impl ResourceType {
    /// `resource` or `resource.group`.
    pub fn qualified_resource(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    /// `group/version` (`v1` for core).
    pub fn group_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_owned()
        } else {
            format!("{}/{}", self.group, version)
        }
    }

    /// The storage key prefix of all objects of this type.
    pub fn key_prefix(&self) -> String {
        let group = self.storage_group.as_deref().unwrap_or(&self.group);
        let g = if group.is_empty() { "core" } else { group };
        format!("{g}/{}/", self.resource)
    }

    /// The storage key prefix of the objects in one namespace (or of a cluster-scoped type).
    pub fn namespace_prefix(&self, namespace: Option<&str>) -> String {
        match (self.namespaced, namespace) {
            (true, Some(ns)) => format!("{}{ns}/", self.key_prefix()),
            (true, None) => self.key_prefix(),
            (false, _) => format!("{}/", self.key_prefix()),
        }
    }

    /// The storage key of one object.
    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        let ns = if self.namespaced {
            namespace.unwrap_or("")
        } else {
            ""
        };
        format!("{}{ns}/{name}", self.key_prefix())
    }

    /// kube-apiserver's `StorageVersionHash` for legacy discovery: base64 of the first 8
    /// bytes of sha256(`group/storage version/kind`). It changes when the storage version
    /// does, which tells storage migrators to rewrite the objects.
    pub fn storage_version_hash(&self) -> String {
        use base64::Engine as _;
        use sha2::Digest as _;
        let group = self.storage_group.as_deref().unwrap_or(&self.group);
        let gvk = format!("{group}/{}/{}", self.storage_version, self.kind);
        let digest = sha2::Sha256::digest(gvk.as_bytes());
        base64::engine::general_purpose::STANDARD.encode(&digest[..8])
    }

    /// The built-in kind, if it is one.
    pub fn builtin(&self) -> Option<Builtin> {
        match self.behavior {
            Behavior::Builtin(b) => Some(b),
            Behavior::Custom(_) => None,
        }
    }

    /// The custom type, if it is one.
    pub fn custom(&self) -> Option<&Arc<CustomType>> {
        match &self.behavior {
            Behavior::Custom(c) => Some(c),
            Behavior::Builtin(_) => None,
        }
    }

    /// The OpenAPI definition name of the kind at `version`.
    pub fn schema_name_for(&self, version: &str) -> String {
        match &self.behavior {
            Behavior::Builtin(_) => self.schema_name.clone(),
            Behavior::Custom(_) => custom_type::schema_name(&self.group, version, &self.kind),
        }
    }

    /// The subresources served at `version`.
    pub fn subresources_for(&self, version: &str) -> Vec<Subresource> {
        match &self.behavior {
            Behavior::Builtin(_) => self.subresources.clone(),
            Behavior::Custom(c) => c.subresources(version, &self.kind),
        }
    }

    /// Whether the main resource serves `verb`.
    pub fn serves(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }

    /// Whether its objects are another resource's, seen through this one
    /// ([`ResourceType::storage_group`]).
    pub fn shares_storage(&self) -> bool {
        self.storage_group.is_some()
    }

    /// Whether it has stored objects at all (the reviews have none).
    pub fn is_stored(&self) -> bool {
        self.builtin() != Some(Builtin::Review)
    }
}

/// The built-in API groups whose types this registry lists and other modules serve.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// See [`RBAC_GROUP`].
pub const ADMISSIONREGISTRATION_GROUP: &str = "admissionregistration.k8s.io";
/// See [`RBAC_GROUP`].
pub const APIREGISTRATION_GROUP: &str = "apiregistration.k8s.io";

/// All verbs of a read-write resource.
pub const ALL_VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

#[allow(
    clippy::too_many_arguments,
    reason = "a table row; every caller names all columns"
)]
fn builtin(
    group: &str,
    resource: &str,
    singular: &str,
    kind: &str,
    short: &[&str],
    namespaced: bool,
    schema_name: &str,
    which: Builtin,
) -> ResourceType {
    ResourceType {
        group: group.into(),
        versions: vec!["v1".into()],
        storage_version: "v1".into(),
        resource: resource.into(),
        singular: singular.into(),
        kind: kind.into(),
        list_kind: format!("{kind}List"),
        short_names: short.iter().map(|s| (*s).to_owned()).collect(),
        categories: Vec::new(),
        namespaced,
        verbs: ALL_VERBS.to_vec(),
        subresources: Vec::new(),
        schema_name: schema_name.into(),
        behavior: Behavior::Builtin(which),
        storage_group: None,
    }
}

/// The built-in resource types.
pub fn builtin_types() -> Vec<ResourceType> {
    let mut ns = builtin(
        "",
        "namespaces",
        "namespace",
        "Namespace",
        &["ns"],
        false,
        "io.k8s.api.core.v1.Namespace",
        Builtin::Namespace,
    );
    ns.verbs = vec![
        "create", "delete", "get", "list", "patch", "update", "watch",
    ];
    ns.subresources = vec![
        Subresource {
            name: "finalize".into(),
            kind: "Namespace".into(),
            group_version: String::new(),
            verbs: vec!["update"],
        },
        Subresource {
            name: "status".into(),
            kind: "Namespace".into(),
            group_version: String::new(),
            verbs: vec!["get", "patch", "update"],
        },
    ];
    let mut sa = builtin(
        "",
        "serviceaccounts",
        "serviceaccount",
        "ServiceAccount",
        &["sa"],
        true,
        "io.k8s.api.core.v1.ServiceAccount",
        Builtin::ServiceAccount,
    );
    sa.subresources = vec![Subresource {
        name: "token".into(),
        kind: "TokenRequest".into(),
        group_version: "authentication.k8s.io/v1".into(),
        verbs: vec!["create"],
    }];
    let mut crd = builtin(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "customresourcedefinition",
        "CustomResourceDefinition",
        &["crd", "crds"],
        false,
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
        Builtin::CustomResourceDefinition,
    );
    crd.categories = vec!["api-extensions".into()];
    crd.subresources = vec![Subresource {
        name: "status".into(),
        kind: "CustomResourceDefinition".into(),
        group_version: String::new(),
        verbs: vec!["get", "patch", "update"],
    }];
    vec![
        crd,
        builtin(
            "",
            "configmaps",
            "configmap",
            "ConfigMap",
            &["cm"],
            true,
            "io.k8s.api.core.v1.ConfigMap",
            Builtin::ConfigMap,
        ),
        builtin(
            "",
            "events",
            "event",
            "Event",
            &["ev"],
            true,
            "io.k8s.api.core.v1.Event",
            Builtin::Event,
        ),
        events_api_event(),
        ns,
        builtin(
            "",
            "secrets",
            "secret",
            "Secret",
            &[],
            true,
            "io.k8s.api.core.v1.Secret",
            Builtin::Secret,
        ),
        sa,
        builtin(
            "coordination.k8s.io",
            "leases",
            "lease",
            "Lease",
            &[],
            true,
            "io.k8s.api.coordination.v1.Lease",
            Builtin::Lease,
        ),
        builtin(
            RBAC_GROUP,
            "roles",
            "role",
            "Role",
            &[],
            true,
            "io.k8s.api.rbac.v1.Role",
            Builtin::Role,
        ),
        builtin(
            RBAC_GROUP,
            "rolebindings",
            "rolebinding",
            "RoleBinding",
            &[],
            true,
            "io.k8s.api.rbac.v1.RoleBinding",
            Builtin::RoleBinding,
        ),
        builtin(
            RBAC_GROUP,
            "clusterroles",
            "clusterrole",
            "ClusterRole",
            &[],
            false,
            "io.k8s.api.rbac.v1.ClusterRole",
            Builtin::ClusterRole,
        ),
        builtin(
            RBAC_GROUP,
            "clusterrolebindings",
            "clusterrolebinding",
            "ClusterRoleBinding",
            &[],
            false,
            "io.k8s.api.rbac.v1.ClusterRoleBinding",
            Builtin::ClusterRoleBinding,
        ),
        webhook_configuration(true),
        webhook_configuration(false),
        admission_policy(),
        api_service(),
        builtin(
            ADMISSIONREGISTRATION_GROUP,
            "validatingadmissionpolicybindings",
            "validatingadmissionpolicybinding",
            "ValidatingAdmissionPolicyBinding",
            &[],
            false,
            "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
            Builtin::ValidatingAdmissionPolicyBinding,
        ),
        review(
            "authentication.k8s.io",
            "TokenReview",
            false,
            "io.k8s.api.authentication.v1.TokenReview",
        ),
        review(
            "authentication.k8s.io",
            "SelfSubjectReview",
            false,
            "io.k8s.api.authentication.v1.SelfSubjectReview",
        ),
        review(
            "authorization.k8s.io",
            "SubjectAccessReview",
            false,
            "io.k8s.api.authorization.v1.SubjectAccessReview",
        ),
        review(
            "authorization.k8s.io",
            "SelfSubjectAccessReview",
            false,
            "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
        ),
        review(
            "authorization.k8s.io",
            "LocalSubjectAccessReview",
            true,
            "io.k8s.api.authorization.v1.LocalSubjectAccessReview",
        ),
        review(
            "authorization.k8s.io",
            "SelfSubjectRulesReview",
            false,
            "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
        ),
    ]
}

/// `events` of `events.k8s.io`: the core events (kube's `events` in both groups share
/// one storage; the short name too).
fn events_api_event() -> ResourceType {
    let mut t = builtin(
        "events.k8s.io",
        "events",
        "event",
        "Event",
        &["ev"],
        true,
        "io.k8s.api.events.v1.Event",
        Builtin::EventsApiEvent,
    );
    t.storage_group = Some(String::new());
    t
}

/// A create-only review kind of `group`, as kube lists it in discovery (`create` only,
/// no short names, never stored).
fn review(group: &str, kind: &str, namespaced: bool, schema_name: &str) -> ResourceType {
    let singular = kind.to_ascii_lowercase();
    let mut t = builtin(
        group,
        &format!("{singular}s"),
        &singular,
        kind,
        &[],
        namespaced,
        schema_name,
        Builtin::Review,
    );
    t.verbs = vec!["create"];
    t
}

/// `apiservices`, with its `status` (the `Available` condition).
fn api_service() -> ResourceType {
    let mut t = builtin(
        APIREGISTRATION_GROUP,
        "apiservices",
        "apiservice",
        "APIService",
        &[],
        false,
        "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService",
        Builtin::ApiService,
    );
    t.categories = vec!["api-extensions".into()];
    t.subresources = vec![Subresource {
        name: "status".into(),
        kind: "APIService".into(),
        group_version: String::new(),
        verbs: vec!["get", "patch", "update"],
    }];
    t
}

/// `validatingadmissionpolicies`, with its `status` (type checking).
fn admission_policy() -> ResourceType {
    let mut t = builtin(
        ADMISSIONREGISTRATION_GROUP,
        "validatingadmissionpolicies",
        "validatingadmissionpolicy",
        "ValidatingAdmissionPolicy",
        &[],
        false,
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy",
        Builtin::ValidatingAdmissionPolicy,
    );
    t.categories = vec!["api-extensions".into()];
    t.subresources = vec![Subresource {
        name: "status".into(),
        kind: "ValidatingAdmissionPolicy".into(),
        group_version: String::new(),
        verbs: vec!["get", "patch", "update"],
    }];
    t
}

/// `mutatingwebhookconfigurations` or `validatingwebhookconfigurations`.
fn webhook_configuration(mutating: bool) -> ResourceType {
    let (kind, which) = if mutating {
        (
            "MutatingWebhookConfiguration",
            Builtin::MutatingWebhookConfiguration,
        )
    } else {
        (
            "ValidatingWebhookConfiguration",
            Builtin::ValidatingWebhookConfiguration,
        )
    };
    let singular = kind.to_ascii_lowercase();
    let mut t = builtin(
        ADMISSIONREGISTRATION_GROUP,
        &format!("{singular}s"),
        &singular,
        kind,
        &[],
        false,
        &format!("io.k8s.api.admissionregistration.v1.{kind}"),
        which,
    );
    t.categories = vec!["api-extensions".into()];
    t
}

/// One consistent set of resource types.
#[derive(Debug, Default)]
pub struct Catalog {
    /// Bumped on every change (see [`Registry::subscribe`]).
    pub generation: u64,
    types: Vec<Arc<ResourceType>>,
    by_gvr: HashMap<(String, String, String), Arc<ResourceType>>,
    /// `/api` and `/apis` (body, ETag) per discovery output; built on first use.
    root_discovery: [OnceLock<(Bytes, String)>; 6],
    /// The OpenAPI documents; built on first use.
    openapi: OnceLock<crate::openapi::Documents>,
}

impl Catalog {
    fn build(generation: u64, types: Vec<Arc<ResourceType>>) -> Catalog {
        let mut by_gvr = HashMap::new();
        for t in &types {
            for v in &t.versions {
                by_gvr.insert((t.group.clone(), v.clone(), t.resource.clone()), t.clone());
            }
        }
        Catalog {
            generation,
            types,
            by_gvr,
            ..Catalog::default()
        }
    }

    /// The root discovery document, `/api` (`core`) or `/apis`, as `out`, with its ETag:
    /// rendered once per catalog. `server_address` (only `/api` in the legacy form shows
    /// it) must be the same on every call: it is the server's advertised address.
    pub fn root_discovery(
        &self,
        core: bool,
        out: DiscoveryOutput,
        server_address: &str,
    ) -> &(Bytes, String) {
        let slot = match out {
            DiscoveryOutput::AggregatedV2 => 0,
            DiscoveryOutput::AggregatedV2beta1 => 2,
            DiscoveryOutput::Legacy => 4,
        } + usize::from(core);
        self.root_discovery[slot]
            .get_or_init(|| crate::discovery::root(self, core, out, server_address))
    }

    /// The OpenAPI documents of this catalog, built on first use.
    pub fn openapi(&self) -> &crate::openapi::Documents {
        self.openapi.get_or_init(|| crate::openapi::build(self))
    }

    /// The type served at group/version/resource.
    pub fn lookup(&self, group: &str, version: &str, resource: &str) -> Option<&Arc<ResourceType>> {
        self.by_gvr
            .get(&(group.to_owned(), version.to_owned(), resource.to_owned()))
    }

    /// Every type.
    pub fn types(&self) -> &[Arc<ResourceType>] {
        &self.types
    }

    /// The groups, core first, then by name; each with its versions in preference order.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for t in &self.types {
            match groups.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, vs)) => {
                    for v in &t.versions {
                        if !vs.contains(v) {
                            vs.push(v.clone());
                        }
                    }
                }
                None => groups.push((t.group.clone(), t.versions.clone())),
            }
        }
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, vs) in &mut groups {
            vs.sort_by(|a, b| compare_versions(a, b));
        }
        groups
    }

    /// The types served in one group-version, sorted by resource name.
    pub fn in_group_version(&self, group: &str, version: &str) -> Vec<&Arc<ResourceType>> {
        let mut v: Vec<_> = self
            .types
            .iter()
            .filter(|t| t.group == group && t.versions.iter().any(|x| x == version))
            .collect();
        v.sort_by(|a, b| a.resource.cmp(&b.resource));
        v
    }
}

/// The live registry: the built-in types, plus the custom types of established CRDs.
#[derive(Debug)]
pub struct Registry {
    builtins: Vec<Arc<ResourceType>>,
    current: RwLock<Arc<Catalog>>,
    /// The catalog generation, for those who must notice a type going away (watches).
    changed: tokio::sync::watch::Sender<u64>,
}

impl Registry {
    /// A registry holding `types`.
    pub fn new(types: Vec<ResourceType>) -> Registry {
        let builtins: Vec<Arc<ResourceType>> = types.into_iter().map(Arc::new).collect();
        Registry {
            current: RwLock::new(Arc::new(Catalog::build(1, builtins.clone()))),
            builtins,
            changed: tokio::sync::watch::Sender::new(1),
        }
    }

    /// Replaces the custom types (a new catalog generation; discovery and OpenAPI follow).
    pub fn set_custom(&self, custom: Vec<ResourceType>) {
        let mut guard = match self.current.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let mut types = self.builtins.clone();
        types.extend(custom.into_iter().map(Arc::new));
        let generation = guard.generation + 1;
        *guard = Arc::new(Catalog::build(generation, types));
        drop(guard);
        self.changed.send_replace(generation);
    }

    /// Notified whenever the catalog changes.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// The current catalog.
    pub fn snapshot(&self) -> Arc<Catalog> {
        match self.current.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// Kubernetes version priority (`DISC-04`): GA before beta before alpha, higher numbers
/// first, non-matching strings last in alphabetical order.
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    fn parse(v: &str) -> Option<(u64, u8, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let major: u64 = rest[..digits].parse().ok()?;
        if rest[..digits].starts_with('0') {
            return None;
        }
        let tail = &rest[digits..];
        if tail.is_empty() {
            return Some((major, 2, 0));
        }
        let (stage, num) = if let Some(n) = tail.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (0, n)
        } else {
            return None;
        };
        if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit()) || num.starts_with('0') {
            return None;
        }
        Some((major, stage, num.parse().ok()?))
    }
    use std::cmp::Ordering;
    match (parse(a), parse(b)) {
        (Some((ma, sa, na)), Some((mb, sb, nb))) => sb.cmp(&sa).then(match sa {
            2 => mb.cmp(&ma),
            _ => mb.cmp(&ma).then(nb.cmp(&na)),
        }),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disc_04_version_priority() {
        let mut v = vec![
            "v11alpha2",
            "foo10",
            "v10",
            "v12alpha1",
            "v3beta1",
            "v1",
            "v11beta2",
            "foo1",
            "v2",
            "v10beta3",
        ];
        v.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            v,
            vec![
                "v10",
                "v2",
                "v1",
                "v11beta2",
                "v10beta3",
                "v3beta1",
                "v12alpha1",
                "v11alpha2",
                "foo1",
                "foo10"
            ]
        );
    }

    #[test]
    fn keys_and_prefixes() {
        let types = builtin_types();
        let cm = types.iter().find(|t| t.resource == "configmaps").unwrap();
        assert_eq!(cm.key(Some("demo"), "app"), "core/configmaps/demo/app");
        assert_eq!(cm.namespace_prefix(Some("demo")), "core/configmaps/demo/");
        assert_eq!(cm.namespace_prefix(None), "core/configmaps/");
        let ns = types.iter().find(|t| t.resource == "namespaces").unwrap();
        assert_eq!(ns.key(None, "demo"), "core/namespaces//demo");
        assert_eq!(ns.namespace_prefix(None), "core/namespaces//");
        let reg = Registry::new(types);
        let cat = reg.snapshot();
        assert!(cat.lookup("coordination.k8s.io", "v1", "leases").is_some());
        assert_eq!(cat.groups()[0].0, "");
    }
}
