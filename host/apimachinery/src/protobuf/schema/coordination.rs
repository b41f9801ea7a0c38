//! `k8s.io/api/coordination/v1` (coordination.k8s.io/v1): field numbers and types from its `generated.proto`, JSON names and
//! pointer-ness from its Go types.

use super::meta;
use super::model::{Emit::*, Kind, Message, field};

/// `Lease`.
pub(crate) static LEASE: Message = Message::new(
    "Lease",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(2, "spec", Kind::Message(&LEASE_SPEC), Always),
    ],
);

/// `LeaseSpec`.
pub(crate) static LEASE_SPEC: Message = Message::new(
    "LeaseSpec",
    &[
        field(1, "holderIdentity", Kind::String, IfSet),
        field(2, "leaseDurationSeconds", Kind::Int32, IfSet),
        field(3, "acquireTime", Kind::MicroTime, IfSet),
        field(4, "renewTime", Kind::MicroTime, IfSet),
        field(5, "leaseTransitions", Kind::Int32, IfSet),
        field(6, "strategy", Kind::String, IfSet),
        field(7, "preferredHolder", Kind::String, IfSet),
    ],
);
