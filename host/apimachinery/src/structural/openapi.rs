//! The schema kube publishes in OpenAPI v3 (DISC-11): `pkg/apiserver/schema/unfold.go`,
//! `kubeopenapi.go` and `controller/openapi/builder/builder.go`.

use serde_json::{Map, Value};

use super::model::{Inner, NodeData, SchemaOrBool, float_value};
use super::structure::StructuralChecks;

const OBJECT_META_DEFINITION: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const METADATA_DESCRIPTION: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const TYPE_META_API_VERSION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const TYPE_META_KIND: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const EMBEDDED_API_VERSION: &str = "apiVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const EMBEDDED_KIND: &str = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// How an `x-kubernetes-int-or-string` node is unfolded (kube's `Unfold`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unfold {
    None,
    AnyOf,
    PrependAllOf,
}

pub(super) fn publish(inner: &Inner) -> Value {
    let nodes = &inner.nodes;
    let mut out = publish_node(nodes, inner.root);
    if let Value::Object(m) = &mut out {
        set_property(m, "metadata", object_meta_ref());
        set_property(m, "apiVersion", type_meta_property(TYPE_META_API_VERSION));
        set_property(m, "kind", type_meta_property(TYPE_META_KIND));
    }
    add_embedded_properties(&mut out);
    out
}

fn object_meta_ref() -> Value {
    let mut m = Map::new();
    m.insert("description".into(), Value::from(METADATA_DESCRIPTION));
    let mut r = Map::new();
    r.insert(
        "$ref".into(),
        Value::from(format!("#/components/schemas/{OBJECT_META_DEFINITION}")),
    );
    m.insert("allOf".into(), Value::Array(vec![Value::Object(r)]));
    Value::Object(m)
}

fn type_meta_property(description: &str) -> Value {
    let mut m = Map::new();
    m.insert("description".into(), Value::from(description));
    m.insert("type".into(), Value::from("string"));
    Value::Object(m)
}

/// `spec.Schema.SetProperty`: properties stay sorted by name, as Go serializes its map.
fn set_property(schema: &mut Map<String, Value>, name: &str, value: Value) {
    let props = schema
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(p) = props {
        p.insert(name.to_owned(), value);
        let mut entries: Vec<(String, Value)> = std::mem::take(p).into_iter().collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        p.extend(entries);
    }
    // Keep `properties` in its SchemaProps position.
    reorder_schema_keys(schema);
}

/// `addEmbeddedProperties` of the builder.
fn add_embedded_properties(s: &mut Value) {
    let Value::Object(m) = s else { return };
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        for (_, p) in props.iter_mut() {
            add_embedded_properties(p);
        }
    }
    if let Some(items) = m.get_mut("items") {
        add_embedded_properties(items);
    }
    if let Some(ap) = m.get_mut("additionalProperties") {
        add_embedded_properties(ap);
    }
    let embedded = m
        .get("x-kubernetes-embedded-resource")
        .and_then(Value::as_bool);
    if embedded == Some(true) {
        set_property(m, "apiVersion", type_meta_property(EMBEDDED_API_VERSION));
        set_property(m, "kind", type_meta_property(EMBEDDED_KIND));
        set_property(m, "metadata", object_meta_ref());
        let req = m
            .entry("required")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(req) = req {
            for k in ["kind", "apiVersion"] {
                if !req.iter().any(|r| r.as_str() == Some(k)) {
                    req.push(Value::from(k));
                }
            }
        }
        reorder_schema_keys(m);
    }
}

const SCHEMA_KEY_ORDER: &[&str] = &[
    "description",
    "type",
    "nullable",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
];

/// kube-openapi's serialization order: `SchemaProps` fields, then extensions (sorted),
/// then `$ref`.
fn reorder_schema_keys(m: &mut Map<String, Value>) {
    let mut entries: Vec<(String, Value)> = std::mem::take(m).into_iter().collect();
    let rank = |k: &str| match SCHEMA_KEY_ORDER.iter().position(|o| *o == k) {
        Some(i) => (0, i, String::new()),
        None if k.starts_with("x-") => (1, 0, k.to_owned()),
        None => (2, 0, k.to_owned()),
    };
    entries.sort_by_key(|a| rank(&a.0));
    m.extend(entries);
}

fn is_int_or_string_any_of(nodes: &[NodeData], any_of: &[usize]) -> bool {
    StructuralChecks { nodes }.is_int_or_string_any_of(any_of)
}

