//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`, spec items ENC-04, ENC-05):
//! request bodies decoded into the JSON the API would show for the same object, and
//! responses (objects, lists, Status, watch events) encoded from that JSON.
//!
//! kubectl's imperative generators (`kubectl create configmap|namespace|secret|serviceaccount`)
//! and other typed clients POST protobuf with no JSON fallback; client-go controllers
//! configured with `ContentType: application/vnd.kubernetes.protobuf` ask for it back. A
//! body is the 4-byte [`MAGIC`] prefix followed by a `runtime.Unknown` envelope:
//!
//! ```text
//! Unknown  { TypeMeta typeMeta = 1; bytes raw = 2; string contentEncoding = 3; string contentType = 4; }
//! TypeMeta { string apiVersion = 1; string kind = 2; }
//! ```
//!
//! `raw` holds the object message itself, without type information; the envelope's
//! `typeMeta` names it. A list's message is `{ ListMeta metadata = 1; repeated <Kind>
//! items = 2; }` (its items carry no apiVersion or kind). A watch stream is a sequence of
//! frames, each a 4-byte big-endian length and a `metav1.WatchEvent { string type = 1;
//! RawExtension object = 2; }` without prefix or envelope, whose `object.raw` is the whole
//! encoded object (prefix and envelope included), as [`watch_frame`] writes them.
//!
//! ## Layout
//!
//! * `wire`: the wire format (reader, varints, length-delimited writing);
//! * `schema`: one table per message, from `k8s.io/api`'s and friends' `generated.proto`
//!   and Go types, and the kinds they serve;
//! * `decode`: protobuf to JSON; `encode`: JSON to protobuf; `path`: error positions.
//!
//! ## JSON shape
//!
//! The Go types are generated with gogo-protobuf (proto2, non-nullable fields), so a Go
//! client writes every non-pointer field even when it is empty. Decoding therefore
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
//! * `FieldsV1` (`managedFields[].fieldsV1`) and apiextensions' `JSON` (`default`,
//!   `enum`, `example`) are emitted as the JSON value their `Raw` bytes hold; a `double`
//!   without a fraction as an integer, as Go prints a `float64`.
//!
//! `apiVersion` and `kind` come from the envelope and are the first two keys.
//!
//! Strings must be valid UTF-8 (Go would accept and later replace invalid sequences; a
//! request body carrying them is rejected here instead).
//!
//! Encoding writes what kube-apiserver writes for the same object, byte for byte: see
//! `encode`.

mod decode;
mod encode;
mod json;
mod path;
mod schema;
mod wire;

use std::sync::LazyLock;

use serde_json::{Map, Value};

use path::Path;
use wire::{Reader, begin_len, end_len, put_bytes, put_varint, varint_len};

/// The 4-byte prefix of every Kubernetes protobuf body: `"k8s\x00"`.
pub const MAGIC: [u8; 4] = *b"k8s\0";

/// The media type of Kubernetes protobuf; also accepted as the envelope's `contentType`.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a protobuf watch stream.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// Why a protobuf body could not be decoded, or a JSON value encoded.
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
    /// A JSON value does not fit its field's protobuf type (a bug of the object's
    /// validation, not of the request).
    #[error("cannot encode {path} as protobuf: {message}")]
    Unencodable {
        /// Where the problem is, e.g. `ConfigMap.data[k]`.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The envelope names an object this codec has no schema for.
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

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

/// Decodes a body: 4-byte magic, then
/// `runtime.Unknown{typeMeta=1{apiVersion=1,kind=2}, raw=2, contentEncoding=3, contentType=4}`;
/// `raw` holds the object message (or a list of them, `<Kind>List`). Returns the object as
/// the JSON the Kubernetes API would show for it (same field names, Go `encoding/json`
/// conventions), with `"apiVersion"` and `"kind"` taken from the envelope's TypeMeta,
/// first in the map.
pub fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    let rest = body
        .strip_prefix(&MAGIC[..])
        .ok_or(ProtobufError::MissingMagic)?;
    let envelope = decode::Envelope::decode(rest)?;
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
    let unsupported = || ProtobufError::UnsupportedKind {
        api_version: envelope.api_version.to_owned(),
        kind: envelope.kind.to_owned(),
    };
    let fields = if let Some(message) = schema::object(envelope.api_version, envelope.kind) {
        decode::object_fields(message, envelope.raw)?
    } else {
        let list = List::of(envelope.api_version, envelope.kind).ok_or_else(unsupported)?;
        decode::list_fields(list.items, envelope.raw, list.swapped, list.items.name)?
    };
    let mut object = Map::new();
    object.insert(
        "apiVersion".to_owned(),
        Value::String(envelope.api_version.to_owned()),
    );
    object.insert("kind".to_owned(), Value::String(envelope.kind.to_owned()));
    object.extend(fields);
    Ok(Value::Object(object))
}

