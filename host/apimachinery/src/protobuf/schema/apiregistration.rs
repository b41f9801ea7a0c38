//! `k8s.io/kube-aggregator/pkg/apis/apiregistration/v1` (apiregistration.k8s.io/v1): field numbers and types from its `generated.proto`, JSON names and
//! pointer-ness from its Go types.

use super::meta;
use super::model::{Emit::*, Kind, Message, field};

/// `APIService`.
pub(crate) static API_SERVICE: Message = Message::new(
    "APIService",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(2, "spec", Kind::Message(&API_SERVICE_SPEC), Always),
        field(3, "status", Kind::Message(&API_SERVICE_STATUS), Always),
    ],
);

/// `APIServiceSpec`.
pub(crate) static API_SERVICE_SPEC: Message = Message::new(
    "APIServiceSpec",
    &[
        field(1, "service", Kind::Message(&SERVICE_REFERENCE), IfSet),
        field(2, "group", Kind::String, OmitEmpty),
        field(3, "version", Kind::String, OmitEmpty),
        field(4, "insecureSkipTLSVerify", Kind::Bool, OmitEmpty),
        field(5, "caBundle", Kind::Bytes, OmitEmpty),
        field(7, "groupPriorityMinimum", Kind::Int32, Always),
        field(8, "versionPriority", Kind::Int32, Always),
    ],
);

/// `ServiceReference`.
pub(crate) static SERVICE_REFERENCE: Message = Message::new(
    "ServiceReference",
    &[
        field(1, "namespace", Kind::String, OmitEmpty),
        field(2, "name", Kind::String, OmitEmpty),
        field(3, "port", Kind::Int32, IfSet),
    ],
);

/// `APIServiceStatus`.
pub(crate) static API_SERVICE_STATUS: Message = Message::new(
    "APIServiceStatus",
    &[field(
        1,
        "conditions",
        Kind::Messages(&API_SERVICE_CONDITION),
        OmitEmpty,
    )],
);

/// `APIServiceCondition`.
pub(crate) static API_SERVICE_CONDITION: Message = Message::new(
    "APIServiceCondition",
    &[
        field(1, "type", Kind::String, Always),
        field(2, "status", Kind::String, Always),
        field(3, "lastTransitionTime", Kind::Time, Always),
        field(4, "reason", Kind::String, OmitEmpty),
        field(5, "message", Kind::String, OmitEmpty),
    ],
);