/// How kube's `Unfold` rewrites an `x-kubernetes-int-or-string` node that does not already
/// spell out its `anyOf` of integer and string.
fn unfold(nodes: &[NodeData], s: &NodeData) -> Unfold {
    if !s.x_int_or_string {
        return Unfold::None;
    }
    let any_of_pattern = is_int_or_string_any_of(nodes, s.any_of());
    let all_of_pattern = s
        .all_of()
        .first()
        .is_some_and(|f| is_int_or_string_any_of(nodes, nodes[*f].any_of()));
    if any_of_pattern || all_of_pattern {
        Unfold::None
    } else if s.any_of().is_empty() {
        Unfold::AnyOf
    } else {
        Unfold::PrependAllOf
    }
}

fn typed_any_of() -> Vec<Value> {
    ["integer", "string"]
        .iter()
        .map(|t| {
            let mut m = Map::new();
            m.insert("type".into(), Value::from(*t));
            Value::Object(m)
        })
        .collect()
}

/// `ToKubeOpenAPI` of a structural node after `Unfold`.
fn publish_node(nodes: &[NodeData], id: usize) -> Value {
    let s = &nodes[id];
    let mut m = Map::new();
    write_generic(&mut m, s);
    write_value_validation(&mut m, s);
    if let Some(items) = s.items_schema() {
        m.insert("items".into(), publish_node(nodes, items));
    }
    let mut all_of: Vec<Value> = s.all_of().iter().map(|i| nested_json(nodes, *i)).collect();
    let mut any_of: Vec<Value> = s.any_of().iter().map(|i| nested_json(nodes, *i)).collect();
    match unfold(nodes, s) {
        Unfold::AnyOf => any_of = typed_any_of(),
        Unfold::PrependAllOf => {
            let mut wrapper = Map::new();
            wrapper.insert("anyOf".into(), Value::Array(typed_any_of()));
            all_of.insert(0, Value::Object(wrapper));
        }
        Unfold::None => {}
    }
    let one_of: Vec<Value> = s.one_of().iter().map(|i| nested_json(nodes, *i)).collect();
    for (k, list) in [("allOf", all_of), ("oneOf", one_of), ("anyOf", any_of)] {
        if !list.is_empty() {
            m.insert(k.into(), Value::Array(list));
        }
    }
    if let Some(not) = s.not {
        m.insert("not".into(), nested_json(nodes, not));
    }
    if s.has_properties() {
        let mut pm = Map::new();
        for (name, pid) in s.props() {
            pm.insert(name.clone(), publish_node(nodes, *pid));
        }
        m.insert("properties".into(), Value::Object(pm));
    }
    match s.additional_properties {
        Some(SchemaOrBool::Schema(ap)) => {
            m.insert("additionalProperties".into(), publish_node(nodes, ap));
        }
        Some(SchemaOrBool::Bool(b)) => {
            m.insert("additionalProperties".into(), Value::from(b));
        }
        None => {}
    }
    write_extensions(&mut m, s);
    reorder_schema_keys(&mut m);
    Value::Object(m)
}

fn write_generic(m: &mut Map<String, Value>, s: &NodeData) {
    if let Some(d) = s.description.as_deref().filter(|d| !d.is_empty()) {
        m.insert("description".into(), Value::from(d));
    }
    if !s.type_.is_empty() {
        m.insert("type".into(), Value::from(s.type_.as_str()));
    }
    if s.nullable {
        m.insert("nullable".into(), Value::from(true));
    }
    if let Some(t) = s.title.as_deref().filter(|t| !t.is_empty()) {
        m.insert("title".into(), Value::from(t));
    }
    if let Some(d) = &s.default {
        m.insert("default".into(), d.clone());
    }
}

fn write_value_validation(m: &mut Map<String, Value>, s: &NodeData) {
    if !s.format.is_empty() {
        m.insert("format".into(), Value::from(s.format.as_str()));
    }
    let put_f = |m: &mut Map<String, Value>, k: &str, v: Option<f64>| {
        if let Some(v) = v {
            m.insert(k.into(), float_value(v));
        }
    };
    let put_i = |m: &mut Map<String, Value>, k: &str, v: Option<i64>| {
        if let Some(v) = v {
            m.insert(k.into(), Value::from(v));
        }
    };
    put_f(m, "maximum", s.maximum);
    if s.exclusive_maximum {
        m.insert("exclusiveMaximum".into(), Value::from(true));
    }
    put_f(m, "minimum", s.minimum);
    if s.exclusive_minimum {
        m.insert("exclusiveMinimum".into(), Value::from(true));
    }
    put_i(m, "maxLength", s.max_length);
    put_i(m, "minLength", s.min_length);
    if let Some(p) = s.pattern.as_ref().filter(|p| !p.source.is_empty()) {
        m.insert("pattern".into(), Value::from(p.source.as_str()));
    }
    put_i(m, "maxItems", s.max_items);
    put_i(m, "minItems", s.min_items);
    if s.unique_items {
        m.insert("uniqueItems".into(), Value::from(true));
    }
    put_f(m, "multipleOf", s.multiple_of);
    if let Some(e) = s.enum_.as_ref().filter(|e| !e.is_empty()) {
        m.insert("enum".into(), Value::Array(e.clone()));
    }
    put_i(m, "maxProperties", s.max_properties);
    put_i(m, "minProperties", s.min_properties);
    if let Some(r) = s.required.as_deref().filter(|r| !r.is_empty()) {
        m.insert("required".into(), Value::from(r.to_vec()));
    }
}

