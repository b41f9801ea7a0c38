//! Which paths an object's fields make (structured-merge-diff's `ToFieldSet`): the set an
//! applier owns is the field set of its applied configuration, read through the type's
//! shape (list and map types from the schema: `x-kubernetes-list-type`,
//! `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`, the built-in types' merge keys).
//!
//! Rules, walking the value with its shape:
//! - a scalar, an atomic list, an atomic map or struct, or a value whose kind does not
//!   match its shape: the path is a member, nothing below it is;
//! - a struct or granular map: each present entry is walked; the entry's own path is a
//!   member too when it is `null`, `{}`, or not a declared field (a free-form entry such
//!   as a label: so a free-form entry holding an object is both a member and a parent);
//!   a struct under a declared field is therefore not a member by itself, only its leaves;
//! - a set list: each item `v:<value>` is a member;
//! - a map list: each item `k:{...}` (its key fields, a missing one from its default) is a
//!   member and is walked; items sharing a key are not walked; an item with none of its
//!   key fields makes the list owned as a whole (structured-merge-diff refuses it);
//! - an empty granular list is nothing.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{FieldSet, Path, PathElement};

/// The shape of a value: what its schema says about how it merges.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// A scalar, or anything owned as a whole (`x-kubernetes-preserve-unknown-fields`
    /// without properties is [`Shape::Deduced`] instead).
    Scalar,
    /// A list.
    List {
        /// How its items merge.
        kind: ListKind,
        /// The items' shape.
        items: Box<Shape>,
    },
    /// An object.
    Map {
        /// `x-kubernetes-map-type: atomic` (or `structType: atomic`): owned as a whole.
        atomic: bool,
        /// Declared fields (a struct's `properties`).
        fields: BTreeMap<String, Shape>,
        /// The shape of other entries (`additionalProperties`); `None` with fields: a
        /// struct whose other keys are unknown (walked as deduced).
        entries: Option<Box<Shape>>,
    },
    /// No schema (a schemaless custom resource, preserved unknown fields): objects are
    /// granular maps of free-form entries, lists are atomic.
    Deduced,
}

/// How a list merges.
#[derive(Debug, Clone, PartialEq)]
pub enum ListKind {
    /// Replaced as a whole (the default for custom resources).
    Atomic,
    /// A set of scalars, items identified by value.
    Set,
    /// Items identified by these key fields; a key field left out of an item takes its
    /// default here when it has one.
    Map {
        /// `x-kubernetes-list-map-keys`.
        keys: Vec<String>,
        /// Defaults of key fields.
        defaults: BTreeMap<String, Value>,
    },
}

impl Shape {
    /// The shape of entry `name` of an object of this shape, and whether it is a declared
    /// field (else a free-form entry; unknown keys of a struct are walked as deduced).
    pub fn entry(&self, name: &str) -> (&Shape, bool) {
        match self {
            Shape::Map {
                fields, entries, ..
            } => match (fields.get(name), entries) {
                (Some(s), _) => (s, true),
                (None, Some(e)) => (&**e, false),
                (None, None) => (&Shape::Deduced, false),
            },
            _ => (&Shape::Deduced, false),
        }
    }

