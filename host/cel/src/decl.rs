//! CEL declarations of structural schemas (`SchemaDeclType` in
//! `k8s.io/apiserver/pkg/cel/common/schemas.go`): the type of `self` at a schema node, with
//! the worst-case sizes the cost estimator uses.

use std::collections::BTreeMap;
use std::sync::Arc;

use wasmgate_apimachinery::structural::{AdditionalProperties, Node, NodeKind};

use crate::escape::escape;

/// The largest request kube-apiserver accepts (3 MiB): the base of every worst-case size.
pub(crate) const MAX_REQUEST_SIZE_BYTES: i64 = 3 * 1024 * 1024;
const MAX_DURATION_SIZE_JSON: i64 = 32;
const MAX_DATETIME_SIZE_JSON: i64 = 32;
const MIN_DURATION_SIZE_JSON: i64 = 3;
const JSON_DATE_SIZE: i64 = 12;
const MIN_DATETIME_SIZE_JSON: i64 = 21;
const MIN_STRING_SIZE: i64 = 2;
const MIN_BOOL_SIZE: i64 = 4;
const MIN_NUMBER_SIZE: i64 = 1;

/// The CEL view of one schema node.
#[derive(Debug)]
pub(crate) struct Decl {
    /// The CEL type name of an object (`selfType0.spec`); empty for other kinds.
    pub(crate) name: String,
    pub(crate) kind: Kind,
    /// Worst-case size: characters of a string, items of a list, entries of a map.
    pub(crate) max_elements: u64,
    /// Smallest JSON serialization of a value.
    pub(crate) min_size: i64,
    /// `nullable: true`.
    pub(crate) nullable: bool,
}

/// What a [`Decl`] describes.
#[derive(Debug)]
pub(crate) enum Kind {
    /// An object with properties: only the declared, escapable fields are visible.
    Object {
        fields: BTreeMap<String, Field>,
    },
    /// `additionalProperties`: `map(string, elem)`.
    Map {
        elem: Arc<Decl>,
    },
    /// An array.
    List {
        elem: Arc<Decl>,
        list_type: ListType,
    },
    Bool,
    Int,
    Double,
    String,
    /// `format: byte`.
    Bytes,
    /// `format: duration`.
    Duration,
    /// `format: date` (`date: true`) or `format: date-time`.
    Timestamp {
        date: bool,
    },
    /// `x-kubernetes-int-or-string`: `dyn`.
    IntOrString,
    /// Any JSON value, typed by what it is (`dyn`): the variables of admission policies,
    /// whose objects have no one schema.
    Dyn,
}

/// The declaration of untyped JSON ([`Kind::Dyn`]): every element is one too.
pub(crate) fn dynamic() -> &'static Arc<Decl> {
    static DYN: std::sync::LazyLock<Arc<Decl>> = std::sync::LazyLock::new(|| {
        Arc::new(Decl {
            name: String::new(),
            kind: Kind::Dyn,
            max_elements: u64::try_from(MAX_REQUEST_SIZE_BYTES).unwrap_or(u64::MAX),
            min_size: 1,
            nullable: true,
        })
    });
    &DYN
}

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListType {
    Atomic,
    Set,
    /// With the `x-kubernetes-list-map-keys` (property names as in JSON).
    Map(Vec<String>),
}

/// A declared field of an object.
#[derive(Debug)]
pub(crate) struct Field {
    /// The property name in JSON.
    pub(crate) json: String,
    pub(crate) decl: Arc<Decl>,
}

impl Decl {
    /// The field declared under the escaped CEL name.
    pub(crate) fn field(&self, cel_name: &str) -> Option<&Field> {
        match &self.kind {
            Kind::Object { fields } => fields.get(cel_name),
            _ => None,
        }
    }

    /// The element of a list or the value of a map.
    pub(crate) fn elem(&self) -> Option<&Arc<Decl>> {
        match &self.kind {
            Kind::List { elem, .. } | Kind::Map { elem } => Some(elem),
            Kind::Dyn => Some(dynamic()),
            _ => None,
        }
    }
}

/// The declaration of `self` at `node`, named `name` (objects only), or `None` when the
/// node cannot be seen from CEL (no type and no int-or-string).
pub(crate) fn decl_for(node: Node<'_>, resource_root: bool, name: &str) -> Option<Arc<Decl>> {
    build(node, resource_root, name).map(Arc::new)
}

fn simple(kind: Kind, min_size: i64, max: i64, nullable: bool) -> Decl {
    Decl {
        name: String::new(),
        kind,
        max_elements: u64::try_from(max.max(0)).unwrap_or(0),
        min_size,
        nullable,
    }
}

fn zero_if_negative(v: i64) -> i64 {
    v.max(0)
}

