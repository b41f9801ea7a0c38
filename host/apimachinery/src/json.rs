//! JSON decoding that reports duplicate fields (`FV-02`, `FV-03`), YAML decoding, and the
//! storage encoding that leaves a slot for `metadata.resourceVersion`.

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A decoded document and the paths of fields that appeared more than once (the last
/// occurrence wins, as in Go).
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The document.
    pub value: Value,
    /// Duplicate field paths, e.g. `metadata.name`.
    pub duplicates: Vec<String>,
}

/// Why a body could not be decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Malformed JSON.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// Malformed YAML.
    #[error("{0}")]
    Yaml(String),
}

/// Parses JSON, recording duplicate fields.
pub fn from_slice(bytes: &[u8]) -> Result<Decoded, DecodeError> {
    let dups = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = Seed {
        path: "",
        dups: &dups,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(Decoded {
        value,
        duplicates: dups.into_inner(),
    })
}

/// Parses YAML (a single document) into JSON values. Duplicate keys are an error in YAML.
pub fn from_yaml(bytes: &[u8]) -> Result<Decoded, DecodeError> {
    let text = std::str::from_utf8(bytes).map_err(|e| DecodeError::Yaml(e.to_string()))?;
    let value: Value =
        serde_saphyr::from_str(text).map_err(|e| DecodeError::Yaml(e.to_string()))?;
    Ok(Decoded {
        value,
        duplicates: Vec::new(),
    })
}

/// Renders a value as YAML.
pub fn to_yaml(v: &Value) -> String {
    serde_saphyr::to_string(v).unwrap_or_default()
}

struct Seed<'a> {
    path: &'a str,
    dups: &'a RefCell<Vec<String>>,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        loop {
            let path = format!("{}[{}]", self.path, out.len());
            match seq.next_element_seed(Seed {
                path: &path,
                dups: self.dups,
            })? {
                Some(v) => out.push(v),
                None => break,
            }
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = join(self.path, &key);
            let v = map.next_value_seed(Seed {
                path: &path,
                dups: self.dups,
            })?;
            if out.insert(key, v).is_some() {
                self.dups.borrow_mut().push(path);
            }
        }
        Ok(Value::Object(out))
    }
}

/// Encodes an object for storage: compact JSON where `metadata.resourceVersion` is an
/// empty string, and the byte offset just inside its quotes, where the store splices the
/// committing revision. The object must have a `metadata` object.
pub fn to_vec_with_rv_slot(obj: &Value) -> (Vec<u8>, Option<usize>) {
    let Value::Object(map) = obj else {
        return (serde_json::to_vec(obj).unwrap_or_default(), None);
    };
    let mut buf = Vec::with_capacity(512);
    let mut slot = None;
    buf.push(b'{');
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        write_json(&mut buf, &Value::String(k.clone()));
        buf.push(b':');
        match (k.as_str(), v) {
            ("metadata", Value::Object(meta)) => {
                buf.push(b'{');
                let mut first = true;
                let mut wrote_rv = false;
                for (mk, mv) in meta {
                    if mk == "resourceVersion" {
                        if !first {
                            buf.push(b',');
                        }
                        buf.extend_from_slice(b"\"resourceVersion\":\"");
                        slot = Some(buf.len());
                        buf.push(b'"');
                        wrote_rv = true;
                    } else {
                        if !first {
                            buf.push(b',');
                        }
                        write_json(&mut buf, &Value::String(mk.clone()));
                        buf.push(b':');
                        write_json(&mut buf, mv);
                    }
                    first = false;
                }
                if !wrote_rv {
                    if !first {
                        buf.push(b',');
                    }
                    buf.extend_from_slice(b"\"resourceVersion\":\"");
                    slot = Some(buf.len());
                    buf.push(b'"');
                }
                buf.push(b'}');
            }
            _ => write_json(&mut buf, v),
        }
    }
    buf.push(b'}');
    (buf, slot)
}

fn write_json(buf: &mut Vec<u8>, v: &Value) {
    // Writing a Value to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *buf, v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fv_02_duplicates_are_reported_with_paths() {
        let d = from_slice(br#"{"metadata":{"name":"a","name":"b"},"data":{"k":"1"},"data":{"k":"2"},"l":[{"x":1,"x":2}]}"#).unwrap();
        assert_eq!(d.duplicates, vec!["metadata.name", "data", "l[0].x"]);
        assert_eq!(d.value["metadata"]["name"], "b");
        assert_eq!(d.value["data"]["k"], "2");
        assert!(from_slice(b"{\"a\":").is_err());
        assert!(from_slice(b"{} {}").is_err());
    }

    #[test]
    fn enc_03_yaml_round_trip() {
        let d = from_yaml(
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  k: \"1\"\n",
        )
        .unwrap();
        assert_eq!(d.value["data"]["k"], "1");
        let y = to_yaml(&d.value);
        assert_eq!(from_yaml(y.as_bytes()).unwrap().value, d.value);
        assert!(from_yaml(b"a: [").is_err());
    }

    #[test]
    fn rv_slot_points_inside_metadata_resource_version() {
        let obj = serde_json::json!({"apiVersion":"v1","kind":"Event","metadata":{"name":"e","resourceVersion":"9"},
            "involvedObject":{"resourceVersion":"3"}});
        let (bytes, slot) = to_vec_with_rv_slot(&obj);
        let slot = slot.unwrap();
        let mut with = bytes[..slot].to_vec();
        with.extend_from_slice(b"42");
        with.extend_from_slice(&bytes[slot..]);
        let back: Value = serde_json::from_slice(&with).unwrap();
        assert_eq!(back["metadata"]["resourceVersion"], "42");
        assert_eq!(back["involvedObject"]["resourceVersion"], "3");
        let (bytes, slot) = to_vec_with_rv_slot(&serde_json::json!({"metadata":{}}));
        assert_eq!(
            &bytes[..slot.unwrap()],
            b"{\"metadata\":{\"resourceVersion\":\""
        );
    }
}
