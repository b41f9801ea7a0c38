//! What the encoder reads JSON through ([`View`]): a `serde_json::Value`, or a [`Json`]
//! tree borrowed from stored bytes. The second is what lists and watches encode from: it
//! parses several times faster than a `Value` (strings borrowed from the bytes, objects as
//! vectors: no allocation per string and no hashing per member), and a list of ten
//! thousand objects spends most of its time parsing.

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// One JSON value, as the encoder sees it.
pub(crate) enum Node<'v, V> {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(&'v str),
    Array(&'v [V]),
    /// Its members through [`View::members`].
    Object,
}

/// A JSON tree the encoder can read.
pub(crate) trait View: Sized {
    /// This value.
    fn node(&self) -> Node<'_, Self>;
    /// The members of an object, in order (nothing for other values).
    fn members<'v>(&'v self, f: impl FnMut(&'v str, &'v Self));
    /// The value as compact JSON text (for raw JSON fields: `FieldsV1`, `JSON`).
    fn json_text(&self) -> Result<Vec<u8>, String>;

    fn is_null(&self) -> bool {
        matches!(self.node(), Node::Null)
    }
}

impl View for Value {
    fn node(&self) -> Node<'_, Self> {
        match self {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Node::I64(i)
                } else if let Some(u) = n.as_u64() {
                    Node::U64(u)
                } else {
                    Node::F64(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => Node::Str(s),
            Value::Array(a) => Node::Array(a),
            Value::Object(_) => Node::Object,
        }
    }

    fn members<'v>(&'v self, mut f: impl FnMut(&'v str, &'v Self)) {
        if let Value::Object(m) = self {
            for (k, v) in m {
                f(k, v);
            }
        }
    }

    fn json_text(&self) -> Result<Vec<u8>, String> {
        serde_json::to_vec(self).map_err(|e| e.to_string())
    }
}

/// A JSON value borrowing its strings from the text it was parsed from (escaped strings
/// are copied, unescaped).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json<'a> {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

impl<'a> Json<'a> {
    /// Parses `text` (one JSON value, as `serde_json::from_slice` does).
    pub(crate) fn parse(text: &'a [u8]) -> Result<Json<'a>, serde_json::Error> {
        serde_json::from_slice(text)
    }
}

impl View for Json<'_> {
    fn node(&self) -> Node<'_, Self> {
        match self {
            Json::Null => Node::Null,
            Json::Bool(b) => Node::Bool(*b),
            Json::I64(i) => Node::I64(*i),
            Json::U64(u) => Node::U64(*u),
            Json::F64(f) => Node::F64(*f),
            Json::Str(s) => Node::Str(s),
            Json::Array(a) => Node::Array(a),
            Json::Object(_) => Node::Object,
        }
    }

    fn members<'v>(&'v self, mut f: impl FnMut(&'v str, &'v Self)) {
        if let Json::Object(m) = self {
            for (k, v) in m {
                f(k, v);
            }
        }
    }

    fn json_text(&self) -> Result<Vec<u8>, String> {
        let mut out = Vec::with_capacity(64);
        write_json(self, &mut out)?;
        Ok(out)
    }
}

/// Compact JSON text, as `serde_json::to_vec` writes the same value.
fn write_json(v: &Json<'_>, out: &mut Vec<u8>) -> Result<(), String> {
    let text =
        |out: &mut Vec<u8>, s: &str| serde_json::to_writer(out, s).map_err(|e| e.to_string());
    match v {
        Json::Null => out.extend_from_slice(b"null"),
        Json::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Json::I64(i) => out.extend_from_slice(i.to_string().as_bytes()),
        Json::U64(u) => out.extend_from_slice(u.to_string().as_bytes()),
        Json::F64(f) => serde_json::to_writer(&mut *out, f).map_err(|e| e.to_string())?,
        Json::Str(s) => text(out, s)?,
        Json::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json(item, out)?;
            }
            out.push(b']');
        }
        Json::Object(members) => {
            out.push(b'{');
            for (i, (k, item)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                text(out, k)?;
                out.push(b':');
                write_json(item, out)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json<'de>, E> {
        Ok(Json::I64(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json<'de>, E> {
        Ok(i64::try_from(v).map_or(Json::U64(v), Json::I64))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Json<'de>, E> {
        Ok(Json::F64(v))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Owned(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut members = Vec::with_capacity(map.size_hint().unwrap_or(0).min(64));
        while let Some(Key(k)) = map.next_key()? {
            members.push((k, map.next_value()?));
        }
        Ok(Json::Object(members))
    }
}

/// An object member's name, borrowed when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}
