//! `events.k8s.io/v1` Events as views of core `v1` Events.
//!
//! kube-apiserver stores one resource and presents it in both groups: an `events.k8s.io/v1`
//! Event is written in the core form and shown back converted, field for field, as
//! `pkg/apis/events/v1`'s conversion maps them:
//!
//! | `events.k8s.io/v1`          | core `v1`            |
//! | --------------------------- | -------------------- |
//! | `regarding`                 | `involvedObject`     |
//! | `note`                      | `message`            |
//! | `reportingController`       | `reportingComponent` |
//! | `deprecatedSource`          | `source`             |
//! | `deprecatedFirstTimestamp`  | `firstTimestamp`     |
//! | `deprecatedLastTimestamp`   | `lastTimestamp`      |
//! | `deprecatedCount`           | `count`              |
//!
//! `metadata`, `eventTime`, `series` (`count`, `lastObservedTime` in both), `related`,
//! `reportingInstance`, `action`, `reason` and `type` keep their names. A field absent in
//! one form is absent in the other; nothing else is carried (the schemas have no other
//! fields, and unknown ones are pruned before an object is converted).

use serde_json::{Map, Value};

/// The group-version of the events API.
pub const EVENTS_V1: &str = "events.k8s.io/v1";

/// Two names of one field.
type Pair = (&'static str, &'static str);

/// (`events.k8s.io/v1` name, core `v1` name), in the order of the `events.k8s.io/v1`
/// type's fields.
const FIELDS: [Pair; 15] = [
    ("metadata", "metadata"),
    ("eventTime", "eventTime"),
    ("series", "series"),
    ("reportingController", "reportingComponent"),
    ("reportingInstance", "reportingInstance"),
    ("action", "action"),
    ("reason", "reason"),
    ("regarding", "involvedObject"),
    ("related", "related"),
    ("note", "message"),
    ("type", "type"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// A core `v1` Event as an `events.k8s.io/v1` Event. An object already in that form is
/// returned as it is.
pub fn core_to_v1(core: Value) -> Value {
    convert(core, EVENTS_V1, |(v1, core)| (core, v1))
}

/// An `events.k8s.io/v1` Event in its core `v1` (stored) form. An object already in the
/// core form is returned as it is.
pub fn v1_to_core(v1: Value) -> Value {
    convert(v1, "v1", |pair| pair)
}

/// `obj` with `apiVersion` `to`, each field renamed by `pair` ((from, to) out of a
/// [`FIELDS`] entry).
fn convert(obj: Value, to: &str, pair: fn(Pair) -> Pair) -> Value {
    let Value::Object(mut from) = obj else {
        return obj;
    };
    if from.get("apiVersion").and_then(Value::as_str) == Some(to) {
        return Value::Object(from);
    }
    let mut out = Map::new();
    out.insert(
        "kind".into(),
        from.remove("kind")
            .unwrap_or_else(|| Value::String("Event".into())),
    );
    out.insert("apiVersion".into(), Value::String(to.to_owned()));
    for entry in FIELDS {
        let (src, dst) = pair(entry);
        if let Some(v) = from.remove(src) {
            out.insert(dst.to_owned(), v);
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Every field of kube's conversion maps both ways, and back to what it was.
    #[test]
    fn issue_24_5_fields_map_both_ways() {
        let v1 = json!({
            "kind": "Event", "apiVersion": "events.k8s.io/v1",
            "metadata": {"name": "e", "namespace": "ns"},
            "eventTime": "2025-06-01T10:00:00.000000Z",
            "series": {"count": 2, "lastObservedTime": "2025-06-01T10:01:00.000000Z"},
            "reportingController": "example.com/ctl", "reportingInstance": "ctl-1",
            "action": "Reconcile", "reason": "Synced",
            "regarding": {"kind": "ConfigMap", "name": "cm", "namespace": "ns"},
            "related": {"kind": "Secret", "name": "s"},
            "note": "all good", "type": "Normal",
            "deprecatedSource": {"component": "old"},
            "deprecatedFirstTimestamp": "2025-06-01T09:00:00Z",
            "deprecatedLastTimestamp": "2025-06-01T09:30:00Z",
            "deprecatedCount": 3,
        });
        let core = v1_to_core(v1.clone());
        assert_eq!(
            core,
            json!({
                "kind": "Event", "apiVersion": "v1",
                "metadata": {"name": "e", "namespace": "ns"},
                "eventTime": "2025-06-01T10:00:00.000000Z",
                "series": {"count": 2, "lastObservedTime": "2025-06-01T10:01:00.000000Z"},
                "reportingComponent": "example.com/ctl", "reportingInstance": "ctl-1",
                "action": "Reconcile", "reason": "Synced",
                "involvedObject": {"kind": "ConfigMap", "name": "cm", "namespace": "ns"},
                "related": {"kind": "Secret", "name": "s"},
                "message": "all good", "type": "Normal",
                "source": {"component": "old"},
                "firstTimestamp": "2025-06-01T09:00:00Z",
                "lastTimestamp": "2025-06-01T09:30:00Z",
                "count": 3,
            })
        );
        assert_eq!(core_to_v1(core.clone()), v1);
        // Already converted: unchanged.
        assert_eq!(v1_to_core(core.clone()), core);
        assert_eq!(core_to_v1(v1.clone()), v1);
        // Absent stays absent; null stays null.
        let sparse = core_to_v1(json!({"apiVersion": "v1", "kind": "Event", "eventTime": null}));
        assert_eq!(
            sparse,
            json!({"kind": "Event", "apiVersion": "events.k8s.io/v1", "eventTime": null})
        );
    }
}
