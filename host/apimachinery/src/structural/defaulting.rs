//! Nulls and defaults (CRDV-04, CRDV-05): `pkg/apiserver/schema/defaulting`
//! (`prunenulls.go`, `algorithm.go`) on custom resources, and `validation.go`'s checks that
//! every `default` of a schema is pruned and valid.

use serde_json::{Map, Value};

use super::model::{NodeData, map_key, schema_of};
use super::objectmeta::validate_embedded;
use super::pruning::Pruner;
use super::validation::{Mode, Validator};
use crate::validation::{FieldError, child};

fn field_schema(nodes: &[NodeData], s: Option<usize>, k: &str) -> Option<usize> {
    let n = &nodes[s?];
    n.property(k)
        .or_else(|| n.additional_properties.and_then(schema_of))
}

/// `PruneNonNullableNullsWithoutDefaults`.
pub(super) fn prune_nulls(nodes: &[NodeData], x: &mut Value, s: Option<usize>) {
    // Without a schema nothing below is dropped: the subtree is left as is.
    let Some(id) = s else { return };
    match x {
        Value::Object(map) => map.retain(|k, v| {
            let fs = field_schema(nodes, Some(id), k);
            let drop =
                v.is_null() && fs.is_some_and(|f| !nodes[f].nullable && nodes[f].default.is_none());
            if !drop {
                prune_nulls(nodes, v, fs);
            }
            !drop
        }),
        Value::Array(items) => {
            let item_schema = nodes[id].items_schema();
            for v in items {
                prune_nulls(nodes, v, item_schema);
            }
        }
        _ => {}
    }
}

fn non_nullable_null(nodes: &[NodeData], x: &Value, s: Option<usize>) -> bool {
    x.is_null() && s.is_some_and(|id| !nodes[id].nullable)
}

/// `defaulting.Default`.
pub(super) fn apply_defaults(nodes: &[NodeData], x: &mut Value, s: Option<usize>) {
    let Some(id) = s else { return };
    let n = &nodes[id];
    match x {
        Value::Object(map) => {
            for (k, prop) in n.props() {
                let Some(default) = &nodes[*prop].default else {
                    continue;
                };
                let missing = match map.get(k) {
                    None => true,
                    Some(v) => non_nullable_null(nodes, v, Some(*prop)),
                };
                if missing {
                    map.insert(k.clone(), default.clone());
                }
            }
            for (k, v) in map.iter_mut() {
                if let Some(prop) = n.property(k) {
                    apply_defaults(nodes, v, Some(prop));
                } else if let Some(ap) = n.additional_properties {
                    let ap = schema_of(ap);
                    if non_nullable_null(nodes, v, ap) {
                        *v = ap
                            .and_then(|id| nodes[id].default.clone())
                            .unwrap_or(Value::Null);
                    }
                    apply_defaults(nodes, v, ap);
                }
            }
        }
        Value::Array(items) => {
            let item_schema = n.items_schema();
            for v in items {
                if non_nullable_null(nodes, v, item_schema) {
                    *v = item_schema
                        .and_then(|id| nodes[id].default.clone())
                        .unwrap_or(Value::Null);
                }
                apply_defaults(nodes, v, item_schema);
            }
        }
        _ => {}
    }
}

/// `ValidateDefaults`: every `default` (outside `additionalProperties`) must be pruned and
/// valid against its own node; defaults inside `apiVersion`/`kind`/`metadata` of embedded
/// resources must yield valid metadata. The root counts as an embedded resource.
pub(super) fn validate_defaults(nodes: &[NodeData], root: usize, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut surrounding = Vec::new();
    defaults_walk(
        nodes,
        root,
        root,
        path,
        false,
        true,
        &mut surrounding,
        &mut errs,
    );
    errs
}

#[derive(Clone)]
enum Seg {
    Key(String),
    Index,
}

