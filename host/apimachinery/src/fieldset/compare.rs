//! What a write changed, path by path (structured-merge-diff's `Compare`): the sets an
//! Update takes ownership of (`added ∪ modified`) and takes away from every manager
//! (`removed`, and for other managers `added ∪ modified`).
//!
//! Leaves (scalars, atomic lists and maps, values whose kind does not match their shape,
//! and granular containers empty or null on both sides) are added, removed or modified
//! (present on both sides and not equal). Granular maps are compared key by key, set lists
//! item by item, map lists item by key (items sharing a key compared together, as one
//! value). A granular container or list item absent on one side is itself added or
//! removed, besides what is under it: so creating a `labels` map adds `labels` and each
//! label, which is where an Update's `"."` comes from.
//!
//! `metadata.managedFields` is never compared: no manager owns it, and walking the stored
//! entries' sets as free-form maps would cost more than the rest of the object.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{FieldSet, ListKind, Path, PathElement, Shape};

/// The paths a write added, modified and removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Absent before, present after.
    pub added: FieldSet,
    /// Present on both sides, different.
    pub modified: FieldSet,
    /// Present before, absent after.
    pub removed: FieldSet,
}

impl Comparison {
    /// Compares `old` and `new` (whole objects; the root is not a path) under `shape`.
    pub fn of(old: &Value, new: &Value, shape: &Shape) -> Comparison {
        let mut c = Comparison::default();
        c.walk(Some(old), Some(new), shape, &mut Vec::new());
        c
    }

    /// `added ∪ modified`: what the writer now owns.
    pub fn changed(&self) -> FieldSet {
        self.added.union(&self.modified)
    }

    fn walk(&mut self, old: Option<&Value>, new: Option<&Value>, shape: &Shape, path: &mut Path) {
        let granular_map = matches!(shape, Shape::Deduced | Shape::Map { atomic: false, .. });
        let granular_list = matches!(shape, Shape::List { kind, .. } if *kind != ListKind::Atomic);
        let nonempty_obj = |v: Option<&Value>| matches!(v, Some(Value::Object(m)) if !m.is_empty());
        let nonempty_arr = |v: Option<&Value>| matches!(v, Some(Value::Array(a)) if !a.is_empty());
        let obj_or_absent = |v: Option<&Value>| matches!(v, None | Some(Value::Object(_)));
        let arr_or_absent = |v: Option<&Value>| matches!(v, None | Some(Value::Array(_)));
        // A granular container that became another kind of value: everything below the
        // old one is removed, everything below the new one added, the path itself modified.
        let container_kind = |v: &Value| match v {
            Value::Object(_) => 1,
            Value::Array(_) => 2,
            _ => 0,
        };
        if let (Some(o), Some(n)) = (old, new)
            && (granular_map || granular_list)
            && container_kind(o) != container_kind(n)
        {
            self.walk(old, None, shape, path);
            self.walk(None, new, shape, path);
            let mut here = FieldSet::new();
            here.insert(path);
            self.added = self.added.difference(&here);
            self.removed = self.removed.difference(&here);
            self.modified.insert(path);
            return;
        }
        if granular_map
            && obj_or_absent(old)
            && obj_or_absent(new)
            && (nonempty_obj(old) || nonempty_obj(new))
        {
            let empty = serde_json::Map::new();
            let o = old.and_then(Value::as_object).unwrap_or(&empty);
            let n = new.and_then(Value::as_object).unwrap_or(&empty);
            let mut keys: Vec<&String> = o.keys().chain(n.keys()).collect();
            keys.sort();
            keys.dedup();
            let in_metadata = matches!(path.as_slice(), [PathElement::Field(m)] if m == "metadata");
            for k in keys {
                if in_metadata && k == "managedFields" {
                    continue;
                }
                let child = shape.entry(k).0;
                path.push(PathElement::Field(k.clone()));
                self.walk(o.get(k), n.get(k), child, path);
                path.pop();
            }
            self.container(old, new, path);
            return;
        }
        if granular_list
            && arr_or_absent(old)
            && arr_or_absent(new)
            && (nonempty_arr(old) || nonempty_arr(new))
        {
            let Shape::List { kind, items } = shape else {
                return;
            };
            let empty = Vec::new();
            let o = old.and_then(Value::as_array).unwrap_or(&empty);
            let n = new.and_then(Value::as_array).unwrap_or(&empty);
            match kind {
                ListKind::Set => {
                    let by_value = |l: &[Value]| -> BTreeMap<PathElement, ()> {
                        l.iter()
                            .map(|v| (PathElement::Value(v.clone()), ()))
                            .collect()
                    };
                    let (bo, bn) = (by_value(o), by_value(n));
                    for e in bn.keys().filter(|e| !bo.contains_key(*e)) {
                        path.push(e.clone());
                        self.added.insert(path);
                        path.pop();
                    }
                    for e in bo.keys().filter(|e| !bn.contains_key(*e)) {
                        path.push(e.clone());
                        self.removed.insert(path);
                        path.pop();
                    }
                }
                ListKind::Map { keys, defaults } => {
                    let (go, gn) = (group(o, keys, defaults), group(n, keys, defaults));
                    let mut all: Vec<&PathElement> = go.keys().chain(gn.keys()).collect();
                    all.sort();
                    all.dedup();
                    for e in all {
                        path.push(e.clone());
                        match (go.get(e), gn.get(e)) {
                            // Items sharing a key: compared together, as one value.
                            (a, b)
                                if a.is_some_and(|v| v.len() > 1)
                                    || b.is_some_and(|v| v.len() > 1) =>
                            {
                                let whole = |g: Option<&Vec<&Value>>| {
                                    g.map(|v| {
                                        Value::Array(v.iter().map(|x| (*x).clone()).collect())
                                    })
                                };
                                self.leaf(whole(a).as_ref(), whole(b).as_ref(), path);
                            }
                            (a, b) => {
                                let (a, b) = (a.map(|v| v[0]), b.map(|v| v[0]));
                                self.walk(a, b, items, path);
                                self.container(a, b, path);
                            }
                        }
                        path.pop();
                    }
                }
                ListKind::Atomic => {}
            }
            self.container(old, new, path);
            return;
        }
        self.leaf(old, new, path);
    }

