//! `k8s.io/api/rbac/v1` (rbac.authorization.k8s.io/v1): field numbers and types from its `generated.proto`, JSON names and
//! pointer-ness from its Go types.

use super::meta;
use super::model::{Emit::*, Kind, Message, field};

/// `Role`.
pub(crate) static ROLE: Message = Message::new(
    "Role",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(2, "rules", Kind::Messages(&POLICY_RULE), Always),
    ],
);

/// `PolicyRule`.
pub(crate) static POLICY_RULE: Message = Message::new(
    "PolicyRule",
    &[
        field(1, "verbs", Kind::Strings, Always),
        field(2, "apiGroups", Kind::Strings, OmitEmpty),
        field(3, "resources", Kind::Strings, OmitEmpty),
        field(4, "resourceNames", Kind::Strings, OmitEmpty),
        field(5, "nonResourceURLs", Kind::Strings, OmitEmpty),
    ],
);

/// `RoleBinding`.
pub(crate) static ROLE_BINDING: Message = Message::new(
    "RoleBinding",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(2, "subjects", Kind::Messages(&SUBJECT), OmitEmpty),
        field(3, "roleRef", Kind::Message(&ROLE_REF), Always),
    ],
);

/// `Subject`.
pub(crate) static SUBJECT: Message = Message::new(
    "Subject",
    &[
        field(1, "kind", Kind::String, Always),
        field(2, "apiGroup", Kind::String, OmitEmpty),
        field(3, "name", Kind::String, Always),
        field(4, "namespace", Kind::String, OmitEmpty),
    ],
);

/// `RoleRef`.
pub(crate) static ROLE_REF: Message = Message::new(
    "RoleRef",
    &[
        field(1, "apiGroup", Kind::String, Always),
        field(2, "kind", Kind::String, Always),
        field(3, "name", Kind::String, Always),
    ],
);

/// `ClusterRole`.
pub(crate) static CLUSTER_ROLE: Message = Message::new(
    "ClusterRole",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(2, "rules", Kind::Messages(&POLICY_RULE), Always),
        field(
            3,
            "aggregationRule",
            Kind::Message(&AGGREGATION_RULE),
            IfSet,
        ),
    ],
);

/// `AggregationRule`.
pub(crate) static AGGREGATION_RULE: Message = Message::new(
    "AggregationRule",
    &[field(
        1,
        "clusterRoleSelectors",
        Kind::Messages(&meta::LABEL_SELECTOR),
        OmitEmpty,
    )],
);

/// `ClusterRoleBinding`.
pub(crate) static CLUSTER_ROLE_BINDING: Message = Message::new(
    "ClusterRoleBinding",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(2, "subjects", Kind::Messages(&SUBJECT), OmitEmpty),
        field(3, "roleRef", Kind::Message(&ROLE_REF), Always),
    ],
);
