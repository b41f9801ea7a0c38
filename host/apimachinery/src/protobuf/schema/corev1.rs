//! `k8s.io/api/core/v1` (core/v1): field numbers and types from its `generated.proto`, JSON names and
//! pointer-ness from its Go types.

use super::meta;
use super::model::{Emit::*, Kind, Message, field};

/// `ConfigMap`.
pub(crate) static CONFIG_MAP: Message = Message::new(
    "ConfigMap",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(4, "immutable", Kind::Bool, IfSet),
        field(2, "data", Kind::StringMap, OmitEmpty),
        field(3, "binaryData", Kind::BytesMap, OmitEmpty),
    ],
);

/// `Secret`.
pub(crate) static SECRET: Message = Message::new(
    "Secret",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(5, "immutable", Kind::Bool, IfSet),
        field(2, "data", Kind::BytesMap, OmitEmpty),
        field(4, "stringData", Kind::StringMap, OmitEmpty),
        field(3, "type", Kind::String, OmitEmpty),
    ],
);

/// `Namespace`.
pub(crate) static NAMESPACE: Message = Message::new(
    "Namespace",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(2, "spec", Kind::Message(&NAMESPACE_SPEC), Always),
        field(3, "status", Kind::Message(&NAMESPACE_STATUS), Always),
    ],
);

/// `NamespaceSpec`.
pub(crate) static NAMESPACE_SPEC: Message = Message::new(
    "NamespaceSpec",
    &[field(1, "finalizers", Kind::Strings, OmitEmpty)],
);

/// `NamespaceStatus`.
pub(crate) static NAMESPACE_STATUS: Message = Message::new(
    "NamespaceStatus",
    &[
        field(1, "phase", Kind::String, OmitEmpty),
        field(
            2,
            "conditions",
            Kind::Messages(&NAMESPACE_CONDITION),
            OmitEmpty,
        ),
    ],
);

/// `NamespaceCondition`.
pub(crate) static NAMESPACE_CONDITION: Message = Message::new(
    "NamespaceCondition",
    &[
        field(1, "type", Kind::String, Always),
        field(2, "status", Kind::String, Always),
        field(4, "lastTransitionTime", Kind::Time, Always),
        field(5, "reason", Kind::String, OmitEmpty),
        field(6, "message", Kind::String, OmitEmpty),
    ],
);

/// `ServiceAccount`.
pub(crate) static SERVICE_ACCOUNT: Message = Message::new(
    "ServiceAccount",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(2, "secrets", Kind::Messages(&OBJECT_REFERENCE), OmitEmpty),
        field(
            3,
            "imagePullSecrets",
            Kind::Messages(&LOCAL_OBJECT_REFERENCE),
            OmitEmpty,
        ),
        field(4, "automountServiceAccountToken", Kind::Bool, IfSet),
    ],
);

/// `ObjectReference`.
pub(crate) static OBJECT_REFERENCE: Message = Message::new(
    "ObjectReference",
    &[
        field(1, "kind", Kind::String, OmitEmpty),
        field(2, "namespace", Kind::String, OmitEmpty),
        field(3, "name", Kind::String, OmitEmpty),
        field(4, "uid", Kind::String, OmitEmpty),
        field(5, "apiVersion", Kind::String, OmitEmpty),
        field(6, "resourceVersion", Kind::String, OmitEmpty),
        field(7, "fieldPath", Kind::String, OmitEmpty),
    ],
);

/// `LocalObjectReference`.
pub(crate) static LOCAL_OBJECT_REFERENCE: Message = Message::new(
    "LocalObjectReference",
    &[field(1, "name", Kind::String, OmitEmpty)],
);

/// `Event`.
pub(crate) static EVENT: Message = Message::new(
    "Event",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(
            2,
            "involvedObject",
            Kind::Message(&OBJECT_REFERENCE),
            Always,
        ),
        field(3, "reason", Kind::String, OmitEmpty),
        field(4, "message", Kind::String, OmitEmpty),
        field(5, "source", Kind::Message(&EVENT_SOURCE), Always),
        field(6, "firstTimestamp", Kind::Time, Always),
        field(7, "lastTimestamp", Kind::Time, Always),
        field(8, "count", Kind::Int32, OmitEmpty),
        field(9, "type", Kind::String, OmitEmpty),
        field(10, "eventTime", Kind::MicroTime, Always),
        field(11, "series", Kind::Message(&EVENT_SERIES), IfSet),
        field(12, "action", Kind::String, OmitEmpty),
        field(13, "related", Kind::Message(&OBJECT_REFERENCE), IfSet),
        field(14, "reportingComponent", Kind::String, Always),
        field(15, "reportingInstance", Kind::String, Always),
    ],
);

/// `EventSource`.
pub(crate) static EVENT_SOURCE: Message = Message::new(
    "EventSource",
    &[
        field(1, "component", Kind::String, OmitEmpty),
        field(2, "host", Kind::String, OmitEmpty),
    ],
);

/// `EventSeries`.
pub(crate) static EVENT_SERIES: Message = Message::new(
    "EventSeries",
    &[
        field(1, "count", Kind::Int32, OmitEmpty),
        field(2, "lastObservedTime", Kind::MicroTime, Always),
    ],
);
