//! JSON to protobuf, table-driven: the bytes kube-apiserver's generated (gogo, proto2,
//! non-nullable) marshallers write for the Go object that the JSON decodes to.
//!
//! * Fields in number order; value fields always (an empty string, a zero, an empty
//!   message), pointer fields ([`Emit::IfSet`]) only when present and not `null`.
//! * Repeated fields one element at a time; map entries sorted by key, each with its key
//!   and value.
//! * `Time` as `Timestamp{seconds, nanos: 0}`, `MicroTime` with nanoseconds truncated to
//!   microseconds, and the zero time (`null`) as an empty message.
//! * Unknown JSON members are ignored, as Go's decoder drops them; `null` is the zero
//!   value, as Go's decoder leaves it.
//!
//! A JSON value of the wrong type for its field (a string where a number belongs) is an
//! [`ProtobufError::Unencodable`] with its path.

use base64::Engine as _;

use super::ProtobufError;
use super::decode::GO_ZERO_TIME_UNIX;
use super::json::{Node, View};
use super::path::Path;
use super::schema::{Emit, Field, Kind, MAX_FIELDS, Message, Shape};
use super::wire::{
    FIXED64, LEN, VARINT, begin_len, end_len, put_bytes, put_tag, put_varint, varint_len,
};

/// Which field of a message a JSON value goes to: `true` for `allows` of a
/// `JSONSchemaPropsOrBool` given as a schema.
enum Slot<'v, V> {
    Empty,
    Value(&'v V),
    True,
}

impl<V> Clone for Slot<'_, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<V> Copy for Slot<'_, V> {}

/// Appends the fields of `message` for the JSON `value` (an object in the message's
/// [`Shape`]; `null` or a missing value is the zero message) to `out`.
pub(crate) fn message<V: View>(
    message: &'static Message,
    value: Option<&V>,
    out: &mut Vec<u8>,
    path: &Path<'_>,
) -> Result<(), ProtobufError> {
    let mut slots: [Slot<'_, V>; MAX_FIELDS] = [Slot::Empty; MAX_FIELDS];
    fill_slots(message, value, &mut slots, path)?;
    for (i, field) in message.in_number_order() {
        let v = match field.kind {
            // An embedded struct's fields are the parent object's.
            Kind::Inline(_) => value.map_or(Slot::Empty, Slot::Value),
            _ => slots.get(i).copied().unwrap_or(Slot::Empty),
        };
        encode_field(field, v, out, &path.field(field.json))?;
    }
    Ok(())
}

/// Which JSON value each field of `message` takes from `value`.
fn fill_slots<'v, V: View>(
    message: &'static Message,
    value: Option<&'v V>,
    slots: &mut [Slot<'v, V>; MAX_FIELDS],
    path: &Path<'_>,
) -> Result<(), ProtobufError> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let mut set = |name: &str, v: Slot<'v, V>| {
        if let Some(i) = message.fields.iter().position(|f| f.json == name)
            && let Some(slot) = slots.get_mut(i)
        {
            *slot = v;
        }
    };
    let node = value.node();
    match (message.shape, &node) {
        (Shape::Object, Node::Object) => value.members(|k, v| set(k, Slot::Value(v))),
        (Shape::List, Node::Array(_)) => set("items", Slot::Value(value)),
        (Shape::SchemaOrArray, Node::Array(_)) => set("jSONSchemas", Slot::Value(value)),
        (Shape::SchemaOrArray, Node::Object) => set("schema", Slot::Value(value)),
        (Shape::SchemaOrBool, Node::Bool(_)) => set("allows", Slot::Value(value)),
        (Shape::SchemaOrBool, Node::Object) => {
            set("allows", Slot::True);
            set("schema", Slot::Value(value));
        }
        (Shape::SchemaOrStrings, Node::Array(_)) => set("property", Slot::Value(value)),
        (Shape::SchemaOrStrings, Node::Object) => set("schema", Slot::Value(value)),
        (_, other) => {
            return Err(path.unencodable(format!(
                "expected {}, found {}",
                match message.shape {
                    Shape::Object => "an object",
                    Shape::List => "a list of strings",
                    Shape::SchemaOrArray => "a schema or a list of schemas",
                    Shape::SchemaOrBool => "a schema or a boolean",
                    Shape::SchemaOrStrings => "a schema or a list of strings",
                },
                json_type(other)
            )));
        }
    }
    Ok(())
}

