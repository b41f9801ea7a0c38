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
//!
//! ## Layout
//! This file holds the public handles ([`Schema`], [`Node`]) and the node arena they share;
//! each concern lives in a module named after its package in `apiextensions-apiserver`:
//! * `convert`: `openAPIV3Schema` JSON into nodes (`schema/convert.go`);
//! * `crd_validation`: the checks of a schema when its CRD is written, in kube's order
//!   (`pkg/apis/apiextensions/validation`);
//! * `structure`: what makes a schema structural (`schema/validation.go`, `complete.go`);
//! * `defaulting`: nulls, defaults, and the checks of `default`s (`schema/defaulting`);
//! * `pruning`: unknown fields (`schema/pruning`);
//! * `objectmeta`: `apiVersion`, `kind` and `metadata` of embedded resources
//!   (`schema/objectmeta`);
//! * `listtype`: uniqueness in `set` and `map` lists (`schema/listtype`);
//! * `validation`: kube-openapi's value validation (`pkg/apiserver/validation`);
//! * `formats`: kube-openapi's string formats (`strfmt`);
//! * `openapi`: the schema as published in OpenAPI v3 (`schema/unfold.go`,
//!   `kubeopenapi.go`).

mod convert;
mod crd_validation;
mod defaulting;
mod formats;
mod listtype;
mod model;
mod objectmeta;
mod openapi;
mod pruning;
mod structure;
#[cfg(test)]
mod test_util;
mod validation;

use std::sync::Arc;

use serde_json::Value;

use crate::validation::FieldError;
use convert::{Decoder, mark_subtrees};
use crd_validation::check_crd_schema;
use defaulting::{apply_defaults, prune_nulls};
use listtype::validate_list_sets_and_maps_object;
use model::{Inner, Items, NodeData, SchemaOrBool};
use objectmeta::{coerce_embedded, validate_embedded};
use openapi::publish;
use pruning::Pruner;
use validation::{Mode, Validator};

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
        let mut pruner = Pruner::new(nodes);
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
        v.field_errors(self.inner.root, obj, None)
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
        v.field_errors(node.id, status, Some("status"))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structural::test_util::*;
    use serde_json::json;

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