/// The (apiVersion, kind) pairs [`decode`] and [`encode`] understand (besides the lists
/// of the listable ones, `<Kind>List`).
pub fn supported_kinds() -> &'static [(&'static str, &'static str)] {
    static KINDS: LazyLock<Vec<(&'static str, &'static str)>> = LazyLock::new(|| {
        let mut kinds: Vec<(&str, &str)> = schema::ROOTS
            .iter()
            .map(|r| (r.api_version, r.kind))
            .collect();
        kinds.extend(
            schema::DELETE_OPTIONS_GROUP_VERSIONS
                .iter()
                .map(|&v| (v, "DeleteOptions")),
        );
        kinds
    });
    &KINDS
}

/// Splits one watch event (a frame's bytes without its length) into its type and its
/// object's bytes (a whole encoded object, for [`decode`]).
pub fn decode_watch_event(event: &[u8]) -> Result<(String, Vec<u8>), ProtobufError> {
    let root = Path::root("WatchEvent");
    let mut ty = String::new();
    let mut object = Vec::new();
    let mut reader = Reader::new(event);
    while let Some((number, value)) = reader.next_field().map_err(|m| root.malformed(m))? {
        match number {
            1 => {
                let path = root.field("type");
                let bytes = value.expect_len(number).map_err(|m| path.malformed(m))?;
                ty = wire::utf8(bytes).map_err(|m| path.malformed(m))?.to_owned();
            }
            2 => {
                let path = root.field("object");
                let bytes = value.expect_len(number).map_err(|m| path.malformed(m))?;
                let mut inner = Reader::new(bytes);
                while let Some((n, v)) = inner.next_field().map_err(|m| path.malformed(m))? {
                    if n == 1 {
                        object = v.expect_len(n).map_err(|m| path.malformed(m))?.to_vec();
                    }
                }
            }
            _ => {}
        }
    }
    Ok((ty, object))
}

fn is_protobuf_content_type(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.is_empty() || essence.eq_ignore_ascii_case(MEDIA_TYPE)
}

