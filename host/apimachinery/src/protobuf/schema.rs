//! The message tables: one [`Message`] per protobuf message of the built-in types, with its
//! fields' numbers and wire types from the `generated.proto` files of `k8s.io/api`,
//! `k8s.io/apimachinery`, `k8s.io/apiextensions-apiserver` and `k8s.io/kube-aggregator`
//! (Kubernetes 1.37, the version `k8s-openapi` describes), and their JSON names and
//! pointer-ness from the Go types, which decide both directions:
//!
//! * the decoder renders what Go's `encoding/json` writes for the decoded struct
//!   ([`Emit`]);
//! * the encoder writes what the generated (gogo, proto2, non-nullable) Go marshaller
//!   writes: every value field even when empty, pointer fields only when set, repeated
//!   fields per element, map entries sorted by key, fields in number order.
//!
//! Fields are listed in Go struct order (the JSON key order); [`Message::new`] works out the
//! number order at compile time.

pub(crate) mod admissionregistration;
pub(crate) mod apiextensions;
pub(crate) mod apiregistration;
pub(crate) mod authentication;
pub(crate) mod authorization;
pub(crate) mod autoscaling;
pub(crate) mod coordination;
pub(crate) mod corev1;
pub(crate) mod events;
pub(crate) mod meta;
pub(crate) mod rbac;

pub(crate) mod model;

pub(crate) use model::{Emit, Field, Kind, MAX_FIELDS, Message, Shape};

/// One kind with a schema, at one group version.
pub(crate) struct Root {
    pub(crate) api_version: &'static str,
    pub(crate) kind: &'static str,
    pub(crate) message: &'static Message,
}

const fn root(api_version: &'static str, kind: &'static str, message: &'static Message) -> Root {
    Root {
        api_version,
        kind,
        message,
    }
}

/// Every top-level kind with a schema: the built-in kinds this gateway serves (and their
/// lists, `<Kind>List`, which all share one shape), the ones it answers (reviews, tokens,
/// Scale, Status) and `DeleteOptions`.
pub(crate) static ROOTS: &[Root] = &[
    root("v1", "ConfigMap", &corev1::CONFIG_MAP),
    root("v1", "Secret", &corev1::SECRET),
    root("v1", "Namespace", &corev1::NAMESPACE),
    root("v1", "ServiceAccount", &corev1::SERVICE_ACCOUNT),
    root("v1", "Event", &corev1::EVENT),
    root("coordination.k8s.io/v1", "Lease", &coordination::LEASE),
    root("rbac.authorization.k8s.io/v1", "Role", &rbac::ROLE),
    root(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        &rbac::ROLE_BINDING,
    ),
    root(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        &rbac::CLUSTER_ROLE,
    ),
    root(
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        &rbac::CLUSTER_ROLE_BINDING,
    ),
    root(
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
        &admissionregistration::MUTATING_WEBHOOK_CONFIGURATION,
    ),
    root(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        &admissionregistration::VALIDATING_WEBHOOK_CONFIGURATION,
    ),
    root(
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
        &admissionregistration::VALIDATING_ADMISSION_POLICY,
    ),
    root(
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
        &admissionregistration::VALIDATING_ADMISSION_POLICY_BINDING,
    ),
    root(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        &apiextensions::CUSTOM_RESOURCE_DEFINITION,
    ),
    root(
        "apiregistration.k8s.io/v1",
        "APIService",
        &apiregistration::API_SERVICE,
    ),
    root("events.k8s.io/v1", "Event", &events::EVENT),
    root(
        "authentication.k8s.io/v1",
        "TokenRequest",
        &authentication::TOKEN_REQUEST,
    ),
    root(
        "authentication.k8s.io/v1",
        "TokenReview",
        &authentication::TOKEN_REVIEW,
    ),
    root(
        "authentication.k8s.io/v1",
        "SelfSubjectReview",
        &authentication::SELF_SUBJECT_REVIEW,
    ),
    root(
        "authorization.k8s.io/v1",
        "SubjectAccessReview",
        &authorization::SUBJECT_ACCESS_REVIEW,
    ),
    root(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        &authorization::SELF_SUBJECT_ACCESS_REVIEW,
    ),
    root(
        "authorization.k8s.io/v1",
        "LocalSubjectAccessReview",
        &authorization::LOCAL_SUBJECT_ACCESS_REVIEW,
    ),
    root(
        "authorization.k8s.io/v1",
        "SelfSubjectRulesReview",
        &authorization::SELF_SUBJECT_RULES_REVIEW,
    ),
    root("autoscaling/v1", "Scale", &autoscaling::SCALE),
    root("v1", "Status", &meta::STATUS),
    root(
        "meta.k8s.io/v1",
        "PartialObjectMetadata",
        &meta::PARTIAL_OBJECT_METADATA,
    ),
    root(
        "meta.k8s.io/v1beta1",
        "PartialObjectMetadata",
        &meta::PARTIAL_OBJECT_METADATA,
    ),
    root("meta.k8s.io/v1", "DeleteOptions", &meta::DELETE_OPTIONS),
];

/// The group versions whose typed clients send `DeleteOptions` as their own kind
/// (client-go registers it in every group version it has a client for).
pub(crate) const DELETE_OPTIONS_GROUP_VERSIONS: &[&str] = &[
    "v1",
    "coordination.k8s.io/v1",
    "rbac.authorization.k8s.io/v1",
    "admissionregistration.k8s.io/v1",
    "apiextensions.k8s.io/v1",
    "apiregistration.k8s.io/v1",
    "events.k8s.io/v1",
    "autoscaling/v1",
];

/// The kinds whose objects are lists of another (`<Kind>List`): every served kind.
const NOT_LISTED: &[&str] = &[
    "TokenRequest",
    "TokenReview",
    "SelfSubjectReview",
    "SubjectAccessReview",
    "SelfSubjectAccessReview",
    "LocalSubjectAccessReview",
    "SelfSubjectRulesReview",
    "Scale",
    "Status",
    "DeleteOptions",
    // `PartialObjectMetadataList` has a message of its own (see `encode`).
    "PartialObjectMetadata",
];

/// The message of an object of `kind` at `api_version`.
pub(crate) fn object(api_version: &str, kind: &str) -> Option<&'static Message> {
    if kind == "DeleteOptions" && DELETE_OPTIONS_GROUP_VERSIONS.contains(&api_version) {
        return Some(&meta::DELETE_OPTIONS);
    }
    ROOTS
        .iter()
        .find(|r| r.api_version == api_version && r.kind == kind)
        .map(|r| r.message)
}

/// The message of the items of a list kind (`ConfigMapList` → `ConfigMap`).
pub(crate) fn list_items(api_version: &str, list_kind: &str) -> Option<&'static Message> {
    let kind = list_kind.strip_suffix("List")?;
    if NOT_LISTED.contains(&kind) {
        return None;
    }
    object(api_version, kind)
}