    /// The shape a custom resource's structural schema gives (`SSA-08`, `SSA-09`): lists
    /// are atomic unless `x-kubernetes-list-type` says `set` or `map`; objects are
    /// granular unless `x-kubernetes-map-type: atomic`; unknown fields kept by
    /// `x-kubernetes-preserve-unknown-fields` are deduced.
    pub fn of_schema(node: crate::structural::Node<'_>) -> Shape {
        use crate::structural::{AdditionalProperties, NodeKind};
        let atomic = node.map_type() == Some("atomic");
        match node.kind() {
            NodeKind::Object | NodeKind::Map => {
                let fields = node
                    .properties()
                    .map(|(k, n)| (k.to_owned(), Shape::of_schema(n)))
                    .collect();
                let entries = match node.additional_properties() {
                    Some(AdditionalProperties::Schema(n)) => Some(Box::new(Shape::of_schema(n))),
                    _ if node.preserves_unknown_fields() => Some(Box::new(Shape::Deduced)),
                    _ => None,
                };
                Shape::Map {
                    atomic,
                    fields,
                    entries,
                }
            }
            NodeKind::List => {
                let items = node.items().map_or(Shape::Deduced, Shape::of_schema);
                let kind = match node.list_type() {
                    Some("set") => ListKind::Set,
                    Some("map") => {
                        let keys = node.map_keys().to_vec();
                        let defaults = node
                            .items()
                            .map(|item| {
                                keys.iter()
                                    .filter_map(|k| {
                                        let d = item.property(k)?.default_value()?;
                                        Some((k.clone(), d.clone()))
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                        ListKind::Map { keys, defaults }
                    }
                    _ => ListKind::Atomic,
                };
                Shape::List {
                    kind,
                    items: Box::new(items),
                }
            }
            NodeKind::Any => Shape::Deduced,
            _ => Shape::Scalar,
        }
    }
}

impl FieldSet {
    /// The paths `value`'s fields make under `shape` (the root itself is not a path).
    pub fn of_value(value: &Value, shape: &Shape) -> FieldSet {
        let mut set = FieldSet::new();
        walk(value, shape, &mut Vec::new(), &mut set);
        set
    }
}

fn walk(value: &Value, shape: &Shape, path: &mut Path, set: &mut FieldSet) {
    match (shape, value) {
        (Shape::Map { atomic: false, .. } | Shape::Deduced, Value::Object(m)) => {
            for (k, v) in m {
                let (entry_shape, declared) = shape.entry(k);
                path.push(PathElement::Field(k.clone()));
                let empty_map = matches!(v, Value::Object(o) if o.is_empty());
                if !declared || v.is_null() || empty_map {
                    set.insert(path);
                }
                walk(v, entry_shape, path, set);
                path.pop();
            }
        }
        (Shape::List { kind, items }, Value::Array(list)) => match kind {
            ListKind::Atomic => set.insert(path),
            ListKind::Set => {
                for item in list {
                    path.push(PathElement::Value(item.clone()));
                    set.insert(path);
                    path.pop();
                }
            }
            ListKind::Map { keys, defaults } => {
                let elements: Vec<Option<PathElement>> = list
                    .iter()
                    .map(|item| key_of(item, keys, defaults))
                    .collect();
                let mut seen = BTreeSet::new();
                let dup: BTreeSet<&PathElement> = elements
                    .iter()
                    .flatten()
                    .filter(|e| !seen.insert(*e))
                    .collect();
                for (item, element) in list.iter().zip(&elements) {
                    // An item without its keys cannot be identified: the list is owned
                    // as a whole instead.
                    let Some(e) = element else {
                        set.insert(path);
                        continue;
                    };
                    path.push(e.clone());
                    set.insert(path);
                    if !dup.contains(e) {
                        walk(item, items, path, set);
                    }
                    path.pop();
                }
            }
        },
        // Scalars, atomic lists and maps, and values of another kind than their shape.
        _ => set.insert(path),
    }
}

/// The `k:` element of a map-list item: its key fields (defaults filling missing ones),
/// `None` when it has none of them.
pub(super) fn key_of(
    item: &Value,
    keys: &[String],
    defaults: &BTreeMap<String, Value>,
) -> Option<PathElement> {
    let obj = item.as_object()?;
    let fields: Vec<(String, Value)> = keys
        .iter()
        .filter_map(|k| {
            obj.get(k)
                .or_else(|| defaults.get(k))
                .map(|v| (k.clone(), v.clone()))
        })
        .collect();
    (!fields.is_empty()).then(|| PathElement::key(fields))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use serde_json::json;

    use crate::fieldset::builtin::strings;

    fn strukt(fields: &[(&str, Shape)]) -> Shape {
        crate::fieldset::builtin::strukt(fields.to_vec())
    }

    fn map_list(keys: &[&str], items: Shape) -> Shape {
        Shape::List {
            kind: ListKind::Map {
                keys: keys.iter().map(|k| (*k).to_owned()).collect(),
                defaults: BTreeMap::new(),
            },
            items: Box::new(items),
        }
    }

    /// What kube records for `kubectl apply --server-side` of the docs' nginx Deployment
    /// (`SSA-01`, `SSA-07`): leaves only under structs, the atomic selector whole, the
    /// container item by its key with `"."`.
    #[test]
    fn an_applied_deployment() {
        let meta = strukt(&[("name", Shape::Scalar), ("labels", strings())]);
        let container = strukt(&[("name", Shape::Scalar), ("image", Shape::Scalar)]);
        let selector = Shape::Map {
            atomic: true,
            fields: BTreeMap::new(),
            entries: None,
        };
        let deployment = strukt(&[
            ("apiVersion", Shape::Scalar),
            ("kind", Shape::Scalar),
            ("metadata", meta.clone()),
            (
                "spec",
                strukt(&[
                    ("replicas", Shape::Scalar),
                    ("selector", selector),
                    (
                        "template",
                        strukt(&[
                            ("metadata", meta),
                            (
                                "spec",
                                strukt(&[("containers", map_list(&["name"], container))]),
                            ),
                        ]),
                    ),
                ]),
            ),
        ]);
        let obj = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"labels": {"app.kubernetes.io/name": "nginx"}},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app.kubernetes.io/name": "nginx"}},
                "template": {
                    "metadata": {"labels": {"app.kubernetes.io/name": "nginx"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.14.2"}]}
                }
            }
        });
        let mut set = FieldSet::of_value(&obj, &deployment);
        // What kube strips before recording (apiVersion, kind).
        let mut strip = FieldSet::new();
        strip.insert(&[PathElement::Field("apiVersion".into())]);
        strip.insert(&[PathElement::Field("kind".into())]);
        set = set.difference(&strip);
        assert_eq!(
            set.to_fields_v1().to_string(),
            concat!(
                r#"{"f:metadata":{"f:labels":{"f:app.kubernetes.io/name":{}}},"f:spec":{"f:replicas":{},"#,
                r#""f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app.kubernetes.io/name":{}}},"#,
                r#""f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{}}}}}}}"#
            )
        );
    }

    /// A CRD's schema markers decide (`SSA-08`, `SSA-09`): atomic lists by default, sets,
    /// map lists with a defaulted key, atomic maps, preserved unknown fields.
    #[test]
    fn a_custom_resource_through_its_schema() {
        let schema = crate::structural::Schema::parse(
            &json!({"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "owners": {"type": "array", "x-kubernetes-list-type": "set",
                               "items": {"type": "string"}},
                    "ports": {"type": "array", "x-kubernetes-list-type": "map",
                              "x-kubernetes-list-map-keys": ["port", "protocol"],
                              "items": {"type": "object", "required": ["port"], "properties": {
                                  "port": {"type": "integer"},
                                  "protocol": {"type": "string", "default": "TCP"},
                                  "name": {"type": "string"}}}},
                    "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                                 "additionalProperties": {"type": "string"}},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }}
            }}),
            "openAPIV3Schema",
        )
        .unwrap();
        let shape = Shape::of_schema(schema.root());
        let obj = json!({"spec": {
            "tags": ["a", "b"], "owners": ["me"],
            "ports": [{"port": 80, "name": "http"}],
            "selector": {"app": "x"},
            "extra": {"deep": {"x": 1}}
        }});
        assert_eq!(
            FieldSet::of_value(&obj, &shape).to_fields_v1(),
            json!({"f:spec": {
                "f:extra": {"f:deep": {".": {}, "f:x": {}}},
                "f:owners": {"v:\"me\"": {}},
                "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}, "f:port": {}}},
                "f:selector": {},
                "f:tags": {}
            }})
        );
    }