/// The JSON fields of a kind's protobuf form as a tree, to check the tables against the
/// kind's OpenAPI schema: an object for a message of fields (`{"metadata": {"name": null,
/// …}, …}`; the element of a list or the value of a map of messages), `null` for any
/// other field, and `null` below `depth` levels (JSON schemas nest without end).
pub fn describe(api_version: &str, kind: &str, depth: usize) -> Option<Value> {
    fn message(m: &'static schema::Message, depth: usize) -> Value {
        if m.shape != schema::Shape::Object || depth == 0 {
            return Value::Null;
        }
        let mut fields = Map::new();
        for f in m.fields {
            let inner = match f.kind {
                schema::Kind::Inline(inner) => {
                    if let Value::Object(inlined) = message(inner, depth) {
                        fields.extend(inlined);
                    }
                    continue;
                }
                schema::Kind::Message(inner)
                | schema::Kind::Messages(inner)
                | schema::Kind::MessageMap(inner) => message(inner, depth - 1),
                _ => Value::Null,
            };
            fields.insert(f.json.to_owned(), inner);
        }
        Value::Object(fields)
    }
    schema::object(api_version, kind).map(|m| message(m, depth))
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

/// Whether objects of `kind` at `api_version` have a protobuf form here (every built-in
/// kind this gateway serves; never a custom resource's).
pub fn can_encode(api_version: &str, kind: &str) -> bool {
    schema::object(api_version, kind).is_some()
}

/// An object as a response body: [`MAGIC`], then `Unknown{typeMeta{api_version, kind},
/// raw}` with the object's message; the JSON's own `apiVersion` and `kind` are not read.
pub fn encode(api_version: &str, kind: &str, object: &Value) -> Result<Vec<u8>, ProtobufError> {
    encode_view(api_version, kind, object)
}

/// [`encode`] for an object given as JSON text (a stored object), without building a
/// `serde_json::Value` of it.
pub fn encode_stored(api_version: &str, kind: &str, json: &[u8]) -> Result<Vec<u8>, ProtobufError> {
    encode_view(api_version, kind, &parse_stored(kind, json)?)
}

fn encode_view<V: json::View>(
    api_version: &str,
    kind: &str,
    object: &V,
) -> Result<Vec<u8>, ProtobufError> {
    let message =
        schema::object(api_version, kind).ok_or_else(|| ProtobufError::UnsupportedKind {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
        })?;
    let mut raw = Vec::with_capacity(512);
    encode::message(message, Some(object), &mut raw, &Path::root(message.name))?;
    let mut out = envelope_head(api_version, kind, raw.len());
    out.extend_from_slice(&raw);
    out.extend_from_slice(&ENVELOPE_TAIL);
    Ok(out)
}

/// JSON text as the encoder's borrowed tree; text that is not JSON is unencodable.
fn parse_stored<'a>(what: &str, json: &'a [u8]) -> Result<json::Json<'a>, ProtobufError> {
    json::Json::parse(json).map_err(|e| ProtobufError::Unencodable {
        path: what.to_owned(),
        message: format!("not JSON: {e}"),
    })
}

/// Encodes a list piece by piece, for lists too large to hold twice: the items first
/// ([`ListEncoder::item`], into buffers of the caller's choosing), then the bytes that go
/// before and after them ([`ListEncoder::finish`]), which depend on their total length.
#[derive(Debug, Clone)]
pub struct ListEncoder {
    api_version: String,
    list_kind: String,
    list: List,
}

/// The items' message of a list kind, and whether its field numbers are swapped.
#[derive(Debug, Clone, Copy)]
struct List {
    items: &'static schema::Message,
    /// `meta.k8s.io/v1beta1`'s `PartialObjectMetadataList`: `metadata = 2; items = 1`.
    swapped: bool,
}

impl std::fmt::Debug for schema::Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl List {
    fn of(api_version: &str, list_kind: &str) -> Option<List> {
        if list_kind == "PartialObjectMetadataList" {
            let swapped = match api_version {
                "meta.k8s.io/v1" => false,
                "meta.k8s.io/v1beta1" => true,
                _ => return None,
            };
            return Some(List {
                items: &schema::meta::PARTIAL_OBJECT_METADATA,
                swapped,
            });
        }
        schema::list_items(api_version, list_kind).map(|items| List {
            items,
            swapped: false,
        })
    }

    /// The field numbers of `metadata` and `items`.
    fn numbers(self) -> (u32, u32) {
        if self.swapped { (2, 1) } else { (1, 2) }
    }
}

impl ListEncoder {
    /// An encoder for a list of `list_kind` (`ConfigMapList`, `PartialObjectMetadataList`)
    /// at `api_version`, or `None` when it has no protobuf form.
    pub fn new(api_version: &str, list_kind: &str) -> Option<ListEncoder> {
        Some(ListEncoder {
            api_version: api_version.to_owned(),
            list_kind: list_kind.to_owned(),
            list: List::of(api_version, list_kind)?,
        })
    }

    /// Appends one item (its field tag, length and message) to `out`.
    pub fn item(&self, object: &Value, out: &mut Vec<u8>) -> Result<(), ProtobufError> {
        self.item_view(object, out)
    }

