//! Moving from client-side to server-side apply (`SSA-12`, seed 000 "Upgrading from
//! client-side apply to server-side apply"): kube's `lastAppliedManager` and
//! `lastAppliedUpdater`, for applies whose manager is exactly `kubectl`.
//!
//! An object made by `kubectl apply` (client-side) holds its last configuration in the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation, and its fields belong to
//! `kubectl-client-side-apply`. A first `kubectl apply --server-side` that changes them
//! would conflict with that manager; the fields whose live value is still the one the
//! annotation records were the same user's, so those conflicts are allowed (the apply is
//! forced). After a successful apply, an annotation the object already has is set to the
//! applied configuration, so a later client-side apply computes its patch against it.

use serde_json::{Map, Value};

use super::{Comparison, FieldSet, Shape};
use crate::validation::TOTAL_ANNOTATION_SIZE_LIMIT_B;

/// The annotation client-side apply keeps its last configuration in.
pub const ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The only manager the upgrade path runs for (kubectl's server-side default).
pub const MANAGER: &str = "kubectl";

/// The fields of `live`'s last-applied configuration that still hold the values it
/// records: conflicts on them are allowed. `None` when there is no annotation, it is not
/// an object of `api_version`, or it does not parse (the conflicts then stand).
pub fn allowed_conflicts(live: &Value, api_version: &str, shape: &Shape) -> Option<FieldSet> {
    let text = annotation(live)?;
    let last: Value = serde_json::from_str(text).ok()?;
    if !last.is_object() || last.get("apiVersion").and_then(Value::as_str) != Some(api_version) {
        return None;
    }
    let cmp = Comparison::of(&last, live, shape);
    Some(
        FieldSet::of_value(&last, shape)
            .difference(&cmp.modified)
            .difference(&cmp.added)
            .difference(&cmp.removed),
    )
}

/// After an apply by `kubectl`: an object that has a last-applied annotation gets the
/// applied configuration `config` in it (without the annotation itself, keys sorted and a
/// final newline, as kube encodes it); one whose annotations would then pass 256 KiB loses
/// it instead. An object without the annotation is left alone.
pub fn sync(object: &mut Value, config: &Value) {
    if annotation(object).is_none() {
        return;
    }
    let mut applied = config.clone();
    remove_annotation(&mut applied);
    let mut text = sorted(&applied).to_string();
    text.push('\n');
    let Some(annotations) = object
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    annotations.insert(ANNOTATION.to_owned(), Value::String(text));
    let total: usize = annotations
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_B {
        annotations.remove(ANNOTATION);
    }
}

/// The object's non-empty last-applied annotation.
fn annotation(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/annotations")?
        .get(ANNOTATION)?
        .as_str()
        .filter(|s| !s.is_empty())
}

/// Takes the annotation out of a configuration; annotations left empty go too.
fn remove_annotation(config: &mut Value) {
    let Some(meta) = config.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        a.remove(ANNOTATION);
        if a.is_empty() {
            meta.remove("annotations");
        }
    }
}

/// `value` with every object's keys in order (Go's `encoding/json` of a map).
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let out: Map<String, Value> = keys
                .into_iter()
                .map(|k| (k.clone(), sorted(&m[k])))
                .collect();
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use serde_json::json;

    use super::*;
    use crate::fieldset::PathElement;

    fn with_annotation(last: &Value, data: Value) -> Value {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {ANNOTATION: format!("{last}\n")}},
            "data": data,
        })
    }

    fn data(key: &str) -> Vec<PathElement> {
        vec![
            PathElement::Field("data".into()),
            PathElement::Field(key.into()),
        ]
    }

    /// `SSA-12`: the fields whose live value is still the last-applied one are allowed;
    /// one changed since (by someone else) is not.
    #[test]
    fn allowed_are_the_unchanged_last_applied_fields() {
        let last = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}});
        let live = with_annotation(&last, json!({"a": "1", "b": "edited", "c": "3"}));
        let allowed = allowed_conflicts(&live, "v1", &Shape::Deduced).unwrap();
        assert!(allowed.contains(&data("a")));
        assert!(
            !allowed.contains(&data("b")),
            "changed since the last apply"
        );
        assert!(!allowed.contains(&data("c")), "never client-side applied");
        // Another version, no annotation, or one that does not parse: nothing allowed.
        assert!(allowed_conflicts(&live, "v2", &Shape::Deduced).is_none());
        assert!(allowed_conflicts(&json!({"data": {}}), "v1", &Shape::Deduced).is_none());
        let mut broken = live.clone();
        broken["metadata"]["annotations"][ANNOTATION] = json!("{not json");
        assert!(allowed_conflicts(&broken, "v1", &Shape::Deduced).is_none());
    }

    /// `SSA-12`: the annotation follows the applied configuration (sorted keys, newline,
    /// without itself); it is not added where it was not, and is dropped past 256 KiB.
    #[test]
    fn sync_rewrites_only_an_existing_annotation() {
        let last = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let mut live = with_annotation(&last, json!({"a": "1"}));
        let config = json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "c", "annotations": {ANNOTATION: "old"}}, "data": {"b": "2", "a": "1"}});
        sync(&mut live, &config);
        assert_eq!(
            live["metadata"]["annotations"][ANNOTATION],
            "{\"apiVersion\":\"v1\",\"data\":{\"a\":\"1\",\"b\":\"2\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"}}\n"
        );
        let mut plain = json!({"metadata": {"name": "c"}});
        sync(&mut plain, &config);
        assert_eq!(plain, json!({"metadata": {"name": "c"}}));
        let huge =
            json!({"apiVersion": "v1", "data": {"a": "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_B)}});
        sync(&mut live, &huge);
        assert!(live["metadata"]["annotations"].get(ANNOTATION).is_none());
    }
}