fn json_type<V>(v: &Node<'_, V>) -> &'static str {
    match v {
        Node::Null => "null",
        Node::Bool(_) => "a boolean",
        Node::I64(_) | Node::U64(_) | Node::F64(_) => "a number",
        Node::Str(_) => "a string",
        Node::Array(_) => "a list",
        Node::Object => "an object",
    }
}

fn encode_field<V: View>(
    field: &'static Field,
    slot: Slot<'_, V>,
    out: &mut Vec<u8>,
    path: &Path<'_>,
) -> Result<(), ProtobufError> {
    let value = match slot {
        Slot::Value(v) if !v.is_null() => Some(v),
        Slot::True => {
            // `allows` of a schema: a bool field set to true.
            put_tag(out, field.number, VARINT);
            put_varint(out, 1);
            return Ok(());
        }
        _ => None,
    };
    let pointer = field.emit == Emit::IfSet;
    if pointer && value.is_none() {
        return Ok(());
    }
    let number = field.number;
    match field.kind {
        Kind::String => put_bytes(out, number, string(value, path)?.as_bytes()),
        Kind::Int32 => {
            let v = integer(value, i64::from(i32::MIN), i64::from(i32::MAX), path)?;
            put_tag(out, number, VARINT);
            // Negative values sign-extended to ten bytes, as Go writes them.
            put_varint(out, v as u64);
        }
        Kind::Int64 => {
            let v = integer(value, i64::MIN, i64::MAX, path)?;
            put_tag(out, number, VARINT);
            put_varint(out, v as u64);
        }
        Kind::Bool => {
            let v = match value.map(View::node) {
                None => false,
                Some(Node::Bool(b)) => b,
                Some(other) => return Err(mismatch("a boolean", &other, path)),
            };
            put_tag(out, number, VARINT);
            put_varint(out, u64::from(v));
        }
        Kind::Double => {
            let v = match value.map(View::node) {
                None => 0.0,
                Some(Node::I64(i)) => i as f64,
                Some(Node::U64(u)) => u as f64,
                Some(Node::F64(f)) => f,
                Some(other) => return Err(mismatch("a number", &other, path)),
            };
            put_tag(out, number, FIXED64);
            out.extend_from_slice(&v.to_bits().to_le_bytes());
        }
        Kind::Bytes => {
            // A nil `[]byte` is not written; JSON `null` or nothing is nil.
            if let Some(v) = value {
                put_bytes(out, number, &base64_bytes(v, path)?);
            }
        }
        Kind::Message(inner) | Kind::Inline(inner) => {
            let at = begin_len(out, number);
            message(inner, value, out, path)?;
            end_len(out, at);
        }
        Kind::Time | Kind::MicroTime => {
            let micro = matches!(field.kind, Kind::MicroTime);
            let at = begin_len(out, number);
            if let Some(v) = value {
                timestamp(v, micro, out, path)?;
            }
            end_len(out, at);
        }
        Kind::RawJson => {
            let at = begin_len(out, number);
            if let Some(v) = value {
                raw_json(v, out, path)?;
            }
            end_len(out, at);
        }
        Kind::RawJsons => {
            for (i, item) in list(value, path)?.iter().enumerate() {
                let at = begin_len(out, number);
                if !item.is_null() {
                    raw_json(item, out, &path.index(i))?;
                }
                end_len(out, at);
            }
        }
        Kind::StringMap | Kind::BytesMap | Kind::MessageMap(_) => {
            let Some(v) = value else {
                return Ok(());
            };
            let node = v.node();
            if !matches!(node, Node::Object) {
                return Err(mismatch("an object", &node, path));
            }
            // Go writes map entries sorted by key (byte order).
            let mut entries: Vec<(&str, &V)> = Vec::new();
            v.members(|k, e| entries.push((k, e)));
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            for (key, entry) in entries {
                let entry_path = path.key(key);
                let entry = Some(entry).filter(|e| !e.is_null());
                let value: std::borrow::Cow<'_, [u8]> = match field.kind {
                    Kind::StringMap => string(entry, &entry_path)?.as_bytes().into(),
                    Kind::BytesMap => match entry {
                        Some(e) => base64_bytes(e, &entry_path)?.into(),
                        None => Vec::new().into(),
                    },
                    Kind::MessageMap(inner) => {
                        let at = begin_len(out, number);
                        put_bytes(out, 1, key.as_bytes());
                        let value_at = begin_len(out, 2);
                        message(inner, entry, out, &entry_path)?;
                        end_len(out, value_at);
                        end_len(out, at);
                        continue;
                    }
                    _ => continue,
                };
                // `{ key = 1; value = 2; }`, its length known before it is written (a
                // large value is not moved to make room for a longer length).
                let len = 2
                    + varint_len(key.len() as u64)
                    + key.len()
                    + varint_len(value.len() as u64)
                    + value.len();
                put_tag(out, number, LEN);
                put_varint(out, len as u64);
                put_bytes(out, 1, key.as_bytes());
                put_bytes(out, 2, &value);
            }
        }
        Kind::Strings => {
            for (i, item) in list(value, path)?.iter().enumerate() {
                let item = Some(item).filter(|v| !v.is_null());
                put_bytes(out, number, string(item, &path.index(i))?.as_bytes());
            }
        }
        Kind::Messages(inner) => {
            for (i, item) in list(value, path)?.iter().enumerate() {
                let at = begin_len(out, number);
                message(inner, Some(item), out, &path.index(i))?;
                end_len(out, at);
            }
        }
    }
    Ok(())
}

