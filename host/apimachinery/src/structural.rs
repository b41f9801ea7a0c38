//! Structural schemas of CustomResourceDefinitions (`apiextensions.k8s.io/v1`).
//!
//! One [`Schema`] is one CRD version's `openAPIV3Schema`, parsed and checked once when the
//! CRD is written and then used on every write of a custom resource:
//!
//! * [`Schema::parse`] checks what kube-apiserver's CRD validation checks of a schema
//!   (CRD-03 structural rules, CRD-04 forbidden constructs, CRD-07 int-or-string, CRD-08
//!   embedded resources, list types, `x-kubernetes-validations` shape, defaults that validate
//!   and are pruned), with its field paths and wording;
//! * [`Schema::prune`] drops unknown fields (CRD-05, CRD-06, CRD-08);
//! * [`Schema::apply_defaults`] drops non-nullable nulls and applies `default`s (CRDV-04,
//!   CRDV-05);
//! * [`Schema::validate`] is the OpenAPI value validation of a custom resource (CRDV-01),
//!   reported as kube-apiserver reports it (ERR-08);
//! * [`Schema::published_v3`] is the schema kube publishes in OpenAPI v3 (DISC-11); the v2
//!   form is derived from the v3 document by [`crate::openapi_v2`];
//! * [`Schema::root`] and [`Node`] let other features (CEL) walk the schema.
//!
//! Kubernetes v1.32 is the reference:
//! * parsing: `apiextensions-apiserver` `pkg/apis/apiextensions/validation/validation.go`
//!   (`ValidateCustomResourceDefinitionOpenAPISchema`), `pkg/apiserver/schema/convert.go`
//!   (`NewStructural`), `validation.go` and `complete.go` (`ValidateStructural`),
//!   `defaulting/validation.go` (`ValidateDefaults`);
//! * pruning: `schema/pruning/algorithm.go`, `schema/objectmeta/coerce.go`;
//! * defaulting: `schema/defaulting/prunenulls.go`, `schema/defaulting/algorithm.go`;
//! * validation: `pkg/apiserver/validation/validation.go` over `k8s.io/kube-openapi`
//!   `pkg/validation/validate` (the validator order, `MatchCount` for `anyOf`/`oneOf`, the
//!   message texts of `pkg/validation/errors`), its `strfmt` registry (formats) and
//!   `schema/objectmeta/validation.go`, `schema/listtype/validation.go`;
//! * publishing: `schema/unfold.go`, `schema/kubeopenapi.go`,
//!   `controller/openapi/builder/builder.go`.
//!
//! Known differences from v1.32:
//! * Patterns use the `regex` crate after rewriting Go's ASCII-only `\d`, `\w`, `\s`, `\b`
//!   and `\Q…\E`; compile errors are mapped onto Go's texts for the common cases only.
//! * Values that Go prints with `%#v` (maps, slices) are printed as JSON (as in
//!   [`crate::validation`]); floats in a `bad value` are printed by `serde_json`, not Go.
//! * `email` is a simplified `net/mail.ParseAddress`; `uri` a simplified
//!   `url.ParseRequestURI`.
//! * CEL (`x-kubernetes-validations` compilation, cost) and ratcheting of unchanged fields
//!   on update are not done here; `x-kubernetes-validations[].fieldPath` is not resolved.
//! * Properties are visited in name order where Go visits a map in random order.
//!
//! Where the seed's prose and v1.32 differ; this module follows v1.32:
//! * `deprecated`, `discriminator`, `readOnly`, `writeOnly` and `xml` are not fields of
//!   `JSONSchemaProps`: kube's decoder drops them (or rejects them as unknown fields under
//!   `fieldValidation=Strict`), and [`Schema::parse`] ignores them.
//! * `additionalProperties: false` is rejected at the root and next to `properties` only;
//!   elsewhere it is accepted and then allows no keys at all.
//! * The unfolded int-or-string `anyOf` is published in v3 ([`Schema::published_v3`]); the
//!   v2 document ([`crate::openapi_v2`]) drops it again with the other junctors.

use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

use regex::Regex;
use serde_json::{Map, Value};

use crate::gofmt::{go_float, go_json};
use crate::schema::json_kind;
use crate::validation::{
    FieldError, child, go_quote, index, is_dns1035_label, validate_object_meta,
};

// =============================================================================================
// Public API
// =============================================================================================

/// A parsed structural schema (one CRD version's `openAPIV3Schema`). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Schema {
    inner: Arc<Inner>,
}

/// A handle to one node of a [`Schema`] (the root, a property, `items`, …).
#[derive(Debug, Clone, Copy)]
pub struct Node<'a> {
    inner: &'a Inner,
    id: usize,
}

/// What a node describes, as a CEL type checker or a printer would see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// `type: object` with `properties` (possibly none).
    Object,
    /// `type: object` with an `additionalProperties` schema.
    Map,
    /// `type: array`.
    List,
    /// `type: string` (see [`Node::format`] for `byte`, `date`, `date-time`, `duration`).
    String,
    /// `type: integer`.
    Integer,
    /// `type: number`.
    Number,
    /// `type: boolean`.
    Boolean,
    /// `x-kubernetes-int-or-string: true`.
    IntOrString,
    /// No type: `x-kubernetes-preserve-unknown-fields: true` (any value).
    Any,
}

/// The `additionalProperties` of an object node.
#[derive(Debug, Clone, Copy)]
pub enum AdditionalProperties<'a> {
    /// `additionalProperties: true|false`.
    Allowed(bool),
    /// `additionalProperties: {schema}`.
    Schema(Node<'a>),
}

impl Schema {
    /// Parses and checks a CRD version's `openAPIV3Schema`. `path` prefixes error paths,
    /// e.g. `spec.versions[0].schema.openAPIV3Schema`. Returns every error found, worded as
    /// kube-apiserver words them (`…properties[spec].type: Required value: must not be empty
    /// for specified object fields`).
    ///
    /// A value of the wrong JSON type for a schema keyword (`type: 5`) is reported as a
    /// `TypeInvalid` error; kube-apiserver rejects those earlier, when decoding the CRD.
    /// Unknown keywords (`readOnly`, `xml`, …) are ignored here, as kube's decoder drops them.
    pub fn parse(json: &Value, path: &str) -> Result<Schema, Vec<FieldError>> {
        let mut dec = Decoder::default();
        let root = dec.decode(json, path);
        if !dec.errs.is_empty() {
            return Err(dec.errs);
        }
        mark_subtrees(&mut dec.nodes);
        let inner = Inner {
            nodes: dec.nodes,
            root,
        };
        let errs = check_crd_schema(&inner, path);
        if errs.is_empty() {
            Ok(Schema {
                inner: Arc::new(inner),
            })
        } else {
            Err(errs)
        }
    }

    /// The root node.
    pub fn root(&self) -> Node<'_> {
        Node {
            inner: &self.inner,
            id: self.inner.root,
        }
    }

    /// Prunes unknown fields in place (CRD-05, CRD-06, CRD-08), as the CR decoder does:
    /// fields not specified by the schema are removed, except under
    /// `x-kubernetes-preserve-unknown-fields` (pruning resumes under properties specified
    /// there); `apiVersion`, `kind` and `metadata` are kept at the root and in embedded
    /// resources, and unknown `ObjectMeta` fields of embedded resources are dropped.
    ///
    /// Returns the paths of the removed fields (`spec.foo`, `spec.items[0].bar`), sorted, as
    /// kube reports them for `fieldValidation=Strict|Warn` (`unknown field "spec.foo"`). The
    /// root `metadata` is not touched: the server handles `ObjectMeta` itself.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        let nodes = &self.inner.nodes;
        let mut pruner = Pruner {
            nodes,
            path: String::new(),
            out: Vec::new(),
        };
        pruner.prune(obj, Some(self.inner.root), true);
        let mut paths = pruner.out;
        paths.sort();
        let mut meta = Vec::new();
        coerce_embedded(nodes, obj, Some(self.inner.root), None, &mut meta);
        meta.sort();
        paths.extend(meta);
        paths
    }

    /// Whether the schema specifies any `default` keyword in its structural part (the root,
    /// `properties`, `items`, `additionalProperties`; [`Schema::parse`] rejects defaults
    /// under `allOf`/`anyOf`/`oneOf`/`not`). A property named `default`, or a `default` key
    /// inside an `enum` or `example` value, does not count.
    pub fn has_defaults(&self) -> bool {
        self.inner.nodes[self.inner.root].sub_default
    }

    /// Drops `null`s that are neither nullable nor defaulted (CRDV-05), then applies
    /// `default`s (CRDV-04), in place, as kube's decoder and defaulter do: defaults for
    /// missing properties and for non-nullable `null`s, in objects, array items and
    /// `additionalProperties` values; a defaulted value is itself defaulted; a `null` of a
    /// nullable field is kept and not defaulted.
    pub fn apply_defaults(&self, obj: &mut Value) {
        let nodes = &self.inner.nodes;
        prune_nulls(nodes, obj, Some(self.inner.root));
        apply_defaults(nodes, obj, Some(self.inner.root));
    }

    /// Validates a whole custom resource (CRDV-01) as kube-apiserver's CR strategy does
    /// after its `ObjectMeta` checks: the OpenAPI value validation, then embedded resources,
    /// then list sets and maps. One error per violation, with kube's path and
    /// wording: `spec.replicas: Invalid value: 15: spec.replicas in body should be less than or
    /// equal to 10`.
    pub fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = self.validate_openapi(obj);
        errs.extend(self.validate_embedded_resources(obj));
        errs.extend(self.validate_list_sets_and_maps(obj));
        errs
    }

    /// The OpenAPI value validation alone (kube-openapi's `SchemaValidator` on the whole
    /// object, as `ValidateCustomResource(nil, …)`): type, nullable, format, enum, pattern,
    /// bounds, lengths, item and property counts, `uniqueItems`, `required`, `allOf`, `anyOf`,
    /// `oneOf`, `not`. `metadata` is only checked as far as the schema specifies it
    /// (`name`, `generateName`). Errors not tied to a field (`anyOf` failures) carry the field
    /// `<nil>`, as in kube.
    fn validate_openapi(&self, obj: &Value) -> Vec<FieldError> {
        let v = Validator {
            nodes: &self.inner.nodes,
            mode: Mode::CustomResource,
        };
        let mut path = String::new();
        let result = v.validate(self.inner.root, &mut path, obj);
        to_field_errors(result.errors, None)
    }

    /// The status subresource's validation of `obj.status` against the schema of
    /// `properties.status` (`ValidateStatusUpdate`): error fields are prefixed `status.`,
    /// messages name the field relative to `status`, as in kube. Nothing when the object has
    /// no `status` or the schema does not specify it.
    pub fn validate_status(&self, obj: &Value) -> Vec<FieldError> {
        let Some(status) = obj.get("status") else {
            return Vec::new();
        };
        let Some(node) = self.root().property("status") else {
            return Vec::new();
        };
        let v = Validator {
            nodes: &self.inner.nodes,
            mode: Mode::CustomResource,
        };
        let mut path = String::new();
        let result = v.validate(node.id, &mut path, status);
        to_field_errors(result.errors, Some("status"))
    }

    /// `apiVersion`, `kind` and `metadata` of `x-kubernetes-embedded-resource` values
    /// (`objectmeta.Validate`): `apiVersion` and `kind` are required strings, `kind` a
    /// DNS-1035 label up to case, `metadata` valid `ObjectMeta`.
    fn validate_embedded_resources(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        validate_embedded(
            &self.inner.nodes,
            obj,
            Some(self.inner.root),
            false,
            None,
            &mut errs,
        );
        errs
    }

    /// Uniqueness in `x-kubernetes-list-type: set|map` lists (`ValidateListSetsAndMaps`):
    /// `Duplicate value` errors on the repeated items or keys.
    fn validate_list_sets_and_maps(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let Value::Object(map) = obj {
            validate_list_sets_and_maps_object(
                &self.inner.nodes,
                None,
                self.inner.root,
                map,
                &mut errs,
            );
        }
        errs
    }

    /// The definition kube publishes in OpenAPI v3 for this version's kind (DISC-11), as
    /// `BuildOpenAPIV3` builds it: int-or-string unfolded, everything else kept; then
    /// `metadata` (a `#/components/schemas/…` reference to `ObjectMeta`, wrapped in `allOf`
    /// as kube-openapi's builder3 wraps references with siblings), `apiVersion` and `kind`
    /// added at the root and in embedded resources. The caller adds
    /// `x-kubernetes-group-version-kind`.
    pub fn published_v3(&self) -> Value {
        publish(&self.inner)
    }
}

impl<'a> Node<'a> {
    fn data(&self) -> &'a NodeData {
        &self.inner.nodes[self.id]
    }

    fn at_id(&self, id: usize) -> Node<'a> {
        Node {
            inner: self.inner,
            id,
        }
    }

    /// What the node describes.
    pub fn kind(&self) -> NodeKind {
        let d = self.data();
        if d.x_int_or_string {
            return NodeKind::IntOrString;
        }
        match d.type_.as_str() {
            "object" => match d.additional_properties {
                Some(SchemaOrBool::Schema(_)) => NodeKind::Map,
                _ => NodeKind::Object,
            },
            "array" => NodeKind::List,
            "string" => NodeKind::String,
            "integer" => NodeKind::Integer,
            "number" => NodeKind::Number,
            "boolean" => NodeKind::Boolean,
            _ => NodeKind::Any,
        }
    }

    /// The `type` keyword (`""` when absent).
    pub fn type_name(&self) -> &'a str {
        &self.data().type_
    }

    /// The `format` keyword (`""` when absent).
    pub fn format(&self) -> &'a str {
        &self.data().format
    }

    /// The `default` value.
    pub fn default_value(&self) -> Option<&'a Value> {
        self.data().default.as_ref()
    }

    /// `nullable: true`.
    pub fn nullable(&self) -> bool {
        self.data().nullable
    }

    /// The specified properties, in name order.
    pub fn properties(&self) -> impl Iterator<Item = (&'a str, Node<'a>)> + 'a {
        let inner = self.inner;
        self.data()
            .properties
            .iter()
            .flatten()
            .map(move |(k, id)| (k.as_str(), Node { inner, id: *id }))
    }

    /// One specified property.
    pub fn property(&self, name: &str) -> Option<Node<'a>> {
        self.data().property(name).map(|id| self.at_id(id))
    }

    /// The `items` schema of an array node.
    pub fn items(&self) -> Option<Node<'a>> {
        match self.data().items {
            Some(Items::Schema(id)) => Some(self.at_id(id)),
            _ => None,
        }
    }

    /// The `additionalProperties`, if set.
    pub fn additional_properties(&self) -> Option<AdditionalProperties<'a>> {
        match self.data().additional_properties {
            None => None,
            Some(SchemaOrBool::Bool(b)) => Some(AdditionalProperties::Allowed(b)),
            Some(SchemaOrBool::Schema(id)) => Some(AdditionalProperties::Schema(self.at_id(id))),
        }
    }

    /// `required` property names.
    pub fn required(&self) -> &'a [String] {
        self.data().required.as_deref().unwrap_or(&[])
    }

    /// `enum` values.
    pub fn enum_values(&self) -> Option<&'a [Value]> {
        self.data().enum_.as_deref()
    }

    /// `x-kubernetes-preserve-unknown-fields: true`.
    pub fn preserves_unknown_fields(&self) -> bool {
        self.data().preserves()
    }

    /// `x-kubernetes-list-type` (`atomic`, `set`, `map`).
    pub fn list_type(&self) -> Option<&'a str> {
        self.data().x_list_type.as_deref()
    }

    /// `x-kubernetes-list-map-keys`.
    pub fn map_keys(&self) -> &'a [String] {
        &self.data().x_list_map_keys
    }

    /// `x-kubernetes-map-type` (`atomic`, `granular`).
    pub fn map_type(&self) -> Option<&'a str> {
        self.data().x_map_type.as_deref()
    }

    /// `x-kubernetes-embedded-resource: true`.
    pub fn embedded_resource(&self) -> bool {
        self.data().x_embedded_resource
    }

    /// `x-kubernetes-int-or-string: true`.
    pub fn int_or_string(&self) -> bool {
        self.data().x_int_or_string
    }

    /// The raw `x-kubernetes-validations` rules (`{rule, message, messageExpression, reason,
    /// fieldPath, optionalOldSelf}` objects).
    pub fn validations(&self) -> &'a [Value] {
        &self.data().x_validations
    }

    /// `maxItems`.
    pub fn max_items(&self) -> Option<i64> {
        self.data().max_items
    }

    /// `maxLength` (characters).
    pub fn max_length(&self) -> Option<i64> {
        self.data().max_length
    }

    /// `maxProperties`.
    pub fn max_properties(&self) -> Option<i64> {
        self.data().max_properties
    }
}

// =============================================================================================
// Schema nodes and decoding
// =============================================================================================

#[derive(Debug)]
struct Inner {
    nodes: Vec<NodeData>,
    root: usize,
}

#[derive(Debug, Clone, Copy)]
enum SchemaOrBool {
    Bool(bool),
    Schema(usize),
}

#[derive(Debug, Clone)]
enum Items {
    Schema(usize),
    Array(Vec<usize>),
}

#[derive(Debug)]
enum Dependency {
    Schema(usize),
    Property,
}

#[derive(Debug)]
struct Pattern {
    source: String,
    regex: Result<Regex, String>,
}