#[allow(
    clippy::too_many_arguments,
    reason = "mirrors the recursive step of kube's ValidateDefaults"
)]
fn defaults_walk(
    nodes: &[NodeData],
    id: usize,
    mut resource_root: usize,
    path: &str,
    mut inside_meta: bool,
    is_top: bool,
    surrounding: &mut Vec<Seg>,
    errs: &mut Vec<FieldError>,
) {
    let s = &nodes[id];
    let embedded = s.x_embedded_resource || is_top;
    let saved = surrounding.clone();
    if embedded {
        inside_meta = false;
        resource_root = id;
        surrounding.clear();
    }

    if let Some(default) = &s.default {
        let default_path = child(path, "default");
        let validator = Validator {
            nodes,
            mode: Mode::Structural,
        };
        if inside_meta {
            // Place the default in an object shaped like its resource and check the
            // resulting metadata.
            let mut obj = default.clone();
            for seg in surrounding.iter().rev() {
                obj = match seg {
                    Seg::Key(k) => {
                        let mut m = Map::new();
                        m.insert(k.clone(), obj);
                        Value::Object(m)
                    }
                    Seg::Index => Value::Array(vec![obj]),
                };
            }
            if let Value::Object(m) = &mut obj {
                m.entry("kind").or_insert_with(|| Value::from("Validation"));
                m.entry("apiVersion")
                    .or_insert_with(|| Value::from("validation/v1"));
            }
            let mut meta_errs = Vec::new();
            validate_embedded(nodes, &obj, Some(resource_root), true, None, &mut meta_errs);
            if !meta_errs.is_empty() {
                let detail = match coerce_error(&meta_errs) {
                    Some(e) => e.to_string(),
                    None => crate::validation::aggregate_message(&meta_errs),
                };
                errs.push(FieldError::invalid(
                    default_path,
                    default.clone(),
                    format!("must result in valid metadata: {detail}"),
                ));
            } else {
                errs.extend(validator.field_errors(id, default, Some(&default_path)));
            }
        } else {
            let mut pruned = default.clone();
            let mut pruner = Pruner::new(nodes);
            pruner.prune(&mut pruned, Some(id), embedded);
            if pruned != *default {
                errs.push(FieldError::invalid(
                    default_path.clone(),
                    default.clone(),
                    "must not have unknown fields",
                ));
            }
            let mut meta_errs = Vec::new();
            validate_embedded(
                nodes,
                default,
                Some(id),
                embedded,
                Some(&default_path),
                &mut meta_errs,
            );
            if let Some(e) = coerce_error(&meta_errs) {
                errs.push(e.clone());
            } else if !meta_errs.is_empty() {
                errs.extend(meta_errs);
            } else {
                errs.extend(validator.field_errors(id, default, Some(&default_path)));
            }
        }
    }

    // additionalProperties is not followed: defaults there are only checked at runtime.
    if let Some(items) = s.items_schema() {
        surrounding.push(Seg::Index);
        defaults_walk(
            nodes,
            items,
            resource_root,
            &child(path, "items"),
            inside_meta,
            false,
            surrounding,
            errs,
        );
        surrounding.pop();
    }
    for (name, sub) in s.props() {
        let sub_meta = inside_meta
            || (embedded && matches!(name.as_str(), "metadata" | "apiVersion" | "kind"));
        surrounding.push(Seg::Key(name.clone()));
        defaults_walk(
            nodes,
            *sub,
            resource_root,
            &map_key(&child(path, "properties"), name),
            sub_meta,
            false,
            surrounding,
            errs,
        );
        surrounding.pop();
    }
    *surrounding = saved;
}

/// The errors `objectmeta.Coerce` would have returned first (a non-string `apiVersion` or
/// `kind`, undecodable `metadata`).
fn coerce_error(errs: &[FieldError]) -> Option<&FieldError> {
    errs.iter().find(|e| {
        e.detail == "must be a string"
            || e.detail.starts_with("json: ")
            || e.detail.starts_with("parsing time ")
    })
}

#[cfg(test)]
mod tests {
    use crate::structural::test_util::*;
    use serde_json::json;

    #[test]
    fn crdv04_defaults_crontab() {
        let mut schema = crontab();
        schema["properties"]["spec"]["properties"]["cronSpec"]["default"] = json!("5 0 * * *");
        schema["properties"]["spec"]["properties"]["replicas"]["default"] = json!(1);
        let s = parse(schema);
        let mut obj = crontab_object(json!({"image": "my-awesome-cron-image"}));
        s.apply_defaults(&mut obj);
        assert_eq!(
            obj["spec"],
            json!({"image": "my-awesome-cron-image", "cronSpec": "5 0 * * *", "replicas": 1})
        );
    }