fn build(node: Node<'_>, resource_root: bool, name: &str) -> Option<Decl> {
    let nullable = node.nullable();
    if node.int_or_string() {
        return Some(simple(
            Kind::IntOrString,
            1,
            MAX_REQUEST_SIZE_BYTES - 2,
            nullable,
        ));
    }
    let kind = node.kind();
    if resource_root && node.type_name() == "object" && kind == NodeKind::Object {
        return Some(object(node, true, name));
    }
    match kind {
        NodeKind::List => {
            let items = node.items()?;
            let elem = build(items, items.embedded_resource(), &format!("{name}.@idx"))?;
            let max = match node.max_items() {
                Some(m) => zero_if_negative(m),
                None => (MAX_REQUEST_SIZE_BYTES - 2) / (elem.min_size + 1),
            };
            let list_type = match node.list_type() {
                Some("set") => ListType::Set,
                Some("map") => ListType::Map(node.map_keys().to_vec()),
                _ => ListType::Atomic,
            };
            Some(simple(
                Kind::List {
                    elem: Arc::new(elem),
                    list_type,
                },
                2,
                max,
                nullable,
            ))
        }
        NodeKind::Map => {
            let Some(AdditionalProperties::Schema(values)) = node.additional_properties() else {
                return None;
            };
            let elem = build(values, values.embedded_resource(), &format!("{name}.@elem"))?;
            let max = match node.max_properties() {
                Some(m) => zero_if_negative(m),
                None => (MAX_REQUEST_SIZE_BYTES - 2) / (elem.min_size + 6),
            };
            Some(simple(
                Kind::Map {
                    elem: Arc::new(elem),
                },
                2,
                max,
                nullable,
            ))
        }
        NodeKind::Object => Some(object(node, false, name)),
        NodeKind::String => {
            let max_length = node.max_length().map(zero_if_negative);
            Some(match node.format() {
                "byte" => simple(
                    Kind::Bytes,
                    MIN_STRING_SIZE,
                    max_length.unwrap_or(MAX_REQUEST_SIZE_BYTES - 2),
                    nullable,
                ),
                "duration" => simple(
                    Kind::Duration,
                    MIN_DURATION_SIZE_JSON,
                    MAX_DURATION_SIZE_JSON,
                    nullable,
                ),
                "date" => simple(
                    Kind::Timestamp { date: true },
                    JSON_DATE_SIZE,
                    JSON_DATE_SIZE,
                    nullable,
                ),
                "date-time" => simple(
                    Kind::Timestamp { date: false },
                    MIN_DATETIME_SIZE_JSON,
                    MAX_DATETIME_SIZE_JSON,
                    nullable,
                ),
                _ => {
                    let max = match max_length {
                        Some(m) => m.saturating_mul(4),
                        None => match node.enum_values() {
                            Some(values) if !values.is_empty() => values
                                .iter()
                                .filter_map(|v| v.as_str())
                                .map(|s| i64::try_from(s.len()).unwrap_or(i64::MAX))
                                .max()
                                .unwrap_or(0),
                            _ => MAX_REQUEST_SIZE_BYTES - 2,
                        },
                    };
                    simple(Kind::String, MIN_STRING_SIZE, max, nullable)
                }
            })
        }
        NodeKind::Boolean => Some(simple(Kind::Bool, MIN_BOOL_SIZE, 0, nullable)),
        NodeKind::Number => Some(simple(Kind::Double, MIN_NUMBER_SIZE, 0, nullable)),
        NodeKind::Integer => Some(simple(Kind::Int, MIN_NUMBER_SIZE, 0, nullable)),
        NodeKind::IntOrString | NodeKind::Any => None,
    }
}

fn string_decl() -> Arc<Decl> {
    Arc::new(simple(
        Kind::String,
        MIN_STRING_SIZE,
        MAX_REQUEST_SIZE_BYTES - 2,
        false,
    ))
}

/// Whether the resource root already declares `kind`, `apiVersion` and
/// `metadata.{name,generateName}` as strings (`WithTypeAndObjectMeta` keeps it then).
fn has_type_and_object_meta(node: Node<'_>) -> bool {
    let is = |n: Option<Node<'_>>, t: &str| n.is_some_and(|n| n.type_name() == t);
    let meta = node.property("metadata");
    is(node.property("kind"), "string")
        && is(node.property("apiVersion"), "string")
        && is(meta, "object")
        && meta.is_some_and(|m| m.properties().next().is_some())
        && is(meta.and_then(|m| m.property("name")), "string")
        && is(meta.and_then(|m| m.property("generateName")), "string")
}

fn object(node: Node<'_>, resource_root: bool, name: &str) -> Decl {
    let replace_meta = resource_root && !has_type_and_object_meta(node);
    let required = node.required();
    let mut fields = BTreeMap::new();
    let mut min_size: i64 = 2;
    for (prop, schema) in node.properties() {
        if replace_meta && matches!(prop, "kind" | "apiVersion" | "metadata") {
            continue;
        }
        let Some(escaped) = escape(prop) else {
            // Not accessible, but still counted in the minimal size below.
            if let Some(decl) = build(schema, schema.embedded_resource(), "")
                && required.iter().any(|r| r == prop)
                && schema.default_value().is_none()
            {
                min_size += i64::try_from(prop.len()).unwrap_or(0) + decl.min_size + 4;
            }
            continue;
        };
        let field_name = format!("{name}.{escaped}");
        let Some(decl) = build(schema, schema.embedded_resource(), &field_name) else {
            continue;
        };
        if required.iter().any(|r| r == prop) && schema.default_value().is_none() {
            min_size += i64::try_from(prop.len()).unwrap_or(0) + decl.min_size + 4;
        }
        fields.insert(
            escaped,
            Field {
                json: prop.to_owned(),
                decl: Arc::new(decl),
            },
        );
    }
    if replace_meta {
        for prop in ["kind", "apiVersion"] {
            fields.insert(
                prop.to_owned(),
                Field {
                    json: prop.to_owned(),
                    decl: string_decl(),
                },
            );
        }
        let mut meta_fields = BTreeMap::new();
        for prop in ["name", "generateName"] {
            meta_fields.insert(
                prop.to_owned(),
                Field {
                    json: prop.to_owned(),
                    decl: string_decl(),
                },
            );
        }
        fields.insert(
            "metadata".to_owned(),
            Field {
                json: "metadata".to_owned(),
                decl: Arc::new(Decl {
                    name: format!("{name}.metadata"),
                    kind: Kind::Object {
                        fields: meta_fields,
                    },
                    max_elements: 0,
                    min_size: 2,
                    nullable: false,
                }),
            },
        );
    }
    Decl {
        name: name.to_owned(),
        kind: Kind::Object { fields },
        max_elements: 0,
        min_size,
        nullable: node.nullable(),
    }
}
