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
use serde_json::Value;

use super::ProtobufError;
use super::decode::GO_ZERO_TIME_UNIX;
use super::path::Path;
use super::schema::{Emit, Field, Kind, MAX_FIELDS, Message, Shape};
use super::wire::{FIXED64, VARINT, begin_len, end_len, put_bytes, put_tag, put_varint};

static TRUE: Value = Value::Bool(true);

/// Appends the fields of `message` for the JSON `value` (an object in the message's
/// [`Shape`]; `null` or a missing value is the zero message) to `out`.
pub(crate) fn message(
    message: &'static Message,
    value: Option<&Value>,
    out: &mut Vec<u8>,
    path: &Path<'_>,
) -> Result<(), ProtobufError> {
    let mut slots: [Option<&Value>; MAX_FIELDS] = [None; MAX_FIELDS];
    fill_slots(message, value, &mut slots, path)?;
    for (i, field) in message.in_number_order() {
        let v = match field.kind {
            // An embedded struct's fields are the parent object's.
            Kind::Inline(_) => value,
            _ => slots.get(i).copied().flatten(),
        };
        encode_field(field, v, out, &path.field(field.json))?;
    }
    Ok(())
}

/// Which JSON value each field of `message` takes from `value`.
fn fill_slots<'v>(
    message: &'static Message,
    value: Option<&'v Value>,
    slots: &mut [Option<&'v Value>; MAX_FIELDS],
    path: &Path<'_>,
) -> Result<(), ProtobufError> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(());
    };
    let mut set = |name: &str, v: &'v Value| {
        if let Some(i) = message.fields.iter().position(|f| f.json == name)
            && let Some(slot) = slots.get_mut(i)
        {
            *slot = Some(v);
        }
    };
    match (message.shape, value) {
        (Shape::Object, Value::Object(map)) => {
            for (k, v) in map {
                set(k, v);
            }
        }
        (Shape::List, Value::Array(_)) => set("items", value),
        (Shape::SchemaOrArray, Value::Array(_)) => set("jSONSchemas", value),
        (Shape::SchemaOrArray, Value::Object(_)) => set("schema", value),
        (Shape::SchemaOrBool, Value::Bool(_)) => set("allows", value),
        (Shape::SchemaOrBool, Value::Object(_)) => {
            set("allows", &TRUE);
            set("schema", value);
        }
        (Shape::SchemaOrStrings, Value::Array(_)) => set("property", value),
        (Shape::SchemaOrStrings, Value::Object(_)) => set("schema", value),
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

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn encode_field(
    field: &'static Field,
    value: Option<&Value>,
    out: &mut Vec<u8>,
    path: &Path<'_>,
) -> Result<(), ProtobufError> {
    let value = value.filter(|v| !v.is_null());
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
            let v = match value {
                None => false,
                Some(Value::Bool(b)) => *b,
                Some(other) => return Err(mismatch("a boolean", other, path)),
            };
            put_tag(out, number, VARINT);
            put_varint(out, u64::from(v));
        }
        Kind::Double => {
            let v = match value {
                None => 0.0,
                Some(Value::Number(n)) => n
                    .as_f64()
                    .ok_or_else(|| path.unencodable(format!("{n} is not a double")))?,
                Some(other) => return Err(mismatch("a number", other, path)),
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
            let Value::Object(map) = v else {
                return Err(mismatch("an object", v, path));
            };
            // Go writes map entries sorted by key (byte order).
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            for (key, entry) in entries {
                let entry_path = path.key(key);
                let entry = Some(entry).filter(|e| !e.is_null());
                let at = begin_len(out, number);
                put_bytes(out, 1, key.as_bytes());
                match field.kind {
                    Kind::StringMap => put_bytes(out, 2, string(entry, &entry_path)?.as_bytes()),
                    Kind::BytesMap => {
                        let bytes = match entry {
                            Some(e) => base64_bytes(e, &entry_path)?,
                            None => Vec::new(),
                        };
                        put_bytes(out, 2, &bytes);
                    }
                    Kind::MessageMap(inner) => {
                        let value_at = begin_len(out, 2);
                        message(inner, entry, out, &entry_path)?;
                        end_len(out, value_at);
                    }
                    _ => {}
                }
                end_len(out, at);
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

fn mismatch(expected: &str, found: &Value, path: &Path<'_>) -> ProtobufError {
    path.unencodable(format!("expected {expected}, found {}", json_type(found)))
}

fn string<'v>(value: Option<&'v Value>, path: &Path<'_>) -> Result<&'v str, ProtobufError> {
    match value {
        None => Ok(""),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(mismatch("a string", other, path)),
    }
}

fn list<'v>(value: Option<&'v Value>, path: &Path<'_>) -> Result<&'v [Value], ProtobufError> {
    match value {
        None => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(mismatch("a list", other, path)),
    }
}

/// An integer within `min..=max`; a float with no fraction counts (JSON has one number
/// type), as does nothing (zero).
fn integer(
    value: Option<&Value>,
    min: i64,
    max: i64,
    path: &Path<'_>,
) -> Result<i64, ProtobufError> {
    let n = match value {
        None => return Ok(0),
        Some(Value::Number(n)) => n,
        Some(other) => return Err(mismatch("an integer", other, path)),
    };
    let v = if let Some(i) = n.as_i64() {
        Some(i)
    } else if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18) {
        Some(f as i64)
    } else {
        None
    };
    v.filter(|v| (min..=max).contains(v))
        .ok_or_else(|| path.unencodable(format!("{n} is out of range")))
}

fn base64_bytes(value: &Value, path: &Path<'_>) -> Result<Vec<u8>, ProtobufError> {
    let Value::String(s) = value else {
        return Err(mismatch("a base64 string", value, path));
    };
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| path.unencodable(format!("not base64: {e}")))
}

/// `raw = 1` holding the value's JSON text.
fn raw_json(value: &Value, out: &mut Vec<u8>, path: &Path<'_>) -> Result<(), ProtobufError> {
    let text = serde_json::to_vec(value).map_err(|e| path.unencodable(e.to_string()))?;
    put_bytes(out, 1, &text);
    Ok(())
}

/// The `Timestamp` fields of an RFC 3339 time: `seconds`, then `nanos` (0 for a `Time`,
/// microseconds for a `MicroTime`); nothing for Go's zero time.
fn timestamp(
    value: &Value,
    micro: bool,
    out: &mut Vec<u8>,
    path: &Path<'_>,
) -> Result<(), ProtobufError> {
    let Value::String(s) = value else {
        return Err(mismatch("an RFC 3339 time", value, path));
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
