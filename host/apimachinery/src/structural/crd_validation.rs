//! Checking a CRD version's schema when the CRD is written (CRD-03, CRD-04, CRD-07, CRD-08):
//! the order of `validateCustomResourceDefinitionValidation` and the per-node OpenAPI checks of
//! `ValidateCustomResourceDefinitionOpenAPISchema` (`pkg/apis/apiextensions/validation`),
//! including the list-type, map-type and `x-kubernetes-validations` rules.

use serde_json::Value;

use super::defaulting::validate_defaults;
use super::model::{Dependency, Inner, Items, NodeData, SchemaOrBool, map_key, type_mismatch};
use super::structure::{Level, StructuralChecks, new_structural_error};
use crate::validation::{FieldError, child, index};

/// `validateCustomResourceDefinitionValidation` for a v1 CRD version's schema: root
/// `nullable`, then the structural checks (or, when those pass, the defaults), then the
/// per-node OpenAPI checks; `NewStructural`'s own errors only when nothing else was found.
pub(super) fn check_crd_schema(inner: &Inner, path: &str) -> Vec<FieldError> {
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

#[cfg(test)]
mod tests {
    use crate::structural::test_util::*;
    use serde_json::json;

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
}
