//! Decoding of Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`,
//! spec item ENC-04) into the JSON the API would show for the same object.
//!
//! kubectl's imperative generators (`kubectl create configmap|namespace|secret|serviceaccount`)
//! and other typed clients POST protobuf with no JSON fallback. A body is the 4-byte
//! [`MAGIC`] prefix followed by a `runtime.Unknown` envelope:
//!
//! ```text
//! Unknown  { TypeMeta typeMeta = 1; bytes raw = 2; string contentEncoding = 3; string contentType = 4; }
//! TypeMeta { string apiVersion = 1; string kind = 2; }
//! ```
//!
//! `raw` holds the object message itself, without type information; the envelope's
//! `typeMeta` names it.
//!
//! ## Design
//!
//! A small generic wire reader ([`Reader`]) yields `(field number, value)` pairs and skips
//! unknown fields of every wire type (including groups). Each supported message is a static
//! table of [`Field`]s (number, JSON name, [`Kind`], [`Emit`] rule) taken from the
//! `generated.proto` files of `k8s.io/api` and `k8s.io/apimachinery` as of Kubernetes 1.32.
//! Decoding fills one [`Slot`] per table entry, so repeated and map fields accumulate across
//! occurrences and singular sub-messages merge, as the generated Go code does.
//!
//! ## JSON shape
//!
//! The Go types are generated with gogo-protobuf (proto2, non-nullable fields), so a Go
//! client writes every non-pointer field even when it is empty. The output therefore
//! follows what Go's `encoding/json` produces for the decoded Go struct, not which fields
//! happen to be on the wire:
//!
//! * scalar, map and list fields tagged `omitempty` are left out when empty or zero;
//! * pointer fields (`*bool`, `*int32`, `*string`, `*MicroTime`, `*ObjectReference`, …) are
//!   emitted whenever they were present on the wire, even with a zero value;
//! * non-pointer struct fields are always emitted (`"spec":{}`), `metav1.Time` and
//!   `metav1.MicroTime` as `null` when zero (hence `"creationTimestamp":null`), and fields
//!   without `omitempty` always (`OwnerReference.uid`, `Event.reportingComponent`, …);
//! * map keys are sorted; `bytes` values are standard base64 with padding;
//! * `Time` is RFC 3339 with seconds precision (`2006-01-02T15:04:05Z`, nanoseconds are
//!   dropped as Go does), `MicroTime` has six fractional digits
//!   (`2006-01-02T15:04:05.000000Z`);
//! * `FieldsV1` (`managedFields[].fieldsV1`) is emitted as the JSON value its `Raw` bytes hold.
//!
//! `apiVersion` and `kind` come from the envelope and are the first two keys.
//!
//! Strings must be valid UTF-8 (Go would accept and later replace invalid sequences; a
//! request body carrying them is rejected here instead).

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Map, Value};

/// The 4-byte prefix of every Kubernetes protobuf body: `"k8s\x00"`.
pub const MAGIC: [u8; 4] = *b"k8s\0";

/// The media type of Kubernetes protobuf; also accepted as the envelope's `contentType`.
const PROTOBUF_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// Why a protobuf body could not be decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProtobufError {
    /// The body does not start with [`MAGIC`].
    #[error("protobuf body does not start with the magic prefix \"k8s\\x00\"")]
    MissingMagic,
    /// The wire data is not a valid encoding of the expected message.
    #[error("malformed protobuf at {path}: {message}")]
    Malformed {
        /// Where the problem is, e.g. `ConfigMap.metadata.ownerReferences[1].uid`.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The envelope names an object this decoder has no schema for.
    #[error("protobuf decoding of apiVersion {api_version:?}, kind {kind:?} is not supported")]
    UnsupportedKind {
        /// `typeMeta.apiVersion` of the envelope.
        api_version: String,
        /// `typeMeta.kind` of the envelope.
        kind: String,
    },
    /// The envelope's `contentEncoding` is not empty (no encoding is supported).
    #[error("unsupported protobuf envelope contentEncoding {0:?}")]
    UnsupportedContentEncoding(String),
    /// The envelope's `contentType` is neither empty nor protobuf.
    #[error("unsupported protobuf envelope contentType {0:?}")]
    UnsupportedContentType(String),
}

/// Decodes a request body: 4-byte magic, then
/// `runtime.Unknown{typeMeta=1{apiVersion=1,kind=2}, raw=2, contentEncoding=3, contentType=4}`;
/// `raw` holds the object message. Returns the object as the JSON the Kubernetes API would
/// show for it (same field names, Go `encoding/json` conventions), with `"apiVersion"` and
/// `"kind"` taken from the envelope's TypeMeta, first in the map.
pub fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    let rest = body
        .strip_prefix(&MAGIC[..])
        .ok_or(ProtobufError::MissingMagic)?;
    let envelope = Envelope::decode(rest)?;
    if !envelope.content_encoding.is_empty() {
        return Err(ProtobufError::UnsupportedContentEncoding(
            envelope.content_encoding.to_owned(),
        ));
    }
    if !is_protobuf_content_type(envelope.content_type) {
        return Err(ProtobufError::UnsupportedContentType(
            envelope.content_type.to_owned(),
        ));
    }
    let message = schema_for(envelope.api_version, envelope.kind).ok_or_else(|| {
        ProtobufError::UnsupportedKind {
            api_version: envelope.api_version.to_owned(),
            kind: envelope.kind.to_owned(),
        }
    })?;
    let root = Path::root(message.name);
    let mut slots = empty_slots(message);
    merge_message(message, envelope.raw, &mut slots, &root)?;

    let mut object = Map::new();
    object.insert(
        "apiVersion".to_owned(),
        Value::String(envelope.api_version.to_owned()),
    );
    object.insert("kind".to_owned(), Value::String(envelope.kind.to_owned()));
    object.extend(finish_message(message, slots));
    Ok(Value::Object(object))
}

/// The (apiVersion, kind) pairs `decode` understands.
pub fn supported_kinds() -> &'static [(&'static str, &'static str)] {
    SUPPORTED_KINDS
}

