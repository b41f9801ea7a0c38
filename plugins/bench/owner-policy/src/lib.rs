//! The validating half of `wasmgate-bench`'s ConfigMap pair (`--kind configmap
//! --plugin-pair`, issue 26; `stamper` is the mutating half, and `--plugins N` binds N
//! copies of this one alone): a ConfigMap needs an `owner` label whose value is a
//! non-empty, valid label value. Deletes are not checked.
//!
//! It reads the one label it needs through [`Request::object_as`], so the rest of the
//! object is skipped while parsing, never built.

use serde::Deserialize;
use wasmgate_sdk::{
    Admission, Cause, Conversion, Operation, Printer, Request, Response, export_plugin,
};

pub struct OwnerPolicy;

/// The label required.
const FIELD: &str = "metadata.labels.owner";

#[derive(Deserialize, Default)]
#[serde(default)]
struct Object {
    metadata: Metadata,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Metadata {
    labels: Option<Labels>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Labels {
    owner: Option<String>,
}

impl Admission for OwnerPolicy {
    fn validate(req: &Request) -> Response {
        if req.operation == Operation::Delete {
            return Response::allow();
        }
        // No object, or labels that are not strings (which the gateway refuses anyway):
        // no owner.
        let owner = req
            .object_as::<Option<Object>>()
            .ok()
            .flatten()
            .and_then(|o| o.metadata.labels?.owner);
        let what = format!("{} {:?}", req.kind.kind, req.name);
        match owner.as_deref() {
            Some(o) if is_label_value(o) => Response::allow(),
            None | Some("") => Response::deny(format!("{what} needs an owner label"))
                .with_cause(Cause::required(FIELD, "an owner is required")),
            Some(o) => Response::deny(format!("{what} has an invalid owner label {o:?}"))
                .with_cause(Cause::invalid(
                    FIELD,
                    "must be at most 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit",
                )),
        }
    }
}

/// A non-empty label value: at most 63 ASCII letters, digits, `-`, `_` and `.`, beginning
/// and ending with a letter or digit.
fn is_label_value(v: &str) -> bool {
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    v.len() <= 63
        && alnum(v.chars().next())
        && alnum(v.chars().next_back())
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl Conversion for OwnerPolicy {}
impl Printer for OwnerPolicy {}

export_plugin!(OwnerPolicy, name: "owner-policy", version: "0.1.0", hooks: [validate]);

#[cfg(test)]
mod tests {
    use super::*;
    use wasmgate_sdk::{Value, json, testing};

    fn configmap(labels: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": labels}})
    }

    /// Issue 26: a missing or empty owner is required, a malformed one invalid; both 403
    /// with the cause on the label.
    #[test]
    fn missing_empty_or_invalid_owners_are_denied() {
        for (labels, reason) in [
            (Value::Null, "FieldValueRequired"),
            (json!({"team": "a"}), "FieldValueRequired"),
            (json!({"owner": ""}), "FieldValueRequired"),
            (json!({"owner": "-ops"}), "FieldValueInvalid"),
            (json!({"owner": "a b"}), "FieldValueInvalid"),
            (json!({"owner": "x".repeat(64)}), "FieldValueInvalid"),
        ] {
            let resp = OwnerPolicy::validate(&testing::create(configmap(labels.clone())));
            assert!(!resp.allowed, "{labels}");
            assert_eq!(resp.denial.as_ref().map(|d| d.code), Some(403));
            assert_eq!(resp.causes()[0].field, FIELD);
            assert_eq!(resp.causes()[0].reason, reason, "{labels}");
        }
    }

    /// Issue 26: a valid owner is allowed, on create and update; deletes are not checked.
    #[test]
    fn valid_owners_and_deletes_are_allowed() {
        let owned = configmap(json!({"owner": "wasmgate-admin", "team": "a"}));
        assert!(OwnerPolicy::validate(&testing::create(owned.clone())).allowed);
        let none = configmap(Value::Null);
        assert!(OwnerPolicy::validate(&testing::update(none.clone(), owned)).allowed);
        assert!(OwnerPolicy::validate(&testing::delete(none)).allowed);
    }
}
