//! Decoding an `openAPIV3Schema` (`JSONSchemaProps`) into the node arena, as kube's
//! decoder and `NewStructural` (`pkg/apiserver/schema/convert.go`) read it.

use serde_json::Value;

use super::formats::StrFormat;
use super::model::{Dependency, Items, NodeData, Pattern, SchemaOrBool, map_key};
use crate::validation::{FieldError, child, index};

#[derive(Default)]
pub(super) struct Decoder {
    pub(super) nodes: Vec<NodeData>,
    pub(super) errs: Vec<FieldError>,
}

impl Decoder {
    fn bad_type(&mut self, path: String, v: &Value, expected: &str) {
        self.errs.push(FieldError::type_invalid(
            path,
            v.clone(),
            format!("must be of type {expected}"),
        ));
    }

    fn string(&mut self, v: &Value, path: &str, key: &str) -> String {
        match v {
            Value::String(s) => s.clone(),
            other => {
                self.bad_type(child(path, key), other, "string");
                String::new()
            }
        }
    }

    fn boolean(&mut self, v: &Value, path: &str, key: &str) -> bool {
        match v {
            Value::Bool(b) => *b,
            other => {
                self.bad_type(child(path, key), other, "boolean");
                false
            }
        }
    }

    fn float(&mut self, v: &Value, path: &str, key: &str) -> Option<f64> {
        match v.as_f64() {
            Some(f) => Some(f),
            None => {
                self.bad_type(child(path, key), v, "number");
                None
            }
        }
    }

    fn int(&mut self, v: &Value, path: &str, key: &str) -> Option<i64> {
        match v.as_i64() {
            Some(i) => Some(i),
            None => {
                self.bad_type(child(path, key), v, "integer");
                None
            }
        }
    }

