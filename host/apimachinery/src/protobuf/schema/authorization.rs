//! `k8s.io/api/authorization/v1` (authorization.k8s.io/v1): field numbers and types from its `generated.proto`, JSON names and
//! pointer-ness from its Go types.

use super::meta;
use super::model::STRING_LIST;
use super::model::{Emit::*, Kind, Message, field};

/// `SubjectAccessReview`.
pub(crate) static SUBJECT_ACCESS_REVIEW: Message = Message::new(
    "SubjectAccessReview",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(
            2,
            "spec",
            Kind::Message(&SUBJECT_ACCESS_REVIEW_SPEC),
            Always,
        ),
        field(
            3,
            "status",
            Kind::Message(&SUBJECT_ACCESS_REVIEW_STATUS),
            Always,
        ),
    ],
);

/// `SubjectAccessReviewSpec`.
pub(crate) static SUBJECT_ACCESS_REVIEW_SPEC: Message = Message::new(
    "SubjectAccessReviewSpec",
    &[
        field(
            1,
            "resourceAttributes",
            Kind::Message(&RESOURCE_ATTRIBUTES),
            IfSet,
        ),
        field(
            2,
            "nonResourceAttributes",
            Kind::Message(&NON_RESOURCE_ATTRIBUTES),
            IfSet,
        ),
        field(3, "user", Kind::String, OmitEmpty),
        field(4, "groups", Kind::Strings, OmitEmpty),
        field(5, "extra", Kind::MessageMap(&STRING_LIST), OmitEmpty),
        field(6, "uid", Kind::String, OmitEmpty),
    ],
);

/// `ResourceAttributes`.
pub(crate) static RESOURCE_ATTRIBUTES: Message = Message::new(
    "ResourceAttributes",
    &[
        field(1, "namespace", Kind::String, OmitEmpty),
        field(2, "verb", Kind::String, OmitEmpty),
        field(3, "group", Kind::String, OmitEmpty),
        field(4, "version", Kind::String, OmitEmpty),
        field(5, "resource", Kind::String, OmitEmpty),
        field(6, "subresource", Kind::String, OmitEmpty),
        field(7, "name", Kind::String, OmitEmpty),
        field(
            8,
            "fieldSelector",
            Kind::Message(&FIELD_SELECTOR_ATTRIBUTES),
            IfSet,
        ),
        field(
            9,
            "labelSelector",
            Kind::Message(&LABEL_SELECTOR_ATTRIBUTES),
            IfSet,
        ),
    ],
);

/// `FieldSelectorAttributes`.
pub(crate) static FIELD_SELECTOR_ATTRIBUTES: Message = Message::new(
    "FieldSelectorAttributes",
    &[
        field(1, "rawSelector", Kind::String, OmitEmpty),
        field(
            2,
            "requirements",
            Kind::Messages(&meta::FIELD_SELECTOR_REQUIREMENT),
            OmitEmpty,
        ),
    ],
);

/// `LabelSelectorAttributes`.
pub(crate) static LABEL_SELECTOR_ATTRIBUTES: Message = Message::new(
    "LabelSelectorAttributes",
    &[
        field(1, "rawSelector", Kind::String, OmitEmpty),
        field(
            2,
            "requirements",
            Kind::Messages(&meta::LABEL_SELECTOR_REQUIREMENT),
            OmitEmpty,
        ),
    ],
);

/// `NonResourceAttributes`.
pub(crate) static NON_RESOURCE_ATTRIBUTES: Message = Message::new(
    "NonResourceAttributes",
    &[
        field(1, "path", Kind::String, OmitEmpty),
        field(2, "verb", Kind::String, OmitEmpty),
    ],
);

/// `SubjectAccessReviewStatus`.
pub(crate) static SUBJECT_ACCESS_REVIEW_STATUS: Message = Message::new(
    "SubjectAccessReviewStatus",
    &[
        field(1, "allowed", Kind::Bool, Always),
        field(4, "denied", Kind::Bool, OmitEmpty),
        field(2, "reason", Kind::String, OmitEmpty),
        field(3, "evaluationError", Kind::String, OmitEmpty),
    ],
);

/// `SelfSubjectAccessReview`.
pub(crate) static SELF_SUBJECT_ACCESS_REVIEW: Message = Message::new(
    "SelfSubjectAccessReview",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(
            2,
            "spec",
            Kind::Message(&SELF_SUBJECT_ACCESS_REVIEW_SPEC),
            Always,
        ),
        field(
            3,
            "status",
            Kind::Message(&SUBJECT_ACCESS_REVIEW_STATUS),
            Always,
        ),
    ],
);

/// `SelfSubjectAccessReviewSpec`.
pub(crate) static SELF_SUBJECT_ACCESS_REVIEW_SPEC: Message = Message::new(
    "SelfSubjectAccessReviewSpec",
    &[
        field(
            1,
            "resourceAttributes",
            Kind::Message(&RESOURCE_ATTRIBUTES),
            IfSet,
        ),
        field(
            2,
            "nonResourceAttributes",
            Kind::Message(&NON_RESOURCE_ATTRIBUTES),
            IfSet,
        ),
    ],
);

/// `LocalSubjectAccessReview`.
pub(crate) static LOCAL_SUBJECT_ACCESS_REVIEW: Message = Message::new(
    "LocalSubjectAccessReview",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(
            2,
            "spec",
            Kind::Message(&SUBJECT_ACCESS_REVIEW_SPEC),
            Always,
        ),
        field(
            3,
            "status",
            Kind::Message(&SUBJECT_ACCESS_REVIEW_STATUS),
            Always,
        ),
    ],
);

/// `SelfSubjectRulesReview`.
pub(crate) static SELF_SUBJECT_RULES_REVIEW: Message = Message::new(
    "SelfSubjectRulesReview",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(
            2,
            "spec",
            Kind::Message(&SELF_SUBJECT_RULES_REVIEW_SPEC),
            Always,
        ),
        field(
            3,
            "status",
            Kind::Message(&SUBJECT_RULES_REVIEW_STATUS),
            Always,
        ),
    ],
);

/// `SelfSubjectRulesReviewSpec`.
pub(crate) static SELF_SUBJECT_RULES_REVIEW_SPEC: Message = Message::new(
    "SelfSubjectRulesReviewSpec",
    &[field(1, "namespace", Kind::String, OmitEmpty)],
);

/// `SubjectRulesReviewStatus`.
pub(crate) static SUBJECT_RULES_REVIEW_STATUS: Message = Message::new(
    "SubjectRulesReviewStatus",
    &[
        field(1, "resourceRules", Kind::Messages(&RESOURCE_RULE), Always),
        field(
            2,
            "nonResourceRules",
            Kind::Messages(&NON_RESOURCE_RULE),
            Always,
        ),
        field(3, "incomplete", Kind::Bool, Always),
        field(4, "evaluationError", Kind::String, OmitEmpty),
    ],
);

/// `ResourceRule`.
pub(crate) static RESOURCE_RULE: Message = Message::new(
    "ResourceRule",
    &[
        field(1, "verbs", Kind::Strings, Always),
        field(2, "apiGroups", Kind::Strings, OmitEmpty),
        field(3, "resources", Kind::Strings, OmitEmpty),
        field(4, "resourceNames", Kind::Strings, OmitEmpty),
    ],
);

/// `NonResourceRule`.
pub(crate) static NON_RESOURCE_RULE: Message = Message::new(
    "NonResourceRule",
    &[
        field(1, "verbs", Kind::Strings, Always),
        field(2, "nonResourceURLs", Kind::Strings, OmitEmpty),
    ],
);
