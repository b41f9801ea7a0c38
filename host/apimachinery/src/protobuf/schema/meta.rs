//! `k8s.io/apimachinery/pkg/apis/meta/v1` (meta.k8s.io/v1 and the metadata every object carries): field numbers and types from its `generated.proto`, JSON names and
//! pointer-ness from its Go types.

use super::model::{Emit::*, Kind, Message, field};

/// `ObjectMeta`.
pub(crate) static OBJECT_META: Message = Message::new(
    "ObjectMeta",
    &[
        field(1, "name", Kind::String, OmitEmpty),
        field(2, "generateName", Kind::String, OmitEmpty),
        field(3, "namespace", Kind::String, OmitEmpty),
        field(4, "selfLink", Kind::String, OmitEmpty),
        field(5, "uid", Kind::String, OmitEmpty),
        field(6, "resourceVersion", Kind::String, OmitEmpty),
        field(7, "generation", Kind::Int64, OmitEmpty),
        field(8, "creationTimestamp", Kind::Time, Always),
        field(9, "deletionTimestamp", Kind::Time, IfSet),
        field(10, "deletionGracePeriodSeconds", Kind::Int64, IfSet),
        field(11, "labels", Kind::StringMap, OmitEmpty),
        field(12, "annotations", Kind::StringMap, OmitEmpty),
        field(
            13,
            "ownerReferences",
            Kind::Messages(&OWNER_REFERENCE),
            OmitEmpty,
        ),
        field(14, "finalizers", Kind::Strings, OmitEmpty),
        field(
            17,
            "managedFields",
            Kind::Messages(&MANAGED_FIELDS_ENTRY),
            OmitEmpty,
        ),
    ],
);

/// `OwnerReference`.
pub(crate) static OWNER_REFERENCE: Message = Message::new(
    "OwnerReference",
    &[
        field(5, "apiVersion", Kind::String, Always),
        field(1, "kind", Kind::String, Always),
        field(3, "name", Kind::String, Always),
        field(4, "uid", Kind::String, Always),
        field(6, "controller", Kind::Bool, IfSet),
        field(7, "blockOwnerDeletion", Kind::Bool, IfSet),
    ],
);

/// `ManagedFieldsEntry`.
pub(crate) static MANAGED_FIELDS_ENTRY: Message = Message::new(
    "ManagedFieldsEntry",
    &[
        field(1, "manager", Kind::String, OmitEmpty),
        field(2, "operation", Kind::String, OmitEmpty),
        field(3, "apiVersion", Kind::String, OmitEmpty),
        field(4, "time", Kind::Time, IfSet),
        field(6, "fieldsType", Kind::String, OmitEmpty),
        field(7, "fieldsV1", Kind::RawJson, IfSet),
        field(8, "subresource", Kind::String, OmitEmpty),
    ],
);

/// `LabelSelector`.
pub(crate) static LABEL_SELECTOR: Message = Message::new(
    "LabelSelector",
    &[
        field(1, "matchLabels", Kind::StringMap, OmitEmpty),
        field(
            2,
            "matchExpressions",
            Kind::Messages(&LABEL_SELECTOR_REQUIREMENT),
            OmitEmpty,
        ),
    ],
);

/// `LabelSelectorRequirement`.
pub(crate) static LABEL_SELECTOR_REQUIREMENT: Message = Message::new(
    "LabelSelectorRequirement",
    &[
        field(1, "key", Kind::String, Always),
        field(2, "operator", Kind::String, Always),
        field(3, "values", Kind::Strings, OmitEmpty),
    ],
);

/// `Condition`.
pub(crate) static CONDITION: Message = Message::new(
    "Condition",
    &[
        field(1, "type", Kind::String, Always),
        field(2, "status", Kind::String, Always),
        field(3, "observedGeneration", Kind::Int64, OmitEmpty),
        field(4, "lastTransitionTime", Kind::Time, Always),
        field(5, "reason", Kind::String, Always),
        field(6, "message", Kind::String, Always),
    ],
);

