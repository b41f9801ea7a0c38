//! Helpers shared by the tests taken from kube-apiserver's CEL tests.

use serde_json::{Value, json};

/// An object schema whose properties `val1`, `val2`, … have the given schemas.
pub(crate) fn val_schema(types: &[Value]) -> Value {
    let props: serde_json::Map<String, Value> = types
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("val{}", i + 1), t.clone()))
        .collect();
    json!({"type": "object", "properties": props})
}

/// kube's three-way equality check: `a == lit && lit == a && a == b`.
pub(crate) fn eq3(a: &str, b: &str, lit: &str) -> String {
    format!("{a} == {lit} && {lit} == {a} && {a} == {b}")
}