    /// [`ListEncoder::item`] for an object given as JSON text (a stored object). For a
    /// `PartialObjectMetadataList`, the whole object will do: only its metadata is read.
    pub fn item_stored(&self, json: &[u8], out: &mut Vec<u8>) -> Result<(), ProtobufError> {
        self.item_view(&parse_stored(self.list.items.name, json)?, out)
    }

    fn item_view<V: json::View>(&self, object: &V, out: &mut Vec<u8>) -> Result<(), ProtobufError> {
        let (_, items) = self.list.numbers();
        let at = begin_len(out, items);
        let message = self.list.items;
        encode::message(message, Some(object), out, &Path::root(message.name))?;
        end_len(out, at);
        Ok(())
    }

    /// What goes before the items and what after, once their total length is known
    /// (`metadata` is the list's `ListMeta` as JSON: `resourceVersion`, `continue`,
    /// `remainingItemCount`).
    pub fn finish(
        &self,
        metadata: &Value,
        items_len: usize,
    ) -> Result<(Vec<u8>, Vec<u8>), ProtobufError> {
        let (meta_number, _) = self.list.numbers();
        let mut meta = Vec::with_capacity(64);
        let at = begin_len(&mut meta, meta_number);
        encode::message(
            &schema::meta::LIST_META,
            Some(metadata),
            &mut meta,
            &Path::root("ListMeta"),
        )?;
        end_len(&mut meta, at);
        let mut head = envelope_head(&self.api_version, &self.list_kind, meta.len() + items_len);
        let mut tail = Vec::with_capacity(meta.len() + ENVELOPE_TAIL.len());
        if self.list.swapped {
            tail.extend_from_slice(&meta);
        } else {
            head.extend_from_slice(&meta);
        }
        tail.extend_from_slice(&ENVELOPE_TAIL);
        Ok((head, tail))
    }

    /// A whole list at once.
    pub fn encode(&self, metadata: &Value, items: &[Value]) -> Result<Vec<u8>, ProtobufError> {
        let mut body = Vec::new();
        for item in items {
            self.item(item, &mut body)?;
        }
        let (mut head, tail) = self.finish(metadata, body.len())?;
        head.extend_from_slice(&body);
        head.extend_from_slice(&tail);
        Ok(head)
    }
}

/// `contentEncoding = 3` and `contentType = 4`, both empty: Go writes them.
const ENVELOPE_TAIL: [u8; 4] = [0x1a, 0x00, 0x22, 0x00];

/// [`MAGIC`], `typeMeta = 1`, and the tag and length of `raw = 2`.
fn envelope_head(api_version: &str, kind: &str, raw_len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + api_version.len() + kind.len());
    out.extend_from_slice(&MAGIC);
    let at = begin_len(&mut out, 1);
    put_bytes(&mut out, 1, api_version.as_bytes());
    put_bytes(&mut out, 2, kind.as_bytes());
    end_len(&mut out, at);
    wire::put_tag(&mut out, 2, wire::LEN);
    put_varint(&mut out, raw_len as u64);
    out
}

/// One frame of a watch stream: the 4-byte big-endian length of the event, then
/// `WatchEvent{type = 1, object = 2: RawExtension{raw = 1: object}}`, where `object` is a
/// whole encoded object ([`encode`]).
pub fn watch_frame(event_type: &str, object: &[u8]) -> Vec<u8> {
    let raw_ext = 1 + varint_len(object.len() as u64) + object.len();
    let event = 1
        + varint_len(event_type.len() as u64)
        + event_type.len()
        + 1
        + varint_len(raw_ext as u64)
        + raw_ext;
    let mut out = Vec::with_capacity(4 + event);
    // A frame longer than 4 GiB cannot be written; objects are at most a few MiB.
    out.extend_from_slice(&u32::try_from(event).unwrap_or(u32::MAX).to_be_bytes());
    put_bytes(&mut out, 1, event_type.as_bytes());
    wire::put_tag(&mut out, 2, wire::LEN);
    put_varint(&mut out, raw_ext as u64);
    put_bytes(&mut out, 1, object);
    out
}

#[cfg(test)]
mod tests;
