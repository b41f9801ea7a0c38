//! Field sets: which fields of an object a manager owns (`metadata.managedFields[].fieldsV1`,
//! server-side apply, `SSA-*`), and the set algebra apply is computed with.
//!
//! A field set is a set of paths into an object. A path is a list of elements, each one of:
//! - a field of a map or struct: `f:<name>`;
//! - an item of an associative list (`x-kubernetes-list-type: map`), by its key fields:
//!   `k:{"containerPort":80,"protocol":"TCP"}` (a JSON object, fields in name order);
//! - an item of a set list (`x-kubernetes-list-type: set`), by its value: `v:"a"`;
//! - an item of any other list, by position: `i:0`.
//!
//! The `FieldsV1` encoding is a trie of JSON objects keyed by those strings; `"."` in a
//! node's object says that the path to the node is itself in the set (a struct owned as a
//! whole as well as some of its fields), and a member without children is `{}`:
//! `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{".":{},"f:replicas":{}}}`.
//!
//! Sans-IO and schema-free: which paths an object's fields make depends on list types
//! from its schema, which the merge code above this decides.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

pub mod apply;
mod builtin;
mod compare;
pub mod last_applied;
pub mod managed;
mod shape;
#[cfg(test)]
mod testing;
pub use builtin::{builtin_shape, object_meta};
pub use compare::Comparison;
pub use shape::{ListKind, Shape};

/// One step of a path.
#[derive(Debug, Clone)]
pub enum PathElement {
    /// A field of a map or struct.
    Field(String),
    /// An item of an associative list, by its key fields (sorted by name).
    Key(Vec<(String, Value)>),
    /// An item of a set list, by value.
    Value(Value),
    /// An item of a list by position.
    Index(u64),
}

/// A path: elements from the object's root.
pub type Path = Vec<PathElement>;

impl PathElement {
    /// A key element from its fields, in any order.
    pub fn key(fields: impl IntoIterator<Item = (String, Value)>) -> PathElement {
        let mut f: Vec<(String, Value)> = fields.into_iter().collect();
        f.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(f)
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The `FieldsV1` key of this element.
    pub fn encode(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let mut m = Map::new();
                for (k, v) in fields {
                    m.insert(k.clone(), v.clone());
                }
                format!("k:{}", Value::Object(m))
            }
            PathElement::Value(v) => format!("v:{v}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `FieldsV1` key (not `"."`); `None` for a prefix this version does not know
    /// (kube skips those, for documents written by newer servers).
    pub fn decode(s: &str) -> Result<Option<PathElement>, FieldSetError> {
        let bad = |why: &str| FieldSetError(format!("{s:?}: {why}"));
        let (kind, rest) = s
            .split_once(':')
            .ok_or_else(|| bad("expected a prefix f:, k:, v: or i:"))?;
        let pe = match kind {
            "f" => PathElement::Field(rest.to_owned()),
            "v" => serde_json::from_str(rest)
                .map(PathElement::Value)
                .map_err(|e| bad(&format!("the value is not JSON: {e}")))?,
            "k" => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(m)) if !m.is_empty() => PathElement::key(m),
                Ok(_) => return Err(bad("the key is not a non-empty JSON object")),
                Err(e) => return Err(bad(&format!("the key is not JSON: {e}"))),
            },
            "i" => rest
                .parse()
                .map(PathElement::Index)
                .map_err(|_| bad("the index is not a non-negative integer"))?,
            _ => return Ok(None),
        };
        Ok(Some(pe))
    }
}

