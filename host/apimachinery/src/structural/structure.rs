//! What makes a schema structural: `NewStructural`'s conversion errors and
//! `ValidateStructural` (`pkg/apiserver/schema/validation.go`, `complete.go`), the invariants
//! of structural schemas and the completeness of value validations under junctors.

use super::model::{Items, NodeData, SchemaOrBool, map_key, type_mismatch};
use crate::validation::{FieldError, child, index};

/// `NewStructural`'s conversion errors (`validateUnsupportedFields` and friends), in its
/// traversal order; the first one wins.
pub(super) fn new_structural_error(nodes: &[NodeData], id: usize) -> Option<String> {
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
pub(super) enum Level {
    Root,
    Item,
    Field,
}

/// `ValidateStructural`: the invariants of structural schemas and the completeness of
/// value validations under junctors.
pub(super) struct StructuralChecks<'a> {
    pub(super) nodes: &'a [NodeData],
}

impl StructuralChecks<'_> {
    pub(super) fn invariants(&self, id: usize, lvl: Level, path: &str, errs: &mut Vec<FieldError>) {
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
    pub(super) fn is_int_or_string_any_of(&self, any_of: &[usize]) -> bool {
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
    pub(super) fn completeness_vv(
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

#[cfg(test)]
mod tests {
    use crate::structural::test_util::*;
    use serde_json::{Value, json};

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
}