/// One schema node, structural or under a junctor. Everything kube's
/// `JSONSchemaProps` holds that matters here; keyword presence is kept where kube's
/// behaviour depends on it.
#[derive(Debug, Default)]
struct NodeData {
    // Generic.
    type_: String,
    description: Option<String>,
    title: Option<String>,
    default: Option<Value>,
    nullable: bool,
    // Value validation.
    format: String,
    format_kind: Option<StrFormat>,
    maximum: Option<f64>,
    exclusive_maximum: bool,
    minimum: Option<f64>,
    exclusive_minimum: bool,
    max_length: Option<i64>,
    min_length: Option<i64>,
    pattern: Option<Pattern>,
    max_items: Option<i64>,
    min_items: Option<i64>,
    unique_items: bool,
    multiple_of: Option<f64>,
    enum_: Option<Vec<Value>>,
    max_properties: Option<i64>,
    min_properties: Option<i64>,
    required: Option<Vec<String>>,
    all_of: Option<Vec<usize>>,
    one_of: Option<Vec<usize>>,
    any_of: Option<Vec<usize>>,
    not: Option<usize>,
    // Structure.
    items: Option<Items>,
    properties: Option<Vec<(String, usize)>>,
    additional_properties: Option<SchemaOrBool>,
    // Unsupported by CRDs.
    id: String,
    schema_url: String,
    ref_: Option<String>,
    pattern_properties: Option<Vec<(String, usize)>>,
    definitions: Option<Vec<(String, usize)>>,
    dependencies: Option<Vec<(String, Dependency)>>,
    additional_items: Option<SchemaOrBool>,
    // Extensions.
    x_preserve_unknown_fields: Option<bool>,
    x_embedded_resource: bool,
    x_int_or_string: bool,
    x_list_map_keys: Vec<String>,
    x_list_map_keys_set: bool,
    x_list_type: Option<String>,
    x_map_type: Option<String>,
    x_validations: Vec<Value>,
    // Derived: whether this structural subtree has embedded resources / set or map lists /
    // `default`s.
    sub_embedded: bool,
    sub_list_set_or_map: bool,
    sub_default: bool,
}

impl NodeData {
    fn property(&self, name: &str) -> Option<usize> {
        let props = self.properties.as_ref()?;
        props
            .binary_search_by(|(k, _)| k.as_str().cmp(name))
            .ok()
            .map(|i| props[i].1)
    }

    fn has_properties(&self) -> bool {
        self.properties.as_ref().is_some_and(|p| !p.is_empty())
    }

    fn props(&self) -> &[(String, usize)] {
        self.properties.as_deref().unwrap_or(&[])
    }

    fn preserves(&self) -> bool {
        self.x_preserve_unknown_fields == Some(true)
    }

    fn items_schema(&self) -> Option<usize> {
        match self.items {
            Some(Items::Schema(id)) => Some(id),
            _ => None,
        }
    }

    fn additional_schema(&self) -> Option<usize> {
        match self.additional_properties {
            Some(SchemaOrBool::Schema(id)) => Some(id),
            _ => None,
        }
    }

    fn all_of(&self) -> &[usize] {
        self.all_of.as_deref().unwrap_or(&[])
    }

    fn any_of(&self) -> &[usize] {
        self.any_of.as_deref().unwrap_or(&[])
    }

    fn one_of(&self) -> &[usize] {
        self.one_of.as_deref().unwrap_or(&[])
    }
}

