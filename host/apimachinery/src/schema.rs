//! Checking objects of built-in kinds against their OpenAPI schemas: unknown fields
//! (`FV-02`..`FV-04`), type errors (`FV-05`), pruning (`FV-06`).
//!
//! Schemas are OpenAPI v3 JSON (`$ref` into a definitions map, `allOf` wrappers as
//! kube-openapi writes them). As Go decodes built-in kinds, an object schema without
//! `properties` or `additionalProperties` is opaque (decoded as raw JSON), and `null` means
//! "unset". Custom resources are checked against their structural schemas by
//! [`crate::structural`] instead.

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::validation::{child, index};

/// A value of the wrong JSON type: a fatal decoding error (400).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeError {
    /// Field path, e.g. `data.key`.
    pub path: String,
    /// What the schema wants, named as Go would (`string`, `int32`, `bool`, `map`, …).
    pub expected: String,
    /// What was found (`number`, `string`, `bool`, `array`, `object`; `number 4294967296`
    /// for a number out of the field's range), as Go's decoder names it.
    pub found: String,
    /// The Go struct that holds the field (`ObjectMeta` for `metadata.name`, `LeaseSpec`
    /// for `spec.leaseDurationSeconds`); empty: the kind itself.
    pub strukt: String,
    /// Extra detail for format errors (base64, date-time).
    pub detail: Option<String>,
}

/// What a check found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Paths of fields the schema does not know (removed from the value).
    pub unknown: Vec<String>,
    /// The first type error, if any.
    pub type_error: Option<TypeError>,
}

/// Checks `value` against `schema`, resolving `$ref`s in `defs`, and prunes it: unknown
/// fields and fields set to `null` (Go reads those as "unset") are removed.
pub fn check(value: &mut Value, schema: &Value, defs: &Map<String, Value>) -> Report {
    let mut c = Checker {
        defs,
        report: Report::default(),
    };
    c.walk(value, schema, "", "");
    c.report
}

struct Checker<'a> {
    defs: &'a Map<String, Value>,
    report: Report,
}

/// How Go's JSON decoder names a JSON value in type errors.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

impl<'a> Checker<'a> {
    /// Follows `$ref` and single-element `allOf` wrappers; also returns the Go type name
    /// of the last definition followed (`io.k8s.api.core.v1.ConfigMap` -> `ConfigMap`).
    fn resolve(&self, mut s: &'a Value) -> (&'a Value, Option<&'a str>) {
        let mut named = None;
        for _ in 0..32 {
            if let Some(r) = s.get("$ref").and_then(Value::as_str) {
                let name = r.rsplit('/').next().unwrap_or(r);
                match self.defs.get_key_value(name) {
                    Some((key, d)) => {
                        named = Some(key.rsplit('.').next().unwrap_or(key));
                        s = d;
                        continue;
                    }
                    None => return (s, named),
                }
            }
            if let Some([one]) = s.get("allOf").and_then(Value::as_array).map(Vec::as_slice)
                && s.get("type").is_none()
                && s.get("properties").is_none()
            {
                s = one;
                continue;
            }
            return (s, named);
        }
        (s, named)
    }

    fn type_error(
        &mut self,
        at: (&str, &str),
        expected: impl Into<String>,
        found: impl Into<String>,
        detail: Option<String>,
    ) {
        let (path, strukt) = at;
        if self.report.type_error.is_none() {
            self.report.type_error = Some(TypeError {
                path: path.to_owned(),
                expected: expected.into(),
                found: found.into(),
                strukt: strukt.to_owned(),
                detail,
            });
        }
    }