    #[test]
    fn crdv04_has_defaults_counts_only_default_keywords() {
        let no_defaults = parse(json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "properties": {
                "default": {"type": "string", "example": {"default": "x"}},
                "mode": {"type": "string", "enum": ["default", "other"]}
            }
        }}}));
        assert!(!no_defaults.has_defaults());
        for schema in [
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "default": {"type": "string", "default": "x"}
            }}}}),
            json!({"type": "object", "properties": {"list": {
                "type": "array", "items": {"type": "string", "default": "a"}
            }}}),
            json!({"type": "object", "properties": {"map": {
                "type": "object", "additionalProperties": {"type": "integer", "default": 1}
            }}}),
        ] {
            assert!(parse(schema.clone()).has_defaults(), "{schema}");
        }
    }

    #[test]
    fn crdv05_nullable_and_defaults() {
        let s = parse(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "foo": {"type": "string", "nullable": false, "default": "default"},
                "bar": {"type": "string", "nullable": true},
                "baz": {"type": "string"}
            }}}}),
        );
        let mut obj = json!({"spec": {"foo": null, "bar": null, "baz": null}});
        s.apply_defaults(&mut obj);
        assert_eq!(obj, json!({"spec": {"foo": "default", "bar": null}}));
    }

    #[test]
    fn crdv04_defaults_in_items_maps_and_nested_defaults() {
        let s = parse(json!({"type": "object", "properties": {
            "list": {"type": "array", "items": {"type": "object", "default": {"a": "x"},
                     "properties": {"a": {"type": "string"}, "b": {"type": "integer", "default": 2}}}},
            "map": {"type": "object", "additionalProperties": {"type": "string", "default": "d"}},
            "obj": {"type": "object", "default": {}, "properties": {"c": {"type": "string", "default": "c"}}}
        }}));
        let mut obj = json!({"list": [null, {"a": "y"}], "map": {"k": null, "l": "v"}});
        s.apply_defaults(&mut obj);
        assert_eq!(
            obj,
            json!({
                "list": [{"a": "x", "b": 2}, {"a": "y", "b": 2}],
                "map": {"k": "d", "l": "v"},
                "obj": {"c": "c"}
            })
        );
    }

    #[test]
    fn crdv04_invalid_and_unpruned_defaults() {
        // After TestValidateCustomResourceDefinition "defaults with enabled feature gate".
        let errs = parse_err(json!({"type": "object", "properties": {
            "a": {"type": "object", "properties": {"foo": {"type": "string"}}, "default": {"foo": "abc", "bar": 42}},
            "b": {"type": "object", "properties": {"foo": {"type": "string"}}, "default": {"foo": "abc"}},
            "c": {"type": "object", "properties": {"foo": {"type": "string"}}, "default": {"foo": 42}},
            "d": {"type": "object", "properties": {"good": {"type": "string", "pattern": "a"}, "bad": {"type": "string", "pattern": "b"}},
                  "default": {"good": "a", "bad": "a"}},
            "r": {"type": "integer", "maximum": 10, "default": 15},
            "embedded-preserve-unpruned-objectmeta": {"type": "object", "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true, "properties": {"foo": {"type": "string"}},
                "default": {"foo": "abc", "apiVersion": "foo/v1", "kind": "v1", "metadata": {"name": "foo", "unspecified": "bar"}, "bar": 42}},
            "embedded-missing-kind": {"type": "object", "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true, "default": {"apiVersion": "foo/v1"}}
        }}));
        assert_eq!(
            errs,
            vec![
                format!(
                    "{P}.properties[a].default: Invalid value: {{\"bar\":42,\"foo\":\"abc\"}}: must not have unknown fields"
                ),
                format!(
                    "{P}.properties[c].default.foo: Invalid value: \"integer\": foo in body must be of type string: \"integer\""
                ),
                format!(
                    "{P}.properties[d].default.bad: Invalid value: \"a\": bad in body should match 'b'"
                ),
                format!(
                    "{P}.properties[embedded-missing-kind].default.kind: Required value: must not be empty"
                ),
                format!(
                    "{P}.properties[r].default: Invalid value: 15:  in body should be less than or equal to 10"
                ),
            ]
        );
    }

    #[test]
    fn crdv04_metadata_defaults_of_embedded_resources() {
        assert_eq!(
            parse_err(
                json!({"type": "object", "properties": {"r": {"type": "object",
                "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"metadata": {"type": "object", "properties": {
                    "name": {"type": "string", "default": "Not/Valid"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string", "default": "x"}}
                }}}}}})
            ),
            vec![
                // Defaults are checked before the per-node OpenAPI rules.
                format!(
                    "{P}.properties[r].properties[metadata].properties[name].default: Invalid value: \"Not/Valid\": must result in valid metadata: metadata.name: Invalid value: \"Not/Valid\": may not contain '/'"
                ),
                format!(
                    "{P}.properties[r].properties[metadata].properties[labels].additionalProperties.default: Forbidden: must not be set inside additionalProperties applying to object metadata"
                ),
            ]
        );
    }
}