    fn leaf(&mut self, old: Option<&Value>, new: Option<&Value>, path: &[PathElement]) {
        match (old, new) {
            (None, Some(_)) => self.added.insert(path),
            (Some(_), None) => self.removed.insert(path),
            (Some(a), Some(b)) if a != b => self.modified.insert(path),
            _ => {}
        }
    }

    /// A container (or list item) present on one side only is itself added or removed.
    fn container(&mut self, old: Option<&Value>, new: Option<&Value>, path: &[PathElement]) {
        match (old, new) {
            (None, Some(_)) => self.added.insert(path),
            (Some(_), None) => self.removed.insert(path),
            _ => {}
        }
    }
}

/// A map list's items by their `k:` element (items without key fields are left out).
fn group<'a>(
    list: &'a [Value],
    keys: &[String],
    defaults: &BTreeMap<String, Value>,
) -> BTreeMap<PathElement, Vec<&'a Value>> {
    let mut g: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
    for item in list {
        if let Some(e) = super::shape::key_of(item, keys, defaults) {
            g.entry(e).or_default().push(item);
        }
    }
    g
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use serde_json::json;

    fn configmap() -> Shape {
        Shape::Map {
            atomic: false,
            fields: [
                ("apiVersion".to_owned(), Shape::Scalar),
                ("kind".to_owned(), Shape::Scalar),
                (
                    "data".to_owned(),
                    Shape::Map {
                        atomic: false,
                        fields: BTreeMap::new(),
                        entries: Some(Box::new(Shape::Scalar)),
                    },
                ),
            ]
            .into(),
            entries: None,
        }
    }

    /// `kubectl create configmap cm --from-literal=a=b` as kube records it (`SSA-14`): the
    /// new map itself and its entry, so `{"f:data":{".":{},"f:a":{}}}`.
    #[test]
    fn a_created_map_is_added_with_its_entries() {
        let c = Comparison::of(&json!({}), &json!({"data": {"a": "b"}}), &configmap());
        assert_eq!(
            c.added.to_fields_v1(),
            json!({"f:data": {".": {}, "f:a": {}}})
        );
        assert!(c.modified.is_empty() && c.removed.is_empty());
    }

    /// The research note's worked example: `a` changed and `b` deleted.
    #[test]
    fn modified_and_removed_entries() {
        let c = Comparison::of(
            &json!({"data": {"a": "1", "b": "2"}}),
            &json!({"data": {"a": "9"}}),
            &configmap(),
        );
        assert_eq!(c.modified.to_fields_v1(), json!({"f:data": {"f:a": {}}}));
        assert_eq!(c.removed.to_fields_v1(), json!({"f:data": {"f:b": {}}}));
        assert!(c.added.is_empty());
        // Removing the whole map removes it and every entry.
        let c = Comparison::of(&json!({"data": {"a": "1"}}), &json!({}), &configmap());
        assert_eq!(
            c.removed.to_fields_v1(),
            json!({"f:data": {".": {}, "f:a": {}}})
        );
        // Equal objects: nothing.
        let same = json!({"data": {"a": "1"}});
        assert_eq!(
            Comparison::of(&same, &same, &configmap()),
            Comparison::default()
        );
    }

    /// `metadata.managedFields` is no one's field (`SSA-14`): entries that differ compare
    /// equal, and a stored object's entries are not walked.
    #[test]
    fn managed_fields_are_not_compared() {
        let entry = json!([{"manager": "m", "fieldsV1": {"f:data": {"f:a": {}}}}]);
        let c = Comparison::of(
            &json!({"metadata": {"managedFields": entry, "labels": {"x": "1"}}}),
            &json!({"metadata": {"labels": {"x": "2"}}}),
            &Shape::Deduced,
        );
        assert!(c.added.is_empty() && c.removed.is_empty(), "{c:?}");
        assert_eq!(
            c.modified.to_fields_v1(),
            json!({"f:metadata": {"f:labels": {"f:x": {}}}})
        );
    }

    #[test]
    fn lists_by_kind_and_empty_containers() {
        let shape = Shape::Map {
            atomic: false,
            fields: [
                (
                    "set".to_owned(),
                    Shape::List {
                        kind: ListKind::Set,
                        items: Box::new(Shape::Scalar),
                    },
                ),
                (
                    "items".to_owned(),
                    Shape::List {
                        kind: ListKind::Map {
                            keys: vec!["name".into()],
                            defaults: BTreeMap::new(),
                        },
                        items: Box::new(Shape::Deduced),
                    },
                ),
                (
                    "atomic".to_owned(),
                    Shape::List {
                        kind: ListKind::Atomic,
                        items: Box::new(Shape::Scalar),
                    },
                ),
                ("empty".to_owned(), Shape::Deduced),
            ]
            .into(),
            entries: None,
        };
        let old = json!({"set": ["a", "b"], "items": [{"name": "x", "v": 1}, {"name": "y"}],
                         "atomic": [1], "empty": {}});
        let new = json!({"set": ["b", "c"], "items": [{"name": "x", "v": 2}, {"name": "z"}],
                         "atomic": [1, 2], "empty": null});
        let c = Comparison::of(&old, &new, &shape);
        assert_eq!(
            c.added.to_fields_v1(),
            json!({"f:items": {"k:{\"name\":\"z\"}": {".": {}, "f:name": {}}}, "f:set": {"v:\"c\"": {}}})
        );
        assert_eq!(
            c.removed.to_fields_v1(),
            json!({"f:items": {"k:{\"name\":\"y\"}": {".": {}, "f:name": {}}}, "f:set": {"v:\"a\"": {}}})
        );
        assert_eq!(
            c.modified.to_fields_v1(),
            json!({"f:atomic": {}, "f:empty": {}, "f:items": {"k:{\"name\":\"x\"}": {"f:v": {}}}})
        );
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        /// Small JSON objects: a few keys, scalars, lists and nested objects.
        use crate::fieldset::testing::json_object;

        fn object() -> impl Strategy<Value = Value> {
            json_object(0)
        }

        proptest! {
            /// Without a schema (every key free-form, so every field is a member): the
            /// fields only the new object has were added, those only the old one has were
            /// removed; nothing is both; an unchanged object changes nothing.
            #[test]
            fn comparison_agrees_with_field_sets(old in object(), new in object()) {
                let c = Comparison::of(&old, &new, &Shape::Deduced);
                let (fo, fnew) = (FieldSet::of_value(&old, &Shape::Deduced), FieldSet::of_value(&new, &Shape::Deduced));
                prop_assert!(fnew.difference(&fo).difference(&c.added).is_empty());
                prop_assert!(fo.difference(&fnew).difference(&c.removed).is_empty());
                prop_assert!(c.added.intersection(&c.removed).is_empty());
                prop_assert!(c.added.intersection(&c.modified).is_empty());
                prop_assert!(c.added.difference(&fnew).is_empty(), "added paths exist in the new object");
                prop_assert!(c.removed.difference(&fo).is_empty(), "removed paths existed in the old one");
                prop_assert_eq!(Comparison::of(&new, &new, &Shape::Deduced), Comparison::default());
                // Swapping the sides swaps added and removed.
                let back = Comparison::of(&new, &old, &Shape::Deduced);
                prop_assert_eq!(back.added, c.removed);
                prop_assert_eq!(back.removed, c.added);
                prop_assert_eq!(back.modified, c.modified);
            }
        }
    }
}