/// Every (apiVersion, kind) with a schema. `DeleteOptions` is registered by client-go in
/// every group version its typed clients use (a typed client encodes it with its own group
/// version), and the API server also accepts `meta.k8s.io/v1`.
const SUPPORTED_KINDS: &[(&str, &str)] = &[
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "Namespace"),
    ("v1", "ServiceAccount"),
    ("v1", "Event"),
    ("coordination.k8s.io/v1", "Lease"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io/v1", "SubjectAccessReview"),
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"),
    ("authentication.k8s.io/v1", "SelfSubjectReview"),
    ("authentication.k8s.io/v1", "TokenRequest"),
    ("meta.k8s.io/v1", "DeleteOptions"),
    ("v1", "DeleteOptions"),
    ("coordination.k8s.io/v1", "DeleteOptions"),
    ("rbac.authorization.k8s.io/v1", "DeleteOptions"),
];

/// Top-level messages, looked up by their Go kind name.
const ROOT_MESSAGES: &[&Message] = &[
    &CONFIG_MAP,
    &SECRET,
    &NAMESPACE,
    &SERVICE_ACCOUNT,
    &EVENT,
    &LEASE,
    &ROLE,
    &ROLE_BINDING,
    &CLUSTER_ROLE,
    &CLUSTER_ROLE_BINDING,
    &SELF_SUBJECT_ACCESS_REVIEW,
    &SUBJECT_ACCESS_REVIEW,
    &SELF_SUBJECT_RULES_REVIEW,
    &SELF_SUBJECT_REVIEW,
    &TOKEN_REQUEST,
    &DELETE_OPTIONS,
];

fn schema_for(api_version: &str, kind: &str) -> Option<&'static Message> {
    if !SUPPORTED_KINDS
        .iter()
        .any(|&(v, k)| v == api_version && k == kind)
    {
        return None;
    }
    ROOT_MESSAGES.iter().copied().find(|m| m.name == kind)
}

fn is_protobuf_content_type(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.is_empty() || essence.eq_ignore_ascii_case(PROTOBUF_MEDIA_TYPE)
}

// ---------------------------------------------------------------------------------------------
// Envelope
// ---------------------------------------------------------------------------------------------

/// `runtime.Unknown`, borrowed from the body.
struct Envelope<'a> {
    api_version: &'a str,
    kind: &'a str,
    raw: &'a [u8],
    content_encoding: &'a str,
    content_type: &'a str,
}

impl<'a> Envelope<'a> {
    fn decode(buf: &'a [u8]) -> Result<Self, ProtobufError> {
        let root = Path::root("Unknown");
        let mut envelope = Envelope {
            api_version: "",
            kind: "",
            raw: &[],
            content_encoding: "",
            content_type: "",
        };
        let mut reader = Reader::new(buf);
        while let Some((number, value)) = reader.next_field().map_err(|m| root.malformed(m))? {
            match number {
                1 => {
                    let path = root.field("typeMeta");
                    let bytes = value.expect_len(number).map_err(|m| path.malformed(m))?;
                    let mut inner = Reader::new(bytes);
                    while let Some((number, value)) =
                        inner.next_field().map_err(|m| path.malformed(m))?
                    {
                        match number {
                            1 => {
                                envelope.api_version =
                                    string_at(value, number, &path, "apiVersion")?
                            }
                            2 => envelope.kind = string_at(value, number, &path, "kind")?,
                            _ => {}
                        }
                    }
                }
                2 => {
                    envelope.raw = value
                        .expect_len(number)
                        .map_err(|m| root.field("raw").malformed(m))?;
                }
                3 => {
                    envelope.content_encoding = string_at(value, number, &root, "contentEncoding")?;
                }
                4 => envelope.content_type = string_at(value, number, &root, "contentType")?,
                _ => {}
            }
        }
        Ok(envelope)
    }
}

fn string_at<'a>(
    value: WireValue<'a>,
    number: u32,
    parent: &Path<'_>,
    name: &'static str,
) -> Result<&'a str, ProtobufError> {
    let path = parent.field(name);
    let bytes = value.expect_len(number).map_err(|m| path.malformed(m))?;
    utf8(bytes).map_err(|m| path.malformed(m))
}

fn utf8(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|e| format!("invalid UTF-8 in string: {e}"))
}

// ---------------------------------------------------------------------------------------------
// Wire reader
// ---------------------------------------------------------------------------------------------

/// One field value as it appears on the wire. Groups are skipped, not returned.
#[derive(Debug, Clone, Copy)]
enum WireValue<'a> {
    Varint(u64),
    Fixed64,
    Len(&'a [u8]),
    Group,
    Fixed32,
}

impl<'a> WireValue<'a> {
    fn wire_name(self) -> &'static str {
        match self {
            WireValue::Varint(_) => "varint (0)",
            WireValue::Fixed64 => "fixed64 (1)",
            WireValue::Len(_) => "length-delimited (2)",
            WireValue::Group => "group (3)",
            WireValue::Fixed32 => "fixed32 (5)",
        }
    }

    fn expect_len(self, number: u32) -> Result<&'a [u8], String> {
        match self {
            WireValue::Len(bytes) => Ok(bytes),
            other => Err(wrong_wire_type(number, other, "length-delimited (2)")),
        }
    }

    fn expect_varint(self, number: u32) -> Result<u64, String> {
        match self {
            WireValue::Varint(v) => Ok(v),
            other => Err(wrong_wire_type(number, other, "varint (0)")),
        }
    }
}

fn wrong_wire_type(number: u32, found: WireValue<'_>, expected: &str) -> String {
    format!(
        "wrong wire type {} for field {number}, expected {expected}",
        found.wire_name()
    )
}

/// The largest field number protobuf allows (2^29 - 1).
const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;

