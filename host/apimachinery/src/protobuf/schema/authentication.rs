//! `k8s.io/api/authentication/v1` (authentication.k8s.io/v1): field numbers and types from its `generated.proto`, JSON names and
//! pointer-ness from its Go types.

use super::meta;
use super::model::STRING_LIST;
use super::model::{Emit::*, Kind, Message, field};

/// `TokenRequest`.
pub(crate) static TOKEN_REQUEST: Message = Message::new(
    "TokenRequest",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(2, "spec", Kind::Message(&TOKEN_REQUEST_SPEC), Always),
        field(3, "status", Kind::Message(&TOKEN_REQUEST_STATUS), Always),
    ],
);

/// `TokenRequestSpec`.
pub(crate) static TOKEN_REQUEST_SPEC: Message = Message::new(
    "TokenRequestSpec",
    &[
        field(1, "audiences", Kind::Strings, Always),
        field(4, "expirationSeconds", Kind::Int64, IfSet),
        field(
            3,
            "boundObjectRef",
            Kind::Message(&BOUND_OBJECT_REFERENCE),
            IfSet,
        ),
        field(5, "attestations", Kind::MessageMap(&STRING_LIST), OmitEmpty),
    ],
);

/// `BoundObjectReference`.
pub(crate) static BOUND_OBJECT_REFERENCE: Message = Message::new(
    "BoundObjectReference",
    &[
        field(1, "kind", Kind::String, OmitEmpty),
        field(2, "apiVersion", Kind::String, OmitEmpty),
        field(3, "name", Kind::String, OmitEmpty),
        field(4, "uid", Kind::String, OmitEmpty),
    ],
);

/// `TokenRequestStatus`.
pub(crate) static TOKEN_REQUEST_STATUS: Message = Message::new(
    "TokenRequestStatus",
    &[
        field(1, "token", Kind::String, Always),
        field(2, "expirationTimestamp", Kind::Time, Always),
    ],
);

/// `SelfSubjectReview`.
pub(crate) static SELF_SUBJECT_REVIEW: Message = Message::new(
    "SelfSubjectReview",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(
            2,
            "status",
            Kind::Message(&SELF_SUBJECT_REVIEW_STATUS),
            Always,
        ),
    ],
);

/// `SelfSubjectReviewStatus`.
pub(crate) static SELF_SUBJECT_REVIEW_STATUS: Message = Message::new(
    "SelfSubjectReviewStatus",
    &[field(1, "userInfo", Kind::Message(&USER_INFO), Always)],
);

/// `UserInfo`.
pub(crate) static USER_INFO: Message = Message::new(
    "UserInfo",
    &[
        field(1, "username", Kind::String, OmitEmpty),
        field(2, "uid", Kind::String, OmitEmpty),
        field(3, "groups", Kind::Strings, OmitEmpty),
        field(4, "extra", Kind::MessageMap(&STRING_LIST), OmitEmpty),
    ],
);

/// `TokenReview`.
pub(crate) static TOKEN_REVIEW: Message = Message::new(
    "TokenReview",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(2, "spec", Kind::Message(&TOKEN_REVIEW_SPEC), Always),
        field(3, "status", Kind::Message(&TOKEN_REVIEW_STATUS), Always),
    ],
);

/// `TokenReviewSpec`.
pub(crate) static TOKEN_REVIEW_SPEC: Message = Message::new(
    "TokenReviewSpec",
    &[
        field(1, "token", Kind::String, OmitEmpty),
        field(2, "audiences", Kind::Strings, OmitEmpty),
    ],
);

/// `TokenReviewStatus`.
pub(crate) static TOKEN_REVIEW_STATUS: Message = Message::new(
    "TokenReviewStatus",
    &[
        field(1, "authenticated", Kind::Bool, OmitEmpty),
        field(2, "user", Kind::Message(&USER_INFO), Always),
        field(4, "audiences", Kind::Strings, OmitEmpty),
        field(3, "error", Kind::String, OmitEmpty),
    ],
);