fn mismatch<V>(expected: &str, found: &Node<'_, V>, path: &Path<'_>) -> ProtobufError {
    path.unencodable(format!("expected {expected}, found {}", json_type(found)))
}

fn string<'v, V: View>(value: Option<&'v V>, path: &Path<'_>) -> Result<&'v str, ProtobufError> {
    match value.map(View::node) {
        None => Ok(""),
        Some(Node::Str(s)) => Ok(s),
        Some(other) => Err(mismatch("a string", &other, path)),
    }
}

fn list<'v, V: View>(value: Option<&'v V>, path: &Path<'_>) -> Result<&'v [V], ProtobufError> {
    match value.map(View::node) {
        None => Ok(&[]),
        Some(Node::Array(items)) => Ok(items),
        Some(other) => Err(mismatch("a list", &other, path)),
    }
}

/// An integer within `min..=max`; a float with no fraction counts (JSON has one number
/// type), as does nothing (zero).
fn integer<V: View>(
    value: Option<&V>,
    min: i64,
    max: i64,
    path: &Path<'_>,
) -> Result<i64, ProtobufError> {
    let (v, shown) = match value.map(View::node) {
        None => return Ok(0),
        Some(Node::I64(i)) => (Some(i), i.to_string()),
        Some(Node::U64(u)) => (None, u.to_string()),
        Some(Node::F64(f)) => (
            (f.fract() == 0.0 && f.abs() < 9.2e18).then_some(f as i64),
            f.to_string(),
        ),
        Some(other) => return Err(mismatch("an integer", &other, path)),
    };
    v.filter(|v| (min..=max).contains(v))
        .ok_or_else(|| path.unencodable(format!("{shown} is out of range")))
}

fn base64_bytes<V: View>(value: &V, path: &Path<'_>) -> Result<Vec<u8>, ProtobufError> {
    let node = value.node();
    let Node::Str(s) = node else {
        return Err(mismatch("a base64 string", &node, path));
    };
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| path.unencodable(format!("not base64: {e}")))
}

/// `raw = 1` holding the value's JSON text.
fn raw_json<V: View>(value: &V, out: &mut Vec<u8>, path: &Path<'_>) -> Result<(), ProtobufError> {
    let text = value.json_text().map_err(|e| path.unencodable(e))?;
    put_bytes(out, 1, &text);
    Ok(())
}

/// The `Timestamp` fields of an RFC 3339 time: `seconds`, then `nanos` (0 for a `Time`,
/// microseconds for a `MicroTime`); nothing for Go's zero time.
fn timestamp<V: View>(
    value: &V,
    micro: bool,
    out: &mut Vec<u8>,
    path: &Path<'_>,
) -> Result<(), ProtobufError> {
    let node = value.node();
    let Node::Str(s) = node else {
        return Err(mismatch("an RFC 3339 time", &node, path));
    };
    if s.is_empty() {
        return Ok(());
    }
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .map_err(|e| path.unencodable(format!("{s:?} is not an RFC 3339 time: {e}")))?;
    let seconds = t.unix_timestamp();
    let nanos = if micro {
        i64::from(t.nanosecond() / 1_000 * 1_000)
    } else {
        0
    };
    if seconds == GO_ZERO_TIME_UNIX && t.nanosecond() == 0 {
        return Ok(());
    }
    put_tag(out, 1, VARINT);
    put_varint(out, seconds as u64);
    put_tag(out, 2, VARINT);
    put_varint(out, nanos as u64);
    Ok(())
}