/// A cursor over one message's bytes.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn byte(&mut self) -> Result<u8, String> {
        let b = self
            .buf
            .get(self.pos)
            .copied()
            .ok_or_else(|| "truncated varint".to_owned())?;
        self.pos += 1;
        Ok(b)
    }

    /// A base-128 varint of at most 10 bytes; bits past 64 are dropped, as Go does.
    fn varint(&mut self) -> Result<u64, String> {
        let mut value: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("varint is longer than 10 bytes".to_owned())
    }

    fn take(&mut self, len: u64, what: &str) -> Result<&'a [u8], String> {
        let remaining = self.buf.len().saturating_sub(self.pos);
        let len = usize::try_from(len)
            .ok()
            .filter(|&len| len <= remaining)
            .ok_or_else(|| {
                format!("{what} of {len} bytes runs past the end of the data ({remaining} left)")
            })?;
        let start = self.pos;
        self.pos += len;
        self.buf
            .get(start..self.pos)
            .ok_or_else(|| format!("{what} runs past the end of the data"))
    }

    fn tag(&mut self) -> Result<(u32, u8), String> {
        let tag = self.varint()?;
        let number = tag >> 3;
        // The mask keeps the wire type within 0..=7, so the cast is lossless.
        let wire_type = (tag & 7) as u8;
        if number == 0 || number > MAX_FIELD_NUMBER {
            return Err(format!(
                "illegal field number {number} (wire type {wire_type})"
            ));
        }
        let number = u32::try_from(number).map_err(|_| format!("illegal field number {number}"))?;
        Ok((number, wire_type))
    }

    /// The next field of the message, or `None` at its end.
    fn next_field(&mut self) -> Result<Option<(u32, WireValue<'a>)>, String> {
        if self.at_end() {
            return Ok(None);
        }
        let (number, wire_type) = self.tag()?;
        let value = match wire_type {
            0 => WireValue::Varint(self.varint()?),
            1 => {
                self.take(8, "fixed64 value")?;
                WireValue::Fixed64
            }
            2 => {
                let len = self.varint()?;
                WireValue::Len(self.take(len, "length-delimited field")?)
            }
            3 => {
                self.skip_group()?;
                WireValue::Group
            }
            4 => return Err(format!("unexpected end-group tag for field {number}")),
            5 => {
                self.take(4, "fixed32 value")?;
                WireValue::Fixed32
            }
            other => return Err(format!("invalid wire type {other} for field {number}")),
        };
        Ok(Some((number, value)))
    }

    /// Skips the body of a group whose start tag was just read, nested groups included.
    fn skip_group(&mut self) -> Result<(), String> {
        let mut depth: usize = 1;
        while depth > 0 {
            if self.at_end() {
                return Err("unterminated group".to_owned());
            }
            let (_, wire_type) = self.tag()?;
            match wire_type {
                0 => {
                    self.varint()?;
                }
                1 => {
                    self.take(8, "fixed64 value")?;
                }
                2 => {
                    let len = self.varint()?;
                    self.take(len, "length-delimited field")?;
                }
                3 => depth += 1,
                4 => depth -= 1,
                5 => {
                    self.take(4, "fixed32 value")?;
                }
                other => return Err(format!("invalid wire type {other} inside a group")),
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Error paths
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy)]
enum Segment {
    Root(&'static str),
    Field(&'static str),
    Index(usize),
}

/// Where the decoder is, as a chain of stack frames; rendered only for errors.
struct Path<'p> {
    parent: Option<&'p Path<'p>>,
    segment: Segment,
}

impl<'p> Path<'p> {
    fn root(name: &'static str) -> Self {
        Path {
            parent: None,
            segment: Segment::Root(name),
        }
    }

    fn field(&'p self, name: &'static str) -> Path<'p> {
        Path {
            parent: Some(self),
            segment: Segment::Field(name),
        }
    }

    fn index(&'p self, index: usize) -> Path<'p> {
        Path {
            parent: Some(self),
            segment: Segment::Index(index),
        }
    }

    fn render(&self) -> String {
        let mut segments = Vec::new();
        let mut current = Some(self);
        while let Some(path) = current {
            segments.push(path.segment);
            current = path.parent;
        }
        let mut out = String::new();
        for segment in segments.iter().rev() {
            match segment {
                Segment::Root(name) => out.push_str(name),
                Segment::Field(name) => {
                    out.push('.');
                    out.push_str(name);
                }
                Segment::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
            }
        }
        out
    }

    fn malformed(&self, message: impl Into<String>) -> ProtobufError {
        ProtobufError::Malformed {
            path: self.render(),
            message: message.into(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Schema
// ---------------------------------------------------------------------------------------------

/// How a field's value is encoded and rendered.
#[derive(Clone, Copy)]
enum Kind {
    /// `string`, must be UTF-8.
    String,
    /// `int32` varint (the low 32 bits, as Go keeps them).
    Int32,
    /// `int64` varint.
    Int64,
    /// `bool` varint.
    Bool,
    /// A singular embedded message; occurrences merge.
    Message(&'static Message),
    /// `metav1.Time`: seconds precision, `null` when zero.
    Time,
    /// `metav1.MicroTime`: microseconds precision, `null` when zero.
    MicroTime,
    /// `metav1.FieldsV1 { bytes Raw = 1; }`, rendered as the JSON `Raw` holds.
    FieldsV1,
    /// `map<string, string>`.
    StringMap,
    /// `map<string, bytes>`, values rendered as standard base64.
    BytesMap,
    /// `repeated string`.
    Strings,
    /// `repeated` embedded message.
    Messages(&'static Message),
}

/// When a field appears in the JSON (see the module documentation).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Emit {
    /// Go value field tagged `omitempty`: left out when empty, zero, or absent.
    OmitEmpty,
    /// Go pointer field: emitted whenever it was on the wire, even with a zero value.
    IfSet,
    /// Go struct field, or a field without `omitempty`: always emitted (zero value if absent).
    Always,
}

struct Field {
    number: u32,
    json: &'static str,
    kind: Kind,
    emit: Emit,
}

struct Message {
    /// The Go type name; for top-level messages also the kind.
    name: &'static str,
    /// In Go struct order, which is the JSON key order.
    fields: &'static [Field],
}

const fn field(number: u32, json: &'static str, kind: Kind, emit: Emit) -> Field {
    Field {
        number,
        json,
        kind,
        emit,
    }
}

use Emit::{Always, IfSet, OmitEmpty};

// --- k8s.io/apimachinery/pkg/apis/meta/v1 -----------------------------------------------------

/// `metav1.Timestamp` (the wire form of `Time` and `MicroTime`).
static TIMESTAMP: Message = Message {
    name: "Timestamp",
    fields: &[
        field(1, "seconds", Kind::Int64, Always),
        field(2, "nanos", Kind::Int32, Always),
    ],
};

static OBJECT_META: Message = Message {
    name: "ObjectMeta",
    fields: &[
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
};

static OWNER_REFERENCE: Message = Message {
    name: "OwnerReference",
    fields: &[
        field(5, "apiVersion", Kind::String, Always),
        field(1, "kind", Kind::String, Always),
        field(3, "name", Kind::String, Always),
        field(4, "uid", Kind::String, Always),
        field(6, "controller", Kind::Bool, IfSet),
        field(7, "blockOwnerDeletion", Kind::Bool, IfSet),
    ],
};

static MANAGED_FIELDS_ENTRY: Message = Message {
    name: "ManagedFieldsEntry",
    fields: &[
        field(1, "manager", Kind::String, OmitEmpty),
        field(2, "operation", Kind::String, OmitEmpty),
        field(3, "apiVersion", Kind::String, OmitEmpty),
        field(4, "time", Kind::Time, IfSet),
        field(6, "fieldsType", Kind::String, OmitEmpty),
        field(7, "fieldsV1", Kind::FieldsV1, IfSet),
        field(8, "subresource", Kind::String, OmitEmpty),
    ],
};

static DELETE_OPTIONS: Message = Message {
    name: "DeleteOptions",
    fields: &[
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
};

static PRECONDITIONS: Message = Message {
    name: "Preconditions",
    fields: &[
        field(1, "uid", Kind::String, IfSet),
        field(2, "resourceVersion", Kind::String, IfSet),
    ],
};

// --- k8s.io/api/core/v1 -----------------------------------------------------------------------

static CONFIG_MAP: Message = Message {
    name: "ConfigMap",
    fields: &[
        field(1, "metadata", Kind::Message(&OBJECT_META), Always),
        field(4, "immutable", Kind::Bool, IfSet),
        field(2, "data", Kind::StringMap, OmitEmpty),
        field(3, "binaryData", Kind::BytesMap, OmitEmpty),
    ],
};

static SECRET: Message = Message {
    name: "Secret",
    fields: &[
        field(1, "metadata", Kind::Message(&OBJECT_META), Always),
        field(5, "immutable", Kind::Bool, IfSet),
        field(2, "data", Kind::BytesMap, OmitEmpty),
        field(4, "stringData", Kind::StringMap, OmitEmpty),
        field(3, "type", Kind::String, OmitEmpty),
    ],
};

static NAMESPACE: Message = Message {
    name: "Namespace",
    fields: &[
        field(1, "metadata", Kind::Message(&OBJECT_META), Always),
        field(2, "spec", Kind::Message(&NAMESPACE_SPEC), Always),
        field(3, "status", Kind::Message(&NAMESPACE_STATUS), Always),
    ],
};

static NAMESPACE_SPEC: Message = Message {
    name: "NamespaceSpec",
    fields: &[field(1, "finalizers", Kind::Strings, OmitEmpty)],
};

static NAMESPACE_STATUS: Message = Message {
    name: "NamespaceStatus",
    fields: &[
        field(1, "phase", Kind::String, OmitEmpty),
        field(
            2,
            "conditions",
            Kind::Messages(&NAMESPACE_CONDITION),
            OmitEmpty,
        ),
    ],
};

static NAMESPACE_CONDITION: Message = Message {
    name: "NamespaceCondition",
    fields: &[
        field(1, "type", Kind::String, Always),
        field(2, "status", Kind::String, Always),
        field(4, "lastTransitionTime", Kind::Time, Always),
        field(5, "reason", Kind::String, OmitEmpty),
        field(6, "message", Kind::String, OmitEmpty),
    ],
};

static SERVICE_ACCOUNT: Message = Message {
    name: "ServiceAccount",
    fields: &[
        field(1, "metadata", Kind::Message(&OBJECT_META), Always),
        field(2, "secrets", Kind::Messages(&OBJECT_REFERENCE), OmitEmpty),
        field(
            3,
            "imagePullSecrets",
            Kind::Messages(&LOCAL_OBJECT_REFERENCE),
            OmitEmpty,
        ),
        field(4, "automountServiceAccountToken", Kind::Bool, IfSet),
    ],
};

static OBJECT_REFERENCE: Message = Message {
    name: "ObjectReference",
    fields: &[
        field(1, "kind", Kind::String, OmitEmpty),
        field(2, "namespace", Kind::String, OmitEmpty),
        field(3, "name", Kind::String, OmitEmpty),
        field(4, "uid", Kind::String, OmitEmpty),
        field(5, "apiVersion", Kind::String, OmitEmpty),
        field(6, "resourceVersion", Kind::String, OmitEmpty),
        field(7, "fieldPath", Kind::String, OmitEmpty),
    ],
};

static LOCAL_OBJECT_REFERENCE: Message = Message {
    name: "LocalObjectReference",
    fields: &[field(1, "name", Kind::String, OmitEmpty)],
};

static EVENT: Message = Message {
    name: "Event",
    fields: &[
        field(1, "metadata", Kind::Message(&OBJECT_META), Always),
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
};

static EVENT_SOURCE: Message = Message {
    name: "EventSource",
    fields: &[
        field(1, "component", Kind::String, OmitEmpty),
        field(2, "host", Kind::String, OmitEmpty),
    ],
};

static EVENT_SERIES: Message = Message {
    name: "EventSeries",
    fields: &[
        field(1, "count", Kind::Int32, OmitEmpty),
        field(2, "lastObservedTime", Kind::MicroTime, Always),
    ],
};

// --- k8s.io/api/coordination/v1 ---------------------------------------------------------------

static LEASE: Message = Message {
    name: "Lease",
    fields: &[
        field(1, "metadata", Kind::Message(&OBJECT_META), Always),
        field(2, "spec", Kind::Message(&LEASE_SPEC), Always),
    ],
};

static LEASE_SPEC: Message = Message {
    name: "LeaseSpec",
    fields: &[
        field(1, "holderIdentity", Kind::String, IfSet),
        field(2, "leaseDurationSeconds", Kind::Int32, IfSet),
        field(3, "acquireTime", Kind::MicroTime, IfSet),
        field(4, "renewTime", Kind::MicroTime, IfSet),
        field(5, "leaseTransitions", Kind::Int32, IfSet),
        field(6, "strategy", Kind::String, IfSet),
        field(7, "preferredHolder", Kind::String, IfSet),
    ],
};

// --- k8s.io/api/rbac/v1 -----------------------------------------------------------------------

static ROLE: Message = Message {
    name: "Role",
    fields: &[
        field(1, "metadata", Kind::Message(&OBJECT_META), Always),
        field(2, "rules", Kind::Messages(&POLICY_RULE), Always),
    ],
};

static CLUSTER_ROLE: Message = Message {
    name: "ClusterRole",
    fields: &[
        field(1, "metadata", Kind::Message(&OBJECT_META), Always),
        field(2, "rules", Kind::Messages(&POLICY_RULE), Always),
        field(
            3,
            "aggregationRule",
            Kind::Message(&AGGREGATION_RULE),
            IfSet,
        ),
    ],
};

/// RoleBinding and ClusterRoleBinding have the same fields.
const BINDING_FIELDS: &[Field] = &[
    field(1, "metadata", Kind::Message(&OBJECT_META), Always),
    field(2, "subjects", Kind::Messages(&SUBJECT), OmitEmpty),
    field(3, "roleRef", Kind::Message(&ROLE_REF), Always),
];

static ROLE_BINDING: Message = Message {
    name: "RoleBinding",
    fields: BINDING_FIELDS,
};

static CLUSTER_ROLE_BINDING: Message = Message {
    name: "ClusterRoleBinding",
    fields: BINDING_FIELDS,
};

static POLICY_RULE: Message = Message {
    name: "PolicyRule",
    fields: &[
        field(1, "verbs", Kind::Strings, Always),
        field(2, "apiGroups", Kind::Strings, OmitEmpty),
        field(3, "resources", Kind::Strings, OmitEmpty),
        field(4, "resourceNames", Kind::Strings, OmitEmpty),
        field(5, "nonResourceURLs", Kind::Strings, OmitEmpty),
    ],
};

static SUBJECT: Message = Message {
    name: "Subject",
    fields: &[
        field(1, "kind", Kind::String, Always),
        field(2, "apiGroup", Kind::String, OmitEmpty),
        field(3, "name", Kind::String, Always),
        field(4, "namespace", Kind::String, OmitEmpty),
    ],
};

static ROLE_REF: Message = Message {
    name: "RoleRef",
    fields: &[
        field(1, "apiGroup", Kind::String, Always),
        field(2, "kind", Kind::String, Always),
        field(3, "name", Kind::String, Always),
    ],
};

static AGGREGATION_RULE: Message = Message {
    name: "AggregationRule",
    fields: &[field(
        1,
        "clusterRoleSelectors",
        Kind::Messages(&LABEL_SELECTOR),
        OmitEmpty,
    )],
};

static LABEL_SELECTOR: Message = Message {
    name: "LabelSelector",
    fields: &[
        field(1, "matchLabels", Kind::StringMap, OmitEmpty),
        field(
            2,
            "matchExpressions",
            Kind::Messages(&LABEL_SELECTOR_REQUIREMENT),
            OmitEmpty,
        ),
    ],
};

static LABEL_SELECTOR_REQUIREMENT: Message = Message {
    name: "LabelSelectorRequirement",
    fields: &[
        field(1, "key", Kind::String, Always),
        field(2, "operator", Kind::String, Always),
        field(3, "values", Kind::Strings, OmitEmpty),
    ],
};

// --- k8s.io/api/authorization/v1, authentication/v1 (requests only: status is the server's) ---

static SELF_SUBJECT_ACCESS_REVIEW: Message = Message {
    name: "SelfSubjectAccessReview",
    fields: &[
        field(1, "metadata", Kind::Message(&OBJECT_META), Always),
        field(
            2,
            "spec",
            Kind::Message(&SELF_SUBJECT_ACCESS_REVIEW_SPEC),
            Always,
        ),
    ],
};

static SELF_SUBJECT_ACCESS_REVIEW_SPEC: Message = Message {
    name: "SelfSubjectAccessReviewSpec",
    fields: &[
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
};

static SUBJECT_ACCESS_REVIEW: Message = Message {
    name: "SubjectAccessReview",
    fields: &[
        field(1, "metadata", Kind::Message(&OBJECT_META), Always),
        field(
            2,
            "spec",
            Kind::Message(&SUBJECT_ACCESS_REVIEW_SPEC),
            Always,
        ),
    ],
};

static SUBJECT_ACCESS_REVIEW_SPEC: Message = Message {
    name: "SubjectAccessReviewSpec",
    fields: &[
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
        field(6, "uid", Kind::String, OmitEmpty),
    ],
};

static RESOURCE_ATTRIBUTES: Message = Message {
    name: "ResourceAttributes",
    fields: &[
        field(1, "namespace", Kind::String, OmitEmpty),
        field(2, "verb", Kind::String, OmitEmpty),
        field(3, "group", Kind::String, OmitEmpty),
        field(4, "version", Kind::String, OmitEmpty),
        field(5, "resource", Kind::String, OmitEmpty),
        field(6, "subresource", Kind::String, OmitEmpty),
        field(7, "name", Kind::String, OmitEmpty),
    ],
};

static NON_RESOURCE_ATTRIBUTES: Message = Message {
    name: "NonResourceAttributes",
    fields: &[
        field(1, "path", Kind::String, OmitEmpty),
        field(2, "verb", Kind::String, OmitEmpty),
    ],
};

static SELF_SUBJECT_RULES_REVIEW: Message = Message {
    name: "SelfSubjectRulesReview",
    fields: &[
        field(1, "metadata", Kind::Message(&OBJECT_META), Always),
        field(
            2,
            "spec",
            Kind::Message(&SELF_SUBJECT_RULES_REVIEW_SPEC),
            Always,
        ),
    ],
};

static SELF_SUBJECT_RULES_REVIEW_SPEC: Message = Message {
    name: "SelfSubjectRulesReviewSpec",
    fields: &[field(1, "namespace", Kind::String, OmitEmpty)],
};

static SELF_SUBJECT_REVIEW: Message = Message {
    name: "SelfSubjectReview",
    fields: &[field(1, "metadata", Kind::Message(&OBJECT_META), Always)],
};

static TOKEN_REQUEST: Message = Message {
    name: "TokenRequest",
    fields: &[
        field(1, "metadata", Kind::Message(&OBJECT_META), Always),
        field(2, "spec", Kind::Message(&TOKEN_REQUEST_SPEC), Always),
    ],
};

static TOKEN_REQUEST_SPEC: Message = Message {
    name: "TokenRequestSpec",
    fields: &[
        field(1, "audiences", Kind::Strings, Always),
        field(
            3,
            "boundObjectRef",
            Kind::Message(&BOUND_OBJECT_REFERENCE),
            IfSet,
        ),
        field(4, "expirationSeconds", Kind::Int64, IfSet),
    ],
};

static BOUND_OBJECT_REFERENCE: Message = Message {
    name: "BoundObjectReference",
    fields: &[
        field(1, "kind", Kind::String, OmitEmpty),
        field(2, "apiVersion", Kind::String, OmitEmpty),
        field(3, "name", Kind::String, OmitEmpty),
        field(4, "uid", Kind::String, OmitEmpty),
    ],
};

// ---------------------------------------------------------------------------------------------
// Schema-driven decoding
// ---------------------------------------------------------------------------------------------

/// What has been decoded for one field of a message so far.
enum Slot<'a> {
    Unset,
    Str(&'a str),
    Int(i64),
    Bool(bool),
    /// A singular sub-message, merged across occurrences.
    Message(Vec<Slot<'a>>),
    /// A rendered `Time`, `MicroTime` or `FieldsV1` (the last occurrence wins, as with Go's
    /// custom unmarshalers).
    Rendered(Value),
    /// Map entries; later entries replace earlier ones with the same key.
    Map(BTreeMap<&'a str, Value>),
    List(Vec<Value>),
}

fn empty_slots<'a>(message: &Message) -> Vec<Slot<'a>> {
    message.fields.iter().map(|_| Slot::Unset).collect()
}

/// Decodes `buf` as an occurrence of `message`, merging into `slots`.
fn merge_message<'a>(
    message: &'static Message,
    buf: &'a [u8],
    slots: &mut [Slot<'a>],
    path: &Path<'_>,
) -> Result<(), ProtobufError> {
    let mut reader = Reader::new(buf);
    while let Some((number, value)) = reader.next_field().map_err(|m| path.malformed(m))? {
        let known = message
            .fields
            .iter()
            .zip(slots.iter_mut())
            .find(|(field, _)| field.number == number);
        if let Some((field, slot)) = known {
            merge_field(field, number, value, slot, &path.field(field.json))?;
        }
    }
    Ok(())
}

fn merge_field<'a>(
    field: &'static Field,
    number: u32,
    value: WireValue<'a>,
    slot: &mut Slot<'a>,
    path: &Path<'_>,
) -> Result<(), ProtobufError> {
    let len = |value: WireValue<'a>| value.expect_len(number).map_err(|m| path.malformed(m));
    let varint = |value: WireValue<'a>| value.expect_varint(number).map_err(|m| path.malformed(m));
    match field.kind {
        Kind::String => {
            *slot = Slot::Str(utf8(len(value)?).map_err(|m| path.malformed(m))?);
        }
        // Go keeps the low 32 bits of the varint; negative values arrive sign-extended.
        Kind::Int32 => *slot = Slot::Int(i64::from(varint(value)? as i32)),
        Kind::Int64 => *slot = Slot::Int(varint(value)? as i64),
        Kind::Bool => *slot = Slot::Bool(varint(value)? != 0),
        Kind::Message(message) => {
            let bytes = len(value)?;
            if !matches!(slot, Slot::Message(_)) {
                *slot = Slot::Message(empty_slots(message));
            }
            if let Slot::Message(inner) = slot {
                merge_message(message, bytes, inner, path)?;
            }
        }
        Kind::Time => *slot = Slot::Rendered(decode_time(len(value)?, false, path)?),
        Kind::MicroTime => *slot = Slot::Rendered(decode_time(len(value)?, true, path)?),
        Kind::FieldsV1 => {
            // A later occurrence without `Raw` keeps the earlier `Raw` (messages merge).
            match decode_fields_v1_raw(len(value)?, path)? {
                Some(raw) => *slot = Slot::Rendered(fields_v1_json(raw, path)?),
                None if matches!(slot, Slot::Rendered(_)) => {}
                None => *slot = Slot::Rendered(Value::Null),
            }
        }
        Kind::StringMap | Kind::BytesMap => {
            let (key, entry_value) = decode_map_entry(len(value)?, path)?;
            let rendered = if matches!(field.kind, Kind::BytesMap) {
                Value::String(base64::engine::general_purpose::STANDARD.encode(entry_value))
            } else {
                Value::String(utf8(entry_value).map_err(|m| path.malformed(m))?.to_owned())
            };
            if !matches!(slot, Slot::Map(_)) {
                *slot = Slot::Map(BTreeMap::new());
            }
            if let Slot::Map(map) = slot {
                map.insert(key, rendered);
            }
        }
        Kind::Strings => {
            let s = utf8(len(value)?).map_err(|m| path.malformed(m))?;
            push(slot, Value::String(s.to_owned()));
        }
        Kind::Messages(message) => {
            let bytes = len(value)?;
            let index = match slot {
                Slot::List(items) => items.len(),
                _ => 0,
            };
            let mut inner = empty_slots(message);
            merge_message(message, bytes, &mut inner, &path.index(index))?;
            push(slot, Value::Object(finish_message(message, inner)));
        }
    }
    Ok(())
}

fn push(slot: &mut Slot<'_>, value: Value) {
    if let Slot::List(items) = slot {
        items.push(value);
    } else {
        *slot = Slot::List(vec![value]);
    }
}

/// A map entry message `{ key = 1; value = 2; }`; absent parts are empty.
fn decode_map_entry<'a>(
    buf: &'a [u8],
    path: &Path<'_>,
) -> Result<(&'a str, &'a [u8]), ProtobufError> {
    let mut key: &[u8] = &[];
    let mut value: &[u8] = &[];
    let mut reader = Reader::new(buf);
    while let Some((number, wire)) = reader.next_field().map_err(|m| path.malformed(m))? {
        match number {
            1 => key = wire.expect_len(number).map_err(|m| path.malformed(m))?,
            2 => value = wire.expect_len(number).map_err(|m| path.malformed(m))?,
            _ => {}
        }
    }
    let key = utf8(key).map_err(|m| path.malformed(format!("map key: {m}")))?;
    Ok((key, value))
}

/// `FieldsV1 { bytes Raw = 1; }`: the last `Raw` in this occurrence, if any.
fn decode_fields_v1_raw<'a>(
    buf: &'a [u8],
    path: &Path<'_>,
) -> Result<Option<&'a [u8]>, ProtobufError> {
    let mut raw = None;
    let mut reader = Reader::new(buf);
    while let Some((number, wire)) = reader.next_field().map_err(|m| path.malformed(m))? {
        if number == 1 {
            raw = Some(wire.expect_len(number).map_err(|m| path.malformed(m))?);
        }
    }
    Ok(raw)
}

/// Unix seconds of Go's zero `time.Time` (January 1, year 1, UTC), which renders as `null`.
const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

/// Decodes a `Time`/`MicroTime` occurrence (a `Timestamp` message) and renders it.
fn decode_time(buf: &[u8], micro: bool, path: &Path<'_>) -> Result<Value, ProtobufError> {
    // An empty message is Go's zero time.
    if buf.is_empty() {
        return Ok(Value::Null);
    }
    let mut slots = empty_slots(&TIMESTAMP);
    merge_message(&TIMESTAMP, buf, &mut slots, path)?;
    let int = |slot: &Slot<'_>| match slot {
        Slot::Int(v) => *v,
        _ => 0,
    };
    let seconds = slots.first().map_or(0, int);
    let nanos = slots.get(1).map_or(0, int);
    render_time(seconds, nanos, micro).map_err(|m| path.malformed(m))
}

/// Renders a timestamp the way `metav1.Time` (seconds; nanoseconds dropped) or
/// `metav1.MicroTime` (nanoseconds truncated to microseconds) marshal to JSON.
fn render_time(seconds: i64, nanos: i64, micro: bool) -> Result<Value, String> {
    const NANOS_PER_SECOND: i64 = 1_000_000_000;
    let nanos = if micro { nanos - nanos % 1_000 } else { 0 };
    // Normalise like Go's time.Unix(seconds, nanos).
    let carry = nanos.div_euclid(NANOS_PER_SECOND);
    let nanos = nanos.rem_euclid(NANOS_PER_SECOND);
    let seconds = seconds
        .checked_add(carry)
        .ok_or_else(|| format!("timestamp {seconds}s is outside the years 0000 to 9999"))?;
    if seconds == GO_ZERO_TIME_UNIX && nanos == 0 {
        return Ok(Value::Null);
    }
    let out_of_range = || format!("timestamp {seconds}s is outside the years 0000 to 9999");
    let instant = time::OffsetDateTime::from_unix_timestamp(seconds).map_err(|_| out_of_range())?;
    let year = instant.year();
    if !(0..=9999).contains(&year) {
        return Err(out_of_range());
    }
    let date_time = format!(
        "{year:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        u8::from(instant.month()),
        instant.day(),
        instant.hour(),
        instant.minute(),
        instant.second()
    );
    Ok(Value::String(if micro {
        format!("{date_time}.{:06}Z", nanos / 1_000)
    } else {
        format!("{date_time}Z")
    }))
}

/// Turns the slots of a fully decoded message into its JSON object.
fn finish_message(message: &'static Message, slots: Vec<Slot<'_>>) -> Map<String, Value> {
    let mut object = Map::new();
    for (field, slot) in message.fields.iter().zip(slots) {
        if let Some(value) = finish_field(field, slot) {
            object.insert(field.json.to_owned(), value);
        }
    }
    object
}

fn finish_field(field: &'static Field, slot: Slot<'_>) -> Option<Value> {
    let (value, empty) = match slot {
        Slot::Unset => {
            return (field.emit == Always).then(|| zero_value(field.kind));
        }
        Slot::Str(s) => (Value::String(s.to_owned()), s.is_empty()),
        Slot::Int(i) => (Value::from(i), i == 0),
        Slot::Bool(b) => (Value::Bool(b), !b),
        Slot::Message(inner) => match field.kind {
            Kind::Message(message) => (Value::Object(finish_message(message, inner)), false),
            _ => (Value::Null, true),
        },
        Slot::Rendered(value) => {
            let empty = value.is_null();
            (value, empty)
        }
        Slot::Map(map) => {
            let empty = map.is_empty();
            let object: Map<String, Value> =
                map.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            (Value::Object(object), empty)
        }
        Slot::List(items) => {
            let empty = items.is_empty();
            (Value::Array(items), empty)
        }
    };
    match field.emit {
        OmitEmpty if empty => None,
        _ => Some(value),
    }
}

/// The JSON of a field's Go zero value.
fn zero_value(kind: Kind) -> Value {
    match kind {
        Kind::String => Value::String(String::new()),
        Kind::Int32 | Kind::Int64 => Value::from(0),
        Kind::Bool => Value::Bool(false),
        Kind::Message(message) => Value::Object(finish_message(message, empty_slots(message))),
        Kind::Time
        | Kind::MicroTime
        | Kind::FieldsV1
        | Kind::StringMap
        | Kind::BytesMap
        | Kind::Strings
        | Kind::Messages(_) => Value::Null,
    }
}

/// The JSON value held by `FieldsV1.Raw`; empty means `null`, as for a nil `Raw` in Go.
fn fields_v1_json(raw: &[u8], path: &Path<'_>) -> Result<Value, ProtobufError> {
    if raw.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(raw).map_err(|e| {
        path.malformed(format!(
            "fieldsV1 is not valid JSON (CBOR is not supported): {e}"
        ))
    })
}

#[cfg(test)]
mod tests {
    //! Unit tests for the internals (spec item ENC-04); the behaviour on whole bodies,
    //! including bodies recorded from kubectl, is tested in `tests/protobuf.rs`.

    use super::*;

    fn all_messages() -> Vec<&'static Message> {
        let mut seen: Vec<&'static Message> = Vec::new();
        let mut queue: Vec<&'static Message> = ROOT_MESSAGES.to_vec();
        queue.push(&TIMESTAMP);
        while let Some(message) = queue.pop() {
            if seen.iter().any(|m| std::ptr::eq(*m, message)) {
                continue;
            }
            seen.push(message);
            for field in message.fields {
                if let Kind::Message(inner) | Kind::Messages(inner) = field.kind {
                    queue.push(inner);
                }
            }
        }
        seen
    }

    /// ENC-04: every table has distinct, legal field numbers and distinct JSON names.
    #[test]
    fn enc04_schema_tables_are_consistent() {
        let messages = all_messages();
        assert_eq!(messages.len(), 42);
        for message in messages {
            for (i, a) in message.fields.iter().enumerate() {
                assert!(a.number > 0 && u64::from(a.number) <= MAX_FIELD_NUMBER);
                for b in &message.fields[i + 1..] {
                    assert_ne!(a.number, b.number, "{}.{}", message.name, a.json);
                    assert_ne!(a.json, b.json, "{}", message.name);
                }
            }
        }
    }

    /// ENC-04: every advertised kind has a schema, and every schema is advertised.
    #[test]
    fn enc04_every_supported_kind_has_a_schema() {
        for &(api_version, kind) in supported_kinds() {
            let message = schema_for(api_version, kind);
            assert_eq!(message.map(|m| m.name), Some(kind));
        }
        for message in ROOT_MESSAGES {
            assert!(supported_kinds().iter().any(|&(_, k)| k == message.name));
        }
        assert!(schema_for("v1", "Timestamp").is_none());
    }

    /// ENC-04: varints.
    #[test]
    fn enc04_varints() {
        let read = |bytes: &[u8]| Reader::new(bytes).varint();
        assert_eq!(read(&[0x00]), Ok(0));
        assert_eq!(read(&[0x96, 0x01]), Ok(150));
        assert_eq!(
            read(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
            Ok(u64::MAX)
        );
        assert!(read(&[]).is_err());
        assert!(read(&[0x80]).is_err());
        assert!(read(&[0x80; 11]).is_err());
    }

    /// ENC-04: timestamp rendering, including Go's zero time and the year limits.
    #[test]
    fn enc04_render_time() {
        let time = |s, n| render_time(s, n, false);
        let micro = |s, n| render_time(s, n, true);
        assert_eq!(time(0, 0), Ok(Value::from("1970-01-01T00:00:00Z")));
        assert_eq!(
            time(1_136_214_245, 999_999_999),
            Ok(Value::from("2006-01-02T15:04:05Z"))
        );
        assert_eq!(
            micro(1_136_214_245, 1_999),
            Ok(Value::from("2006-01-02T15:04:05.000001Z"))
        );
        assert_eq!(time(GO_ZERO_TIME_UNIX, 0), Ok(Value::Null));
        assert_eq!(micro(GO_ZERO_TIME_UNIX, 999), Ok(Value::Null));
        assert_eq!(
            micro(GO_ZERO_TIME_UNIX, 1_000),
            Ok(Value::from("0001-01-01T00:00:00.000001Z"))
        );
        assert_eq!(
            time(-62_167_219_200, 0),
            Ok(Value::from("0000-01-01T00:00:00Z"))
        );
        assert!(time(-62_167_219_201, 0).is_err());
        assert!(time(253_402_300_800, 0).is_err());
        assert!(micro(i64::MAX, 1_000_000_000).is_err());
        assert!(time(i64::MIN, 0).is_err());
    }

    /// ENC-04: error paths render as dotted fields with list indices.
    #[test]
    fn enc04_paths() {
        let root = Path::root("ConfigMap");
        let meta = root.field("metadata");
        let owners = meta.field("ownerReferences");
        let second = owners.index(1);
        assert_eq!(
            second.field("uid").render(),
            "ConfigMap.metadata.ownerReferences[1].uid"
        );
        assert_eq!(root.render(), "ConfigMap");
    }

    /// ENC-04: envelope content types.
    #[test]
    fn enc04_content_types() {
        assert!(is_protobuf_content_type(""));
        assert!(is_protobuf_content_type(
            "application/vnd.kubernetes.protobuf"
        ));
        assert!(is_protobuf_content_type(
            "Application/VND.Kubernetes.Protobuf ;x=y"
        ));
        assert!(!is_protobuf_content_type("application/json"));
        assert!(!is_protobuf_content_type(
            "application/vnd.kubernetes.protobuf+x"
        ));
    }
}
