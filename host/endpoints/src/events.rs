//! Validation of Events, as kube-apiserver's `ValidateEventCreate` and
//! `ValidateEventUpdate` (`pkg/apis/core/validation/events.go`) do it for both groups:
//! every event passes the legacy rules; one written through `events.k8s.io/v1` also the
//! strict ones (`eventTime` required, `type` `Normal` or `Warning`, the deprecated fields
//! unset, a changed `series` checked, and on update nothing but `series` and metadata may
//! change). Both run on the core (stored) form, so the field paths are the core type's, as
//! kube's are (`message` for `note`, `involvedObject` for `regarding`, …).
//!
//! The conversion between the two forms is `wasmgate_apimachinery::events`.

use serde_json::{Map, Value};
use wasmgate_apimachinery::validation::{self as v, FieldError};

use crate::object::meta;

/// kube's limits (`ReportingInstanceLengthLimit`, `ActionLengthLimit`, …), in bytes.
const REPORTING_INSTANCE_MAX: usize = 128;
const ACTION_MAX: usize = 128;
const REASON_MAX: usize = 128;
const NOTE_MAX: usize = 1024;

/// The fields `ValidateEventUpdate` keeps as they were, in its order (`reason` twice, as
/// kube checks it twice). Not `series`: that is how a repeated event is recorded.
const IMMUTABLE: [&str; 14] = [
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "reason",
    "type",
    "eventTime",
    "action",
    "related",
    "reportingComponent",
    "reportingInstance",
];

/// The errors of a create (`old` `None`) or an update of the core-form `event`; `strict`:
/// the request came through `events.k8s.io/v1`. `meta` are the metadata errors of the
/// object (kube lists them after the legacy rules).
pub(crate) fn validate(
    event: &Value,
    old: Option<&Value>,
    strict: bool,
    meta_errors: Vec<FieldError>,
) -> Vec<FieldError> {
    let mut errs = legacy(event);
    errs.extend(meta_errors);
    if !strict {
        return errs;
    }
    match old {
        None => {
            errs.extend(series(event));
            if !is_set(event.get("eventTime")) {
                errs.push(FieldError::required("eventTime", ""));
            }
            let ty = text(event, "type");
            if ty != "Normal" && ty != "Warning" {
                errs.push(FieldError::invalid(
                    "type",
                    "",
                    format!("has invalid value: {ty}"),
                ));
            }
            for field in ["firstTimestamp", "lastTimestamp", "count", "source"] {
                if is_set(event.get(field)) {
                    errs.push(FieldError::invalid(field, "", "needs to be unset"));
                }
            }
        }
        Some(old) => {
            if normalized(event.get("series")) != normalized(old.get("series")) {
                errs.extend(series(event));
            }
            for field in IMMUTABLE {
                if normalized(event.get(field)) != normalized(old.get(field)) {
                    errs.push(FieldError::invalid(
                        field,
                        event.get(field).cloned().unwrap_or(Value::Null),
                        "field is immutable",
                    ));
                }
            }
        }
    }
    errs
}

/// `legacyValidateEvent`: every event, whatever its group. An event without `eventTime`
/// (the old API) is about an object in its own namespace (or in `default`); one with it
/// names its reporter, action and reason, within kube's lengths.
fn legacy(event: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ns = meta(event)
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let involved_ns = event
        .pointer("/involvedObject/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mismatch = || {
        FieldError::invalid(
            "involvedObject.namespace",
            involved_ns,
            "does not match event.namespace",
        )
    };
    if !is_set(event.get("eventTime")) {
        let fits = if involved_ns.is_empty() {
            ns.is_empty() || ns == "default"
        } else {
            ns == involved_ns
        };
        if !fits {
            errs.push(mismatch());
        }
        return errs;
    }
    if involved_ns.is_empty() && ns != "default" && ns != "kube-system" {
        errs.push(mismatch());
    }
    let controller = text(event, "reportingComponent");
    if controller.is_empty() {
        errs.push(FieldError::required("reportingController", ""));
    }
    for msg in v::is_qualified_name(controller) {
        errs.push(FieldError::invalid("reportingController", controller, msg));
    }
    let mut required_within = |field: &str, path: &str, max: usize| {
        let value = text(event, field);
        if value.is_empty() {
            errs.push(FieldError::required(path, ""));
        }
        if value.len() > max {
            errs.push(FieldError::invalid(
                path,
                "",
                format!("can have at most {max} characters"),
            ));
        }
    };
    required_within(
        "reportingInstance",
        "reportingInstance",
        REPORTING_INSTANCE_MAX,
    );
    required_within("action", "action", ACTION_MAX);
    required_within("reason", "reason", REASON_MAX);
    if text(event, "message").len() > NOTE_MAX {
        errs.push(FieldError::invalid(
            "message",
            "",
            format!("can have at most {NOTE_MAX} characters"),
        ));
    }
    // kube also checks that the namespace is a DNS-1123 subdomain: it is an existing
    // namespace's name here, always one.
    errs
}

