//! `k8s.io/api/autoscaling/v1` (autoscaling/v1 (the scale subresource)): field numbers and types from its `generated.proto`, JSON names and
//! pointer-ness from its Go types.

use super::meta;
use super::model::{Emit::*, Kind, Message, field};

/// `Scale`.
pub(crate) static SCALE: Message = Message::new(
    "Scale",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(2, "spec", Kind::Message(&SCALE_SPEC), Always),
        field(3, "status", Kind::Message(&SCALE_STATUS), Always),
    ],
);

/// `ScaleSpec`.
pub(crate) static SCALE_SPEC: Message =
    Message::new("ScaleSpec", &[field(1, "replicas", Kind::Int32, OmitEmpty)]);

/// `ScaleStatus`.
pub(crate) static SCALE_STATUS: Message = Message::new(
    "ScaleStatus",
    &[
        field(1, "replicas", Kind::Int32, Always),
        field(2, "selector", Kind::String, OmitEmpty),
    ],
);