/// `FieldSelectorRequirement`.
pub(crate) static FIELD_SELECTOR_REQUIREMENT: Message = Message::new(
    "FieldSelectorRequirement",
    &[
        field(1, "key", Kind::String, Always),
        field(2, "operator", Kind::String, Always),
        field(3, "values", Kind::Strings, OmitEmpty),
    ],
);

/// `Status`.
pub(crate) static STATUS: Message = Message::new(
    "Status",
    &[
        field(1, "metadata", Kind::Message(&LIST_META), Always),
        field(2, "status", Kind::String, OmitEmpty),
        field(3, "message", Kind::String, OmitEmpty),
        field(4, "reason", Kind::String, OmitEmpty),
        field(5, "details", Kind::Message(&STATUS_DETAILS), IfSet),
        field(6, "code", Kind::Int32, OmitEmpty),
    ],
);

/// `ListMeta`.
pub(crate) static LIST_META: Message = Message::new(
    "ListMeta",
    &[
        field(1, "selfLink", Kind::String, OmitEmpty),
        field(2, "resourceVersion", Kind::String, OmitEmpty),
        field(3, "continue", Kind::String, OmitEmpty),
        field(4, "remainingItemCount", Kind::Int64, IfSet),
        field(5, "shardInfo", Kind::Message(&SHARD_INFO), IfSet),
    ],
);

/// `ShardInfo`.
pub(crate) static SHARD_INFO: Message =
    Message::new("ShardInfo", &[field(1, "selector", Kind::String, Always)]);

/// `StatusDetails`.
pub(crate) static STATUS_DETAILS: Message = Message::new(
    "StatusDetails",
    &[
        field(1, "name", Kind::String, OmitEmpty),
        field(2, "group", Kind::String, OmitEmpty),
        field(3, "kind", Kind::String, OmitEmpty),
        field(6, "uid", Kind::String, OmitEmpty),
        field(4, "causes", Kind::Messages(&STATUS_CAUSE), OmitEmpty),
        field(5, "retryAfterSeconds", Kind::Int32, OmitEmpty),
    ],
);

/// `StatusCause`.
pub(crate) static STATUS_CAUSE: Message = Message::new(
    "StatusCause",
    &[
        field(1, "reason", Kind::String, OmitEmpty),
        field(2, "message", Kind::String, OmitEmpty),
        field(3, "field", Kind::String, OmitEmpty),
    ],
);

/// `PartialObjectMetadata`.
pub(crate) static PARTIAL_OBJECT_METADATA: Message = Message::new(
    "PartialObjectMetadata",
    &[field(1, "metadata", Kind::Message(&OBJECT_META), Always)],
);

/// `DeleteOptions`.
pub(crate) static DELETE_OPTIONS: Message = Message::new(
    "DeleteOptions",
    &[
        field(1, "gracePeriodSeconds", Kind::Int64, IfSet),
        field(2, "preconditions", Kind::Message(&PRECONDITIONS), IfSet),
        field(3, "orphanDependents", Kind::Bool, IfSet),
        field(4, "propagationPolicy", Kind::String, IfSet),
        field(5, "dryRun", Kind::Strings, OmitEmpty),
        field(
            6,
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            Kind::Bool,
            IfSet,
        ),
    ],
);

/// `Preconditions`.
pub(crate) static PRECONDITIONS: Message = Message::new(
    "Preconditions",
    &[
        field(1, "uid", Kind::String, IfSet),
        field(2, "resourceVersion", Kind::String, IfSet),
    ],
);

/// `Timestamp`: the wire form of `Time` and `MicroTime`.
pub(crate) static TIMESTAMP: Message = Message::new(
    "Timestamp",
    &[
        field(1, "seconds", Kind::Int64, Always),
        field(2, "nanos", Kind::Int32, Always),
    ],
);
