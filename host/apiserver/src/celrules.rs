//! Stand-in for the CEL validation rules until the `wasmgate-cel` crate lands: a schema
//! with `x-kubernetes-validations` is refused at CRD write with a clear error, so no rule
//! is ever silently skipped.

use serde_json::Value;
use wasmgate_apimachinery::validation::FieldError;

/// Compiled rules (none are supported yet).
#[derive(Debug, Default)]
pub struct Rules;

impl Rules {
    /// Always empty.
    pub fn is_empty(&self) -> bool {
        true
    }

    /// Nothing to check.
    pub fn validate(&self, _obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
        Vec::new()
    }
}

/// Refuses schemas that declare CEL rules.
pub fn compile(raw_schema: &Value, path: &str) -> Result<Rules, Vec<FieldError>> {
    let mut found = Vec::new();
    find(raw_schema, path, &mut found);
    if found.is_empty() {
        Ok(Rules)
    } else {
        Err(found
            .into_iter()
            .map(|p| {
                FieldError::forbidden(
                    p,
                    "x-kubernetes-validations (CEL) rules are not supported by this server yet",
                )
            })
            .collect())
    }
}

fn find(v: &Value, path: &str, out: &mut Vec<String>) {
    let Value::Object(m) = v else { return };
    if m.contains_key("x-kubernetes-validations") {
        out.push(format!("{path}.x-kubernetes-validations"));
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        for (k, p) in props {
            find(p, &format!("{path}.properties[{k}]"), out);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(x) = m.get(key) {
            find(x, &format!("{path}.{key}"), out);
        }
    }
}
