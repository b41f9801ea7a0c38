//! The mutating half of `wasmgate-bench`'s ConfigMap pair (`--kind configmap
//! --plugin-pair`, issue 26; `owner-policy` is the validating half).
//!
//! It stamps who wrote an object: the label `owner` (the username as a label value) when
//! the object has none, and the annotation [`STAMPED_BY`] with the username. It is written
//! the way a from-scratch author often writes a mutation, on purpose: the whole object is
//! parsed into a `Value`, changed and returned whole ([`Response::patched`]), not answered
//! with a JSON patch, so that the bench measures what that style costs.

use wasmgate_sdk::serde_json::Map;
use wasmgate_sdk::{
    Admission, Conversion, Operation, Printer, Request, Response, Value, export_plugin,
};

pub struct Stamper;

/// The annotation naming the user who wrote the object.
pub const STAMPED_BY: &str = "stamper.wasmgate.dev/stamped-by";

impl Admission for Stamper {
    fn mutate(req: &Request) -> Response {
        if req.operation == Operation::Delete {
            return Response::allow();
        }
        let Some(mut object) = req.object().cloned() else {
            return Response::allow();
        };
        let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
            return Response::allow();
        };
        let user = &req.user.username;
        map_at(metadata, "labels")
            .entry("owner")
            .or_insert_with(|| label_value(user).into());
        map_at(metadata, "annotations").insert(STAMPED_BY.into(), user.as_str().into());
        Response::patched(object)
    }
}

/// The object at `key` of `map`, made an empty one if it is missing, null or not an object.
fn map_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let v = map.entry(key).or_insert(Value::Null);
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    match v {
        Value::Object(m) => m,
        _ => unreachable!("made an object above"),
    }
}

/// `name` as a label value: characters other than ASCII letters, digits, `-`, `_` and `.`
/// become `-`, at most 63 characters, beginning and ending with a letter or digit
/// (`system:serviceaccount:ns:sa` is `system-serviceaccount-ns-sa`); `unknown` when nothing
/// is left.
pub fn label_value(name: &str) -> String {
    let mapped: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    let trimmed = mapped.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if trimmed.is_empty() {
        "unknown".into()
    } else {
        trimmed.into()
    }
}

impl Conversion for Stamper {}
impl Printer for Stamper {}

export_plugin!(Stamper, name: "stamper", version: "0.1.0", hooks: [mutate]);

#[cfg(test)]
mod tests {
    use super::*;
    use wasmgate_sdk::{json, testing};

    fn configmap(metadata: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": "v"}})
    }

    /// Issue 26: the whole object comes back, with the owner label and the annotation.
    #[test]
    fn stamps_owner_and_user_on_the_whole_object() {
        let resp = Stamper::mutate(&testing::create(configmap(json!({"name": "a"}))));
        assert!(resp.allowed);
        assert_eq!(resp.json_patch, None);
        let obj = resp.patched.expect("the whole object");
        assert_eq!(obj["metadata"]["labels"]["owner"], "test-user");
        assert_eq!(obj["metadata"]["annotations"][STAMPED_BY], "test-user");
        assert_eq!(obj["metadata"]["name"], "a");
        assert_eq!(obj["data"]["k"], "v");
    }

    /// Issue 26: an owner label already set is kept; deletes are left alone.
    #[test]
    fn keeps_an_existing_owner_and_ignores_deletes() {
        let cm = configmap(json!({"name": "a", "labels": {"owner": "ops"}, "annotations": null}));
        let obj = Stamper::mutate(&testing::create(cm.clone()))
            .patched
            .expect("the whole object");
        assert_eq!(obj["metadata"]["labels"]["owner"], "ops");
        assert_eq!(obj["metadata"]["annotations"][STAMPED_BY], "test-user");
        assert_eq!(Stamper::mutate(&testing::delete(cm)), Response::allow());
    }

    /// Issue 26: usernames become valid label values.
    #[test]
    fn usernames_as_label_values() {
        assert_eq!(label_value("admin"), "admin");
        assert_eq!(
            label_value("system:serviceaccount:ns:sa"),
            "system-serviceaccount-ns-sa"
        );
        assert_eq!(label_value("alice@example.com"), "alice-example.com");
        assert_eq!(label_value(":x:"), "x");
        assert_eq!(label_value(""), "unknown");
        assert_eq!(label_value("é"), "unknown");
        assert_eq!(label_value(&"a".repeat(100)).len(), 63);
    }
}