/// `validateV1EventSeries`: a series counts at least 2 and says when it was last seen.
fn series(event: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(s) = event.get("series").filter(|s| is_set(Some(s))) else {
        return errs;
    };
    if s.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        errs.push(FieldError::invalid(
            "series.count",
            "",
            "should be at least 2",
        ));
    }
    if !is_set(s.get("lastObservedTime")) {
        errs.push(FieldError::required("series.lastObservedTime", ""));
    }
    errs
}

fn text<'a>(event: &'a Value, field: &str) -> &'a str {
    event.get(field).and_then(Value::as_str).unwrap_or("")
}

/// Whether a field holds something other than its zero value (Go's decoded struct:
/// absent, `null`, `""`, `0`, `false` and `{}` are all zero).
fn is_set(v: Option<&Value>) -> bool {
    normalized(v).is_some()
}

/// A value as Go's decoded struct holds it, for comparisons: zero values (see
/// [`is_set`]) and the zero fields of objects dropped.
fn normalized(v: Option<&Value>) -> Option<Value> {
    match v? {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::Bool(false) => None,
        Value::Number(n) if n.as_f64() == Some(0.0) => None,
        Value::Object(m) => {
            let kept: Map<String, Value> = m
                .iter()
                .filter_map(|(k, x)| Some((k.clone(), normalized(Some(x))?)))
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        other => Some(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use serde_json::json;

    use super::*;

    fn fields(errs: &[FieldError]) -> Vec<String> {
        errs.iter()
            .map(|e| format!("{} {}", e.field, e.message()))
            .collect()
    }

    /// What a kube-rs `Recorder` / client-go broadcaster sends, in the core form.
    fn recorded() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "cm.1", "namespace": "team"},
            "eventTime": "2025-06-01T10:00:00.000000Z",
            "reportingComponent": "example.com/ctl", "reportingInstance": "ctl-1",
            "action": "Reconcile", "reason": "Synced", "type": "Normal",
            "involvedObject": {"kind": "ConfigMap", "name": "cm", "namespace": "team"},
            "message": "ok",
        })
    }

    /// ISSUE-24.5: kube's events.k8s.io/v1 create rules, with kube's field paths.
    #[test]
    fn issue_24_5_strict_create() {
        assert!(validate(&recorded(), None, true, vec![]).is_empty());
        let mut e = recorded();
        let m = e.as_object_mut().unwrap();
        for f in [
            "eventTime",
            "reportingComponent",
            "reportingInstance",
            "action",
        ] {
            m.remove(f);
        }
        m.insert("type".into(), json!("Fatal"));
        m.insert("count".into(), json!(2));
        m.insert("series".into(), json!({"count": 1}));
        // Without eventTime the legacy rules apply: the namespaces agree, so only the
        // strict rules speak.
        assert_eq!(
            fields(&validate(&e, None, true, vec![])),
            [
                "series.count Invalid value: \"\": should be at least 2",
                "series.lastObservedTime Required value",
                "eventTime Required value",
                "type Invalid value: \"\": has invalid value: Fatal",
                "count Invalid value: \"\": needs to be unset",
            ]
        );
        // The legacy rules of an event with eventTime: reporter, action, lengths.
        let mut e = recorded();
        e["reportingComponent"] = json!("");
        e["action"] = json!("a".repeat(129));
        e["message"] = json!("n".repeat(1025));
        e["involvedObject"]["namespace"] = json!("");
        let got = fields(&validate(&e, None, true, vec![]));
        assert_eq!(
            got[0],
            "involvedObject.namespace Invalid value: \"\": does not match event.namespace"
        );
        assert_eq!(got[1], "reportingController Required value");
        assert!(
            got.contains(&"action Invalid value: \"\": can have at most 128 characters".to_owned())
        );
        assert!(
            got.contains(
                &"message Invalid value: \"\": can have at most 1024 characters".to_owned()
            )
        );
        // The core API keeps only the legacy rules.
        let mut core = recorded();
        core.as_object_mut().unwrap().remove("eventTime");
        core["type"] = json!("Whatever");
        assert!(validate(&core, None, false, vec![]).is_empty());
        core["involvedObject"]["namespace"] = json!("other");
        assert_eq!(
            fields(&validate(&core, None, false, vec![])),
            ["involvedObject.namespace Invalid value: \"other\": does not match event.namespace"]
        );
    }

    /// ISSUE-24.5: an update through events.k8s.io/v1 may change the series, nothing else.
    #[test]
    fn issue_24_5_strict_update() {
        let old = recorded();
        let mut new = old.clone();
        new["series"] = json!({"count": 2, "lastObservedTime": "2025-06-01T10:05:00.000000Z"});
        assert!(validate(&new, Some(&old), true, vec![]).is_empty());
        new["message"] = json!("changed");
        new["reason"] = json!("Other");
        assert_eq!(
            fields(&validate(&new, Some(&old), true, vec![])),
            [
                "reason Invalid value: \"Other\": field is immutable",
                "message Invalid value: \"changed\": field is immutable",
                "reason Invalid value: \"Other\": field is immutable",
            ]
        );
        // Zero values compare equal to absent ones.
        let mut same = old.clone();
        same["count"] = json!(0);
        same["source"] = json!({});
        assert!(validate(&same, Some(&old), true, vec![]).is_empty());
    }
}