    /// Checks `v` at `path`; `strukt` names the Go struct holding the field.
    fn walk(&mut self, v: &mut Value, schema: &'a Value, path: &str, strukt: &'a str) {
        let (s, named) = self.resolve(schema);
        if v.is_null() {
            return;
        }
        let at = (path, strukt);
        if s.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
            if !(v.is_string() || v.is_i64() || v.is_u64()) {
                self.type_error(at, "IntOrString", json_kind(v), None);
            }
            return;
        }
        let ty = s.get("type").and_then(Value::as_str).unwrap_or("");
        match ty {
            "object" => self.walk_object(v, s, path, named.unwrap_or(strukt)),
            "array" => match v {
                Value::Array(items) => {
                    if let Some(item_schema) = s.get("items") {
                        for (i, item) in items.iter_mut().enumerate() {
                            self.walk(item, item_schema, &index(path, i), strukt);
                        }
                    }
                }
                other => self.type_error(at, "array", json_kind(other), None),
            },
            "string" => match &*v {
                Value::String(text) => self.check_format(s, text, at, v),
                other => self.type_error(at, "string", json_kind(other), None),
            },
            "integer" => {
                let int32 = s.get("format").and_then(Value::as_str) == Some("int32");
                let go = if int32 { "int32" } else { "int64" };
                match v.as_i64() {
                    // Go's decoder refuses numbers that do not fit the field, naming them.
                    Some(n) if int32 && i32::try_from(n).is_err() => {
                        self.type_error(at, go, format!("number {n}"), None);
                    }
                    Some(_) => {}
                    None if v.is_u64() => self.type_error(at, go, format!("number {v}"), None),
                    None => self.type_error(at, go, json_kind(v), None),
                }
            }
            "number" if !v.is_number() => {
                self.type_error(at, "float64", json_kind(v), None);
            }
            "boolean" if !v.is_boolean() => {
                self.type_error(at, "bool", json_kind(v), None);
            }
            _ => {
                // No type: anything goes (kube's free-form values).
            }
        }
    }

    fn check_format(&mut self, s: &Value, text: &str, at: (&str, &str), v: &Value) {
        let path = at.0;
        match s.get("format").and_then(Value::as_str) {
            Some("byte")
                if base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .is_err() =>
            {
                self.type_error(
                    at,
                    "[]byte",
                    json_kind(v),
                    Some(format!("illegal base64 data in {path}")),
                );
            }
            Some("date-time")
                if time::OffsetDateTime::parse(
                    text,
                    &time::format_description::well_known::Rfc3339,
                )
                .is_err() =>
            {
                self.type_error(
                    at,
                    "Time",
                    json_kind(v),
                    Some(format!(
                        "parsing time {text:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse"
                    )),
                );
            }
            _ => {}
        }
    }

    /// An object; `strukt` is its own Go struct, which holds its fields (a map's values
    /// keep the struct that holds the map).
    fn walk_object(&mut self, v: &mut Value, s: &'a Value, path: &str, strukt: &'a str) {
        let Value::Object(map) = v else {
            let expected = if s.get("additionalProperties").is_some() {
                "map"
            } else {
                "struct"
            };
            self.type_error((path, strukt), expected, json_kind(v), None);
            return;
        };
        let props = s.get("properties").and_then(Value::as_object);
        let additional = s.get("additionalProperties");
        let preserve = s
            .get("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            == Some(true);
        let embedded = s
            .get("x-kubernetes-embedded-resource")
            .and_then(Value::as_bool)
            == Some(true);
        let free_form = props.is_none() && additional.is_none();
        if free_form {
            return;
        }
        map.retain(|_, val| !val.is_null());
        let mut remove = Vec::new();
        for (key, val) in map.iter_mut() {
            let p = child(path, key);
            if let Some(ps) = props.and_then(|p| p.get(key)) {
                self.walk(val, ps, &p, strukt);
            } else if let Some(a) = additional.filter(|a| a.is_object()) {
                self.walk(val, a, &p, strukt);
            } else if additional.and_then(Value::as_bool) == Some(true) || preserve {
                // Kept as is.
            } else if embedded && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                // Implicitly specified in embedded resources.
            } else {
                self.report.unknown.push(p);
                remove.push(key.clone());
            }
        }
        for k in remove {
            map.remove(&k);
        }
    }
}

