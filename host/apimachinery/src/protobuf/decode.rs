//! Protobuf to JSON: the envelope, then the object message table-driven. Decoding fills
//! one [`Slot`] per table entry, so repeated and map fields accumulate across occurrences
//! and singular sub-messages merge, as the generated Go code does; the slots then render
//! as the JSON Go's `encoding/json` writes for the decoded struct (see the module
//! documentation of [`super`]).

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Map, Value};

use super::ProtobufError;
use super::path::Path;
use super::schema::{self, Emit, Field, Kind, Message, Shape};
use super::wire::{Reader, WireValue, utf8};

/// `runtime.Unknown`, borrowed from the body.
pub(crate) struct Envelope<'a> {
    pub(crate) api_version: &'a str,
    pub(crate) kind: &'a str,
    pub(crate) raw: &'a [u8],
    pub(crate) content_encoding: &'a str,
    pub(crate) content_type: &'a str,
}

impl<'a> Envelope<'a> {
    pub(crate) fn decode(buf: &'a [u8]) -> Result<Self, ProtobufError> {
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

/// Decodes the message bytes of an object of `message` into its JSON fields.
pub(crate) fn object_fields(
    message: &'static Message,
    raw: &[u8],
) -> Result<Map<String, Value>, ProtobufError> {
    let root = Path::root(message.name);
    let mut slots = empty_slots(message);
    merge_message(message, raw, &mut slots, &root)?;
    Ok(finish_message(message, slots))
}

/// Decodes the message bytes of a list (`ListMeta metadata`, `repeated items`; the field
/// numbers are 1 and 2, swapped in `meta.k8s.io/v1beta1`'s `PartialObjectMetadataList`).
pub(crate) fn list_fields(
    items: &'static Message,
    raw: &[u8],
    swapped: bool,
    list_kind: &'static str,
) -> Result<Map<String, Value>, ProtobufError> {
    let (meta_number, items_number) = if swapped { (2, 1) } else { (1, 2) };
    let root = Path::root(list_kind);
    let mut meta = empty_slots(&schema::meta::LIST_META);
    let mut values = Vec::new();
    let mut reader = Reader::new(raw);
    while let Some((number, value)) = reader.next_field().map_err(|m| root.malformed(m))? {
        if number == meta_number {
            let path = root.field("metadata");
            let bytes = value.expect_len(number).map_err(|m| path.malformed(m))?;
            merge_message(&schema::meta::LIST_META, bytes, &mut meta, &path)?;
        } else if number == items_number {
            let path = root.field("items");
            let bytes = value.expect_len(number).map_err(|m| path.malformed(m))?;
            let mut slots = empty_slots(items);
            merge_message(items, bytes, &mut slots, &path.index(values.len()))?;
            values.push(finish_value(items, slots));
        }
    }
    let mut fields = Map::new();
    fields.insert(
        "metadata".to_owned(),
        Value::Object(finish_message(&schema::meta::LIST_META, meta)),
    );
    fields.insert("items".to_owned(), Value::Array(values));
    Ok(fields)
}

/// What has been decoded for one field of a message so far.
enum Slot<'a> {
    Unset,
    Str(&'a str),
    Int(i64),
    Bool(bool),
    Double(f64),
    Bytes(&'a [u8]),
    /// A singular sub-message, merged across occurrences.
    Message(Vec<Slot<'a>>),
    /// A rendered `Time`, `MicroTime` or raw JSON (the last occurrence wins, as with Go's
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
        Kind::Double => {
            let bits = value
                .expect_fixed64(number)
                .map_err(|m| path.malformed(m))?;
            *slot = Slot::Double(f64::from_bits(bits));
        }
        Kind::Bytes => *slot = Slot::Bytes(len(value)?),
        Kind::Message(message) | Kind::Inline(message) => {
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
        Kind::RawJson => {
            // A later occurrence without `raw` keeps the earlier one (messages merge).
            match decode_raw(len(value)?, path)? {
                Some(raw) => *slot = Slot::Rendered(raw_json(raw, path)?),
                None if matches!(slot, Slot::Rendered(_)) => {}
                None => *slot = Slot::Rendered(Value::Null),
            }
        }
        Kind::RawJsons => {
            let rendered = match decode_raw(len(value)?, path)? {
                Some(raw) => raw_json(raw, path)?,
                None => Value::Null,
            };
            push(slot, rendered);
        }
        Kind::StringMap | Kind::BytesMap | Kind::MessageMap(_) => {
            let (key, entry_value) = decode_map_entry(len(value)?, path)?;
            let rendered = match field.kind {
                Kind::BytesMap => {
                    Value::String(base64::engine::general_purpose::STANDARD.encode(entry_value))
                }
                Kind::MessageMap(message) => {
                    let mut inner = empty_slots(message);
                    merge_message(message, entry_value, &mut inner, &path.key(key))?;
                    finish_value(message, inner)
                }
                _ => Value::String(utf8(entry_value).map_err(|m| path.malformed(m))?.to_owned()),
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
            push(slot, finish_value(message, inner));
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

/// `{ bytes raw = 1; }`: the last `raw` in this occurrence, if any.
fn decode_raw<'a>(buf: &'a [u8], path: &Path<'_>) -> Result<Option<&'a [u8]>, ProtobufError> {
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
pub(crate) const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

/// Decodes a `Time`/`MicroTime` occurrence (a `Timestamp` message) and renders it.
fn decode_time(buf: &[u8], micro: bool, path: &Path<'_>) -> Result<Value, ProtobufError> {
    // An empty message is Go's zero time.
    if buf.is_empty() {
        return Ok(Value::Null);
    }
    let timestamp = &schema::meta::TIMESTAMP;
    let mut slots = empty_slots(timestamp);
    merge_message(timestamp, buf, &mut slots, path)?;
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
pub(crate) fn render_time(seconds: i64, nanos: i64, micro: bool) -> Result<Value, String> {
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

/// A `double` as Go's `encoding/json` writes a `float64`: integral values without a
/// fraction (`1`, not `1.0`).
fn go_float(v: f64, path: &Path<'_>) -> Result<Value, ProtobufError> {
    if !v.is_finite() {
        return Err(path.malformed(format!("{v} has no JSON form")));
    }
    // Integral and exactly representable as i64: Go prints it without a fraction or
    // exponent below 1e21.
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        return Ok(Value::from(v as i64));
    }
    Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
}

/// Turns the slots of a fully decoded message into its JSON object.
fn finish_message(message: &'static Message, slots: Vec<Slot<'_>>) -> Map<String, Value> {
    let mut object = Map::new();
    for (field, slot) in message.fields.iter().zip(slots) {
        if let Kind::Inline(inner) = field.kind {
            // The embedded struct's fields, in its place.
            let inner_slots = match slot {
                Slot::Message(s) => s,
                _ => empty_slots(inner),
            };
            object.extend(finish_message(inner, inner_slots));
            continue;
        }
        if let Some(value) = finish_field(field, slot) {
            object.insert(field.json.to_owned(), value);
        }
    }
    object
}

/// A fully decoded message in its JSON form ([`Shape`]).
fn finish_value(message: &'static Message, slots: Vec<Slot<'_>>) -> Value {
    let mut fields = finish_message(message, slots);
    let mut take = |name: &str| fields.remove(name).filter(|v| !v.is_null());
    let non_empty = |v: &Option<Value>| {
        v.as_ref()
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
    };
    match message.shape {
        Shape::Object => Value::Object(fields),
        Shape::List => take("items").unwrap_or(Value::Null),
        Shape::SchemaOrArray => {
            let list = take("jSONSchemas");
            if non_empty(&list) {
                list.unwrap_or(Value::Null)
            } else {
                take("schema").unwrap_or(Value::Null)
            }
        }
        Shape::SchemaOrBool => {
            let allows = take("allows");
            take("schema").or(allows).unwrap_or(Value::Bool(false))
        }
        Shape::SchemaOrStrings => {
            let list = take("property");
            if non_empty(&list) {
                list.unwrap_or(Value::Null)
            } else {
                take("schema").unwrap_or(Value::Null)
            }
        }
    }
}

fn finish_field(field: &'static Field, slot: Slot<'_>) -> Option<Value> {
    let (value, empty) = match slot {
        Slot::Unset => {
            return (field.emit == Emit::Always).then(|| zero_value(field.kind));
        }
        Slot::Str(s) => (Value::String(s.to_owned()), s.is_empty()),
        Slot::Int(i) => (Value::from(i), i == 0),
        Slot::Bool(b) => (Value::Bool(b), !b),
        Slot::Double(d) => (
            go_float(d, &Path::root(field.json)).unwrap_or(Value::Null),
            d == 0.0,
        ),
        Slot::Bytes(b) => (
            Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
            b.is_empty(),
        ),
        Slot::Message(inner) => match field.kind {
            Kind::Message(message) | Kind::Inline(message) => (finish_value(message, inner), false),
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
        Emit::OmitEmpty if empty => None,
        _ => Some(value),
    }
}

/// The JSON of a field's Go zero value.
fn zero_value(kind: Kind) -> Value {
    match kind {
        Kind::String => Value::String(String::new()),
        Kind::Int32 | Kind::Int64 | Kind::Double => Value::from(0),
        Kind::Bool => Value::Bool(false),
        Kind::Message(message) | Kind::Inline(message) => {
            finish_value(message, empty_slots(message))
        }
        Kind::Time
        | Kind::MicroTime
        | Kind::RawJson
        | Kind::RawJsons
        | Kind::Bytes
        | Kind::StringMap
        | Kind::BytesMap
        | Kind::MessageMap(_)
        | Kind::Strings
        | Kind::Messages(_) => Value::Null,
    }
}

/// The JSON value held by a raw JSON message; empty means `null`, as for a nil `Raw` in Go.
fn raw_json(raw: &[u8], path: &Path<'_>) -> Result<Value, ProtobufError> {
    if raw.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(raw)
        .map_err(|e| path.malformed(format!("not valid JSON (CBOR is not supported): {e}")))
}