impl Ord for PathElement {
    /// Fields, then keys, then values, then indexes (the order `FieldsV1` is written in).
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => {
                for ((ka, va), (kb, vb)) in a.iter().zip(b) {
                    let o = ka.cmp(kb).then_with(|| compare_values(va, vb));
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                a.len().cmp(&b.len())
            }
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

/// A total order on JSON values, structured-merge-diff's: numbers, strings, booleans,
/// arrays, objects, null; within a kind by value (numbers numerically, arrays and objects
/// element by element).
fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i.cmp(&j),
            _ => {
                let (f, g) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                f.total_cmp(&g)
            }
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => x
            .iter()
            .zip(y)
            .map(|(p, q)| compare_values(p, q))
            .find(|o| *o != Ordering::Equal)
            .unwrap_or_else(|| x.len().cmp(&y.len())),
        (Value::Object(x), Value::Object(y)) => {
            let mut xs: Vec<_> = x.iter().collect();
            let mut ys: Vec<_> = y.iter().collect();
            xs.sort_by(|p, q| p.0.cmp(q.0));
            ys.sort_by(|p, q| p.0.cmp(q.0));
            xs.iter()
                .zip(&ys)
                .map(|((ka, va), (kb, vb))| ka.cmp(kb).then_with(|| compare_values(va, vb)))
                .find(|o| *o != Ordering::Equal)
                .unwrap_or_else(|| xs.len().cmp(&ys.len()))
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// A `FieldsV1` document that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid fieldsV1: {0}")]
pub struct FieldSetError(pub String);

/// A set of paths, as a trie: the elements that end a member path at this level, and the
/// subtrees below elements that longer paths continue through. No subtree is empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> FieldSet {
        FieldSet::default()
    }

    /// Whether the set has no path.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// How many paths the set holds.
    pub fn len(&self) -> usize {
        self.members.len() + self.children.values().map(FieldSet::len).sum::<usize>()
    }

    /// Adds `path` (the empty path is not a member of anything; it is ignored).
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether `path` is in the set.
    pub fn contains(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.contains(rest)),
        }
    }

    /// Whether some path of the set starts with `prefix` (or is it).
    pub fn has_prefix(&self, prefix: &[PathElement]) -> bool {
        match prefix {
            [] => !self.is_empty(),
            [last] => self.members.contains(last) || self.children.contains_key(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has_prefix(rest)),
        }
    }

    /// The paths in `self` or in `other`.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (k, v) in &other.children {
            match out.children.get_mut(k) {
                Some(mine) => *mine = mine.union(v),
                None => {
                    out.children.insert(k.clone(), v.clone());
                }
            }
        }
        out
    }

    /// The paths in both.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(k, v)| {
                let both = v.intersection(other.children.get(k)?);
                (!both.is_empty()).then(|| (k.clone(), both))
            })
            .collect();
        FieldSet { members, children }
    }

    /// The paths in `self` and not in `other` (a path of `other` removes only itself, not
    /// the longer paths through it).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(k, v)| match other.children.get(k) {
                None => Some((k.clone(), v.clone())),
                Some(o) => {
                    let rest = v.difference(o);
                    (!rest.is_empty()).then(|| (k.clone(), rest))
                }
            })
            .collect();
        FieldSet { members, children }
    }

    /// The paths of `self` that neither are a path of `prefixes` nor run through one
    /// (structured-merge-diff's `RecursiveDifference`: what a reset field such as
    /// `status` takes out of an ownership set).
    pub fn without_subtrees(&self, prefixes: &FieldSet) -> FieldSet {
        let members = self
            .members
            .iter()
            .filter(|m| !prefixes.members.contains(*m))
            .cloned()
            .collect();
        let children = self
            .children
            .iter()
            .filter(|(k, _)| !prefixes.members.contains(*k))
            .filter_map(|(k, v)| match prefixes.children.get(k) {
                None => Some((k.clone(), v.clone())),
                Some(p) => {
                    let rest = v.without_subtrees(p);
                    (!rest.is_empty()).then(|| (k.clone(), rest))
                }
            })
            .collect();
        FieldSet { members, children }
    }

    /// Every path of the set, in order (shorter paths before the longer ones through them).
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        let mut kids = self.children.iter().peekable();
        for m in &self.members {
            while let Some((k, c)) = kids.next_if(|(k, _)| *k < m) {
                prefix.push(k.clone());
                c.collect(prefix, out);
                prefix.pop();
            }
            let mut p = prefix.clone();
            p.push(m.clone());
            out.push(p);
            if let Some((k, c)) = kids.next_if(|(k, _)| *k == m) {
                prefix.push(k.clone());
                c.collect(prefix, out);
                prefix.pop();
            }
        }
        for (k, c) in kids {
            prefix.push(k.clone());
            c.collect(prefix, out);
            prefix.pop();
        }
    }

    /// The `FieldsV1` document.
    pub fn to_fields_v1(&self) -> Value {
        let mut m = Map::with_capacity(self.members.len() + self.children.len());
        self.fill_fields_v1(&mut m);
        Value::Object(m)
    }

    /// Writes this level into `m`: members and subtrees merged in element order (both are
    /// sorted), a member that also has children written once, with `"."`.
    fn fill_fields_v1(&self, m: &mut Map<String, Value>) {
        let mut members = self.members.iter().peekable();
        let mut children = self.children.iter().peekable();
        loop {
            let order = match (members.peek(), children.peek()) {
                (None, None) => break,
                (Some(a), Some((b, _))) => (*a).cmp(*b),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
            };
            let (key, value) = match order {
                Ordering::Less => match members.next() {
                    Some(k) => (k, Value::Object(Map::new())),
                    None => break,
                },
                Ordering::Greater | Ordering::Equal => {
                    let is_member = order == Ordering::Equal;
                    if is_member {
                        members.next();
                    }
                    let Some((k, c)) = children.next() else {
                        break;
                    };
                    let mut inner = Map::with_capacity(
                        c.members.len() + c.children.len() + usize::from(is_member),
                    );
                    if is_member {
                        inner.insert(".".into(), Value::Object(Map::new()));
                    }
                    c.fill_fields_v1(&mut inner);
                    (k, Value::Object(inner))
                }
            };
            m.insert(key.encode(), value);
        }
    }

    /// Takes the paths of `other` out of `self`, in place ([`FieldSet::difference`]).
    pub fn remove_all(&mut self, other: &FieldSet) {
        if other.is_empty() || self.is_empty() {
            return;
        }
        self.members.retain(|m| !other.members.contains(m));
        self.children.retain(|k, v| match other.children.get(k) {
            None => true,
            Some(o) => {
                v.remove_all(o);
                !v.is_empty()
            }
        });
    }

    /// Takes the paths of `prefixes` and everything below them out of `self`, in place
    /// ([`FieldSet::without_subtrees`]).
    pub fn remove_subtrees(&mut self, prefixes: &FieldSet) {
        if prefixes.is_empty() || self.is_empty() {
            return;
        }
        self.members.retain(|m| !prefixes.members.contains(m));
        self.children.retain(|k, v| {
            if prefixes.members.contains(k) {
                return false;
            }
            match prefixes.children.get(k) {
                None => true,
                Some(p) => {
                    v.remove_subtrees(p);
                    !v.is_empty()
                }
            }
        });
    }

    /// Adds the paths of `other`, in place ([`FieldSet::union`] without copying `other`).
    pub fn absorb(&mut self, other: FieldSet) {
        if self.is_empty() {
            *self = other;
            return;
        }
        self.members.extend(other.members);
        for (k, v) in other.children {
            match self.children.get_mut(&k) {
                Some(mine) => mine.absorb(v),
                None => {
                    self.children.insert(k, v);
                }
            }
        }
    }

    /// Reads a `FieldsV1` document.
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, FieldSetError> {
        let Value::Object(m) = v else {
            return Err(FieldSetError("expected a JSON object".into()));
        };
        let mut set = FieldSet::new();
        for (k, v) in m {
            if k == "." {
                return Err(FieldSetError(
                    "\".\" at the root (the object itself is not a field)".into(),
                ));
            }
            let Some(pe) = PathElement::decode(k)? else {
                continue;
            };
            let Value::Object(inner) = v else {
                return Err(FieldSetError(format!("{k:?}: expected a JSON object")));
            };
            if inner.is_empty() {
                set.members.insert(pe);
                continue;
            }
            let mut rest = inner.clone();
            if rest.remove(".").is_some() {
                set.members.insert(pe.clone());
            }
            let child = FieldSet::from_fields_v1(&Value::Object(rest))?;
            if !child.is_empty() {
                set.children.insert(pe, child);
            }
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.into())
    }

    /// The managed fields of the seed's example (`SSA-14`): a ConfigMap's label and data key.
    #[test]
    fn the_seed_example_round_trips() {
        let doc = json!({"f:metadata":{"f:labels":{"f:test-label":{}}},"f:data":{"f:key":{}}});
        let s = FieldSet::from_fields_v1(&doc).unwrap();
        assert_eq!(s.len(), 2);
        assert!(s.contains(&[f("data"), f("key")]));
        assert!(
            !s.contains(&[f("data")]),
            "a parent is not a member by itself"
        );
        assert!(s.has_prefix(&[f("metadata"), f("labels")]));
        assert_eq!(s.to_fields_v1(), doc);
        // Written in element order, as kube writes it.
        assert_eq!(
            s.to_fields_v1().to_string(),
            r#"{"f:data":{"f:key":{}},"f:metadata":{"f:labels":{"f:test-label":{}}}}"#
        );
    }

    #[test]
    fn every_element_kind_and_the_dot() {
        let mut s = FieldSet::new();
        let port = PathElement::key([
            ("protocol".to_owned(), json!("TCP")),
            ("containerPort".to_owned(), json!(80)),
        ]);
        let c = PathElement::key([("name".to_owned(), json!("app"))]);
        s.insert(&[f("spec"), f("containers"), c.clone()]);
        s.insert(&[
            f("spec"),
            f("containers"),
            c.clone(),
            f("ports"),
            port.clone(),
        ]);
        s.insert(&[f("spec"), f("finalizers"), PathElement::Value(json!("a"))]);
        s.insert(&[f("spec"), f("args"), PathElement::Index(0)]);
        let doc = s.to_fields_v1();
        assert_eq!(
            doc.to_string(),
            concat!(
                r#"{"f:spec":{"f:args":{"i:0":{}},"f:containers":{"k:{\"name\":\"app\"}":{".":{},"#,
                r#""f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{}}}},"#,
                r#""f:finalizers":{"v:\"a\"":{}}}}"#
            )
        );
        assert_eq!(FieldSet::from_fields_v1(&doc).unwrap(), s);
        assert_eq!(s.len(), 4);
        let paths = s.paths();
        assert_eq!(paths.len(), 4);
        assert_eq!(paths[1], vec![f("spec"), f("containers"), c.clone()]);
        assert_eq!(
            paths[2],
            vec![f("spec"), f("containers"), c, f("ports"), port]
        );
    }

    #[test]
    fn bad_documents_say_why() {
        for (doc, why) in [
            (json!([]), "expected a JSON object"),
            (json!({"a": {}}), "expected a prefix"),
            (json!({"k:[1]": {}}), "not a non-empty JSON object"),
            (json!({"v:{": {}}), "not JSON"),
            (json!({"i:-1": {}}), "non-negative integer"),
            (json!({"f:a": 1}), "expected a JSON object"),
            (json!({".": {}}), "at the root"),
        ] {
            let err = FieldSet::from_fields_v1(&doc).unwrap_err().to_string();
            assert!(err.contains(why), "{doc}: {err}");
        }
        // A prefix from a newer server is skipped, as kube skips it.
        let s = FieldSet::from_fields_v1(&json!({"x:a": {}, "f:b": {}})).unwrap();
        assert_eq!(s.paths(), vec![vec![f("b")]]);
    }

    #[test]
    fn difference_removes_a_path_not_the_paths_below_it() {
        let mut a = FieldSet::new();
        a.insert(&[f("spec")]);
        a.insert(&[f("spec"), f("replicas")]);
        let mut b = FieldSet::new();
        b.insert(&[f("spec")]);
        let d = a.difference(&b);
        assert_eq!(d.paths(), vec![vec![f("spec"), f("replicas")]]);
        assert_eq!(a.difference(&a), FieldSet::new());
        assert!(a.difference(&a).is_empty());
    }

    /// Set algebra, checked path by path on random sets (`SSA-05`, `SSA-07` build on it).
    mod props {
        use super::*;
        use proptest::prelude::*;

        fn element() -> impl Strategy<Value = PathElement> {
            prop_oneof![
                "[a-c]{1,2}".prop_map(PathElement::Field),
                (0u64..3).prop_map(PathElement::Index),
                prop_oneof![
                    Just(json!("x")),
                    Just(json!(1)),
                    Just(json!(true)),
                    Just(json!(null))
                ]
                .prop_map(PathElement::Value),
                ("[ab]", 0i64..2).prop_map(|(k, v)| PathElement::key([(k, json!(v))])),
            ]
        }

        fn set() -> impl Strategy<Value = FieldSet> {
            prop::collection::vec(prop::collection::vec(element(), 1..4), 0..12).prop_map(|paths| {
                let mut s = FieldSet::new();
                for p in paths {
                    s.insert(&p);
                }
                s
            })
        }

        fn paths_of(s: &FieldSet) -> Vec<Path> {
            s.paths()
        }

        proptest! {
            #[test]
            fn fields_v1_round_trips(s in set()) {
                let doc = s.to_fields_v1();
                prop_assert_eq!(FieldSet::from_fields_v1(&doc).unwrap(), s.clone());
                // Through text too, as it is stored.
                let text = doc.to_string();
                let back: Value = serde_json::from_str(&text).unwrap();
                prop_assert_eq!(FieldSet::from_fields_v1(&back).unwrap(), s);
            }

            #[test]
            fn operations_agree_with_membership(a in set(), b in set()) {
                let (u, i, d) = (a.union(&b), a.intersection(&b), a.difference(&b));
                for p in paths_of(&a).iter().chain(&paths_of(&b)) {
                    let (x, y) = (a.contains(p), b.contains(p));
                    prop_assert_eq!(u.contains(p), x || y);
                    prop_assert_eq!(i.contains(p), x && y);
                    prop_assert_eq!(d.contains(p), x && !y);
                }
                for p in paths_of(&u) { prop_assert!(a.contains(&p) || b.contains(&p)); }
                prop_assert_eq!(u.len() + i.len(), a.len() + b.len());
                prop_assert_eq!(d.len() + i.len(), a.len());
                prop_assert_eq!(paths_of(&a).len(), a.len());
            }

            /// The in-place operations give what the copying ones give.
            #[test]
            fn in_place_operations_agree(a in set(), b in set()) {
                let mut d = a.clone();
                d.remove_all(&b);
                prop_assert_eq!(d, a.difference(&b));
                let mut w = a.clone();
                w.remove_subtrees(&b);
                prop_assert_eq!(w, a.without_subtrees(&b));
                let mut u = a.clone();
                u.absorb(b.clone());
                prop_assert_eq!(u, a.union(&b));
            }

            #[test]
            fn without_subtrees_drops_paths_at_or_under_a_prefix(a in set(), b in set()) {
                let w = a.without_subtrees(&b);
                for p in paths_of(&a) {
                    let under = (1..=p.len()).any(|n| b.contains(&p[..n]));
                    prop_assert_eq!(w.contains(&p), !under);
                }
                prop_assert!(w.difference(&a).is_empty());
            }

            #[test]
            fn algebra_laws(a in set(), b in set(), c in set()) {
                prop_assert_eq!(a.union(&b), b.union(&a));
                prop_assert_eq!(a.intersection(&b), b.intersection(&a));
                prop_assert_eq!(a.union(&b).union(&c), a.union(&b.union(&c)));
                prop_assert_eq!(a.union(&a), a.clone());
                prop_assert_eq!(a.union(&FieldSet::new()), a.clone());
                prop_assert!(a.difference(&a).is_empty());
                prop_assert_eq!(a.difference(&b).union(&a.intersection(&b)), a.clone());
                prop_assert!(a.difference(&b).intersection(&b).is_empty());
            }
        }
    }
}
