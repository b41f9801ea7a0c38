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

/// How a field's value is encoded and rendered.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    /// `string`, must be UTF-8.
    String,
    /// `int32` varint (the low 32 bits, as Go keeps them).
    Int32,
    /// `int64` varint.
    Int64,
    /// `bool` varint.
    Bool,
    /// `double`, fixed64 (JSON numbers of `JSONSchemaProps`).
    Double,
    /// `bytes`, standard base64 in JSON (`caBundle`).
    Bytes,
    /// A singular embedded message; occurrences merge.
    Message(&'static Message),
    /// An embedded message whose fields Go's JSON shows in the parent object (a struct
    /// embedded with `json:""`: `RuleWithOperations.Rule`).
    Inline(&'static Message),
    /// `metav1.Time`: seconds precision, `null` when zero.
    Time,
    /// `metav1.MicroTime`: microseconds precision, `null` when zero.
    MicroTime,
    /// A message `{ bytes raw = 1; }` whose bytes are JSON text, rendered as that JSON
    /// value: `metav1.FieldsV1`, apiextensions' `JSON`, `runtime.RawExtension`.
    RawJson,
    /// `repeated` [`Kind::RawJson`] (`enum` of a JSON schema).
    RawJsons,
    /// `map<string, string>`.
    StringMap,
    /// `map<string, bytes>`, values rendered as standard base64.
    BytesMap,
    /// `map<string, Message>`.
    MessageMap(&'static Message),
    /// `repeated string`.
    Strings,
    /// `repeated` embedded message.
    Messages(&'static Message),
}

/// When a field appears in the JSON (decoding), and whether it is a Go pointer (encoding).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Emit {
    /// Go value field tagged `omitempty`: left out when empty, zero, or absent. Always on
    /// the wire.
    OmitEmpty,
    /// Go pointer field: emitted whenever it was on the wire, even with a zero value; on
    /// the wire only when set (present and not `null` in JSON).
    IfSet,
    /// Go struct field, or a field without `omitempty`: always emitted (zero value if
    /// absent). Always on the wire.
    Always,
}

/// How a message shows in JSON.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Shape {
    /// A JSON object with the fields' names.
    Object,
    /// `{ repeated string items = 1; }` shown as the list itself (`ExtraValue`,
    /// `AttestationValue`); no items is `null`.
    List,
    /// `JSONSchemaPropsOrArray { schema = 1; jSONSchemas = 2; }`: the list when it has
    /// items, else the schema (or `null`).
    SchemaOrArray,
    /// `JSONSchemaPropsOrBool { allows = 1; schema = 2; }`: the schema when set, else the
    /// boolean.
    SchemaOrBool,
    /// `JSONSchemaPropsOrStringArray { schema = 1; property = 2; }`: the strings when
    /// there are any, else the schema (or `null`).
    SchemaOrStrings,
}

pub(crate) struct Field {
    pub(crate) number: u32,
    pub(crate) json: &'static str,
    pub(crate) kind: Kind,
    pub(crate) emit: Emit,
}

/// The most fields a message has (`JSONSchemaProps` has 44).
pub(crate) const MAX_FIELDS: usize = 48;

pub(crate) struct Message {
    /// The Go type name; for top-level messages also the kind.
    pub(crate) name: &'static str,
    /// In Go struct order, which is the JSON key order.
    pub(crate) fields: &'static [Field],
    /// How the message shows in JSON.
    pub(crate) shape: Shape,
    /// Indices into `fields` in field-number order (the order Go writes them), the first
    /// `fields.len()` of them.
    pub(crate) by_number: [u8; MAX_FIELDS],
}

impl Message {
    /// A message shown as a JSON object.
    pub(crate) const fn new(name: &'static str, fields: &'static [Field]) -> Message {
        Message::shaped(name, fields, Shape::Object)
    }

    /// A message with a JSON form of its own.
    pub(crate) const fn shaped(
        name: &'static str,
        fields: &'static [Field],
        shape: Shape,
    ) -> Message {
        Message {
            name,
            fields,
            shape,
            by_number: number_order(fields),
        }
    }

    /// The fields in the order Go writes them.
    pub(crate) fn in_number_order(&self) -> impl Iterator<Item = (usize, &'static Field)> + '_ {
        let fields = self.fields;
        self.by_number[..fields.len()].iter().filter_map(move |&i| {
            let i = usize::from(i);
            fields.get(i).map(|f| (i, f))
        })
    }
}

/// Insertion sort of the field indices by number, at compile time. A table with more
/// than [`MAX_FIELDS`] fields does not compile.
const fn number_order(fields: &[Field]) -> [u8; MAX_FIELDS] {
    assert!(
        fields.len() <= MAX_FIELDS,
        "too many fields for a message table"
    );
    let mut order = [0u8; MAX_FIELDS];
    let mut i = 0;
    while i < fields.len() {
        order[i] = i as u8;
        let mut j = i;
        while j > 0 && fields[order[j - 1] as usize].number > fields[order[j] as usize].number {
            let t = order[j - 1];
            order[j - 1] = order[j];
            order[j] = t;
            j -= 1;
        }
        i += 1;
    }
    order
}

pub(crate) const fn field(number: u32, json: &'static str, kind: Kind, emit: Emit) -> Field {
    Field {
        number,
        json,
        kind,
        emit,
    }
}

use Emit::OmitEmpty;

/// `ExtraValue` / `AttestationValue`: a string list wrapped in a message so that it can
/// be a map value.
pub(crate) static STRING_LIST: Message = Message::shaped(
    "StringList",
    &[field(1, "items", Kind::Strings, OmitEmpty)],
    Shape::List,
);

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
