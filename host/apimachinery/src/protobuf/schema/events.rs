//! `k8s.io/api/events/v1` (events.k8s.io/v1): field numbers and types from its `generated.proto`, JSON names and
//! pointer-ness from its Go types.

use super::corev1;
use super::meta;
use super::model::{Emit::*, Kind, Message, field};

/// `Event`.
pub(crate) static EVENT: Message = Message::new(
    "Event",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(2, "eventTime", Kind::MicroTime, Always),
        field(3, "series", Kind::Message(&EVENT_SERIES), IfSet),
        field(4, "reportingController", Kind::String, OmitEmpty),
        field(5, "reportingInstance", Kind::String, OmitEmpty),
        field(6, "action", Kind::String, OmitEmpty),
        field(7, "reason", Kind::String, OmitEmpty),
        field(
            8,
            "regarding",
            Kind::Message(&corev1::OBJECT_REFERENCE),
            Always,
        ),
        field(
            9,
            "related",
            Kind::Message(&corev1::OBJECT_REFERENCE),
            IfSet,
        ),
        field(10, "note", Kind::String, OmitEmpty),
        field(11, "type", Kind::String, OmitEmpty),
        field(
            12,
            "deprecatedSource",
            Kind::Message(&corev1::EVENT_SOURCE),
            Always,
        ),
        field(13, "deprecatedFirstTimestamp", Kind::Time, Always),
        field(14, "deprecatedLastTimestamp", Kind::Time, Always),
        field(15, "deprecatedCount", Kind::Int32, OmitEmpty),
    ],
);

/// `EventSeries`.
pub(crate) static EVENT_SERIES: Message = Message::new(
    "EventSeries",
    &[
        field(1, "count", Kind::Int32, Always),
        field(2, "lastObservedTime", Kind::MicroTime, Always),
    ],
);
