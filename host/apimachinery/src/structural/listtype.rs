//! Uniqueness in `x-kubernetes-list-type: set|map` lists: `pkg/apiserver/schema/listtype`.

use serde_json::{Map, Value};

use super::model::{NodeData, go_bad_value, opt_child, opt_key};
use crate::gofmt::go_json;
use crate::validation::{FieldError, index};

/// `listtype.ValidateListSetsAndMaps` on an object.
pub(super) fn validate_list_sets_and_maps_object(
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

#[cfg(test)]
mod tests {
    use crate::structural::test_util::*;
    use serde_json::json;

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
}
