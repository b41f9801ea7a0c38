//! Helpers over JSON objects: metadata access, timestamps, uids, generated names, and the
//! storage encoding.

use rand::Rng;
use serde_json::{Map, Value};
use wasmgate_apimachinery::gofmt::rfc3339;
use wasmgate_apimachinery::json;
use wasmgate_storage::{Revision, Value as StoredValue};

/// `metadata` of an object (empty if missing).
pub fn meta(obj: &Value) -> &Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    obj.get("metadata")
        .and_then(Value::as_object)
        .unwrap_or_else(|| EMPTY.get_or_init(Map::new))
}

/// `metadata`, created if missing.
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let Value::Object(map) = obj else {
        unreachable!("just made an object")
    };
    let m = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !m.is_object() {
        *m = Value::Object(Map::new());
    }
    match m {
        Value::Object(meta) => meta,
        _ => unreachable!("just made an object"),
    }
}

/// A string field of metadata.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    meta(obj).get(field).and_then(Value::as_str)
}

/// `metadata.finalizers` as strings.
pub fn finalizers(obj: &Value) -> Vec<String> {
    meta(obj)
        .get("finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(obj: &Value) -> bool {
    meta(obj)
        .get("deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// The namespace finalizer the namespace controller owns (`spec.finalizers`).
pub const NAMESPACE_FINALIZER: &str = "kubernetes";

/// Whether finalizers keep an object in storage once it is deleted: `metadata.finalizers`,
/// and for a namespace `spec.finalizers` too (`DEL-01`, `URL-10`).
pub fn has_finalizers(obj: &Value) -> bool {
    let is_namespace = || {
        obj.get("kind").and_then(Value::as_str) == Some("Namespace")
            && obj.get("apiVersion").and_then(Value::as_str) == Some("v1")
    };
    let spec_finalizers = || {
        obj.get("spec")
            .and_then(|s| s.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty())
    };
    !finalizers(obj).is_empty() || (is_namespace() && spec_finalizers())
}

/// Whether a deleting object may now leave storage: it has no finalizers left
/// ([`has_finalizers`]).
pub fn removal_due(obj: &Value) -> bool {
    is_deleting(obj) && !has_finalizers(obj)
}

/// Now, as RFC 3339 with seconds (`2021-06-20T07:35:27Z`) (`META-06`).
pub fn now_rfc3339() -> String {
    rfc3339(time::OffsetDateTime::now_utc())
}

/// A random UUID v4 (`META-04`).
pub fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// kube's `SimpleNameGenerator`: the prefix (cut to fit) plus 5 random characters from an
/// alphabet without vowels or confusable digits (`META-02`).
pub fn generate_name(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    const MAX: usize = 63 - 5;
    let mut cut = prefix.len().min(MAX);
    while !prefix.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut rng = rand::rng();
    let suffix: String = (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    format!("{}{suffix}", &prefix[..cut])
}

/// Encodes an object for the store, with the revision slot in `metadata.resourceVersion`.
pub fn to_stored(obj: &Value) -> StoredValue {
    match json::to_vec_with_rv_slot(obj) {
        (bytes, Some(slot)) => StoredValue::with_revision_slot(bytes, slot),
        (bytes, None) => StoredValue::new(bytes),
    }
}

/// Decodes stored bytes.
pub fn from_stored(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice(bytes)
}

/// Sets `metadata.resourceVersion`.
pub fn set_resource_version(obj: &mut Value, rev: Revision) {
    meta_mut(obj).insert("resourceVersion".into(), Value::String(rev.to_string()));
}

/// Compares two objects ignoring `metadata.resourceVersion`, without copying either.
pub fn same_content(a: &Value, b: &Value) -> bool {
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => {
            a.len() == b.len()
                && a.iter().all(|(k, v)| match (k.as_str(), b.get(k)) {
                    ("metadata", Some(w)) => match (v.as_object(), w.as_object()) {
                        (Some(m), Some(n)) => eq_without(m, n, &["resourceVersion"]),
                        _ => v == w,
                    },
                    (_, Some(w)) => v == w,
                    (_, None) => false,
                })
        }
        _ => a == b,
    }
}

/// Whether two JSON objects are equal once the keys in `skip` are left out of both, without
/// copying either.
pub fn eq_without(a: &Map<String, Value>, b: &Map<String, Value>, skip: &[&str]) -> bool {
    let kept = |m: &Map<String, Value>| m.keys().filter(|k| !skip.contains(&k.as_str())).count();
    kept(a) == kept(b)
        && a.iter()
            .all(|(k, v)| skip.contains(&k.as_str()) || b.get(k) == Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_02_generated_names() {
        let n = generate_name("web-");
        assert_eq!(n.len(), 9);
        assert!(n.starts_with("web-"));
        let long = "a".repeat(80);
        assert_eq!(generate_name(&long).len(), 63);
        assert_ne!(generate_name("x-"), generate_name("x-"));
    }

    #[test]
    fn meta_06_timestamps() {
        let t = time::macros::datetime!(2021-06-20 07:35:27.9 UTC);
        assert_eq!(rfc3339(t), "2021-06-20T07:35:27Z");
    }
}