    fn strings(&mut self, v: &Value, path: &str, key: &str) -> Vec<String> {
        let Value::Array(items) = v else {
            self.bad_type(child(path, key), v, "array");
            return Vec::new();
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) => out.push(s.clone()),
                other => self.bad_type(index(&child(path, key), i), other, "string"),
            }
        }
        out
    }

    fn schema_list(&mut self, v: &Value, path: &str, key: &str) -> Vec<usize> {
        let Value::Array(items) = v else {
            self.bad_type(child(path, key), v, "array");
            return Vec::new();
        };
        let p = child(path, key);
        items
            .iter()
            .enumerate()
            .map(|(i, item)| self.decode(item, &index(&p, i)))
            .collect()
    }

    fn schema_map(&mut self, v: &Value, path: &str, key: &str) -> Vec<(String, usize)> {
        let Value::Object(map) = v else {
            self.bad_type(child(path, key), v, "object");
            return Vec::new();
        };
        let p = child(path, key);
        let mut out: Vec<(String, usize)> = map
            .iter()
            .map(|(k, sub)| (k.clone(), self.decode(sub, &map_key(&p, k))))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    fn schema_or_bool(&mut self, v: &Value, path: &str, key: &str) -> Option<SchemaOrBool> {
        match v {
            Value::Bool(b) => Some(SchemaOrBool::Bool(*b)),
            Value::Object(_) => Some(SchemaOrBool::Schema(self.decode(v, &child(path, key)))),
            other => {
                self.bad_type(child(path, key), other, "object");
                None
            }
        }
    }

    /// Decodes one schema object into the arena and returns its index.
    pub(super) fn decode(&mut self, v: &Value, path: &str) -> usize {
        let id = self.nodes.len();
        self.nodes.push(NodeData::default());
        let mut n = NodeData::default();
        let Value::Object(obj) = v else {
            self.bad_type(path.to_owned(), v, "object");
            return id;
        };
        for (k, val) in obj {
            if val.is_null() {
                // Go leaves a field at its zero value for `null`.
                continue;
            }
            match k.as_str() {
                "id" => n.id = self.string(val, path, k),
                "$schema" => n.schema_url = self.string(val, path, k),
                "$ref" => n.ref_ = Some(self.string(val, path, k)),
                "description" => n.description = Some(self.string(val, path, k)),
                "type" => n.type_ = self.string(val, path, k),
                "format" => n.format = self.string(val, path, k),
                "title" => n.title = Some(self.string(val, path, k)),
                "default" => n.default = Some(val.clone()),
                "maximum" => n.maximum = self.float(val, path, k),
                "exclusiveMaximum" => n.exclusive_maximum = self.boolean(val, path, k),
                "minimum" => n.minimum = self.float(val, path, k),
                "exclusiveMinimum" => n.exclusive_minimum = self.boolean(val, path, k),
                "maxLength" => n.max_length = self.int(val, path, k),
                "minLength" => n.min_length = self.int(val, path, k),
                "pattern" => {
                    let source = self.string(val, path, k);
                    let regex = crate::goregex::compile(&source);
                    n.pattern = Some(Pattern { source, regex });
                }
                "maxItems" => n.max_items = self.int(val, path, k),
                "minItems" => n.min_items = self.int(val, path, k),
                "uniqueItems" => n.unique_items = self.boolean(val, path, k),
                "multipleOf" => n.multiple_of = self.float(val, path, k),
                "enum" => match val {
                    Value::Array(items) => n.enum_ = Some(items.clone()),
                    other => self.bad_type(child(path, k), other, "array"),
                },
                "maxProperties" => n.max_properties = self.int(val, path, k),
                "minProperties" => n.min_properties = self.int(val, path, k),
                "required" => n.required = Some(self.strings(val, path, k)),
                "items" => {
                    n.items = match val {
                        Value::Object(_) => Some(Items::Schema(self.decode(val, &child(path, k)))),
                        Value::Array(_) => Some(Items::Array(self.schema_list(val, path, k))),
                        other => {
                            self.bad_type(child(path, k), other, "object");
                            None
                        }
                    }
                }
                "allOf" => n.all_of = Some(self.schema_list(val, path, k)),
                "oneOf" => n.one_of = Some(self.schema_list(val, path, k)),
                "anyOf" => n.any_of = Some(self.schema_list(val, path, k)),
                "not" => n.not = Some(self.decode(val, &child(path, k))),
                "properties" => n.properties = Some(self.schema_map(val, path, k)),
                "additionalProperties" => {
                    n.additional_properties = self.schema_or_bool(val, path, k)
                }
                "patternProperties" => n.pattern_properties = Some(self.schema_map(val, path, k)),
                "definitions" => n.definitions = Some(self.schema_map(val, path, k)),
                "additionalItems" => n.additional_items = self.schema_or_bool(val, path, k),
                "dependencies" => {
                    let Value::Object(map) = val else {
                        self.bad_type(child(path, k), val, "object");
                        continue;
                    };
                    let p = child(path, k);
                    let mut deps = Vec::new();
                    for (name, dep) in map {
                        let d = match dep {
                            Value::Array(_) => {
                                self.strings(dep, &p, name);
                                Dependency::Property
                            }
                            _ => Dependency::Schema(self.decode(dep, &map_key(&p, name))),
                        };
                        deps.push((name.clone(), d));
                    }
                    deps.sort_by(|a, b| a.0.cmp(&b.0));
                    n.dependencies = Some(deps);
                }
                "nullable" => n.nullable = self.boolean(val, path, k),
                "x-kubernetes-preserve-unknown-fields" => {
                    n.x_preserve_unknown_fields = Some(self.boolean(val, path, k))
                }
                "x-kubernetes-embedded-resource" => {
                    n.x_embedded_resource = self.boolean(val, path, k)
                }
                "x-kubernetes-int-or-string" => n.x_int_or_string = self.boolean(val, path, k),
                "x-kubernetes-list-map-keys" => {
                    n.x_list_map_keys = self.strings(val, path, k);
                    n.x_list_map_keys_set = true;
                }
                "x-kubernetes-list-type" => n.x_list_type = Some(self.string(val, path, k)),
                "x-kubernetes-map-type" => n.x_map_type = Some(self.string(val, path, k)),
                "x-kubernetes-validations" => match val {
                    Value::Array(rules) => {
                        for (i, rule) in rules.iter().enumerate() {
                            if !rule.is_object() {
                                self.bad_type(index(&child(path, k), i), rule, "object");
                            }
                        }
                        n.x_validations = rules.clone();
                    }
                    other => self.bad_type(child(path, k), other, "array"),
                },
                // Documentation only (`example`, `externalDocs`), or not a field of
                // `JSONSchemaProps` (dropped by kube's decoder).
                _ => {}
            }
        }
        n.format_kind = StrFormat::lookup(&n.format);
        self.nodes[id] = n;
        id
    }
}

/// Computes the `sub_*` flags. Children are decoded after their parent, so a reverse pass
/// sees every child before its parent.
pub(super) fn mark_subtrees(nodes: &mut [NodeData]) {
    for id in (0..nodes.len()).rev() {
        let n = &nodes[id];
        let mut children: Vec<usize> = n.props().iter().map(|(_, c)| *c).collect();
        children.extend(n.items_schema());
        children.extend(n.additional_schema());
        let embedded = n.x_embedded_resource || children.iter().any(|c| nodes[*c].sub_embedded);
        let list = matches!(n.x_list_type.as_deref(), Some("set" | "map"))
            || children.iter().any(|c| nodes[*c].sub_list_set_or_map);
        let default = n.default.is_some() || children.iter().any(|c| nodes[*c].sub_default);
        nodes[id].sub_embedded = embedded;
        nodes[id].sub_list_set_or_map = list;
        nodes[id].sub_default = default;
    }
}