fn write_extensions(m: &mut Map<String, Value>, s: &NodeData) {
    if s.x_embedded_resource {
        m.insert("x-kubernetes-embedded-resource".into(), Value::from(true));
    }
    if s.x_int_or_string {
        m.insert("x-kubernetes-int-or-string".into(), Value::from(true));
    }
    if !s.x_list_map_keys.is_empty() {
        m.insert(
            "x-kubernetes-list-map-keys".into(),
            Value::from(s.x_list_map_keys.clone()),
        );
    }
    if let Some(t) = &s.x_list_type {
        m.insert("x-kubernetes-list-type".into(), Value::from(t.as_str()));
    }
    if let Some(t) = &s.x_map_type {
        m.insert("x-kubernetes-map-type".into(), Value::from(t.as_str()));
    }
    if s.preserves() {
        m.insert(
            "x-kubernetes-preserve-unknown-fields".into(),
            Value::from(true),
        );
    }
    if !s.x_validations.is_empty() {
        m.insert(
            "x-kubernetes-validations".into(),
            Value::Array(s.x_validations.clone()),
        );
    }
}

/// `NestedValueValidation.toKubeOpenAPI`.
fn nested_json(nodes: &[NodeData], id: usize) -> Value {
    let s = &nodes[id];
    let mut m = Map::new();
    write_generic(&mut m, s);
    write_value_validation(&mut m, s);
    for (k, list) in [
        ("allOf", s.all_of()),
        ("oneOf", s.one_of()),
        ("anyOf", s.any_of()),
    ] {
        if !list.is_empty() {
            let items = list.iter().map(|i| nested_json(nodes, *i)).collect();
            m.insert(k.into(), Value::Array(items));
        }
    }
    if let Some(not) = s.not {
        m.insert("not".into(), nested_json(nodes, not));
    }
    if let Some(items) = s.items_schema() {
        m.insert("items".into(), nested_json(nodes, items));
    }
    if let Some(props) = &s.properties {
        let pm = props
            .iter()
            .map(|(k, i)| (k.clone(), nested_json(nodes, *i)))
            .collect();
        m.insert("properties".into(), Value::Object(pm));
    }
    if !s.x_validations.is_empty() {
        m.insert(
            "x-kubernetes-validations".into(),
            Value::Array(s.x_validations.clone()),
        );
    }
    reorder_schema_keys(&mut m);
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structural::test_util::*;
    use serde_json::json;

    #[test]
    fn disc11_published_v3_transformations() {
        let s = parse(json!({"type": "object", "properties": {
            "n": {"type": "object", "nullable": true, "description": "d", "properties": {"x": {"type": "string"}}},
            "ios": {"x-kubernetes-int-or-string": true},
            "p": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"x": {"type": "string"}}},
            "j": {"type": "string", "anyOf": [{"maxLength": 1}], "x-kubernetes-validations": [{"rule": "self != ''"}]}
        }, "required": ["n", "j"]}));
        let v3 = s.published_v3();
        assert_eq!(
            v3["properties"]["ios"],
            json!({"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true})
        );
        assert_eq!(v3["properties"]["n"]["nullable"], json!(true));
        assert_eq!(v3["properties"]["j"]["anyOf"], json!([{"maxLength": 1}]));
        assert_eq!(
            v3["properties"]["metadata"]["allOf"],
            json!([{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}])
        );
    }

    #[test]
    fn disc11_published_embedded_resource() {
        let s = parse(json!({"type": "object", "properties": {
            "e": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}}
        }}));
        let v3 = s.published_v3();
        assert_eq!(
            v3["properties"]["e"]["required"],
            json!(["kind", "apiVersion"])
        );
        assert_eq!(
            v3["properties"]["e"]["properties"]["apiVersion"]["description"],
            json!(EMBEDDED_API_VERSION)
        );
    }
}