    #[test]
    fn deduced_objects_are_free_form() {
        // A schemaless custom resource: every key an entry, every list atomic.
        let obj = json!({"spec": {"size": 3, "tags": ["a"], "empty": {}, "none": null}});
        let set = FieldSet::of_value(&obj, &Shape::Deduced);
        assert_eq!(
            set.to_fields_v1(),
            json!({"f:spec": {".": {}, "f:empty": {}, "f:none": {}, "f:size": {}, "f:tags": {}}})
        );
    }

    #[test]
    fn lists_by_kind() {
        let shape = strukt(&[
            (
                "finalizers",
                Shape::List {
                    kind: ListKind::Set,
                    items: Box::new(Shape::Scalar),
                },
            ),
            (
                "args",
                Shape::List {
                    kind: ListKind::Atomic,
                    items: Box::new(Shape::Scalar),
                },
            ),
            (
                "ports",
                Shape::List {
                    kind: ListKind::Map {
                        keys: vec!["containerPort".into(), "protocol".into()],
                        defaults: [("protocol".to_owned(), json!("TCP"))].into(),
                    },
                    items: Box::new(strukt(&[
                        ("containerPort", Shape::Scalar),
                        ("protocol", Shape::Scalar),
                    ])),
                },
            ),
            (
                "envs",
                map_list(&["name"], strukt(&[("name", Shape::Scalar)])),
            ),
            ("empty", map_list(&["name"], Shape::Scalar)),
            ("none", Shape::Scalar),
            ("obj", strukt(&[("a", Shape::Scalar)])),
        ]);
        let obj = json!({
            "finalizers": ["b", "a"], "args": ["x"], "ports": [{"containerPort": 80}],
            "envs": [{"name": "A"}, {"name": "A"}, {"value": "no key"}],
            "empty": [], "none": null, "obj": {}
        });
        let set = FieldSet::of_value(&obj, &shape);
        assert_eq!(
            set.to_fields_v1().to_string(),
            concat!(
                r#"{"f:args":{},"f:envs":{".":{},"k:{\"name\":\"A\"}":{}},"#,
                r#""f:finalizers":{"v:\"a\"":{},"v:\"b\"":{}},"f:none":{},"f:obj":{},"#,
                r#""f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}"#
            )
        );
    }
}