/// The Go-like message for a type error, as kube-apiserver words decoding failures:
/// `<Kind> in version "<v>" cannot be handled as a <Kind>: json: cannot unmarshal …`.
pub fn type_error_message(kind: &str, version: &str, e: &TypeError) -> String {
    match &e.detail {
        Some(d) => format!("{kind} in version {version:?} cannot be handled as a {kind}: {d}"),
        None => format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: json: cannot unmarshal {} into Go struct field {}.{} of type {}",
            e.found,
            if e.strukt.is_empty() { kind } else { &e.strukt },
            e.path,
            e.expected
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn defs() -> Map<String, Value> {
        json!({
            "Meta": {"type":"object","properties":{"name":{"type":"string"},"labels":{"type":"object","additionalProperties":{"type":"string"}},
                     "creationTimestamp":{"type":"string","format":"date-time"},"fieldsV1":{"type":"object"}}},
            "CM": {"type":"object","properties":{"apiVersion":{"type":"string"},"kind":{"type":"string"},
                   "metadata":{"allOf":[{"$ref":"#/components/schemas/Meta"}],"default":{}},
                   "data":{"type":"object","additionalProperties":{"type":"string"}},
                   "binaryData":{"type":"object","additionalProperties":{"type":"string","format":"byte"}},
                   "immutable":{"type":"boolean"},
                   "n":{"type":"integer","format":"int32"},
                   "port":{"x-kubernetes-int-or-string":true},
                   "items":{"type":"array","items":{"$ref":"#/components/schemas/Meta"}}}}
        })
        .as_object()
        .cloned()
        .unwrap()
    }

    fn root() -> Value {
        json!({"$ref":"#/components/schemas/CM"})
    }

    #[test]
    fn fv_02_unknown_fields_are_found_and_pruned() {
        let d = defs();
        let mut v = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","bogus":1,"fieldsV1":{"f:x":{}}},
            "data":{"k":"v"},"bogusField":1,"items":[{"name":"x","zzz":true}]});
        let r = check(&mut v, &root(), &d);
        assert_eq!(
            r.unknown,
            vec!["metadata.bogus", "bogusField", "items[0].zzz"]
        );
        assert!(r.type_error.is_none());
        assert!(v.get("bogusField").is_none());
        assert!(v["metadata"].get("bogus").is_none());
        assert_eq!(
            v["metadata"]["fieldsV1"],
            json!({"f:x":{}}),
            "opaque objects are kept whole"
        );
    }

    #[test]
    fn fv_05_type_errors() {
        let d = defs();
        let cases = [
            (json!({"data":{"k":1}}), "data.k", "string"),
            (json!({"immutable":"yes"}), "immutable", "bool"),
            (json!({"n":1.5}), "n", "int32"),
            (json!({"data":[1]}), "data", "map"),
            (json!({"port":true}), "port", "IntOrString"),
            (
                json!({"metadata":{"creationTimestamp":"yesterday"}}),
                "metadata.creationTimestamp",
                "Time",
            ),
            (json!({"binaryData":{"b":"!!"}}), "binaryData.b", "[]byte"),
        ];
        for (mut v, path, expected) in cases {
            let r = check(&mut v, &root(), &d);
            let e = r.type_error.expect(path);
            assert_eq!((e.path.as_str(), e.expected.as_str()), (path, expected));
        }
        let e = TypeError {
            path: "data.k".into(),
            expected: "string".into(),
            found: "number".into(),
            strukt: String::new(),
            detail: None,
        };
        assert_eq!(
            type_error_message("ConfigMap", "v1", &e),
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data.k of type string"
        );
    }

    #[test]
    fn nulls_mean_unset_for_built_in_kinds() {
        let d = defs();
        let mut v = json!({"data":null,"metadata":{"labels":null,"name":"x"},"port":null});
        let r = check(&mut v, &root(), &d);
        assert_eq!(r, Report::default());
        assert_eq!(v, json!({"metadata":{"name":"x"}}));
    }
}
