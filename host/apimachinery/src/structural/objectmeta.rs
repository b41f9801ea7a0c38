//! The `apiVersion`, `kind` and `metadata` of embedded resources (CRD-08):
//! `pkg/apiserver/schema/objectmeta` (`coerce.go`, `validation.go`).

use serde_json::{Map, Value};

use super::model::{NodeData, go_bad_value, opt_child, opt_index, opt_key, schema_of};
use crate::schema::json_kind;
use crate::validation::{FieldError, go_quote, is_dns1035_label, validate_object_meta};

const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];
const OWNER_REFERENCE_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "name",
    "uid",
    "controller",
    "blockOwnerDeletion",
];
const MANAGED_FIELDS_FIELDS: &[&str] = &[
    "manager",
    "operation",
    "apiVersion",
    "time",
    "fieldsType",
    "fieldsV1",
    "subresource",
];

/// `objectmeta.CoerceWithOptions` (not at the resource root): the `metadata` of embedded
/// resources goes through `ObjectMeta`, which drops unknown fields (recorded as
/// `<path>.metadata.<field>`) and empty optional ones.
pub(super) fn coerce_embedded(
    nodes: &[NodeData],
    x: &mut Value,
    s: Option<usize>,
    pth: Option<&str>,
    out: &mut Vec<String>,
) {
    let Some(id) = s else { return };
    let n = &nodes[id];
    if !n.sub_embedded {
        return;
    }
    match x {
        Value::Object(map) => {
            if n.x_embedded_resource
                && let Some(meta) = map.get_mut("metadata")
                && object_meta_type_error(meta).is_none()
                && let Value::Object(meta) = meta
            {
                let prefix = opt_child(pth, "metadata");
                normalize_object_meta(meta, &prefix, out);
            }
            for (k, v) in map.iter_mut() {
                if let Some(p) = n.property(k) {
                    coerce_embedded(nodes, v, Some(p), Some(&opt_child(pth, k)), out);
                } else if let Some(ap) = n.additional_properties {
                    coerce_embedded(nodes, v, schema_of(ap), Some(&opt_key(pth, k)), out);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                coerce_embedded(nodes, v, n.items_schema(), Some(&opt_index(pth, i)), out);
            }
        }
        _ => {}
    }
}

fn normalize_object_meta(meta: &mut Map<String, Value>, prefix: &str, out: &mut Vec<String>) {
    meta.retain(|k, v| {
        if !OBJECT_META_FIELDS.contains(&k.as_str()) {
            out.push(format!("{prefix}.{k}"));
            return false;
        }
        match k.as_str() {
            "ownerReferences" | "managedFields" => {
                let known = if k == "ownerReferences" {
                    OWNER_REFERENCE_FIELDS
                } else {
                    MANAGED_FIELDS_FIELDS
                };
                if let Value::Array(items) = v {
                    for (i, item) in items.iter_mut().enumerate() {
                        if let Value::Object(entry) = item {
                            entry.retain(|f, fv| {
                                if known.contains(&f.as_str()) {
                                    !fv.is_null()
                                } else {
                                    out.push(format!("{prefix}.{k}[{i}].{f}"));
                                    false
                                }
                            });
                        }
                    }
                }
            }
            _ => {}
        }
        // Go's omitempty on the way back out.
        match v {
            Value::Null => false,
            Value::String(s) => !s.is_empty(),
            Value::Number(num) => k == "deletionGracePeriodSeconds" || num.as_f64() != Some(0.0),
            Value::Object(m) => !m.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Bool(_) => true,
        }
    });
}

/// The error `json.Unmarshal` into `metav1.ObjectMeta` reports first, if any.
fn object_meta_type_error(meta: &Value) -> Option<String> {
    let Value::Object(meta) = meta else {
        if meta.is_null() {
            return None;
        }
        return Some(format!(
            "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
            json_kind(meta)
        ));
    };
    let field_err = |strukt: &str, field: &str, v: &Value, go_type: &str| {
        // Go names the literal only for numbers that do not fit a numeric field.
        let found = match v {
            Value::Number(n) if go_type == "int64" => format!("number {n}"),
            other => json_kind(other).to_owned(),
        };
        Some(format!(
            "json: cannot unmarshal {found} into Go struct field {strukt}.{field} of type {go_type}"
        ))
    };
    for (k, v) in meta {
        if v.is_null() {
            continue;
        }
        match k.as_str() {
            "name" | "generateName" | "namespace" | "selfLink" | "uid" | "resourceVersion"
                if !v.is_string() =>
            {
                return field_err("ObjectMeta", k, v, "string");
            }
            "generation" | "deletionGracePeriodSeconds" if v.as_i64().is_none() => {
                return field_err("ObjectMeta", k, v, "int64");
            }
            "creationTimestamp" | "deletionTimestamp" => match v {
                Value::String(s) => {
                    if time::OffsetDateTime::parse(
                        s,
                        &time::format_description::well_known::Rfc3339,
                    )
                    .is_err()
                    {
                        return Some(format!(
                            "parsing time {} as \"2006-01-02T15:04:05Z07:00\": cannot parse {} as \"2006\"",
                            go_quote(s),
                            go_quote(s)
                        ));
                    }
                }
                other => {
                    return Some(format!(
                        "json: cannot unmarshal {} into Go value of type string",
                        json_kind(other)
                    ));
                }
            },
            "labels" | "annotations" => match v {
                Value::Object(m) => {
                    if let Some(bad) = m.values().find(|x| !x.is_string() && !x.is_null()) {
                        return field_err("ObjectMeta", k, bad, "string");
                    }
                }
                other => return field_err("ObjectMeta", k, other, "map[string]string"),
            },
            "finalizers" => match v {
                Value::Array(items) => {
                    if let Some(bad) = items.iter().find(|x| !x.is_string() && !x.is_null()) {
                        return field_err("ObjectMeta", k, bad, "string");
                    }
                }
                other => return field_err("ObjectMeta", k, other, "[]string"),
            },
            "ownerReferences" => {
                let Value::Array(items) = v else {
                    return field_err("ObjectMeta", k, v, "[]v1.OwnerReference");
                };
                for item in items {
                    let Value::Object(entry) = item else {
                        if item.is_null() {
                            continue;
                        }
                        return field_err("ObjectMeta", k, item, "v1.OwnerReference");
                    };
                    for (f, fv) in entry {
                        let go_type = match f.as_str() {
                            "apiVersion" | "kind" | "name" | "uid" => "string",
                            "controller" | "blockOwnerDeletion" => "bool",
                            _ => continue,
                        };
                        let ok = fv.is_null()
                            || if go_type == "bool" {
                                fv.is_boolean()
                            } else {
                                fv.is_string()
                            };
                        if !ok {
                            return field_err("OwnerReference", &format!("{k}.{f}"), fv, go_type);
                        }
                    }
                }
            }
            "managedFields" => {
                let Value::Array(items) = v else {
                    return field_err("ObjectMeta", k, v, "[]v1.ManagedFieldsEntry");
                };
                for item in items {
                    let Value::Object(entry) = item else {
                        if item.is_null() {
                            continue;
                        }
                        return field_err("ObjectMeta", k, item, "v1.ManagedFieldsEntry");
                    };
                    for (f, fv) in entry {
                        let go_type = match f.as_str() {
                            "manager" | "apiVersion" | "fieldsType" | "subresource" | "time" => {
                                "string"
                            }
                            "operation" => "v1.ManagedFieldsOperationType",
                            _ => continue,
                        };
                        if !fv.is_null() && !fv.is_string() {
                            return field_err(
                                "ManagedFieldsEntry",
                                &format!("{k}.{f}"),
                                fv,
                                go_type,
                            );
                        }
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// `objectmeta.Validate`: `force_root` treats `s` as an embedded resource.
pub(super) fn validate_embedded(
    nodes: &[NodeData],
    x: &Value,
    s: Option<usize>,
    force_root: bool,
    pth: Option<&str>,
    errs: &mut Vec<FieldError>,
) {
    let Some(id) = s else { return };
    let n = &nodes[id];
    if !n.sub_embedded && !force_root {
        return;
    }
    match x {
        Value::Object(map) => {
            if n.x_embedded_resource || force_root {
                validate_embedded_resource(pth, map, errs);
            }
            for (k, v) in map {
                if let Some(p) = n.property(k) {
                    validate_embedded(nodes, v, Some(p), false, Some(&opt_child(pth, k)), errs);
                } else if let Some(ap) = n.additional_properties {
                    let sub = opt_key(pth, k);
                    validate_embedded(nodes, v, schema_of(ap), false, Some(&sub), errs);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                let sub = opt_index(pth, i);
                validate_embedded(nodes, v, n.items_schema(), false, Some(&sub), errs);
            }
        }
        _ => {}
    }
}

fn validate_embedded_resource(
    pth: Option<&str>,
    x: &Map<String, Value>,
    errs: &mut Vec<FieldError>,
) {
    if !x.contains_key("apiVersion") {
        errs.push(FieldError::required(
            opt_child(pth, "apiVersion"),
            "must not be empty",
        ));
    }
    if !x.contains_key("kind") {
        errs.push(FieldError::required(
            opt_child(pth, "kind"),
            "must not be empty",
        ));
    }
    if let Some(v) = x.get("apiVersion") {
        let p = opt_child(pth, "apiVersion");
        match v {
            Value::String(s) if s.is_empty() => {
                errs.push(FieldError::invalid(p, "", "must not be empty"));
            }
            Value::String(s) => {
                if s != "/" && s.matches('/').count() > 1 {
                    errs.push(FieldError::invalid(
                        p,
                        s.clone(),
                        format!("unexpected GroupVersion string: {s}"),
                    ));
                }
            }
            other => errs.push(FieldError::invalid(
                p,
                go_bad_value(other),
                "must be a string",
            )),
        }
    }
    if let Some(v) = x.get("kind") {
        let p = opt_child(pth, "kind");
        match v {
            Value::String(s) if s.is_empty() => {
                errs.push(FieldError::invalid(p, "", "must not be empty"));
            }
            Value::String(s) => {
                let msgs = is_dns1035_label(&s.to_lowercase());
                if !msgs.is_empty() {
                    errs.push(FieldError::invalid(
                        p,
                        s.clone(),
                        format!(
                            "may have mixed case, but should otherwise match: {}",
                            msgs.join(",")
                        ),
                    ));
                }
            }
            other => errs.push(FieldError::invalid(
                p,
                go_bad_value(other),
                "must be a string",
            )),
        }
    }
    if let Some(v) = x.get("metadata") {
        let p = opt_child(pth, "metadata");
        if let Some(msg) = object_meta_type_error(v) {
            errs.push(FieldError::invalid(p, go_bad_value(v), msg));
            return;
        }
        let mut meta = match v {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        if meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            meta.insert("name".into(), Value::from("fakename"));
        }
        let namespaced = !meta
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty();
        for mut e in validate_object_meta(&Value::Object(meta), namespaced, path_segment_name) {
            if let Some(rest) = e.field.strip_prefix("metadata") {
                e.field = format!("{p}{rest}");
            }
            errs.push(e);
        }
    }
}

/// `path.ValidatePathSegmentName`.
fn path_segment_name(name: &str) -> Vec<String> {
    for illegal in [".", ".."] {
        if name == illegal {
            return vec![format!("may not be '{illegal}'")];
        }
    }
    ["/", "%"]
        .iter()
        .filter(|c| name.contains(**c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::structural::test_util::*;
    use serde_json::json;

    #[test]
    fn crd08_embedded_resource_pruning_and_validation() {
        let s = parse(json!({"type": "object", "properties": {
            "foo": {"x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true, "type": "object"},
            "bar": {"x-kubernetes-embedded-resource": true, "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}
        }}));
        let mut obj = json!({
            "foo": {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": []}},
            "bar": {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "x", "bogus": 1, "labels": {}},
                    "spec": {"a": "b", "c": "d"}, "other": 1}
        });
        assert_eq!(
            s.prune(&mut obj),
            vec!["bar.other", "bar.spec.c", "bar.metadata.bogus"]
        );
        assert_eq!(
            obj,
            json!({
                "foo": {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": []}},
                "bar": {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "x"}, "spec": {"a": "b"}}
            })
        );
        assert!(s.validate(&obj).is_empty());
        let bad = json!({
            "foo": {"spec": {}},
            "bar": {"apiVersion": "a/b/c", "kind": "Not_A_Kind", "metadata": {"name": "a/b"}}
        });
        assert_eq!(
            sorted(msgs(&s.validate(&bad))),
            vec![
                "bar.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
                "bar.kind: Invalid value: \"Not_A_Kind\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                "bar.metadata.name: Invalid value: \"a/b\": may not contain '/'",
                "foo.apiVersion: Required value: must not be empty",
                "foo.kind: Required value: must not be empty",
            ]
        );
        assert_eq!(
            msgs(&s.validate(
                &json!({"foo": {"apiVersion": "v1", "kind": "K", "metadata": {"name": 5}}})
            )),
            vec![
                "foo.metadata: Invalid value: {\"name\":5}: json: cannot unmarshal number into Go struct field ObjectMeta.name of type string"
            ]
        );
    }
}
