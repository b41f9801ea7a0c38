//! The schema's nodes as converted from `JSONSchemaProps` (`convert`): one arena of
//! [`NodeData`], referenced by index, and the helpers every concern shares (paths,
//! kube's renderings of bad values).

use regex::Regex;
use serde_json::Value;

use super::formats::StrFormat;
use crate::gofmt::go_float;
use crate::validation::{FieldError, child};

#[derive(Debug)]
pub(super) struct Inner {
    pub(super) nodes: Vec<NodeData>,
    pub(super) root: usize,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum SchemaOrBool {
    Bool(bool),
    Schema(usize),
}

#[derive(Debug, Clone)]
pub(super) enum Items {
    Schema(usize),
    Array(Vec<usize>),
}

#[derive(Debug)]
pub(super) enum Dependency {
    Schema(usize),
    Property,
}

#[derive(Debug)]
pub(super) struct Pattern {
    pub(super) source: String,
    pub(super) regex: Result<Regex, String>,
}

/// One schema node, structural or under a junctor. Everything kube's
/// `JSONSchemaProps` holds that matters here; keyword presence is kept where kube's
/// behaviour depends on it.
#[derive(Debug, Default)]
pub(super) struct NodeData {
    // Generic.
    pub(super) type_: String,
    pub(super) description: Option<String>,
    pub(super) title: Option<String>,
    pub(super) default: Option<Value>,
    pub(super) nullable: bool,
    // Value validation.
    pub(super) format: String,
    pub(super) format_kind: Option<StrFormat>,
    pub(super) maximum: Option<f64>,
    pub(super) exclusive_maximum: bool,
    pub(super) minimum: Option<f64>,
    pub(super) exclusive_minimum: bool,
    pub(super) max_length: Option<i64>,
    pub(super) min_length: Option<i64>,
    pub(super) pattern: Option<Pattern>,
    pub(super) max_items: Option<i64>,
    pub(super) min_items: Option<i64>,
    pub(super) unique_items: bool,
    pub(super) multiple_of: Option<f64>,
    pub(super) enum_: Option<Vec<Value>>,
    pub(super) max_properties: Option<i64>,
    pub(super) min_properties: Option<i64>,
    pub(super) required: Option<Vec<String>>,
    pub(super) all_of: Option<Vec<usize>>,
    pub(super) one_of: Option<Vec<usize>>,
    pub(super) any_of: Option<Vec<usize>>,
    pub(super) not: Option<usize>,
    // Structure.
    pub(super) items: Option<Items>,
    pub(super) properties: Option<Vec<(String, usize)>>,
    pub(super) additional_properties: Option<SchemaOrBool>,
    // Unsupported by CRDs.
    pub(super) id: String,
    pub(super) schema_url: String,
    pub(super) ref_: Option<String>,
    pub(super) pattern_properties: Option<Vec<(String, usize)>>,
    pub(super) definitions: Option<Vec<(String, usize)>>,
    pub(super) dependencies: Option<Vec<(String, Dependency)>>,
    pub(super) additional_items: Option<SchemaOrBool>,
    // Extensions.
    pub(super) x_preserve_unknown_fields: Option<bool>,
    pub(super) x_embedded_resource: bool,
    pub(super) x_int_or_string: bool,
    pub(super) x_list_map_keys: Vec<String>,
    pub(super) x_list_map_keys_set: bool,
    pub(super) x_list_type: Option<String>,
    pub(super) x_map_type: Option<String>,
    pub(super) x_validations: Vec<Value>,
    // Derived: whether this structural subtree has embedded resources / set or map lists /
    // `default`s.
    pub(super) sub_embedded: bool,
    pub(super) sub_list_set_or_map: bool,
    pub(super) sub_default: bool,
}

impl NodeData {
    pub(super) fn property(&self, name: &str) -> Option<usize> {
        let props = self.properties.as_ref()?;
        props
            .binary_search_by(|(k, _)| k.as_str().cmp(name))
            .ok()
            .map(|i| props[i].1)
    }

    pub(super) fn has_properties(&self) -> bool {
        self.properties.as_ref().is_some_and(|p| !p.is_empty())
    }

    pub(super) fn props(&self) -> &[(String, usize)] {
        self.properties.as_deref().unwrap_or(&[])
    }

    pub(super) fn preserves(&self) -> bool {
        self.x_preserve_unknown_fields == Some(true)
    }

    pub(super) fn items_schema(&self) -> Option<usize> {
        match self.items {
            Some(Items::Schema(id)) => Some(id),
            _ => None,
        }
    }

    pub(super) fn additional_schema(&self) -> Option<usize> {
        match self.additional_properties {
            Some(SchemaOrBool::Schema(id)) => Some(id),
            _ => None,
        }
    }

    pub(super) fn all_of(&self) -> &[usize] {
        self.all_of.as_deref().unwrap_or(&[])
    }

    pub(super) fn any_of(&self) -> &[usize] {
        self.any_of.as_deref().unwrap_or(&[])
    }

    pub(super) fn one_of(&self) -> &[usize] {
        self.one_of.as_deref().unwrap_or(&[])
    }
}

pub(super) fn schema_of(ap: SchemaOrBool) -> Option<usize> {
    match ap {
        SchemaOrBool::Schema(id) => Some(id),
        SchemaOrBool::Bool(_) => None,
    }
}

// =============================================================================================
// Field paths (k8s.io/apimachinery field.Path notation) and errors
// =============================================================================================

pub(super) fn map_key(path: &str, key: &str) -> String {
    format!("{path}[{key}]")
}

pub(super) fn opt_child(path: Option<&str>, name: &str) -> String {
    match path {
        Some(p) => child(p, name),
        None => name.to_owned(),
    }
}

pub(super) fn opt_key(path: Option<&str>, key: &str) -> String {
    format!("{}[{key}]", path.unwrap_or(""))
}

pub(super) fn opt_index(path: Option<&str>, i: usize) -> String {
    format!("{}[{i}]", path.unwrap_or(""))
}

/// `Required(<path>.type, detail)` when the type is empty, else `Invalid(<path>.type, …)`.
pub(super) fn type_mismatch(path: &str, type_: &str, detail: &str) -> FieldError {
    if type_.is_empty() {
        FieldError::required(child(path, "type"), detail)
    } else {
        FieldError::invalid(child(path, "type"), type_, detail)
    }
}

// =============================================================================================
// Go compatibility: number and value formatting
// =============================================================================================

/// A float as a JSON number (integral values as integers, as Go prints them).
pub(super) fn float_value(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

/// A bad value as `field.Error` prints it: `null` as the string `"null"`, integral floats
/// without a fraction.
pub(super) fn go_bad_value(v: &Value) -> Value {
    match v {
        Value::Null => Value::from("null"),
        Value::Number(n) if n.as_i64().is_none() && n.as_u64().is_none() => {
            float_value(n.as_f64().unwrap_or(0.0))
        }
        other => other.clone(),
    }
}

/// Go's `%v` of a decoded JSON value.
pub(super) fn go_sprint(v: &Value) -> String {
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