#[derive(Default)]
struct Decoder {
    nodes: Vec<NodeData>,
    errs: Vec<FieldError>,
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
    fn decode(&mut self, v: &Value, path: &str) -> usize {
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
fn mark_subtrees(nodes: &mut [NodeData]) {
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

// =============================================================================================
// Field paths (k8s.io/apimachinery field.Path notation)
// =============================================================================================

fn map_key(path: &str, key: &str) -> String {
    format!("{path}[{key}]")
}

fn opt_child(path: Option<&str>, name: &str) -> String {
    match path {
        Some(p) => child(p, name),
        None => name.to_owned(),
    }
}

fn opt_key(path: Option<&str>, key: &str) -> String {
    format!("{}[{key}]", path.unwrap_or(""))
}

fn opt_index(path: Option<&str>, i: usize) -> String {
    format!("{}[{i}]", path.unwrap_or(""))
}

// =============================================================================================
// Checking a CRD schema (CRD-03, CRD-04, CRD-07, CRD-08)
// =============================================================================================

/// `validateCustomResourceDefinitionValidation` for a v1 CRD version's schema: root
/// `nullable`, then the structural checks (or, when those pass, the defaults), then the
/// per-node OpenAPI checks; `NewStructural`'s own errors only when nothing else was found.
fn check_crd_schema(inner: &Inner, path: &str) -> Vec<FieldError> {
    let nodes = &inner.nodes;
    let root = inner.root;
    let mut errs = Vec::new();
    if nodes[root].nullable {
        errs.push(FieldError::forbidden(
            child(path, "nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let init_err = new_structural_error(nodes, root);
    if init_err.is_none() {
        let mut structural = Vec::new();
        let sc = StructuralChecks { nodes };
        sc.invariants(root, Level::Root, path, &mut structural);
        sc.completeness_vv(root, Some(root), path, path, &mut structural);
        if structural.is_empty() {
            errs.extend(validate_defaults(nodes, root, path));
        } else {
            let mut keyed: Vec<(String, FieldError)> =
                structural.into_iter().map(|e| (e.to_string(), e)).collect();
            keyed.sort_by(|a, b| a.0.cmp(&b.0));
            errs.extend(keyed.into_iter().map(|(_, e)| e));
        }
    }
    let mut spec = SpecChecks {
        nodes,
        errs: Vec::new(),
    };
    spec.check(root, path, &Ssv::top(), true);
    errs.extend(spec.errs);
    if errs.is_empty()
        && let Some(msg) = init_err
    {
        errs.push(FieldError::invalid(path, "", msg));
    }
    errs
}

/// `specStandardValidatorV3`'s context: whether defaults are allowed here, and whether we
/// are inside the schema of `apiVersion`, `kind` or `metadata` of a resource.
#[derive(Clone)]
struct Ssv {
    allow_defaults: bool,
    disallow_reason: String,
    inside_meta: bool,
}

impl Ssv {
    fn top() -> Ssv {
        Ssv {
            allow_defaults: true,
            disallow_reason: String::new(),
            inside_meta: false,
        }
    }

    fn forbid_defaults(&self, reason: impl Into<String>) -> Ssv {
        Ssv {
            allow_defaults: false,
            disallow_reason: reason.into(),
            inside_meta: self.inside_meta,
        }
    }
}

const OPENAPI_V3_TYPES: &[&str] = &["array", "boolean", "integer", "number", "object", "string"];
const SUPPORTED_VALIDATION_REASONS: &[&str] = &[
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// `ValidateCustomResourceDefinitionOpenAPISchema` with the v1 options
/// (`requireValidPropertyType`, `requireAtomicSetType`, `requireMapListKeysMapSetValidation`).
struct SpecChecks<'a> {
    nodes: &'a [NodeData],
    errs: Vec<FieldError>,
}

impl SpecChecks<'_> {
    fn check(&mut self, id: usize, path: &str, ssv: &Ssv, is_root: bool) {
        let nodes = self.nodes;
        let s = &nodes[id];
        self.standard(s, path, ssv);

        if s.unique_items {
            self.errs.push(FieldError::forbidden(
                child(path, "uniqueItems"),
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            ));
        }

        if let Some(ap) = s.additional_properties {
            if s.has_properties() && !matches!(ap, SchemaOrBool::Bool(true)) {
                self.errs.push(FieldError::forbidden(
                    child(path, "additionalProperties"),
                    "additionalProperties and properties are mutual exclusive",
                ));
            }
            if let SchemaOrBool::Schema(sub) = ap {
                let sub_ssv = if ssv.inside_meta {
                    ssv.forbid_defaults("inside additionalProperties applying to object metadata")
                } else {
                    ssv.clone()
                };
                self.check(sub, &child(path, "additionalProperties"), &sub_ssv, false);
            }
        }

        for (name, sub) in s.props() {
            let mut sub_ssv = ssv.clone();
            if (is_root || s.x_embedded_resource)
                && matches!(name.as_str(), "metadata" | "kind" | "apiVersion")
            {
                sub_ssv.inside_meta = true;
                if is_root {
                    sub_ssv = sub_ssv.forbid_defaults(format!("in top-level {name}"));
                }
            }
            self.check(
                *sub,
                &map_key(&child(path, "properties"), name),
                &sub_ssv,
                false,
            );
        }

        if let Some(not) = s.not {
            self.check(not, &child(path, "not"), ssv, false);
        }
        for (key, list) in [
            ("allOf", s.all_of()),
            ("oneOf", s.one_of()),
            ("anyOf", s.any_of()),
        ] {
            for (i, sub) in list.iter().enumerate() {
                self.check(*sub, &index(&child(path, key), i), ssv, false);
            }
        }
        for (name, sub) in s.definitions.iter().flatten() {
            self.check(
                *sub,
                &map_key(&child(path, "definitions"), name),
                ssv,
                false,
            );
        }
        match &s.items {
            Some(Items::Schema(sub)) => self.check(*sub, &child(path, "items"), ssv, false),
            Some(Items::Array(list)) => {
                for (i, sub) in list.iter().enumerate() {
                    self.check(*sub, &index(&child(path, "items"), i), ssv, false);
                }
            }
            None => {}
        }
        for (name, dep) in s.dependencies.iter().flatten() {
            if let Dependency::Schema(sub) = dep {
                self.check(
                    *sub,
                    &map_key(&child(path, "dependencies"), name),
                    ssv,
                    false,
                );
            }
        }

        if s.x_preserve_unknown_fields == Some(false) {
            self.errs.push(FieldError::invalid(
                child(path, "x-kubernetes-preserve-unknown-fields"),
                false,
                "must be true or undefined",
            ));
        }

        self.extensions(s, path);
        self.validation_rules(s, path);
    }

    /// `specStandardValidatorV3.validate`.
    fn standard(&mut self, s: &NodeData, path: &str, ssv: &Ssv) {
        if !s.type_.is_empty() && !OPENAPI_V3_TYPES.contains(&s.type_.as_str()) {
            self.errs.push(FieldError::not_supported(
                child(path, "type"),
                s.type_.clone(),
                OPENAPI_V3_TYPES,
            ));
        }
        if s.default.is_some() && !ssv.allow_defaults {
            let mut detail = "must not be set".to_owned();
            if !ssv.disallow_reason.is_empty() {
                detail.push(' ');
                detail.push_str(&ssv.disallow_reason);
            }
            self.errs
                .push(FieldError::forbidden(child(path, "default"), detail));
        }
        if !s.id.is_empty() {
            self.errs.push(FieldError::forbidden(
                child(path, "id"),
                "id is not supported",
            ));
        }
        if s.additional_items.is_some() {
            self.errs.push(FieldError::forbidden(
                child(path, "additionalItems"),
                "additionalItems is not supported",
            ));
        }
        if s.pattern_properties.as_ref().is_some_and(|p| !p.is_empty()) {
            self.errs.push(FieldError::forbidden(
                child(path, "patternProperties"),
                "patternProperties is not supported",
            ));
        }
        if s.definitions.as_ref().is_some_and(|d| !d.is_empty()) {
            self.errs.push(FieldError::forbidden(
                child(path, "definitions"),
                "definitions is not supported",
            ));
        }
        if s.dependencies.is_some() {
            self.errs.push(FieldError::forbidden(
                child(path, "dependencies"),
                "dependencies is not supported",
            ));
        }
        if s.ref_.is_some() {
            self.errs.push(FieldError::forbidden(
                child(path, "$ref"),
                "$ref is not supported",
            ));
        }
        if s.type_ == "null" {
            self.errs.push(FieldError::forbidden(
                child(path, "type"),
                "type cannot be set to null, use nullable as an alternative",
            ));
        }
        if matches!(&s.items, Some(Items::Array(list)) if !list.is_empty()) {
            self.errs.push(FieldError::forbidden(
                child(path, "items"),
                "items must be a schema object and not an array",
            ));
        }
        if ssv.inside_meta && s.x_embedded_resource {
            self.errs.push(FieldError::forbidden(
                child(path, "x-kubernetes-embedded-resource"),
                "must not be used inside of resource meta",
            ));
        }
    }

    /// Map type, list type and list-map-key rules.
    fn extensions(&mut self, s: &NodeData, path: &str) {
        let nodes = self.nodes;
        if let Some(map_type) = &s.x_map_type {
            if s.type_ != "object" {
                let detail = "must be object if x-kubernetes-map-type is specified";
                self.errs.push(type_mismatch(path, &s.type_, detail));
            }
            if map_type != "atomic" && map_type != "granular" {
                self.errs.push(FieldError::not_supported(
                    child(path, "x-kubernetes-map-type"),
                    map_type.clone(),
                    &["atomic", "granular"],
                ));
            }
        }

        let items = s.items_schema().map(|id| &nodes[id]);
        if s.x_list_type.is_some() && s.type_ != "array" {
            let detail = "must be array if x-kubernetes-list-type is specified";
            self.errs.push(type_mismatch(path, &s.type_, detail));
        } else if s.x_list_type.as_deref() == Some("set")
            && let Some(is) = items
        {
            let items_path = child(path, "items");
            match is.type_.as_str() {
                "array" if is.x_list_type.as_deref().is_some_and(|t| t != "atomic") => {
                    self.errs.push(FieldError::invalid(
                        child(&items_path, "x-kubernetes-list-type"),
                        is.x_list_type.clone().unwrap_or_default(),
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    ));
                }
                "object" if is.x_map_type.as_deref() != Some("atomic") => {
                    // kube passes the items' list type (usually unset) as the value.
                    self.errs.push(FieldError::invalid(
                        child(&items_path, "x-kubernetes-map-type"),
                        is.x_list_type.clone().unwrap_or_else(|| "null".to_owned()),
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    ));
                }
                _ => {}
            }
        }

        if let Some(list_type) = &s.x_list_type
            && !matches!(list_type.as_str(), "atomic" | "set" | "map")
        {
            self.errs.push(FieldError::not_supported(
                child(path, "x-kubernetes-list-type"),
                list_type.clone(),
                &["atomic", "set", "map"],
            ));
        }

        if !s.x_list_map_keys.is_empty() {
            let detail = "must be map if x-kubernetes-list-map-keys is non-empty";
            match &s.x_list_type {
                None => self.errs.push(FieldError::required(
                    child(path, "x-kubernetes-list-type"),
                    detail,
                )),
                Some(t) if t != "map" => self.errs.push(FieldError::invalid(
                    child(path, "x-kubernetes-list-type"),
                    t.clone(),
                    detail,
                )),
                Some(_) => {}
            }
        }

        if s.x_list_type.as_deref() == Some("map") {
            if s.x_list_map_keys.is_empty() {
                self.errs.push(FieldError::required(
                    child(path, "x-kubernetes-list-map-keys"),
                    "must not be empty if x-kubernetes-list-type is map",
                ));
            }
            match &s.items {
                None => self.errs.push(FieldError::required(
                    child(path, "items"),
                    "must have a schema if x-kubernetes-list-type is map",
                )),
                Some(Items::Array(_)) => self.errs.push(FieldError::invalid(
                    child(path, "items"),
                    "",
                    "must only have a single schema if x-kubernetes-list-type is map",
                )),
                Some(Items::Schema(_)) => {}
            }
            if let Some(is) = items {
                let items_path = child(path, "items");
                if is.type_ != "object" {
                    self.errs.push(FieldError::invalid(
                        child(&items_path, "type"),
                        is.type_.clone(),
                        "must be object if parent array's x-kubernetes-list-type is map",
                    ));
                } else {
                    let keys = Value::from(s.x_list_map_keys.clone());
                    let mut seen: Vec<&str> = Vec::new();
                    for k in &s.x_list_map_keys {
                        match is.property(k) {
                            Some(p) if matches!(nodes[p].type_.as_str(), "array" | "object") => {
                                self.errs.push(FieldError::invalid(
                                    child(&map_key(&child(&items_path, "properties"), k), "type"),
                                    is.type_.clone(),
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                ));
                            }
                            Some(_) => {}
                            None => self.errs.push(FieldError::invalid(
                                child(path, "x-kubernetes-list-map-keys"),
                                keys.clone(),
                                "entries must all be names of item properties",
                            )),
                        }
                        if seen.contains(&k.as_str()) {
                            self.errs.push(FieldError::invalid(
                                child(path, "x-kubernetes-list-map-keys"),
                                keys.clone(),
                                "must not contain duplicate entries",
                            ));
                        }
                        seen.push(k);
                    }
                }
            }
        }

        // validateMapListKeysMapSet
        if let (Some(is), Some(list_type)) = (items, s.x_list_type.as_deref())
            && (list_type == "set" || list_type == "map")
        {
            let items_path = child(path, "items");
            if is.nullable {
                self.errs.push(FieldError::forbidden(
                    child(&items_path, "nullable"),
                    format!("cannot be nullable when x-kubernetes-list-type is {list_type}"),
                ));
            }
            if list_type == "map" {
                let required = is.required.as_deref().unwrap_or(&[]);
                for k in &s.x_list_map_keys {
                    let Some(p) = is.property(k) else { continue };
                    let prop = &nodes[p];
                    let prop_path = map_key(&child(&items_path, "properties"), k);
                    if !required.contains(k) && prop.default.is_none() {
                        self.errs.push(FieldError::required(
                            child(&prop_path, "default"),
                            "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                        ));
                    }
                    if prop.nullable {
                        self.errs.push(FieldError::forbidden(
                            child(&prop_path, "nullable"),
                            "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                        ));
                    }
                }
            }
        }
    }

    /// The static checks of `x-kubernetes-validations` entries (CEL compilation aside).
    fn validation_rules(&mut self, s: &NodeData, path: &str) {
        for (i, rule) in s.x_validations.iter().enumerate() {
            let rule_path = index(&child(path, "x-kubernetes-validations"), i);
            let text = |k: &str| rule.get(k).and_then(Value::as_str).unwrap_or("");
            let (expr, message, message_expr, field_path) = (
                text("rule"),
                text("message"),
                text("messageExpression"),
                text("fieldPath"),
            );
            let (t_expr, t_message) = (expr.trim(), message.trim());
            if t_expr.is_empty() {
                self.errs.push(FieldError::required(
                    child(&rule_path, "rule"),
                    "rule is not specified",
                ));
            } else if !message.is_empty() && t_message.is_empty() {
                self.errs.push(FieldError::invalid(
                    child(&rule_path, "message"),
                    message,
                    "message must be non-empty if specified",
                ));
            } else if has_newlines(t_message) {
                self.errs.push(FieldError::invalid(
                    child(&rule_path, "message"),
                    message,
                    "message must not contain line breaks",
                ));
            } else if has_newlines(t_expr) && t_message.is_empty() {
                self.errs.push(FieldError::required(
                    child(&rule_path, "message"),
                    "message must be specified if rule contains line breaks",
                ));
            }
            if !message_expr.is_empty() && message_expr.trim().is_empty() {
                self.errs.push(FieldError::required(
                    child(&rule_path, "messageExpression"),
                    "messageExpression must be non-empty if specified",
                ));
            }
            if let Some(reason) = rule.get("reason").and_then(Value::as_str)
                && !SUPPORTED_VALIDATION_REASONS.contains(&reason)
            {
                self.errs.push(FieldError::not_supported(
                    child(&rule_path, "reason"),
                    reason,
                    SUPPORTED_VALIDATION_REASONS,
                ));
            }
            if !field_path.is_empty() && field_path.trim().is_empty() {
                self.errs.push(FieldError::invalid(
                    child(&rule_path, "fieldPath"),
                    field_path,
                    "fieldPath must be non-empty if specified",
                ));
            }
            if has_newlines(field_path) {
                self.errs.push(FieldError::invalid(
                    child(&rule_path, "fieldPath"),
                    field_path,
                    "fieldPath must not contain line breaks",
                ));
            }
        }
    }
}

fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

/// `Required(<path>.type, detail)` when the type is empty, else `Invalid(<path>.type, …)`.
fn type_mismatch(path: &str, type_: &str, detail: &str) -> FieldError {
    if type_.is_empty() {
        FieldError::required(child(path, "type"), detail)
    } else {
        FieldError::invalid(child(path, "type"), type_, detail)
    }
}

/// `NewStructural`'s conversion errors (`validateUnsupportedFields` and friends), in its
/// traversal order; the first one wins.
fn new_structural_error(nodes: &[NodeData], id: usize) -> Option<String> {
    let s = &nodes[id];
    if !s.id.is_empty() {
        return Some("OpenAPIV3Schema 'id' is not supported".into());
    }
    if !s.schema_url.is_empty() {
        return Some("OpenAPIV3Schema 'schema' is not supported".into());
    }
    if s.ref_.as_deref().is_some_and(|r| !r.is_empty()) {
        return Some("OpenAPIV3Schema '$ref' is not supported".into());
    }
    if s.pattern_properties.as_ref().is_some_and(|p| !p.is_empty()) {
        return Some("OpenAPIV3Schema 'patternProperties' is not supported".into());
    }
    if s.dependencies.as_ref().is_some_and(|d| !d.is_empty()) {
        return Some("OpenAPIV3Schema 'dependencies' is not supported".into());
    }
    if s.additional_items.is_some() {
        return Some("OpenAPIV3Schema 'additionalItems' is not supported".into());
    }
    if s.definitions.as_ref().is_some_and(|d| !d.is_empty()) {
        return Some("OpenAPIV3Schema 'definitions' is not supported".into());
    }
    let mut children: Vec<usize> = Vec::new();
    children.extend(s.not);
    children.extend_from_slice(s.all_of());
    children.extend_from_slice(s.any_of());
    children.extend_from_slice(s.one_of());
    for c in children {
        if let Some(e) = new_structural_error(nodes, c) {
            return Some(e);
        }
    }
    if s.x_preserve_unknown_fields == Some(false) {
        return Some(
            "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
                .into(),
        );
    }
    match &s.items {
        Some(Items::Array(list)) if !list.is_empty() => {
            return Some("OpenAPIV3Schema 'items' must be a schema, but is an array".into());
        }
        Some(Items::Schema(c)) => {
            if let Some(e) = new_structural_error(nodes, *c) {
                return Some(e);
            }
        }
        _ => {}
    }
    for (_, c) in s.props() {
        if let Some(e) = new_structural_error(nodes, *c) {
            return Some(e);
        }
    }
    if let Some(c) = s.additional_schema() {
        return new_structural_error(nodes, c);
    }
    None
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// `ValidateStructural`: the invariants of structural schemas and the completeness of
/// value validations under junctors.
struct StructuralChecks<'a> {
    nodes: &'a [NodeData],
}

impl StructuralChecks<'_> {
    fn invariants(&self, id: usize, lvl: Level, path: &str, errs: &mut Vec<FieldError>) {
        let nodes = self.nodes;
        let s = &nodes[id];
        if s.type_ == "array" && s.items_schema().is_none() {
            errs.push(FieldError::required(
                child(path, "items"),
                "must be specified",
            ));
        }
        if let Some(items) = s.items_schema() {
            self.invariants(items, Level::Item, &child(path, "items"), errs);
        }
        for (name, sub) in s.props() {
            self.invariants(
                *sub,
                Level::Field,
                &map_key(&child(path, "properties"), name),
                errs,
            );
        }
        if let Some(ap) = s.additional_properties {
            if lvl == Level::Root {
                errs.push(FieldError::forbidden(
                    child(path, "additionalProperties"),
                    "must not be used at the root",
                ));
            }
            if let SchemaOrBool::Schema(sub) = ap {
                self.invariants(
                    sub,
                    Level::Field,
                    &child(path, "additionalProperties"),
                    errs,
                );
            }
        }

        if s.x_int_or_string && s.preserves() {
            errs.push(FieldError::invalid(
                child(path, "x-kubernetes-preserve-unknown-fields"),
                true,
                "must be false if x-kubernetes-int-or-string is true",
            ));
        }
        if s.x_int_or_string && s.x_embedded_resource {
            errs.push(FieldError::invalid(
                child(path, "x-kubernetes-embedded-resource"),
                true,
                "must be false if x-kubernetes-int-or-string is true",
            ));
        }

        let skip_any_of = self.is_int_or_string_any_of(s.any_of());
        let skip_first_all_of_any_of = s
            .all_of()
            .first()
            .is_some_and(|first| self.is_int_or_string_any_of(nodes[*first].any_of()));
        self.value_validation(id, skip_any_of, skip_first_all_of_any_of, path, errs);

        let check_metadata = lvl == Level::Root || s.x_embedded_resource;
        if s.x_embedded_resource && s.type_ != "object" {
            errs.push(type_mismatch(
                path,
                &s.type_,
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else if s.type_.is_empty() && !s.x_int_or_string && !s.preserves() {
            let detail = match lvl {
                Level::Root => "must not be empty at the root",
                Level::Item => "must not be empty for specified array items",
                Level::Field => "must not be empty for specified object fields",
            };
            errs.push(FieldError::required(child(path, "type"), detail));
        }
        if s.x_embedded_resource && s.additional_properties.is_some() {
            errs.push(FieldError::forbidden(
                child(path, "additionalProperties"),
                "must not be used if x-kubernetes-embedded-resource is set",
            ));
        }
        if lvl == Level::Root && !s.type_.is_empty() && s.type_ != "object" {
            errs.push(FieldError::invalid(
                child(path, "type"),
                s.type_.clone(),
                "must be object at the root",
            ));
        }
        for meta in ["kind", "apiVersion"] {
            if let Some(p) = s.property(meta)
                && check_metadata
                && nodes[p].type_ != "string"
            {
                errs.push(FieldError::invalid(
                    child(&map_key(&child(path, "properties"), meta), "type"),
                    nodes[p].type_.clone(),
                    "must be string",
                ));
            }
        }
        if let Some(meta) = s.property("metadata") {
            let m = &nodes[meta];
            let meta_path = map_key(&child(path, "properties"), "metadata");
            if check_metadata && m.type_ != "object" {
                errs.push(FieldError::invalid(
                    child(&meta_path, "type"),
                    m.type_.clone(),
                    "must be object",
                ));
            }
            if lvl == Level::Root && !self.metadata_restricts_only_names(m) {
                errs.push(FieldError::forbidden(
                    meta_path,
                    "must not specify anything other than name and generateName, but metadata is implicitly specified",
                ));
            }
        }
        if s.x_embedded_resource && !s.preserves() && !s.has_properties() {
            errs.push(FieldError::required(
                child(path, "properties"),
                "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
            ));
        }
    }

    /// `validateStructuralMetadataInvariants` at the root: apart from `type` and `default`,
    /// the metadata schema may only specify the properties `name` and/or `generateName`.
    fn metadata_restricts_only_names(&self, m: &NodeData) -> bool {
        let props_ok = match m.props() {
            [] => true,
            [(a, _)] => a == "name" || a == "generateName",
            [(a, _), (b, _)] => a == "generateName" && b == "name",
            _ => false,
        };
        props_ok
            && m.description.as_deref().unwrap_or("").is_empty()
            && m.title.as_deref().unwrap_or("").is_empty()
            && !m.nullable
            && m.items.is_none()
            && m.additional_properties.is_none()
            && no_value_validation(m)
            && no_extensions(m)
            && m.x_validations.is_empty()
    }

    /// Whether `anyOf` is exactly `[{type: integer}, {type: string}]`.
    fn is_int_or_string_any_of(&self, any_of: &[usize]) -> bool {
        match any_of {
            [a, b] => {
                let (a, b) = (&self.nodes[*a], &self.nodes[*b]);
                a.type_ == "integer" && bare(a) && b.type_ == "string" && bare(b)
            }
            _ => false,
        }
    }

    /// `validateValueValidation`: junctors, then the pattern.
    fn value_validation(
        &self,
        id: usize,
        skip_any_of: bool,
        skip_first_all_of_any_of: bool,
        path: &str,
        errs: &mut Vec<FieldError>,
    ) {
        let s = &self.nodes[id];
        if !skip_any_of {
            for (i, sub) in s.any_of().iter().enumerate() {
                self.nested(*sub, false, &index(&child(path, "anyOf"), i), errs);
            }
        }
        for (i, sub) in s.all_of().iter().enumerate() {
            let skip = skip_first_all_of_any_of && i == 0;
            self.nested(*sub, skip, &index(&child(path, "allOf"), i), errs);
        }
        for (i, sub) in s.one_of().iter().enumerate() {
            self.nested(*sub, false, &index(&child(path, "oneOf"), i), errs);
        }
        if let Some(not) = s.not {
            self.nested(not, false, &child(path, "not"), errs);
        }
        if let Some(p) = &s.pattern
            && !p.source.is_empty()
            && let Err(e) = &p.regex
        {
            errs.push(FieldError::invalid(
                child(path, "pattern"),
                p.source.clone(),
                format!("must be a valid regular expression, but isn't: {e}"),
            ));
        }
    }

    /// `validateNestedValueValidation`: nodes under a junctor may not carry structure.
    fn nested(&self, id: usize, skip_any_of: bool, path: &str, errs: &mut Vec<FieldError>) {
        let v = &self.nodes[id];
        self.value_validation(id, skip_any_of, false, path, errs);
        if let Some(items) = v.items_schema() {
            self.nested(items, false, &child(path, "items"), errs);
        }
        for (name, sub) in v.props() {
            self.nested(
                *sub,
                false,
                &map_key(&child(path, "properties"), name),
                errs,
            );
        }
        let forbidden = |errs: &mut Vec<FieldError>, key: &str, detail: &str| {
            errs.push(FieldError::forbidden(child(path, key), detail));
        };
        if !v.type_.is_empty() {
            forbidden(errs, "type", "must be empty to be structural");
        }
        // `additionalProperties: false` converts to "unset" under junctors.
        if matches!(
            v.additional_properties,
            Some(SchemaOrBool::Schema(_) | SchemaOrBool::Bool(true))
        ) {
            forbidden(
                errs,
                "additionalProperties",
                "must be undefined to be structural",
            );
        }
        if v.default.is_some() {
            forbidden(errs, "default", "must be undefined to be structural");
        }
        if v.title.as_deref().is_some_and(|t| !t.is_empty()) {
            forbidden(errs, "title", "must be empty to be structural");
        }
        if v.description.as_deref().is_some_and(|d| !d.is_empty()) {
            forbidden(errs, "description", "must be empty to be structural");
        }
        if v.nullable {
            forbidden(errs, "nullable", "must be false to be structural");
        }
        if v.preserves() {
            forbidden(
                errs,
                "x-kubernetes-preserve-unknown-fields",
                "must be false to be structural",
            );
        }
        if v.x_embedded_resource {
            forbidden(
                errs,
                "x-kubernetes-embedded-resource",
                "must be false to be structural",
            );
        }
        if v.x_int_or_string {
            forbidden(
                errs,
                "x-kubernetes-int-or-string",
                "must be false to be structural",
            );
        }
        if !v.x_list_map_keys.is_empty() {
            forbidden(
                errs,
                "x-kubernetes-list-map-keys",
                "must be empty to be structural",
            );
        }
        if v.x_list_type.is_some() {
            forbidden(
                errs,
                "x-kubernetes-list-type",
                "must be undefined to be structural",
            );
        }
        if v.x_map_type.is_some() {
            forbidden(
                errs,
                "x-kubernetes-map-type",
                "must be undefined to be structural",
            );
        }
        if !v.x_validations.is_empty() {
            forbidden(
                errs,
                "x-kubernetes-validations",
                "must be empty to be structural",
            );
        }
        if v.property("metadata").is_some() {
            errs.push(FieldError::forbidden(
                map_key(&child(path, "properties"), "metadata"),
                "must not be specified in a nested context",
            ));
        }
    }

    /// `validateValueValidationCompleteness`: everything mentioned under a junctor is also
    /// specified outside.
    fn completeness_vv(
        &self,
        v: usize,
        s: Option<usize>,
        s_path: &str,
        v_path: &str,
        errs: &mut Vec<FieldError>,
    ) {
        if s.is_none() {
            errs.push(FieldError::required(
                s_path,
                format!("because it is defined in {v_path}"),
            ));
            return;
        }
        let vn = &self.nodes[v];
        if let Some(not) = vn.not {
            self.completeness_nested(not, s, s_path, &child(v_path, "not"), errs);
        }
        for (key, list) in [
            ("allOf", vn.all_of()),
            ("anyOf", vn.any_of()),
            ("oneOf", vn.one_of()),
        ] {
            for (i, sub) in list.iter().enumerate() {
                self.completeness_nested(*sub, s, s_path, &index(&child(v_path, key), i), errs);
            }
        }
    }

    fn completeness_nested(
        &self,
        v: usize,
        s: Option<usize>,
        s_path: &str,
        v_path: &str,
        errs: &mut Vec<FieldError>,
    ) {
        let Some(s) = s else {
            errs.push(FieldError::required(
                s_path,
                format!("because it is defined in {v_path}"),
            ));
            return;
        };
        self.completeness_vv(v, Some(s), s_path, v_path, errs);
        let (vn, sn) = (&self.nodes[v], &self.nodes[s]);
        if let Some(items) = vn.items_schema() {
            self.completeness_nested(
                items,
                sn.items_schema(),
                &child(s_path, "items"),
                &child(v_path, "items"),
                errs,
            );
        }
        for (name, sub) in vn.props() {
            let s_prop = map_key(&child(s_path, "properties"), name);
            let v_prop = map_key(&child(v_path, "properties"), name);
            match sn.property(name) {
                Some(sf) => self.completeness_nested(*sub, Some(sf), &s_prop, &v_prop, errs),
                None => errs.push(FieldError::required(
                    s_prop,
                    format!("because it is defined in {v_prop}"),
                )),
            }
        }
    }
}

/// A nested node holding nothing but its `type` (for the int-or-string `anyOf` pattern).
fn bare(n: &NodeData) -> bool {
    n.description.is_none()
        && n.title.is_none()
        && n.default.is_none()
        && !n.nullable
        && n.items.is_none()
        && n.properties.is_none()
        && !matches!(
            n.additional_properties,
            Some(SchemaOrBool::Schema(_) | SchemaOrBool::Bool(true))
        )
        && no_value_validation(n)
        && no_extensions(n)
        && n.x_validations.is_empty()
}

fn no_value_validation(n: &NodeData) -> bool {
    n.format.is_empty()
        && n.maximum.is_none()
        && !n.exclusive_maximum
        && n.minimum.is_none()
        && !n.exclusive_minimum
        && n.max_length.is_none()
        && n.min_length.is_none()
        && n.pattern.as_ref().is_none_or(|p| p.source.is_empty())
        && n.max_items.is_none()
        && n.min_items.is_none()
        && !n.unique_items
        && n.multiple_of.is_none()
        // Go builds enum and the junctor lists by appending: empty lists are unset.
        && n.enum_.as_ref().is_none_or(Vec::is_empty)
        && n.max_properties.is_none()
        && n.min_properties.is_none()
        && n.required.is_none()
        && n.all_of().is_empty()
        && n.one_of().is_empty()
        && n.any_of().is_empty()
        && n.not.is_none()
}

fn no_extensions(n: &NodeData) -> bool {
    !n.preserves()
        && !n.x_embedded_resource
        && !n.x_int_or_string
        && !n.x_list_map_keys_set
        && n.x_list_type.is_none()
        && n.x_map_type.is_none()
}

/// `ValidateDefaults`: every `default` (outside `additionalProperties`) must be pruned and
/// valid against its own node; defaults inside `apiVersion`/`kind`/`metadata` of embedded
/// resources must yield valid metadata. The root counts as an embedded resource.
fn validate_defaults(nodes: &[NodeData], root: usize, path: &str) -> Vec<FieldError> {
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
                let mut p = String::new();
                let result = validator.validate(id, &mut p, default);
                errs.extend(to_field_errors(result.errors, Some(&default_path)));
            }
        } else {
            let mut pruned = default.clone();
            let mut pruner = Pruner {
                nodes,
                path: String::new(),
                out: Vec::new(),
            };
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
                let mut p = String::new();
                let result = validator.validate(id, &mut p, default);
                errs.extend(to_field_errors(result.errors, Some(&default_path)));
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

// =============================================================================================
// Pruning (CRD-05, CRD-06, CRD-08)
// =============================================================================================

fn is_meta_field(k: &str) -> bool {
    matches!(k, "apiVersion" | "kind" | "metadata")
}

/// `pruning.PruneWithOptions` with unknown-field tracking.
struct Pruner<'a> {
    nodes: &'a [NodeData],
    path: String,
    out: Vec<String>,
}

impl Pruner<'_> {
    fn append_key(&mut self, k: &str) {
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(k);
    }

    fn record(&mut self, k: &str) {
        let len = self.path.len();
        self.append_key(k);
        self.out.push(self.path.clone());
        self.path.truncate(len);
    }

    /// `force_embedded` treats `s` as an embedded resource (the resource root).
    fn prune(&mut self, x: &mut Value, s: Option<usize>, force_embedded: bool) {
        let nodes = self.nodes;
        if let Some(id) = s
            && nodes[id].preserves()
        {
            self.skip_prune(x, id, force_embedded);
            return;
        }
        let len = self.path.len();
        match x {
            Value::Object(map) => {
                let Some(id) = s else {
                    let keys: Vec<String> = map.keys().cloned().collect();
                    for k in keys {
                        self.record(&k);
                    }
                    map.clear();
                    return;
                };
                let n = &nodes[id];
                let embedded = n.x_embedded_resource || force_embedded;
                map.retain(|k, v| {
                    if embedded && is_meta_field(k) {
                        return true;
                    }
                    if let Some(p) = n.property(k) {
                        self.append_key(k);
                        self.prune(v, Some(p), false);
                        self.path.truncate(len);
                        true
                    } else if let Some(ap) = n.additional_properties {
                        self.append_key(k);
                        self.prune(v, schema_of(ap), false);
                        self.path.truncate(len);
                        true
                    } else {
                        if !is_meta_field(k) || !self.path.is_empty() {
                            self.record(k);
                        }
                        false
                    }
                });
            }
            Value::Array(items) => {
                let item_schema = s.and_then(|id| nodes[id].items_schema());
                for (i, v) in items.iter_mut().enumerate() {
                    let _ = write!(self.path, "[{i}]");
                    self.prune(v, item_schema, false);
                    self.path.truncate(len);
                }
            }
            _ => {}
        }
    }

    /// Under `x-kubernetes-preserve-unknown-fields`: keep unknown fields, but prune below
    /// specified properties.
    fn skip_prune(&mut self, x: &mut Value, id: usize, force_embedded: bool) {
        let nodes = self.nodes;
        let n = &nodes[id];
        let len = self.path.len();
        match x {
            Value::Object(map) => {
                let embedded = n.x_embedded_resource || force_embedded;
                for (k, v) in map.iter_mut() {
                    if embedded && is_meta_field(k) {
                        continue;
                    }
                    if let Some(p) = n.property(k) {
                        self.append_key(k);
                        self.prune(v, Some(p), false);
                        self.path.truncate(len);
                    } else if let Some(ap) = n.additional_properties {
                        self.append_key(k);
                        self.prune(v, schema_of(ap), false);
                        self.path.truncate(len);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = n.items_schema() {
                    for (i, v) in items.iter_mut().enumerate() {
                        let _ = write!(self.path, "[{i}]");
                        self.skip_prune(v, item_schema, false);
                        self.path.truncate(len);
                    }
                }
            }
            _ => {}
        }
    }
}

fn schema_of(ap: SchemaOrBool) -> Option<usize> {
    match ap {
        SchemaOrBool::Schema(id) => Some(id),
        SchemaOrBool::Bool(_) => None,
    }
}

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
fn coerce_embedded(
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

// =============================================================================================
// Nulls and defaults (CRDV-04, CRDV-05)
// =============================================================================================

fn field_schema(nodes: &[NodeData], s: Option<usize>, k: &str) -> Option<usize> {
    let n = &nodes[s?];
    n.property(k)
        .or_else(|| n.additional_properties.and_then(schema_of))
}

/// `PruneNonNullableNullsWithoutDefaults`.
fn prune_nulls(nodes: &[NodeData], x: &mut Value, s: Option<usize>) {
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
fn apply_defaults(nodes: &[NodeData], x: &mut Value, s: Option<usize>) {
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

// =============================================================================================
// Embedded resources (CRD-08) and list types
// =============================================================================================

/// `objectmeta.Validate`: `force_root` treats `s` as an embedded resource.
fn validate_embedded(
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

/// `listtype.ValidateListSetsAndMaps` on an object.
fn validate_list_sets_and_maps_object(
    nodes: &[NodeData],
    fld: Option<&str>,
    s: usize,
    obj: &Map<String, Value>,
    errs: &mut Vec<FieldError>,
) {
    let n = &nodes[s];
    if !n.sub_list_set_or_map {
        return;
    }
    if let Some(ap) = n.additional_schema() {
        for (k, v) in obj {
            list_sets_and_maps(nodes, &opt_key(fld, k), ap, v, errs);
        }
    }
    if n.has_properties() {
        for (k, v) in obj {
            if let Some(p) = n.property(k) {
                list_sets_and_maps(nodes, &opt_child(fld, k), p, v, errs);
            }
        }
    }
}

fn list_sets_and_maps(
    nodes: &[NodeData],
    fld: &str,
    s: usize,
    v: &Value,
    errs: &mut Vec<FieldError>,
) {
    match v {
        Value::Object(map) => validate_list_sets_and_maps_object(nodes, Some(fld), s, map, errs),
        Value::Array(items) => {
            let n = &nodes[s];
            if !n.sub_list_set_or_map {
                return;
            }
            match n.x_list_type.as_deref() {
                Some("set") => {
                    for i in non_unique(items.iter().map(set_key)) {
                        errs.push(FieldError::duplicate(
                            index(fld, i),
                            go_bad_value(&items[i]),
                        ));
                    }
                }
                Some("map") => validate_list_map(fld, n, items, errs),
                _ => {}
            }
            if let Some(item_schema) = n.items_schema() {
                for (i, item) in items.iter().enumerate() {
                    list_sets_and_maps(nodes, &index(fld, i), item_schema, item, errs);
                }
            }
        }
        _ => {}
    }
}

/// The identity of a set element as Go's `validateListSet` sees it: scalars by Go type and
/// value, compounds by their JSON.
#[derive(PartialEq, Eq, Hash)]
enum SetKey<'a> {
    Unspecified,
    Null,
    Bool(bool),
    Str(&'a str),
    Int(i64),
    Float(u64),
    Compound(String),
}

fn set_key(v: &Value) -> SetKey<'_> {
    match v {
        Value::Null => SetKey::Null,
        Value::Bool(b) => SetKey::Bool(*b),
        Value::String(s) => SetKey::Str(s),
        Value::Number(n) => match n.as_i64() {
            Some(i) => SetKey::Int(i),
            None => SetKey::Float(n.as_f64().unwrap_or(0.0).to_bits()),
        },
        Value::Array(_) | Value::Object(_) => SetKey::Compound(go_json(v)),
    }
}

/// Indices of second occurrences (a value seen three times is reported once).
fn non_unique<'a>(keys: impl Iterator<Item = SetKey<'a>>) -> Vec<usize> {
    let mut seen: std::collections::HashMap<SetKey<'a>, u32> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for (i, k) in keys.enumerate() {
        let count = seen.entry(k).or_insert(0);
        *count += 1;
        if *count == 2 {
            out.push(i);
        }
    }
    out
}

fn validate_list_map(fld: &str, s: &NodeData, items: &[Value], errs: &mut Vec<FieldError>) {
    for (i, x) in items.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            errs.push(FieldError::invalid(
                index(fld, i),
                go_bad_value(x),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if items.len() <= 1 {
        return;
    }
    if let [key_field] = s.x_list_map_keys.as_slice() {
        let keys: Vec<Option<&Value>> = items.iter().map(|x| x.get(key_field)).collect();
        let ids = keys.iter().map(|k| match k {
            None => SetKey::Unspecified,
            Some(v) => set_key(v),
        });
        for i in non_unique(ids) {
            let mut m = Map::new();
            if let Some(k) = keys[i] {
                m.insert(key_field.clone(), k.clone());
            }
            errs.push(FieldError::duplicate(index(fld, i), Value::Object(m)));
        }
        return;
    }
    let keys: Vec<Value> = items
        .iter()
        .map(|x| {
            let mut m = Map::new();
            for k in &s.x_list_map_keys {
                if let Some(v) = x.get(k) {
                    m.insert(k.clone(), v.clone());
                }
            }
            Value::Object(m)
        })
        .collect();
    for i in non_unique(keys.iter().map(set_key)) {
        errs.push(FieldError::duplicate(index(fld, i), keys[i].clone()));
    }
}

// =============================================================================================
// Value validation (CRDV-01): kube-openapi's SchemaValidator
// =============================================================================================

/// Which schema kube-openapi sees: the CRD schema converted for custom resources
/// (`NewSchemaValidator`: unsupported formats stripped, int-or-string typed
/// `[integer, string]`), or a structural node converted by `ToKubeOpenAPI` (used for
/// defaults: formats kept, int-or-string untyped).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    CustomResource,
    Structural,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Code {
    InvalidType,
    Required,
    TooLong,
    TooShort,
    Pattern,
    Enum,
    MultipleOf,
    Max,
    Min,
    Unique,
    MaxItems,
    MinItems,
    TooFewProperties,
    TooManyProperties,
    UnallowedProperty,
    MultipleOfMustBePositive,
}

/// One kube-openapi error: a `*errors.Validation` or a plain composite message.
enum OErr {
    Validation {
        code: Code,
        name: String,
        value: Option<Value>,
        valid: i64,
        values: Vec<Value>,
        message: String,
    },
    Composite(String),
}

impl OErr {
    fn message(&self) -> &str {
        match self {
            OErr::Validation { message, .. } => message,
            OErr::Composite(m) => m,
        }
    }
}

/// `validate.Result`: errors and the match count `anyOf`/`oneOf` use to pick the branch
/// whose errors are reported.
#[derive(Default)]
struct VResult {
    errors: Vec<OErr>,
    count: u32,
}

impl VResult {
    fn err(e: OErr) -> VResult {
        VResult {
            errors: vec![e],
            count: 0,
        }
    }

    fn merge(&mut self, other: VResult) {
        self.errors.extend(other.errors);
        self.count += other.count;
    }

    fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}

/// The JSON kinds kube's decoder produces (`int64` for integers, `float64` otherwise).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Bool,
    Int,
    Float,
    String,
    Array,
    Object,
}

fn kind_of(v: &Value) -> Kind {
    match v {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::Number(n) if n.as_i64().is_some() => Kind::Int,
        Value::Number(_) => Kind::Float,
        Value::String(_) => Kind::String,
        Value::Array(_) => Kind::Array,
        Value::Object(_) => Kind::Object,
    }
}

fn as_float(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

fn validation(code: Code, name: &str, value: Option<Value>, message: String) -> OErr {
    OErr::Validation {
        code,
        name: name.to_owned(),
        value,
        valid: 0,
        values: Vec::new(),
        message,
    }
}

/// `errors.InvalidType`.
fn invalid_type(name: &str, type_name: &str, value: &str) -> OErr {
    validation(
        Code::InvalidType,
        name,
        Some(Value::from(value)),
        format!(
            "{name} in body must be of type {type_name}: {}",
            go_quote(value)
        ),
    )
}

struct Validator<'a> {
    nodes: &'a [NodeData],
    mode: Mode,
}

impl Validator<'_> {
    fn types<'n>(&self, n: &'n NodeData) -> &'n [&'static str] {
        const INT_OR_STRING: &[&str] = &["integer", "string"];
        if self.mode == Mode::CustomResource && n.x_int_or_string {
            return INT_OR_STRING;
        }
        match n.type_.as_str() {
            "" => &[],
            "object" => &["object"],
            "array" => &["array"],
            "string" => &["string"],
            "integer" => &["integer"],
            "number" => &["number"],
            "boolean" => &["boolean"],
            "null" => &["null"],
            _ => &["<invalid>"],
        }
    }

    /// The `format` the type validator sees.
    fn type_format<'n>(&self, n: &'n NodeData) -> &'n str {
        match self.mode {
            Mode::Structural => &n.format,
            Mode::CustomResource if n.format_kind.is_some() => &n.format,
            Mode::CustomResource => "",
        }
    }

    /// `SchemaValidator.Validate`.
    fn validate(&self, id: usize, path: &mut String, data: &Value) -> VResult {
        let n = &self.nodes[id];
        let mut r = VResult::default();
        let kind = kind_of(data);
        if kind == Kind::Null {
            r.merge(self.check_type(n, path, data, kind));
            r.merge(self.check_enum(n, path, data));
            return r;
        }
        if !self.types(n).is_empty() || !self.type_format(n).is_empty() {
            r.merge(self.check_type(n, path, data, kind));
            r.count += 1;
        }
        r.merge(self.check_junctors(n, path, data));
        r.count += 1;
        if let Value::String(s) = data {
            if let Some(e) = self.check_string(n, path, s) {
                r.errors.push(e);
            }
            r.count += 1;
            if let Some(format) = n.format_kind {
                if !format.validates(s) {
                    r.errors.push(invalid_type(path, &n.format, s));
                }
                r.count += 1;
            }
        }
        if matches!(kind, Kind::Int | Kind::Float) {
            r.merge(self.check_number(n, path, data, kind));
            r.count += 1;
        }
        if let Value::Array(items) = data {
            r.merge(self.check_slice(n, path, items));
            r.count += 1;
        }
        r.merge(self.check_enum(n, path, data));
        r.count += 1;
        if let Value::Object(map) = data {
            r.merge(self.check_object(n, path, map));
            r.count += 1;
        }
        r.count += 1;
        r
    }

    /// `typeValidator.Validate`.
    fn check_type(&self, n: &NodeData, path: &str, data: &Value, kind: Kind) -> VResult {
        let types = self.types(n);
        let t_format = self.type_format(n);
        if kind == Kind::Null {
            if !types.is_empty() && !types.contains(&"null") && !n.nullable {
                return VResult::err(invalid_type(path, &types.join(","), "null"));
            }
            return VResult {
                errors: Vec::new(),
                count: 1,
            };
        }
        let (sch_type, format) = match kind {
            Kind::Bool => ("boolean", ""),
            Kind::String => ("string", ""),
            Kind::Int => ("integer", "int64"),
            Kind::Float => ("number", "float64"),
            Kind::Array => ("array", ""),
            Kind::Object | Kind::Null => ("object", ""),
        };
        let contains = |t: &str| types.contains(&t);
        let is_float_int =
            kind == Kind::Float && is_float64_a_json_integer(as_float(data)) && contains("integer");
        let is_int_float = kind == Kind::Int && contains("number");
        let stringish = matches!(kind, Kind::String | Kind::Array);
        // Go: kind != String && kind != Slice && Format != "" && !(…)
        if !(stringish
            || t_format.is_empty()
            || contains(sch_type)
            || format == t_format
            || is_float_int
            || is_int_float)
        {
            return VResult::err(invalid_type(path, t_format, format));
        }
        if stringish && !(contains("number") || contains("integer") || t_format.is_empty()) {
            return VResult {
                errors: Vec::new(),
                count: 1,
            };
        }
        if !(contains(sch_type) || is_float_int || is_int_float) {
            return VResult::err(invalid_type(path, &types.join(","), sch_type));
        }
        VResult {
            errors: Vec::new(),
            count: 1,
        }
    }

    /// `schemaPropsValidator.Validate`: anyOf, oneOf, allOf, not.
    fn check_junctors(&self, n: &NodeData, path: &mut String, data: &Value) -> VResult {
        let mut main = VResult::default();
        let any_of = n.any_of();
        if !any_of.is_empty() {
            let mut best: Option<VResult> = None;
            let mut first_success: Option<VResult> = None;
            for sub in any_of {
                let result = self.validate(*sub, path, data);
                if result.is_valid() {
                    best = None;
                    first_success = Some(result);
                    break;
                }
                if best.as_ref().is_none_or(|b| result.count > b.count) {
                    best = Some(result);
                }
            }
            if first_success.is_none() {
                main.errors.push(OErr::Composite(format!(
                    "{} must validate at least one schema (anyOf)",
                    go_quote(path)
                )));
            }
            if let Some(b) = best {
                main.merge(b);
            } else if let Some(s) = first_success {
                main.merge(s);
            }
        }

        let one_of = n.one_of();
        if !one_of.is_empty() {
            let mut best: Option<VResult> = None;
            let mut first_success: Option<VResult> = None;
            let mut validated = 0usize;
            for sub in one_of {
                let result = self.validate(*sub, path, data);
                if result.is_valid() {
                    validated += 1;
                    best = None;
                    if first_success.is_none() {
                        first_success = Some(result);
                    }
                    continue;
                }
                if validated == 0 && best.as_ref().is_none_or(|b| result.count > b.count) {
                    best = Some(result);
                }
            }
            if validated != 1 {
                let additional = if validated == 0 {
                    "Found none valid".to_owned()
                } else {
                    format!("Found {validated} valid alternatives")
                };
                main.errors.push(OErr::Composite(format!(
                    "{} must validate one and only one schema (oneOf). {additional}",
                    go_quote(path)
                )));
                if let Some(b) = best {
                    main.merge(b);
                }
            } else if let Some(s) = first_success {
                main.merge(s);
            }
        }

        let all_of = n.all_of();
        if !all_of.is_empty() {
            let mut validated = 0usize;
            for sub in all_of {
                let result = self.validate(*sub, path, data);
                if result.is_valid() {
                    validated += 1;
                }
                main.merge(result);
            }
            if validated != all_of.len() {
                let additional = if validated == 0 {
                    ". None validated"
                } else {
                    ""
                };
                main.errors.push(OErr::Composite(format!(
                    "{} must validate all the schemas (allOf){additional}",
                    go_quote(path)
                )));
            }
        }

        if let Some(not) = n.not
            && self.validate(not, path, data).is_valid()
        {
            main.errors.push(OErr::Composite(format!(
                "{} must not validate the schema (not)",
                go_quote(path)
            )));
        }
        main.count += 1;
        main
    }

    /// `stringValidator.Validate`: the first failing of maxLength, minLength, pattern.
    fn check_string(&self, n: &NodeData, path: &str, s: &str) -> Option<OErr> {
        let len = s.chars().count() as i64;
        if let Some(max) = n.max_length
            && len > max
        {
            return Some(OErr::Validation {
                code: Code::TooLong,
                name: path.to_owned(),
                value: Some(Value::from(s)),
                valid: max,
                values: Vec::new(),
                message: format!("{path} in body should be at most {max} chars long"),
            });
        }
        if let Some(min) = n.min_length
            && len < min
        {
            return Some(OErr::Validation {
                code: Code::TooShort,
                name: path.to_owned(),
                value: Some(Value::from(s)),
                valid: min,
                values: Vec::new(),
                message: format!("{path} in body should be at least {min} chars long"),
            });
        }
        if let Some(p) = &n.pattern
            && !p.source.is_empty()
        {
            let failed = match &p.regex {
                Ok(re) if re.is_match(s) => None,
                Ok(_) => Some(p.source.clone()),
                Err(e) => Some(format!("{}, but pattern is invalid: {e}", p.source)),
            };
            if let Some(shown) = failed {
                return Some(validation(
                    Code::Pattern,
                    path,
                    Some(Value::from(s)),
                    format!("{path} in body should match '{shown}'"),
                ));
            }
        }
        None
    }

    /// `numberValidator.Validate`: multipleOf, minimum, maximum, with Go's integer
    /// arithmetic for integer values.
    fn check_number(&self, n: &NodeData, path: &str, data: &Value, kind: Kind) -> VResult {
        let mut r = VResult::default();
        let int = if kind == Kind::Int {
            data.as_i64()
        } else {
            None
        };
        let f = as_float(data);
        let value = Some(data.clone());
        if let Some(factor) = n.multiple_of {
            match int {
                Some(v) => {
                    let factor = factor as i64;
                    if factor <= 0 {
                        r.errors.push(validation(
                            Code::MultipleOfMustBePositive,
                            path,
                            Some(Value::from(factor)),
                            format!(
                                "factor MultipleOf declared for {path} must be positive: {factor}"
                            ),
                        ));
                    } else if (v / factor) * factor != v {
                        r.errors.push(validation(
                            Code::MultipleOf,
                            path,
                            value.clone(),
                            format!("{path} in body should be a multiple of {factor}"),
                        ));
                    }
                }
                None => {
                    if factor <= 0.0 {
                        r.errors.push(validation(
                            Code::MultipleOfMustBePositive,
                            path,
                            Some(float_value(factor)),
                            format!(
                                "factor MultipleOf declared for {path} must be positive: {}",
                                go_float(factor)
                            ),
                        ));
                    } else {
                        let mult = if factor < 1.0 {
                            1.0 / factor * f
                        } else {
                            f / factor
                        };
                        if !is_float64_a_json_integer(mult) {
                            r.errors.push(validation(
                                Code::MultipleOf,
                                path,
                                value.clone(),
                                format!(
                                    "{path} in body should be a multiple of {}",
                                    go_float(factor)
                                ),
                            ));
                        }
                    }
                }
            }
        }
        if let Some(min) = n.minimum {
            let excl = n.exclusive_minimum;
            let shown = match int {
                Some(v) => {
                    let min = min as i64;
                    ((!excl && v < min) || (excl && v <= min)).then(|| min.to_string())
                }
                None => ((!excl && f < min) || (excl && f <= min)).then(|| go_float(min)),
            };
            if let Some(shown) = shown {
                let op = if excl {
                    "greater than"
                } else {
                    "greater than or equal to"
                };
                r.errors.push(validation(
                    Code::Min,
                    path,
                    value.clone(),
                    format!("{path} in body should be {op} {shown}"),
                ));
            }
        }
        if let Some(max) = n.maximum {
            let excl = n.exclusive_maximum;
            let shown = match int {
                Some(v) => {
                    let max = max as i64;
                    ((!excl && v > max) || (excl && v >= max)).then(|| max.to_string())
                }
                None => ((!excl && f > max) || (excl && f >= max)).then(|| go_float(max)),
            };
            if let Some(shown) = shown {
                let op = if excl {
                    "less than"
                } else {
                    "less than or equal to"
                };
                r.errors.push(validation(
                    Code::Max,
                    path,
                    value,
                    format!("{path} in body should be {op} {shown}"),
                ));
            }
        }
        r.count += 1;
        r
    }

    /// `schemaSliceValidator.Validate`.
    fn check_slice(&self, n: &NodeData, path: &mut String, items: &[Value]) -> VResult {
        let mut r = VResult::default();
        if let Some(item_schema) = n.items_schema() {
            let len = path.len();
            for (i, item) in items.iter().enumerate() {
                let _ = write!(path, "[{i}]");
                r.merge(self.validate(item_schema, path, item));
                path.truncate(len);
            }
        }
        let size = items.len() as i64;
        if let Some(min) = n.min_items
            && size < min
        {
            r.errors.push(OErr::Validation {
                code: Code::MinItems,
                name: path.clone(),
                value: Some(Value::from(size)),
                valid: min,
                values: Vec::new(),
                message: format!("{path} in body should have at least {min} items"),
            });
        }
        if let Some(max) = n.max_items
            && size > max
        {
            r.errors.push(OErr::Validation {
                code: Code::MaxItems,
                name: path.clone(),
                value: Some(Value::from(size)),
                valid: max,
                values: Vec::new(),
                message: format!("{path} in body should have at most {max} items"),
            });
        }
        if n.unique_items && has_duplicates(items) {
            r.errors.push(validation(
                Code::Unique,
                path,
                None,
                format!("{path} in body shouldn't contain duplicates"),
            ));
        }
        r.count += 1;
        r
    }

    /// `basicCommonValidator.Validate`: `enum`, compared as Go's reflection compares.
    fn check_enum(&self, n: &NodeData, path: &str, data: &Value) -> VResult {
        let Some(values) = n.enum_.as_deref() else {
            return VResult::default();
        };
        if values.is_empty() || values.iter().any(|e| enum_matches(data, e)) {
            return VResult::default();
        }
        let listed: Vec<String> = values.iter().map(go_sprint).collect();
        VResult::err(OErr::Validation {
            code: Code::Enum,
            name: path.to_owned(),
            value: Some(data.clone()),
            valid: 0,
            values: values.to_vec(),
            message: format!("{path} in body should be one of [{}]", listed.join(" ")),
        })
    }

    /// `objectValidator.Validate`.
    fn check_object(&self, n: &NodeData, path: &mut String, map: &Map<String, Value>) -> VResult {
        let mut r = VResult::default();
        let num_keys = map.len() as i64;
        if let Some(min) = n.min_properties
            && num_keys < min
        {
            r.errors.push(OErr::Validation {
                code: Code::TooFewProperties,
                name: path.clone(),
                value: Some(Value::from(num_keys)),
                valid: min,
                values: Vec::new(),
                message: format!("{path} in body should have at least {min} properties"),
            });
        }
        if let Some(max) = n.max_properties
            && num_keys > max
        {
            r.errors.push(OErr::Validation {
                code: Code::TooManyProperties,
                name: path.clone(),
                value: Some(Value::from(num_keys)),
                valid: max,
                values: Vec::new(),
                message: format!("{path} in body should have at most {max} properties"),
            });
        }
        let len = path.len();
        match n.additional_properties {
            Some(SchemaOrBool::Bool(false)) => {
                for k in map.keys() {
                    if n.property(k).is_none() {
                        r.errors.push(validation(
                            Code::UnallowedProperty,
                            path,
                            Some(Value::from(k.as_str())),
                            format!("{path}.{k} in body is a forbidden property"),
                        ));
                    }
                }
            }
            Some(SchemaOrBool::Schema(ap)) => {
                for (k, v) in map {
                    if n.property(k).is_none() {
                        path.push('.');
                        path.push_str(k);
                        r.merge(self.validate(ap, path, v));
                        path.truncate(len);
                    }
                }
            }
            _ => {}
        }
        for (name, prop) in n.props() {
            if let Some(v) = map.get(name) {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(name);
                r.merge(self.validate(*prop, path, v));
                path.truncate(len);
            }
        }
        for k in n.required.iter().flatten() {
            if !map.contains_key(k) {
                let name = format!("{path}.{k}");
                let message = format!("{name} in body is required");
                r.errors
                    .push(validation(Code::Required, &name, None, message));
            }
        }
        r
    }
}

fn has_duplicates(items: &[Value]) -> bool {
    items
        .iter()
        .enumerate()
        .any(|(i, a)| items[..i].iter().any(|b| a == b))
}

/// kube-openapi's enum comparison: the value is converted to the enum value's Go type when
/// Go allows (`int64` ↔ `float64` by truncation, `int64` → `string` as a rune) and compared
/// with `reflect.DeepEqual`.
fn enum_matches(data: &Value, e: &Value) -> bool {
    match (kind_of(data), kind_of(e)) {
        (Kind::Null, _) | (_, Kind::Null) => false,
        (Kind::Int, Kind::Int) => data.as_i64() == e.as_i64(),
        (Kind::Int, Kind::Float) => data.as_i64().map(|i| i as f64) == e.as_f64(),
        (Kind::Int, Kind::String) => {
            let i = data.as_i64().unwrap_or(0);
            let c = u32::try_from(i)
                .ok()
                .and_then(char::from_u32)
                .unwrap_or('\u{FFFD}');
            e.as_str() == Some(c.encode_utf8(&mut [0; 4]))
        }
        (Kind::Float, Kind::Int) => Some(as_float(data) as i64) == e.as_i64(),
        (Kind::Float, Kind::Float) => data.as_f64() == e.as_f64(),
        (a, b) if a == b => data == e,
        _ => false,
    }
}

/// `swag.IsFloat64AJSONInteger` (go-openapi/swag v0.23).
fn is_float64_a_json_integer(f: f64) -> bool {
    const MAX_JSON_FLOAT: f64 = 9_007_199_254_740_991.0;
    const EPSILON: f64 = 1e-9;
    if f.is_nan() || f.is_infinite() || !(-MAX_JSON_FLOAT..=MAX_JSON_FLOAT).contains(&f) {
        return false;
    }
    let fa = f.abs();
    let g = (f as u64) as f64;
    let ga = g.abs();
    let diff = (f - g).abs();
    if f == g || f == (f as i64) as f64 || f == (f as u64) as f64 {
        return true;
    }
    if f == 0.0 || g == 0.0 || diff < f64::from_bits(1) {
        return diff < EPSILON * f64::from_bits(1);
    }
    diff / (fa + ga).min(f64::MAX) < EPSILON
}

/// `kubeOpenAPIResultToFieldErrors`, after `Result`'s de-duplication by message. `prefix`
/// is the field path the validator was rooted at (`None`: the object root, shown as
/// `<nil>` when an error has no field of its own).
fn to_field_errors(errors: Vec<OErr>, prefix: Option<&str>) -> Vec<FieldError> {
    let mut seen: Vec<String> = Vec::with_capacity(errors.len());
    let mut out = Vec::with_capacity(errors.len());
    let root = prefix.unwrap_or("<nil>").to_owned();
    for e in errors {
        if seen.iter().any(|m| m == e.message()) {
            continue;
        }
        seen.push(e.message().to_owned());
        match e {
            OErr::Composite(message) => out.push(FieldError::invalid(root.clone(), "", message)),
            OErr::Validation {
                code,
                name,
                value,
                valid,
                values,
                message,
            } => {
                let field = if !name.is_empty() && name != "." {
                    let trimmed = name.strip_prefix('.').unwrap_or(&name);
                    match prefix {
                        Some(p) => child(p, trimmed),
                        None => trimmed.to_owned(),
                    }
                } else {
                    root.clone()
                };
                let shown = value.as_ref().map_or(Value::from(""), go_bad_value);
                out.push(match code {
                    Code::Required => FieldError::required(field, ""),
                    Code::Enum => {
                        let supported: Vec<String> = values
                            .iter()
                            .map(|v| match v {
                                Value::String(s) => s.clone(),
                                other => go_json(other),
                            })
                            .collect();
                        let refs: Vec<&str> = supported.iter().map(String::as_str).collect();
                        let bad = value.as_ref().map_or(Value::from("null"), go_bad_value);
                        FieldError::not_supported(field, bad, &refs)
                    }
                    Code::TooLong => FieldError::too_long(field, usize::try_from(valid).ok()),
                    Code::MaxItems | Code::TooManyProperties => {
                        let actual = value.as_ref().and_then(Value::as_u64);
                        FieldError::too_many(
                            field,
                            actual.and_then(|a| usize::try_from(a).ok()),
                            usize::try_from(valid).ok(),
                        )
                    }
                    Code::InvalidType => FieldError::type_invalid(field, shown, message),
                    _ => FieldError::invalid(field, shown, message),
                });
            }
        }
    }
    out
}

// =============================================================================================
// Publishing (DISC-11)
// =============================================================================================

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

fn publish(inner: &Inner) -> Value {
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

// =============================================================================================
// Formats (kube-openapi strfmt.Default, as filtered by StripUnsupportedFormatsPostProcess)
// =============================================================================================

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StrFormat {
    BsonObjectId,
    Uri,
    Email,
    Hostname,
    Ipv4,
    Ipv6,
    Cidr,
    Mac,
    Uuid,
    Uuid3,
    Uuid4,
    Uuid5,
    Isbn,
    Isbn10,
    Isbn13,
    CreditCard,
    Ssn,
    HexColor,
    RgbColor,
    Byte,
    Password,
    Date,
    DateTime,
    Duration,
}

impl StrFormat {
    /// The registry lookup: names are compared with `-` removed (`date-time` = `datetime`).
    fn lookup(format: &str) -> Option<StrFormat> {
        if format.is_empty() {
            return None;
        }
        Some(match format.replace('-', "").as_str() {
            "bsonobjectid" => StrFormat::BsonObjectId,
            "uri" => StrFormat::Uri,
            "email" => StrFormat::Email,
            "hostname" => StrFormat::Hostname,
            "ipv4" => StrFormat::Ipv4,
            "ipv6" => StrFormat::Ipv6,
            "cidr" => StrFormat::Cidr,
            "mac" => StrFormat::Mac,
            "uuid" => StrFormat::Uuid,
            "uuid3" => StrFormat::Uuid3,
            "uuid4" => StrFormat::Uuid4,
            "uuid5" => StrFormat::Uuid5,
            "isbn" => StrFormat::Isbn,
            "isbn10" => StrFormat::Isbn10,
            "isbn13" => StrFormat::Isbn13,
            "creditcard" => StrFormat::CreditCard,
            "ssn" => StrFormat::Ssn,
            "hexcolor" => StrFormat::HexColor,
            "rgbcolor" => StrFormat::RgbColor,
            "byte" => StrFormat::Byte,
            "password" => StrFormat::Password,
            "date" => StrFormat::Date,
            "datetime" => StrFormat::DateTime,
            "duration" => StrFormat::Duration,
            _ => return None,
        })
    }

    fn validates(self, s: &str) -> bool {
        match self {
            StrFormat::BsonObjectId => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
            StrFormat::Uri => is_request_uri(s),
            StrFormat::Email => is_email(s),
            StrFormat::Hostname => {
                rx(&RX_HOSTNAME, HOSTNAME_PATTERN).is_some_and(|r| r.is_match(s))
                    && s.len() <= 255
                    && s.split('.').all(|p| p.len() <= 63)
            }
            StrFormat::Ipv4 => {
                (parse_ipv4_sloppy(s) || s.parse::<std::net::Ipv6Addr>().is_ok()) && s.contains('.')
            }
            StrFormat::Ipv6 => s.parse::<std::net::Ipv6Addr>().is_ok() && s.contains(':'),
            StrFormat::Cidr => is_cidr(s),
            StrFormat::Mac => is_mac(s),
            StrFormat::Uuid => is_uuid(s, None),
            StrFormat::Uuid3 => is_uuid(s, Some('3')),
            StrFormat::Uuid4 => is_uuid(s, Some('4')),
            StrFormat::Uuid5 => is_uuid(s, Some('5')),
            StrFormat::Isbn => is_isbn10(s) || is_isbn13(s),
            StrFormat::Isbn10 => is_isbn10(s),
            StrFormat::Isbn13 => is_isbn13(s),
            StrFormat::CreditCard => is_credit_card(s),
            StrFormat::Ssn => {
                s.len() == 11
                    && rx(&RX_SSN, r"^\d{3}[- ]?\d{2}[- ]?\d{4}$").is_some_and(|r| r.is_match(s))
            }
            StrFormat::HexColor => rx(&RX_HEXCOLOR, "^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
                .is_some_and(|r| r.is_match(s)),
            StrFormat::RgbColor => rx(&RX_RGBCOLOR, RGB_PATTERN).is_some_and(|r| r.is_match(s)),
            StrFormat::Byte => rx(&RX_BASE64, BASE64_PATTERN).is_some_and(|r| r.is_match(s)),
            StrFormat::Password => true,
            StrFormat::Date => is_date(s),
            StrFormat::DateTime => is_date_time(s),
            StrFormat::Duration => is_duration(s),
        }
    }
}

const HOSTNAME_PATTERN: &str = r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$";
const RGB_PATTERN: &str = r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$";
const BASE64_PATTERN: &str =
    r"^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$";
const CREDIT_CARD_PATTERN: &str = r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$";

static RX_HOSTNAME: OnceLock<Option<Regex>> = OnceLock::new();
static RX_SSN: OnceLock<Option<Regex>> = OnceLock::new();
static RX_HEXCOLOR: OnceLock<Option<Regex>> = OnceLock::new();
static RX_RGBCOLOR: OnceLock<Option<Regex>> = OnceLock::new();
static RX_BASE64: OnceLock<Option<Regex>> = OnceLock::new();
static RX_CREDIT_CARD: OnceLock<Option<Regex>> = OnceLock::new();

/// A Go regular expression compiled once.
fn rx(cell: &'static OnceLock<Option<Regex>>, pattern: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| crate::goregex::compile(pattern).ok())
        .as_ref()
}

/// `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?V[0-9a-f]{3}-?[89ab]?…[0-9a-f]{12}$`.
fn is_uuid(s: &str, version: Option<char>) -> bool {
    let b = s.as_bytes();
    let mut pos = 0usize;
    for (group, len) in [8usize, 4, 4, 4, 12].iter().enumerate() {
        if group > 0 && b.get(pos) == Some(&b'-') {
            pos += 1;
        }
        let Some(chunk) = b.get(pos..pos + len) else {
            return false;
        };
        if !chunk.iter().all(u8::is_ascii_hexdigit) {
            return false;
        }
        if let Some(v) = version {
            if group == 2 && chunk[0] != v as u8 {
                return false;
            }
            if group == 3
                && v != '3'
                && !matches!(chunk[0].to_ascii_lowercase(), b'8' | b'9' | b'a' | b'b')
            {
                return false;
            }
        }
        pos += len;
    }
    pos == b.len()
}

/// govalidator's `IsISBN(str, 10)`.
fn is_isbn10(s: &str) -> bool {
    let d: Vec<u8> = s.bytes().filter(|b| !b" \t\n\x0c\r-".contains(b)).collect();
    if d.len() != 10
        || !d[..9].iter().all(u8::is_ascii_digit)
        || !(d[9].is_ascii_digit() || d[9] == b'X')
    {
        return false;
    }
    let mut sum: i32 = (0..9)
        .map(|i| (i as i32 + 1) * i32::from(d[i] - b'0'))
        .sum();
    sum += if d[9] == b'X' {
        100
    } else {
        10 * i32::from(d[9] - b'0')
    };
    sum % 11 == 0
}

/// govalidator's `IsISBN(str, 13)`.
fn is_isbn13(s: &str) -> bool {
    let d: Vec<u8> = s.bytes().filter(|b| !b" \t\n\x0c\r-".contains(b)).collect();
    if d.len() != 13 || !d.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: i32 = (0..12)
        .map(|i| [1, 3][i % 2] * i32::from(d[i] - b'0'))
        .sum();
    i32::from(d[12] - b'0') - ((10 - (sum % 10)) % 10) == 0
}

/// govalidator's `IsCreditCard`: the digits match the card pattern and the Luhn sum.
fn is_credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    if !rx(&RX_CREDIT_CARD, CREDIT_CARD_PATTERN).is_some_and(|r| r.is_match(&digits)) {
        return false;
    }
    let mut sum = 0u32;
    let mut double = false;
    for c in digits.bytes().rev() {
        let mut d = u32::from(c - b'0');
        if double {
            d *= 2;
            if d >= 10 {
                d = d % 10 + 1;
            }
        }
        sum += d;
        double = !double;
    }
    sum.is_multiple_of(10)
}

/// `netutils.ParseIPSloppy` for IPv4: four decimal parts, leading zeros allowed.
fn parse_ipv4_sloppy(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.trim_start_matches('0').len() <= 3
                && p.parse::<u32>().is_ok_and(|v| v <= 255)
        })
}

/// `netutils.ParseCIDRSloppy`.
fn is_cidr(s: &str) -> bool {
    let Some((addr, mask)) = s.split_once('/') else {
        return false;
    };
    let bits = if parse_ipv4_sloppy(addr) {
        32
    } else if addr.parse::<std::net::Ipv6Addr>().is_ok() {
        128
    } else {
        return false;
    };
    !mask.is_empty()
        && mask.bytes().all(|b| b.is_ascii_digit())
        && mask
            .trim_start_matches('0')
            .parse::<u32>()
            .map_or(mask.bytes().all(|b| b == b'0'), |m| m <= bits)
}

/// `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx…`, `xx-xx…` or `xxxx.xxxx…`.
fn is_mac(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 14 {
        return false;
    }
    let hex2 = |x: &[u8]| x.len() >= 2 && x[0].is_ascii_hexdigit() && x[1].is_ascii_hexdigit();
    if b[2] == b':' || b[2] == b'-' {
        if !(b.len() + 1).is_multiple_of(3) {
            return false;
        }
        let n = (b.len() + 1) / 3;
        if n != 6 && n != 8 && n != 20 {
            return false;
        }
        (0..n).all(|i| {
            let x = &b[i * 3..];
            hex2(x) && (i == n - 1 || x[2] == b[2])
        })
    } else if b[4] == b'.' {
        if !(b.len() + 1).is_multiple_of(5) {
            return false;
        }
        let n = 2 * (b.len() + 1) / 5;
        if n != 6 && n != 8 && n != 20 {
            return false;
        }
        (0..n / 2).all(|i| {
            let x = &b[i * 5..];
            hex2(x) && hex2(&x[2..]) && (i == n / 2 - 1 || x[4] == b'.')
        })
    } else {
        false
    }
}

/// `time.Parse("2006-01-02", s)`.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = &s[r];
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    let (Some(year), Some(month), Some(day)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// strfmt's `IsDateTime`.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    // ^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$
    let chars: Vec<char> = time.chars().collect();
    let two = |i: usize| {
        chars
            .get(i..i + 2)
            .filter(|c| c.iter().all(char::is_ascii_digit))
            .map(|c| c.iter().collect::<String>())
    };
    let (Some(h), Some(m), Some(sec)) = (two(0), two(3), two(6)) else {
        return false;
    };
    if chars.get(2) != Some(&':') || chars.get(5) != Some(&':') {
        return false;
    }
    let mut i = 8;
    if i < chars.len() && chars[i] != 'z' && chars[i] != '+' && chars[i] != '-' {
        // `.` in the Go pattern matches any character.
        let start = i + 1;
        let mut j = start;
        while j < chars.len() && chars[j].is_ascii_digit() {
            j += 1;
        }
        if j == start {
            return false;
        }
        i = j;
    }
    let zone_ok = match chars.get(i) {
        Some('z') => i + 1 == chars.len(),
        Some('+' | '-') => {
            chars.len() == i + 6
                && two(i + 1).is_some()
                && chars[i + 3] == ':'
                && two(i + 4).is_some()
        }
        _ => false,
    };
    zone_ok && h.as_str() <= "23" && m.as_str() <= "59" && sec.as_str() <= "59"
}

/// strfmt's `ParseDuration`: Go's `time.ParseDuration`, else `<digits> <unit>` anywhere.
fn is_duration(s: &str) -> bool {
    go_parse_duration(s) || {
        let Some(re) = rx(&RX_DURATION, r"((\d+)\s*([A-Za-zµ]+))") else {
            return false;
        };
        const UNITS: &[&[&str]] = &[
            &["ns", "nano"],
            &["us", "µs", "micro"],
            &["ms", "milli"],
            &["s", "sec"],
            &["m", "min"],
            &["h", "hr", "hour"],
            &["d", "day"],
            &["w", "wk", "week"],
        ];
        let mut ok = false;
        for caps in re.captures_iter(s) {
            let (Some(num), Some(unit)) = (caps.get(2), caps.get(3)) else {
                continue;
            };
            if num.as_str().parse::<i64>().is_err() {
                return false;
            }
            let unit = unit.as_str().to_lowercase();
            for variants in UNITS {
                let last = variants.len() - 1;
                for (i, v) in variants.iter().enumerate() {
                    if (i == last && unit.starts_with(v)) || unit == *v {
                        ok = true;
                    }
                }
            }
        }
        ok
    }
}

static RX_DURATION: OnceLock<Option<Regex>> = OnceLock::new();

/// Whether Go's `time.ParseDuration` accepts `s`.
fn go_parse_duration(s: &str) -> bool {
    crate::gofmt::parse_go_duration(s).is_ok()
}

/// A simplified `net/mail.ParseAddress`: `addr-spec` or `[display name] <addr-spec>`.
fn is_email(s: &str) -> bool {
    let s = s.trim_matches([' ', '\t']);
    if let Some(inner) = s.strip_suffix('>')
        && let Some(lt) = inner.rfind('<')
    {
        let name = inner[..lt].trim_matches([' ', '\t']);
        let name_ok = name.is_empty()
            || (name.len() >= 2 && name.starts_with('"') && name.ends_with('"'))
            || name
                .split([' ', '\t'])
                .filter(|w| !w.is_empty())
                .all(|w| w.chars().all(|c| is_atext(c, true)));
        return name_ok && is_addr_spec(&inner[lt + 1..]);
    }
    is_addr_spec(s)
}

fn is_atext(c: char, dot: bool) -> bool {
    match c {
        '.' => dot,
        '(' | ')' | '<' | '>' | '[' | ']' | ':' | ';' | '@' | '\\' | ',' | '"' => false,
        c => ('!'..='~').contains(&c) || !c.is_ascii(),
    }
}

fn is_dot_atom(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|a| !a.is_empty() && a.chars().all(|c| is_atext(c, false)))
}

fn is_addr_spec(s: &str) -> bool {
    let Some(at) = s.rfind('@') else { return false };
    let (local, domain) = (&s[..at], &s[at + 1..]);
    let local_ok = if local.len() >= 2 && local.starts_with('"') && local.ends_with('"') {
        !local[1..local.len() - 1].contains(['"', '\n', '\r'])
    } else {
        is_dot_atom(local)
    };
    let domain_ok = if domain.starts_with('[') && domain.ends_with(']') && domain.len() >= 2 {
        !domain[1..domain.len() - 1].contains(['[', ']', '\\'])
    } else {
        is_dot_atom(domain)
    };
    local_ok && domain_ok
}

/// A simplified `url.ParseRequestURI`: an absolute URI or an absolute path.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if s == "*" {
        return true;
    }
    // Scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"
    let mut scheme = "";
    let mut rest = s;
    for (i, c) in s.char_indices() {
        if c.is_ascii_alphabetic() || (i > 0 && (c.is_ascii_digit() || "+-.".contains(c))) {
            continue;
        }
        if c == ':' {
            if i == 0 {
                return false;
            }
            scheme = &s[..i];
            rest = &s[i + 1..];
        }
        break;
    }
    let rest = rest.split_once('?').map_or(rest, |(p, _)| p);
    if !rest.starts_with('/') {
        return !scheme.is_empty();
    }
    let mut path = rest;
    if !scheme.is_empty()
        && let Some(after) = rest.strip_prefix("//")
    {
        let end = after.find('/').unwrap_or(after.len());
        let authority = &after[..end];
        path = &after[end..];
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let port_ok = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
        if let Some(bracketed) = host.strip_prefix('[') {
            let Some((_, after_bracket)) = bracketed.split_once(']') else {
                return false;
            };
            match after_bracket.strip_prefix(':') {
                Some(port) if !port_ok(port) => return false,
                None if !after_bracket.is_empty() => return false,
                _ => {}
            }
        } else if let Some((_, port)) = host.rsplit_once(':')
            && !port_ok(port)
        {
            return false;
        }
        if !valid_percent_escapes(host) {
            return false;
        }
    }
    valid_percent_escapes(path)
}

fn valid_percent_escapes(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
            {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

// =============================================================================================
// Go compatibility: regular expressions, number and value formatting
// =============================================================================================

/// A float as a JSON number (integral values as integers, as Go prints them).
fn float_value(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

/// A bad value as `field.Error` prints it: `null` as the string `"null"`, integral floats
/// without a fraction.
fn go_bad_value(v: &Value) -> Value {
    match v {
        Value::Null => Value::from("null"),
        Value::Number(n) if n.as_i64().is_none() && n.as_u64().is_none() => {
            float_value(n.as_f64().unwrap_or(0.0))
        }
        other => other.clone(),
    }
}

/// Go's `%v` of a decoded JSON value.
fn go_sprint(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => go_float(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_sprint).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{k}:{}", m.get(*k).map_or_else(String::new, go_sprint)))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const P: &str = "spec.versions[0].schema.openAPIV3Schema";

    fn msgs(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn parse(v: Value) -> Schema {
        match Schema::parse(&v, P) {
            Ok(s) => s,
            Err(e) => panic!("unexpected errors:\n{}", msgs(&e).join("\n")),
        }
    }

    fn parse_err(v: Value) -> Vec<String> {
        match Schema::parse(&v, P) {
            Ok(_) => panic!("expected errors for {v}"),
            Err(e) => msgs(&e),
        }
    }

    fn sorted(mut v: Vec<String>) -> Vec<String> {
        v.sort();
        v
    }

    /// The CronTab schema of the seed's "Validation" section.
    fn crontab() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "cronSpec": {"type": "string", "pattern": r"^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$"},
                        "image": {"type": "string"},
                        "replicas": {"type": "integer", "minimum": 1, "maximum": 10}
                    }
                }
            }
        })
    }

    fn crontab_object(spec: Value) -> Value {
        json!({
            "apiVersion": "stable.example.com/v1",
            "kind": "CronTab",
            "metadata": {"name": "my-new-cron-object", "namespace": "default"},
            "spec": spec
        })
    }

    // ---------------------------------------------------------------------------------------
    // CRDV-01 / ERR-08: value validation
    // ---------------------------------------------------------------------------------------

    #[test]
    fn crdv01_err08_crontab_invalid_values() {
        let s = parse(crontab());
        let obj = crontab_object(json!({
            "cronSpec": "* * * *", "image": "my-awesome-cron-image", "replicas": 15
        }));
        assert_eq!(
            msgs(&s.validate(&obj)),
            vec![
                r#"spec.cronSpec: Invalid value: "* * * *": spec.cronSpec in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'"#,
                "spec.replicas: Invalid value: 15: spec.replicas in body should be less than or equal to 10",
            ]
        );
        let ok = crontab_object(json!({
            "cronSpec": "* * * * */5", "image": "my-awesome-cron-image", "replicas": 5
        }));
        assert!(s.validate(&ok).is_empty());
    }

    #[test]
    fn crdv01_minimum_exclusive_and_float_bounds() {
        let s = parse(json!({"type": "object", "properties": {
            "a": {"type": "integer", "minimum": 1, "exclusiveMinimum": true},
            "b": {"type": "number", "maximum": 1.5, "exclusiveMaximum": true},
            "c": {"type": "number", "maximum": 1000000}
        }}));
        assert_eq!(
            msgs(&s.validate(&json!({"a": 1, "b": 1.5, "c": 2000000.5}))),
            vec![
                "a: Invalid value: 1: a in body should be greater than 1",
                "b: Invalid value: 1.5: b in body should be less than 1.5",
                "c: Invalid value: 2000000.5: c in body should be less than or equal to 1e+06",
            ]
        );
    }

    #[test]
    fn crdv01_types_as_kube_reports_them() {
        // Cases from apiextensions-apiserver pkg/apiserver/validation/validation_test.go.
        let s = parse(json!({"type": "object", "properties": {"field": {"type": "object"}}}));
        for (v, t) in [
            (json!("foo"), "string"),
            (json!(42), "integer"),
            (json!(true), "boolean"),
            (json!(1.2), "number"),
            (json!([]), "array"),
            (json!(null), "null"),
        ] {
            assert_eq!(
                msgs(&s.validate(&json!({ "field": v }))),
                vec![format!(
                    r#"field: Invalid value: "{t}": field in body must be of type object: "{t}""#
                )]
            );
        }
        let nullable = parse(json!({"type": "object", "properties": {
            "field": {"type": "object", "nullable": true}
        }}));
        assert!(nullable.validate(&json!({"field": null})).is_empty());
        // An integral float is an integer.
        let int = parse(json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
        assert!(int.validate(&json!({"n": 3.0})).is_empty());
    }

    #[test]
    fn crdv01_required_enum_and_type_together() {
        let s = parse(json!({"type": "object", "properties": {"field": {
            "type": "object",
            "required": ["nestedint", "nestedstring"],
            "properties": {
                "nestedint": {"type": "integer", "enum": [1, 2]},
                "nestedstring": {"type": "string", "enum": ["a", "b"]}
            }
        }}}));
        assert_eq!(
            msgs(&s.validate(&json!({"field": {}}))),
            vec![
                "field.nestedint: Required value",
                "field.nestedstring: Required value"
            ]
        );
        assert_eq!(
            sorted(msgs(&s.validate(
                &json!({"field": {"nestedint": "x", "nestedstring": true}})
            ))),
            vec![
                r#"field.nestedint: Invalid value: "string": field.nestedint in body must be of type integer: "string""#,
                r#"field.nestedint: Unsupported value: "x": supported values: "1", "2""#,
                r#"field.nestedstring: Invalid value: "boolean": field.nestedstring in body must be of type string: "boolean""#,
                r#"field.nestedstring: Unsupported value: true: supported values: "a", "b""#,
            ]
        );
    }

    #[test]
    fn crdv01_lengths_counts_and_formats() {
        let s = parse(json!({"type": "object", "properties": {
            "s": {"type": "string", "maxLength": 2},
            "t": {"type": "string", "minLength": 3},
            "l": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"}},
            "m": {"type": "object", "maxProperties": 2, "additionalProperties": {"type": "boolean"}},
            "u": {"type": "string", "format": "uuid"},
            "d": {"type": "string", "format": "date-time"},
            "i": {"type": "integer", "format": "int32", "multipleOf": 3}
        }}));
        let obj = json!({
            "s": "äbc", "t": "ab", "l": ["a", "b", "c"], "m": {"a": true, "b": true, "c": 1},
            "u": "nope", "d": "2024-13-01T00:00:00Z", "i": 7
        });
        assert_eq!(
            sorted(msgs(&s.validate(&obj))),
            vec![
                r#"d: Invalid value: "2024-13-01T00:00:00Z": d in body must be of type date-time: "2024-13-01T00:00:00Z""#,
                "i: Invalid value: 7: i in body should be a multiple of 3",
                "l: Too many: 3: must have at most 2 items",
                r#"m.c: Invalid value: "integer": m.c in body must be of type boolean: "integer""#,
                "m: Too many: 3: must have at most 2 items",
                "s: Too long: may not be more than 2 bytes",
                r#"t: Invalid value: "ab": t in body should be at least 3 chars long"#,
                r#"u: Invalid value: "nope": u in body must be of type uuid: "nope""#,
            ]
        );
        let ok = json!({
            "s": "ää", "t": "abc", "l": ["a"], "m": {"a": true},
            "u": "123e4567-e89b-12d3-a456-426614174000", "d": "2024-02-29T10:00:00.5+01:00", "i": 9
        });
        assert!(s.validate(&ok).is_empty(), "{:?}", msgs(&s.validate(&ok)));
    }

    #[test]
    fn crdv01_string_formats() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            ("byte", &["aGVsbG8=", "YWJj"], &["", "abc", "a?c="]),
            ("date", &["2024-02-29"], &["2023-02-29", "2024-1-01"]),
            (
                "duration",
                &["1h30m", "0", "5 sec", "3 days"],
                &["", "x", "5 foo"],
            ),
            ("ipv4", &["10.0.0.1", "010.0.0.1"], &["256.0.0.1", "::1"]),
            ("ipv6", &["::1", "fe80::1"], &["10.0.0.1", "zz::"]),
            (
                "cidr",
                &["10.0.0.0/8", "::/0"],
                &["10.0.0.0/33", "10.0.0.0"],
            ),
            (
                "mac",
                &["01:23:45:67:89:ab", "0123.4567.89ab"],
                &["01:23:45:67:89", "x"],
            ),
            (
                "email",
                &["a@example.com", "Bob <b@x.org>"],
                &["a", "a@", "@b"],
            ),
            (
                "uri",
                &["https://example.com/a?b", "/abs", "mailto:x"],
                &["rel/path", "", "http://h:x/"],
            ),
            ("hostname", &["example.com", "a"], &["-x"]),
            ("hexcolor", &["#fff", "00ff00"], &["#ffff"]),
            ("isbn10", &["0321751043"], &["0321751044"]),
            ("isbn13", &["978-0321751041"], &["9780321751042"]),
            (
                "creditcard",
                &["4111 1111 1111 1111"],
                &["4111 1111 1111 1112"],
            ),
            ("ssn", &["123-45-6789"], &["123456789"]),
            ("rgbcolor", &["rgb(255, 0, 10)"], &["rgb(256,0,0)"]),
            (
                "bsonobjectid",
                &["507f1f77bcf86cd799439011"],
                &["507f1f77bcf86cd79943901"],
            ),
            (
                "uuid4",
                &["123e4567-e89b-42d3-a456-426614174000"],
                &["123e4567-e89b-12d3-a456-426614174000"],
            ),
            ("password", &["anything"], &[]),
            ("int32", &["not checked"], &[]),
        ];
        for (format, good, bad) in cases {
            let s = parse(
                json!({"type": "object", "properties": {"f": {"type": "string", "format": format}}}),
            );
            for g in *good {
                assert!(
                    s.validate(&json!({"f": g})).is_empty(),
                    "{format}: {g} should pass"
                );
            }
            for b in *bad {
                assert_eq!(
                    msgs(&s.validate(&json!({"f": b}))),
                    vec![format!(
                        "f: Invalid value: {q}: f in body must be of type {format}: {q}",
                        q = go_quote(b)
                    )],
                    "{format}: {b}"
                );
            }
        }
    }

    #[test]
    fn crdv01_junctors_report_like_kube_openapi() {
        // From validation_test.go: "nullable, x-kubernetes-int-or-string and user-provided anyOf".
        let s = parse(json!({"type": "object", "properties": {"field": {
            "nullable": true, "x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}]
        }}}));
        assert!(s.validate(&json!({"field": null})).is_empty());
        assert!(s.validate(&json!({"field": "x"})).is_empty());
        assert_eq!(
            sorted(msgs(&s.validate(&json!({"field": true})))),
            vec![
                r#"<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)"#,
                r#"field: Invalid value: "boolean": field in body must be of type integer,string: "boolean""#,
                r#"field: Invalid value: "boolean": field in body must be of type integer: "boolean""#,
            ]
        );
        let all_of = parse(json!({"type": "object", "properties": {"field": {
            "x-kubernetes-int-or-string": true,
            "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}]
        }}}));
        assert_eq!(
            sorted(msgs(&all_of.validate(&json!({"field": 1.5})))),
            vec![
                r#"<nil>: Invalid value: "": "field" must validate all the schemas (allOf). None validated"#,
                r#"<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)"#,
                r#"field: Invalid value: "number": field in body must be of type integer,string: "number""#,
                r#"field: Invalid value: "number": field in body must be of type integer: "number""#,
            ]
        );
        let one_not = parse(json!({"type": "object", "properties": {"n": {
            "type": "integer",
            "oneOf": [{"minimum": 0}, {"maximum": 10}],
            "not": {"enum": [7]}
        }}}));
        assert_eq!(
            msgs(&one_not.validate(&json!({"n": 5}))),
            vec![
                r#"<nil>: Invalid value: "": "n" must validate one and only one schema (oneOf). Found 2 valid alternatives"#
            ]
        );
        assert_eq!(
            msgs(&one_not.validate(&json!({"n": 7}))),
            vec![
                r#"<nil>: Invalid value: "": "n" must validate one and only one schema (oneOf). Found 2 valid alternatives"#,
                r#"<nil>: Invalid value: "": "n" must not validate the schema (not)"#,
            ]
        );
    }

    #[test]
    fn crdv01_invalid_pattern_message_shape() {
        // The message kube-openapi gives for a pattern that does not compile.
        let n = NodeData {
            pattern: Some(Pattern {
                source: "+".into(),
                regex: crate::goregex::compile("+").map(|_| unreachable_regex()),
            }),
            ..NodeData::default()
        };
        let v = Validator {
            nodes: std::slice::from_ref(&n),
            mode: Mode::CustomResource,
        };
        let e = v
            .check_string(&n, "field", "foo")
            .map(|e| e.message().to_owned());
        assert_eq!(
            e.as_deref(),
            Some(
                "field in body should match '+, but pattern is invalid: error parsing regexp: missing argument to repetition operator: `+`'"
            )
        );
    }

    fn unreachable_regex() -> Regex {
        match Regex::new("x") {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn crdv01_status_validation_names_fields_relative_to_status() {
        // subresources_test.go: `status.num: Invalid value: 15: num in body should be …`.
        let s = parse(json!({"type": "object", "properties": {
            "status": {"type": "object", "properties": {"num": {"type": "integer", "maximum": 10}}}
        }}));
        assert_eq!(
            msgs(&s.validate_status(&json!({"status": {"num": 15}}))),
            vec!["status.num: Invalid value: 15: num in body should be less than or equal to 10"]
        );
        assert!(s.validate_status(&json!({"spec": {}})).is_empty());
    }

    #[test]
    fn crdv01_metadata_name_restriction_is_validated() {
        let s = parse(json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}}
        }}));
        assert_eq!(
            msgs(&s.validate(&json!({"metadata": {"name": "toolong"}}))),
            vec!["metadata.name: Too long: may not be more than 5 bytes"]
        );
    }

    #[test]
    fn crdv01_additional_properties_false_allows_only_declared_keys() {
        let s = parse(json!({"type": "object", "properties": {
            "m": {"type": "object", "additionalProperties": false}
        }}));
        assert_eq!(
            msgs(&s.validate(&json!({"m": {"x": 1}}))),
            vec![r#"m: Invalid value: "x": m.x in body is a forbidden property"#]
        );
    }

    // ---------------------------------------------------------------------------------------
    // CRD-05, CRD-06, CRD-08: pruning
    // ---------------------------------------------------------------------------------------

    #[test]
    fn crd05_prunes_some_random_field() {
        let s = parse(crontab());
        let mut obj = crontab_object(json!({
            "cronSpec": "* * * * */5", "image": "my-awesome-cron-image", "someRandomField": 42
        }));
        obj["status"] = json!({"x": 1});
        assert_eq!(s.prune(&mut obj), vec!["spec.someRandomField", "status"]);
        assert_eq!(
            obj,
            crontab_object(json!({"cronSpec": "* * * * */5", "image": "my-awesome-cron-image"}))
        );
    }

    #[test]
    fn crd06_preserve_unknown_fields_and_pruning_resumes() {
        let s = parse(json!({"type": "object", "properties": {"json": {
            "x-kubernetes-preserve-unknown-fields": true,
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "foo": {"type": "string"}, "bar": {"type": "string"}
            }}}
        }}}));
        let mut obj = json!({"json": {
            "spec": {"foo": "abc", "bar": "def", "something": "x"},
            "status": {"something": "x"}
        }});
        assert_eq!(s.prune(&mut obj), vec!["json.spec.something"]);
        assert_eq!(
            obj,
            json!({"json": {"spec": {"foo": "abc", "bar": "def"}, "status": {"something": "x"}}})
        );
        // Only objects are allowed with `type: object`.
        assert_eq!(
            msgs(&s.validate(&json!({"json": 1}))),
            vec![
                r#"json: Invalid value: "integer": json in body must be of type object: "integer""#
            ]
        );
        // Without a type, anything goes.
        let any = parse(json!({"type": "object", "properties": {
            "json": {"x-kubernetes-preserve-unknown-fields": true}
        }}));
        let mut v = json!({"json": [1, {"a": [true]}], "extra": 1});
        assert_eq!(any.prune(&mut v), vec!["extra"]);
        assert!(any.validate(&v).is_empty());
    }

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

    // ---------------------------------------------------------------------------------------
    // CRDV-04, CRDV-05: nulls and defaults
    // ---------------------------------------------------------------------------------------

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

    // ---------------------------------------------------------------------------------------
    // CRD-03: structural schemas
    // ---------------------------------------------------------------------------------------

    #[test]
    fn crd03_seed_non_structural_example_3() {
        let errs = parse_err(json!({
            "properties": {
                "foo": {"pattern": "abc"},
                "metadata": {"type": "object", "properties": {
                    "name": {"type": "string", "pattern": "^a"},
                    "finalizers": {"type": "array", "items": {"type": "string", "pattern": "my-finalizer"}}
                }}
            },
            "anyOf": [{
                "properties": {"bar": {"type": "integer", "minimum": 42}},
                "required": ["bar"],
                "description": "foo bar object"
            }]
        }));
        assert_eq!(
            errs,
            vec![
                format!("{P}.anyOf[0].description: Forbidden: must be empty to be structural"),
                format!(
                    "{P}.anyOf[0].properties[bar].type: Forbidden: must be empty to be structural"
                ),
                format!(
                    "{P}.properties[bar]: Required value: because it is defined in {P}.anyOf[0].properties[bar]"
                ),
                format!(
                    "{P}.properties[foo].type: Required value: must not be empty for specified object fields"
                ),
                format!(
                    "{P}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
                ),
                format!("{P}.type: Required value: must not be empty at the root"),
            ]
        );
    }

    /// Asserts that every expected violation is reported (kube's integration tests check the
    /// `NonStructuralSchema` condition message the same way).
    fn assert_violations(schema: Value, expected: &[&str]) {
        let errs = parse_err(schema);
        for e in expected {
            let full = format!("{P}{e}");
            assert!(errs.contains(&full), "missing {full}\nin {errs:#?}");
        }
        assert_eq!(errs.len(), expected.len(), "{errs:#?}");
    }

    #[test]
    fn crd03_kube_integration_missing_types_without_extensions() {
        // test/integration/validation_test.go, TestNonStructuralSchemaCondition*.
        assert_violations(
            json!({"properties": {
                "foo": {"properties": {"a": {}}},
                "bar": {"items": {"additionalProperties": {"properties": {"a": {}}, "items": {}}}},
                "abc": {"additionalProperties": {"properties": {"a": {"items": {"additionalProperties": {"items": null}}}}}}
            }}),
            &[
                ".properties[foo].properties[a].type: Required value: must not be empty for specified object fields",
                ".properties[foo].type: Required value: must not be empty for specified object fields",
                ".properties[abc].additionalProperties.properties[a].items.additionalProperties.type: Required value: must not be empty for specified object fields",
                ".properties[abc].additionalProperties.properties[a].items.type: Required value: must not be empty for specified array items",
                ".properties[abc].additionalProperties.properties[a].type: Required value: must not be empty for specified object fields",
                ".properties[abc].additionalProperties.type: Required value: must not be empty for specified object fields",
                ".properties[abc].type: Required value: must not be empty for specified object fields",
                ".properties[bar].items.additionalProperties.items.type: Required value: must not be empty for specified array items",
                ".properties[bar].items.additionalProperties.properties[a].type: Required value: must not be empty for specified object fields",
                ".properties[bar].items.additionalProperties.type: Required value: must not be empty for specified object fields",
                ".properties[bar].items.type: Required value: must not be empty for specified array items",
                ".properties[bar].type: Required value: must not be empty for specified object fields",
                ".type: Required value: must not be empty at the root",
            ],
        );
    }

    #[test]
    fn crd03_kube_integration_forbidden_in_nested_value_validation() {
        let bad = json!({"type": "string", "additionalProperties": true, "title": "hello",
                         "description": "world", "nullable": true});
        assert_violations(
            json!({
                "type": "object",
                "properties": {"foo": {"type": "string"}},
                "not": bad,
                "allOf": [{"properties": {"foo": bad}}],
                "anyOf": [{"items": bad}],
                "oneOf": [{"properties": {"foo": bad}}]
            }),
            &[
                ".anyOf[0].items.type: Forbidden: must be empty to be structural",
                ".anyOf[0].items.additionalProperties: Forbidden: must be undefined to be structural",
                ".anyOf[0].items.title: Forbidden: must be empty to be structural",
                ".anyOf[0].items.description: Forbidden: must be empty to be structural",
                ".anyOf[0].items.nullable: Forbidden: must be false to be structural",
                ".allOf[0].properties[foo].type: Forbidden: must be empty to be structural",
                ".allOf[0].properties[foo].additionalProperties: Forbidden: must be undefined to be structural",
                ".allOf[0].properties[foo].title: Forbidden: must be empty to be structural",
                ".allOf[0].properties[foo].description: Forbidden: must be empty to be structural",
                ".allOf[0].properties[foo].nullable: Forbidden: must be false to be structural",
                ".oneOf[0].properties[foo].type: Forbidden: must be empty to be structural",
                ".oneOf[0].properties[foo].additionalProperties: Forbidden: must be undefined to be structural",
                ".oneOf[0].properties[foo].title: Forbidden: must be empty to be structural",
                ".oneOf[0].properties[foo].description: Forbidden: must be empty to be structural",
                ".oneOf[0].properties[foo].nullable: Forbidden: must be false to be structural",
                ".not.type: Forbidden: must be empty to be structural",
                ".not.additionalProperties: Forbidden: must be undefined to be structural",
                ".not.title: Forbidden: must be empty to be structural",
                ".not.description: Forbidden: must be empty to be structural",
                ".not.nullable: Forbidden: must be false to be structural",
                ".items: Required value: because it is defined in spec.versions[0].schema.openAPIV3Schema.anyOf[0].items",
            ],
        );
    }

    fn structural_incomplete_junctors() -> Value {
        json!({
            "not": {"properties": {
                "a": {},
                "b": {"not": {"properties": {"a": {}, "b": {"items": {}}}}},
                "c": {"items": {"not": {"items": {"properties": {"a": {}}}}}},
                "d": {"items": {}}
            }},
            "allOf": [{"properties": {"e": {}}}],
            "anyOf": [{"properties": {"f": {}}}],
            "oneOf": [{"properties": {"g": {}}}]
        })
    }

    #[test]
    fn crd03_kube_integration_structural_incomplete_and_complete() {
        let mut incomplete = structural_incomplete_junctors();
        incomplete["type"] = json!("object");
        incomplete["properties"] = json!({
            "b": {"type": "object", "properties": {"b": {"type": "array"}}},
            "c": {"type": "array", "items": {"type": "object"}},
            "d": {"type": "array"}
        });
        let errs = parse_err(incomplete);
        for e in [
            ".properties[d].items: Required value: because it is defined in spec.versions[0].schema.openAPIV3Schema.not.properties[d].items",
            ".properties[a]: Required value: because it is defined in spec.versions[0].schema.openAPIV3Schema.not.properties[a]",
            ".properties[b].properties[a]: Required value: because it is defined in spec.versions[0].schema.openAPIV3Schema.not.properties[b].not.properties[a]",
            ".properties[b].properties[b].items: Required value: because it is defined in spec.versions[0].schema.openAPIV3Schema.not.properties[b].not.properties[b].items",
            ".properties[c].items.items: Required value: because it is defined in spec.versions[0].schema.openAPIV3Schema.not.properties[c].items.not.items",
            ".properties[e]: Required value: because it is defined in spec.versions[0].schema.openAPIV3Schema.allOf[0].properties[e]",
            ".properties[f]: Required value: because it is defined in spec.versions[0].schema.openAPIV3Schema.anyOf[0].properties[f]",
            ".properties[g]: Required value: because it is defined in spec.versions[0].schema.openAPIV3Schema.oneOf[0].properties[g]",
        ] {
            assert!(
                errs.contains(&format!("{P}{e}")),
                "missing {e} in {errs:#?}"
            );
        }

        let mut complete = structural_incomplete_junctors();
        complete["type"] = json!("object");
        complete["properties"] = json!({
            "a": {"type": "string"},
            "b": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "array", "items": {"type": "string"}}}},
            "c": {"type": "array", "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}},
            "d": {"type": "array", "items": {"type": "string"}},
            "e": {"type": "string"}, "f": {"type": "string"}, "g": {"type": "string"}
        });
        parse(complete);
    }

    #[test]
    fn crd03_kube_integration_metadata_cases() {
        let forbidden = ".properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified";
        assert_violations(
            json!({"type": "object", "properties": {"metadata": {"minimum": 42.0}}}),
            &[
                forbidden,
                // Not listed in kube's integration test (it checks a subset), but emitted by
                // validateStructuralMetadataInvariants too.
                ".properties[metadata].type: Invalid value: \"\": must be object",
                ".properties[metadata].type: Required value: must not be empty for specified object fields",
            ],
        );
        assert_violations(
            json!({"type": "object", "properties": {"metadata": {"properties": {
                "name": {"pattern": "^[a-z]+$"},
                "labels": {"type": "object", "maxLength": 4}
            }}}}),
            &[
                forbidden,
                ".properties[metadata].type: Invalid value: \"\": must be object",
                ".properties[metadata].type: Required value: must not be empty for specified object fields",
                ".properties[metadata].properties[name].type: Required value: must not be empty for specified object fields",
            ],
        );
        assert_violations(
            json!({"type": "object",
                "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[a-z]+$"}}}},
                "allOf": [{"properties": {"metadata": {}}}],
                "anyOf": [{"properties": {"metadata": {}}}],
                "oneOf": [{"properties": {"metadata": {}}}],
                "not": {"properties": {"metadata": {}}}
            }),
            &[
                ".anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested context",
                ".allOf[0].properties[metadata]: Forbidden: must not be specified in a nested context",
                ".oneOf[0].properties[metadata]: Forbidden: must not be specified in a nested context",
                ".not.properties[metadata]: Forbidden: must not be specified in a nested context",
            ],
        );
        assert_violations(
            json!({"type": "object", "additionalProperties": false}),
            &[".additionalProperties: Forbidden: must not be used at the root"],
        );
        assert_violations(
            json!({"type": "object", "properties": {"foo": {"type": "string", "pattern": "+"}}}),
            &[
                ".properties[foo].pattern: Invalid value: \"+\": must be a valid regular expression, but isn't: error parsing regexp: missing argument to repetition operator: `+`",
            ],
        );
        for ok in [
            json!({"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}),
            json!({"type": "object", "x-kubernetes-embedded-resource": true, "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}}}),
            json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
                "name": {"type": "string", "pattern": "^[a-z]+$"}, "generateName": {"type": "string", "pattern": "^[a-z]+$"}}}}}),
        ] {
            parse(ok);
        }
    }

    #[test]
    fn crd03_seed_structural_counterpart_parses() {
        let s = parse(json!({
            "type": "object",
            "description": "foo bar object",
            "properties": {
                "foo": {"type": "string", "pattern": "abc"},
                "bar": {"type": "integer"},
                "metadata": {"type": "object", "properties": {"name": {"type": "string", "pattern": "^a"}}}
            },
            "anyOf": [{"properties": {"bar": {"minimum": 42}}, "required": ["bar"]}]
        }));
        assert_eq!(
            sorted(msgs(
                &s.validate(&json!({"metadata": {"name": "b"}, "bar": 1}))
            )),
            vec![
                r#"<nil>: Invalid value: "": "" must validate at least one schema (anyOf)"#,
                r#"bar: Invalid value: 1: bar in body should be greater than or equal to 42"#,
                r#"metadata.name: Invalid value: "b": metadata.name in body should match '^a'"#,
            ]
        );
    }

    #[test]
    fn crd03_seed_examples_1_and_2_items_and_properties_outside_junctors() {
        assert_eq!(
            parse_err(json!({"type": "object", "allOf": [{"properties": {"foo": {}}}]})),
            vec![format!(
                "{P}.properties[foo]: Required value: because it is defined in {P}.allOf[0].properties[foo]"
            )]
        );
        assert_eq!(
            parse_err(json!({"type": "object", "allOf": [{"items": {"properties": {"foo": {}}}}]})),
            vec![format!(
                "{P}.items: Required value: because it is defined in {P}.allOf[0].items"
            )]
        );
        assert_eq!(
            parse_err(
                json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object"}}},
                "allOf": [{"properties": {"a": {"items": {"properties": {"foo": {}}}}}}]})
            ),
            vec![format!(
                "{P}.properties[a].items.properties[foo]: Required value: because it is defined in {P}.allOf[0].properties[a].items.properties[foo]"
            )]
        );
        // kube 1.32 only checks the completeness of the root's junctors.
        parse(
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object"},
            "allOf": [{"items": {"properties": {"foo": {}}}}]}}}),
        );
        parse(
            json!({"type": "object", "properties": {"foo": {"type": "string"}},
            "allOf": [{"properties": {"foo": {"maxLength": 3}}}]}),
        );
    }

    #[test]
    fn crd03_types_and_metadata_rules() {
        assert_eq!(
            parse_err(json!({"type": "object", "properties": {
                "a": {"type": "array"},
                "b": {"type": "array", "items": {}},
                "c": {"type": "foo"},
                "d": {"type": "null"}
            }})),
            vec![
                format!("{P}.properties[a].items: Required value: must be specified"),
                format!(
                    "{P}.properties[b].items.type: Required value: must not be empty for specified array items"
                ),
                format!(
                    "{P}.properties[c].type: Unsupported value: \"foo\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""
                ),
                format!(
                    "{P}.properties[d].type: Unsupported value: \"null\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""
                ),
                format!(
                    "{P}.properties[d].type: Forbidden: type cannot be set to null, use nullable as an alternative"
                ),
            ]
        );
        assert_eq!(
            parse_err(json!({"type": "string", "nullable": true})),
            vec![
                format!("{P}.nullable: Forbidden: nullable cannot be true at the root"),
                format!("{P}.type: Invalid value: \"string\": must be object at the root"),
            ]
        );
        assert_eq!(
            parse_err(json!({"type": "object", "additionalProperties": {"type": "string"}})),
            vec![format!(
                "{P}.additionalProperties: Forbidden: must not be used at the root"
            )]
        );
        assert_eq!(
            parse_err(json!({"type": "object", "properties": {
                "kind": {"type": "integer"},
                "metadata": {"type": "object", "default": {}}
            }})),
            vec![
                format!("{P}.properties[kind].type: Invalid value: \"integer\": must be string"),
                format!(
                    "{P}.properties[metadata].default: Forbidden: must not be set in top-level metadata"
                ),
            ]
        );
        parse(
            json!({"type": "object", "properties": {"metadata": {"type": "object",
            "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}}}}}),
        );
    }

    #[test]
    fn crd04_forbidden_constructs() {
        assert_eq!(
            parse_err(json!({"type": "object", "properties": {
                "a": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
                "b": {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": {"type": "string"}},
                "c": {"type": "object", "$ref": "#/definitions/x"},
                "d": {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
                "e": {"type": "string", "id": "e"},
                "f": {"type": "object", "dependencies": {"x": ["y"]}},
                "g": {"type": "object", "definitions": {"x": {"type": "string"}}}
            }})),
            vec![
                format!(
                    "{P}.properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
                ),
                format!(
                    "{P}.properties[b].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
                ),
                format!("{P}.properties[c].$ref: Forbidden: $ref is not supported"),
                format!(
                    "{P}.properties[d].patternProperties: Forbidden: patternProperties is not supported"
                ),
                format!("{P}.properties[e].id: Forbidden: id is not supported"),
                format!("{P}.properties[f].dependencies: Forbidden: dependencies is not supported"),
                format!("{P}.properties[g].definitions: Forbidden: definitions is not supported"),
            ]
        );
        assert_eq!(
            parse_err(json!({"type": "object", "$schema": "x"})),
            vec![format!(
                "{P}: Invalid value: \"\": OpenAPIV3Schema 'schema' is not supported"
            )]
        );
        assert_eq!(
            parse_err(
                json!({"type": "object", "properties": {"a": {"type": "object", "x-kubernetes-preserve-unknown-fields": false}}})
            ),
            vec![format!(
                "{P}.properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"
            )]
        );
        // readOnly, xml & co. are dropped by kube's decoder, and ignored here.
        parse(
            json!({"type": "object", "properties": {"a": {"type": "string", "readOnly": true, "xml": {}}}}),
        );
    }

    #[test]
    fn crd04_invalid_pattern_rejected() {
        assert_eq!(
            parse_err(
                json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "(abc"}}})
            ),
            vec![format!(
                "{P}.properties[a].pattern: Invalid value: \"(abc\": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `(abc`"
            )]
        );
        assert_eq!(
            parse_err(
                json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "a**"}}})
            ),
            vec![format!(
                "{P}.properties[a].pattern: Invalid value: \"a**\": must be a valid regular expression, but isn't: error parsing regexp: invalid nested repetition operator: `**`"
            )]
        );
    }

    #[test]
    fn crd07_int_or_string_rules() {
        let s = parse(
            json!({"type": "object", "properties": {"foo": {"x-kubernetes-int-or-string": true}}}),
        );
        assert!(s.validate(&json!({"foo": 42})).is_empty());
        assert!(s.validate(&json!({"foo": "42%"})).is_empty());
        assert_eq!(
            msgs(&s.validate(&json!({"foo": null}))),
            vec![
                r#"foo: Invalid value: "null": foo in body must be of type integer,string: "null""#
            ]
        );
        parse(
            json!({"type": "object", "properties": {"foo": {"x-kubernetes-int-or-string": true,
            "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"maxLength": 5}]}}}),
        );
        assert_eq!(
            parse_err(
                json!({"type": "object", "properties": {"foo": {"x-kubernetes-int-or-string": true,
                "anyOf": [{"type": "integer", "minimum": 1}, {"type": "string"}],
                "x-kubernetes-preserve-unknown-fields": true}}})
            ),
            vec![
                format!(
                    "{P}.properties[foo].anyOf[0].type: Forbidden: must be empty to be structural"
                ),
                format!(
                    "{P}.properties[foo].anyOf[1].type: Forbidden: must be empty to be structural"
                ),
                format!(
                    "{P}.properties[foo].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true"
                ),
            ]
        );
    }

    #[test]
    fn crd08_embedded_resource_rules() {
        assert_eq!(
            parse_err(json!({"type": "object", "properties": {
                "a": {"x-kubernetes-embedded-resource": true},
                "b": {"type": "object", "x-kubernetes-embedded-resource": true},
                "c": {"type": "object", "properties": {"metadata": {"type": "object",
                    "properties": {"x": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}}}
            }})),
            vec![
                format!(
                    "{P}.properties[a].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"
                ),
                format!(
                    "{P}.properties[a].type: Required value: must be object if x-kubernetes-embedded-resource is true"
                ),
                format!(
                    "{P}.properties[b].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"
                ),
            ]
        );
        // Inside a resource's metadata, embedded resources are forbidden.
        assert_eq!(
            parse_err(
                json!({"type": "object", "properties": {"r": {"type": "object",
                "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"metadata": {"type": "object", "properties": {"x": {"type": "object",
                    "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}}}}})
            ),
            vec![format!(
                "{P}.properties[r].properties[metadata].properties[x].x-kubernetes-embedded-resource: Forbidden: must not be used inside of resource meta"
            )]
        );
    }

    #[test]
    fn crd_list_type_and_map_keys_rules() {
        assert_eq!(
            parse_err(json!({"type": "object", "properties": {
                "a": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object",
                      "properties": {"name": {"type": "string"}, "sub": {"type": "object"}}}},
                "b": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "sub", "nope"],
                      "items": {"type": "object", "required": ["name"],
                                "properties": {"name": {"type": "string"}, "sub": {"type": "object", "default": {}}}}},
                "c": {"type": "string", "x-kubernetes-list-type": "bag"},
                "d": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-map-keys": ["x"]}
            }})),
            vec![
                format!(
                    "{P}.properties[a].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"
                ),
                format!(
                    "{P}.properties[b].items.properties[sub].type: Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map"
                ),
                format!(
                    "{P}.properties[b].x-kubernetes-list-map-keys: Invalid value: [\"name\",\"sub\",\"nope\"]: entries must all be names of item properties"
                ),
                format!(
                    "{P}.properties[c].type: Invalid value: \"string\": must be array if x-kubernetes-list-type is specified"
                ),
                format!(
                    "{P}.properties[c].x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\""
                ),
                format!(
                    "{P}.properties[d].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty"
                ),
            ]
        );
        assert_eq!(
            parse_err(json!({"type": "object", "properties": {
                "m": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {"name": {"type": "string", "nullable": true}}}},
                "s": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}
            }})),
            vec![
                format!(
                    "{P}.properties[m].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
                ),
                format!(
                    "{P}.properties[m].items.properties[name].nullable: Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable"
                ),
                format!(
                    "{P}.properties[s].items.x-kubernetes-map-type: Invalid value: \"null\": must be atomic as item of a list with x-kubernetes-list-type=set"
                ),
            ]
        );
    }

    #[test]
    fn crd_list_sets_and_maps_duplicates() {
        let s = parse(json!({"type": "object", "properties": {
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
            "map2": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
                     "items": {"type": "object", "required": ["a", "b"], "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}}
        }}));
        let obj = json!({
            "set": ["a", "b", "a", "a"],
            "map": [{"name": "x"}, {"name": "x"}],
            "map2": [{"a": "x", "b": 1}, {"a": "x", "b": 2}, {"b": 1, "a": "x"}]
        });
        assert_eq!(
            msgs(&s.validate(&obj)),
            vec![
                r#"set[2]: Duplicate value: "a""#,
                r#"map[1]: Duplicate value: {"name":"x"}"#,
                r#"map2[2]: Duplicate value: {"a":"x","b":1}"#,
            ]
        );
    }

    #[test]
    fn crd_validation_rules_static_checks() {
        assert_eq!(
            parse_err(json!({"type": "object", "x-kubernetes-validations": [
                {"rule": " "},
                {"rule": "self.a > 0", "message": "a\nb"},
                {"rule": "self.a > 0", "reason": "Nope"}
            ]})),
            vec![
                format!(
                    "{P}.x-kubernetes-validations[0].rule: Required value: rule is not specified"
                ),
                format!(
                    "{P}.x-kubernetes-validations[1].message: Invalid value: \"a\\nb\": message must not contain line breaks"
                ),
                format!(
                    "{P}.x-kubernetes-validations[2].reason: Unsupported value: \"Nope\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
                ),
            ]
        );
    }

    // ---------------------------------------------------------------------------------------
    // CRDV-04: defaults must be pruned and valid
    // ---------------------------------------------------------------------------------------

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

    // ---------------------------------------------------------------------------------------
    // DISC-11: publishing
    // ---------------------------------------------------------------------------------------

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

    // ---------------------------------------------------------------------------------------
    // Navigation
    // ---------------------------------------------------------------------------------------

    #[test]
    fn navigation_for_other_features() {
        let s = parse(json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "maximum": 10},
                "items": {"type": "array", "maxItems": 3, "x-kubernetes-list-type": "set", "items": {"type": "string", "format": "date-time"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 63}},
                "ios": {"x-kubernetes-int-or-string": true}
            }, "x-kubernetes-validations": [{"rule": "self.replicas >= 0"}]}
        }}));
        let spec = s.root().property("spec");
        let field = |name: &str| spec.and_then(|n| n.property(name));
        assert_eq!(field("replicas").map(|n| n.kind()), Some(NodeKind::Integer));
        let items = field("items");
        assert_eq!(
            items.and_then(|n| n.items()).map(|n| n.format()),
            Some("date-time")
        );
        assert_eq!(items.and_then(|n| n.list_type()), Some("set"));
        assert_eq!(items.and_then(|n| n.max_items()), Some(3));
        let labels = field("labels");
        assert_eq!(labels.map(|n| n.kind()), Some(NodeKind::Map));
        let label_value = match labels.and_then(|n| n.additional_properties()) {
            Some(AdditionalProperties::Schema(v)) => v.max_length(),
            _ => None,
        };
        assert_eq!(label_value, Some(63));
        assert_eq!(field("ios").map(|n| n.kind()), Some(NodeKind::IntOrString));
        assert_eq!(spec.map(|n| n.validations().len()), Some(1));
        assert!(field("nope").is_none());
        assert_eq!(
            s.root().properties().map(|(k, _)| k).collect::<Vec<_>>(),
            ["spec"]
        );
        let clone = s.clone();
        std::thread::spawn(move || clone.root().kind()).join().ok();
    }
}
