//! Server-side apply on values (`SSA-01`, `SSA-03`..`SSA-07`, `SSA-13`): the applied
//! configuration merged into the live object, what the applier dropped pruned, conflicts
//! with other managers found, and the managers' sets moved, as structured-merge-diff's
//! `Updater.Apply` does it.
//!
//! - The merge: a scalar, an atomic list or map in the configuration replaces the live
//!   one; granular maps merge key by key; set lists and map lists merge item by item
//!   (live-only items keep their places, the configuration's come in its order:
//!   [`list_order`]); `null` is kept as `null`. The merge itself removes nothing.
//! - The applier owns everything in its configuration. What it owned at its last apply,
//!   no longer applies and nobody else owns is removed from the object.
//! - A conflict is a field the apply changes (adds or modifies) that another manager owns;
//!   without `force` the apply fails with all of them, with it the applier takes them.
//!   Applying the value a field already has is no change: both then own it.

use std::collections::BTreeMap;

use serde_json::Value;

use super::managed::{Entry, ManagedFields, Operation, strip_meta};
use super::{Comparison, FieldSet, ListKind, PathElement, Shape};

/// One field another manager owns and the apply would change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The other manager, as kube prints it: `"name"`, `"name" using apps/v1`,
    /// `"name" with subresource "status" using v1`.
    pub manager: String,
    /// The field, as kube prints it: `.spec.containers[name="nginx"].image`.
    pub field: String,
    /// The field's path.
    pub path: super::Path,
}

/// What an apply did.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The new object.
    pub object: Value,
    /// The new entries.
    pub managed: ManagedFields,
    /// Whether the object differs from the live one.
    pub changed: bool,
}

/// One apply.
#[derive(Debug, Clone, Copy)]
pub struct Apply<'a> {
    /// The applier.
    pub manager: &'a str,
    /// The request's version (recorded in the applier's entry).
    pub api_version: &'a str,
    /// The subresource applied to.
    pub subresource: Option<&'a str>,
    /// `force=true`.
    pub force: bool,
    /// Fields that count for no one (`status` on the main resource).
    pub ignored: &'a FieldSet,
    /// Now, RFC 3339 in whole seconds.
    pub now: &'a str,
}

impl Apply<'_> {
    /// Applies `config` to `live` (an empty object when the apply creates) with the
    /// entries `managed`.
    pub fn run(
        &self,
        live: &Value,
        config: &Value,
        shape: &Shape,
        mut managed: ManagedFields,
    ) -> Result<Applied, Vec<Conflict>> {
        let id = Entry {
            manager: self.manager.to_owned(),
            operation: Operation::Apply,
            api_version: self.api_version.to_owned(),
            time: None,
            subresource: self.subresource.map(str::to_owned),
            fields: FieldSet::new(),
        };
        let is_me = |e: &Entry| {
            e.manager == id.manager
                && e.operation == Operation::Apply
                && e.subresource == id.subresource
        };
        let last = managed
            .entries
            .iter()
            .find(|e| is_me(e))
            .map(|e| e.fields.clone())
            .unwrap_or_default();
        let mine = strip_meta(&FieldSet::of_value(config, shape).difference(self.ignored));
        let mut merged = merge(Some(live), config, shape);
        // Prune what this applier alone owned and no longer applies.
        let others: FieldSet = managed
            .entries
            .iter()
            .filter(|e| !is_me(e))
            .fold(FieldSet::new(), |acc, e| acc.union(&e.fields));
        // A dropped map or list item something below which is still owned (by this
        // configuration or anyone else) stays; only its unowned parts go (SMD's
        // `addBackOwnedItems`).
        let owned = mine.union(&others);
        for p in last.difference(&mine).difference(&others).paths() {
            if !owned.has_prefix(&p) {
                remove(&mut merged, &p, shape);
            }
        }
        let cmp = Comparison::of(live, &merged, shape);
        let changed_set = cmp.changed().difference(self.ignored);
        let mut conflicts = Vec::new();
        for e in managed.entries.iter().filter(|e| !is_me(e)) {
            for p in e.fields.intersection(&changed_set).paths() {
                conflicts.push(Conflict {
                    manager: display(e),
                    field: path_string(&p),
                    path: p,
                });
            }
        }
        if !conflicts.is_empty() && !self.force {
            conflicts.sort_by(|a, b| a.manager.cmp(&b.manager));
            return Err(conflicts);
        }
        for e in managed.entries.iter_mut().filter(|e| !is_me(e)) {
            e.fields = e.fields.difference(&changed_set).difference(&cmp.removed);
        }
        let changed = merged != *live;
        let previous = managed.entries.iter().find(|e| is_me(e)).cloned();
        managed
            .entries
            .retain(|e| !is_me(e) && !e.fields.is_empty());
        if !mine.is_empty() {
            // The time moves when the object changed; a first apply that changes nothing
            // gets one too (kube leaves it out then: kubernetes/kubernetes#127938).
            let time = match &previous {
                Some(p) if !changed => p.time.clone(),
                _ => Some(self.now.to_owned()),
            };
            managed.entries.push(Entry {
                fields: mine,
                time,
                ..id
            });
        }
        Ok(Applied {
            object: merged,
            managed,
            changed,
        })
    }
}

/// kube's `Apply failed with …` message for `conflicts` (sorted by manager).
pub fn conflict_message(conflicts: &[Conflict]) -> String {
    match conflicts {
        [one] => format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            one.manager, one.field
        ),
        _ => {
            let mut s = format!("Apply failed with {} conflicts: ", conflicts.len());
            let mut last: Option<&str> = None;
            for c in conflicts {
                if last != Some(c.manager.as_str()) {
                    if last.is_some() {
                        s.push('\n');
                    }
                    s.push_str(&format!("conflicts with {}:", c.manager));
                    last = Some(&c.manager);
                }
                s.push_str(&format!("\n- {}", c.field));
            }
            s
        }
    }
}

/// How kube names a manager in a conflict.
fn display(e: &Entry) -> String {
    let mut s = format!("{:?}", e.manager);
    if let Some(sub) = &e.subresource {
        s.push_str(&format!(" with subresource {sub:?}"));
    }
    if e.operation == Operation::Update {
        s.push_str(&format!(" using {}", e.api_version));
    }
    s
}

/// A path as kube prints it: `.spec.containers[name="nginx"].ports[containerPort=80,protocol="TCP"]`.
pub fn path_string(p: &[PathElement]) -> String {
    let value = |v: &Value| match v {
        // Go's %q of a string; JSON's escaping is close enough for printable text.
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    let mut s = String::new();
    for e in p {
        match e {
            PathElement::Field(f) => {
                s.push('.');
                s.push_str(f);
            }
            PathElement::Key(fields) => {
                let inner: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("{k}={}", value(v)))
                    .collect();
                s.push_str(&format!("[{}]", inner.join(",")));
            }
            PathElement::Value(v) => s.push_str(&format!("[={}]", value(v))),
            PathElement::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// `config` merged into `live` under `shape`.
fn merge(live: Option<&Value>, config: &Value, shape: &Shape) -> Value {
    match (shape, live, config) {
        (
            Shape::Map { atomic: false, .. } | Shape::Deduced,
            Some(Value::Object(l)),
            Value::Object(c),
        ) => {
            let mut out = l.clone();
            for (k, v) in c {
                let child = shape.entry(k).0;
                let merged = merge(l.get(k), v, child);
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Shape::List { kind, items }, Some(Value::Array(l)), Value::Array(c)) => match kind {
            ListKind::Atomic => config.clone(),
            ListKind::Set => {
                let pe = |v: &Value| Some(PathElement::Value(v.clone()));
                let (lp, cp): (Vec<_>, Vec<_>) =
                    (l.iter().map(pe).collect(), c.iter().map(pe).collect());
                let out = list_order(&lp, &cp)
                    .into_iter()
                    .filter_map(|(li, ci)| ci.map(|i| &c[i]).or(li.map(|i| &l[i])).cloned())
                    .collect();
                Value::Array(out)
            }
            ListKind::Map { keys, defaults } => {
                let key = |v: &Value| super::shape::key_of(v, keys, defaults);
                let (lp, cp): (Vec<_>, Vec<_>) =
                    (l.iter().map(key).collect(), c.iter().map(key).collect());
                let out = list_order(&lp, &cp)
                    .into_iter()
                    .filter_map(|(li, ci)| match (li, ci) {
                        (li, Some(ci)) => Some(merge(li.map(|i| &l[i]), &c[ci], items)),
                        (Some(li), None) => Some(l[li].clone()),
                        (None, None) => None,
                    })
                    .collect();
                Value::Array(out)
            }
        },
        _ => config.clone(),
    }
}

/// The order of a merged associative list, as structured-merge-diff's
/// `visitListItems` gives it: pairs of (live index, configuration index) for the items
/// `live` and `config` (by path element; `None`: an item without one, never shared).
/// Live items the configuration does not name keep their places; the shared ones and the
/// configuration's new ones come in the configuration's order.
fn list_order(
    live: &[Option<PathElement>],
    config: &[Option<PathElement>],
) -> Vec<(Option<usize>, Option<usize>)> {
    let index = |items: &[Option<PathElement>]| {
        let mut m = BTreeMap::new();
        for (i, pe) in items.iter().enumerate() {
            if let Some(pe) = pe {
                m.entry(pe.clone()).or_insert(i);
            }
        }
        m
    };
    let (in_live, in_config) = (index(live), index(config));
    let shared_in =
        |pe: &Option<PathElement>| pe.as_ref().is_some_and(|p| in_config.contains_key(p));
    let mut shared = config
        .iter()
        .flatten()
        .filter(|pe| in_live.contains_key(*pe));
    let mut next = shared.next();
    let (mut li, mut ci) = (0, 0);
    let mut out = Vec::with_capacity(live.len().max(config.len()));
    while li < live.len() || ci < config.len() {
        if li < live.len() && ci < config.len() {
            if live[li].is_some() && live[li] == config[ci] {
                out.push((Some(li), Some(ci)));
                li += 1;
                ci += 1;
                next = shared.next();
                continue;
            }
            // A shared item that comes later in the configuration's order: placed then.
            if shared_in(&live[li]) && next.is_some_and(|n| Some(n) != live[li].as_ref()) {
                li += 1;
                continue;
            }
        }
        if li < live.len() && !shared_in(&live[li]) {
            out.push((Some(li), None));
            li += 1;
            continue;
        }
        if ci < config.len() {
            let pe = config[ci].as_ref();
            out.push((pe.and_then(|p| in_live.get(p).copied()), Some(ci)));
            if pe.is_some() && pe == next {
                next = shared.next();
            }
            ci += 1;
        } else {
            // A shared live item after the whole configuration (only with duplicate
            // keys): already placed.
            li += 1;
        }
    }
    out
}

/// Removes the field, entry or list item at `path` from `obj`, if there.
fn remove(obj: &mut Value, path: &[PathElement], shape: &Shape) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    match (first, obj) {
        (PathElement::Field(f), Value::Object(m)) => {
            if rest.is_empty() {
                m.remove(f);
            } else if let Some(child) = m.get_mut(f) {
                let s = shape.entry(f).0;
                remove(child, rest, s);
            }
        }
        (PathElement::Value(v), Value::Array(a)) if rest.is_empty() => a.retain(|x| x != v),
        (PathElement::Key(_), Value::Array(a)) => {
            let Shape::List {
                kind: ListKind::Map { keys, defaults },
                items,
            } = shape
            else {
                return;
            };
            let matches =
                |x: &Value| super::shape::key_of(x, keys, defaults).as_ref() == Some(first);
            if rest.is_empty() {
                a.retain(|x| !matches(x));
            } else if let Some(item) = a.iter_mut().find(|x| matches(x)) {
                remove(item, rest, items);
            }
        }
        (PathElement::Index(i), Value::Array(a)) => {
            if let Ok(i) = usize::try_from(*i)
                && i < a.len()
            {
                if rest.is_empty() {
                    a.remove(i);
                } else if let Shape::List { items, .. } = shape {
                    remove(&mut a[i], rest, items);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    /// A Deployment-like shape: `spec.replicas`, a free-form `metadata.labels`, and
    /// `spec.containers` keyed by name.
    fn shape() -> Shape {
        let strukt = |f: Vec<(&str, Shape)>| Shape::Map {
            atomic: false,
            fields: f.into_iter().map(|(k, s)| (k.to_owned(), s)).collect(),
            entries: None,
        };
        let labels = Shape::Map {
            atomic: false,
            fields: BTreeMap::new(),
            entries: Some(Box::new(Shape::Scalar)),
        };
        strukt(vec![
            ("apiVersion", Shape::Scalar),
            ("kind", Shape::Scalar),
            (
                "metadata",
                strukt(vec![("name", Shape::Scalar), ("labels", labels)]),
            ),
            (
                "spec",
                strukt(vec![
                    ("replicas", Shape::Scalar),
                    (
                        "containers",
                        Shape::List {
                            kind: ListKind::Map {
                                keys: vec!["name".into()],
                                defaults: BTreeMap::new(),
                            },
                            items: Box::new(strukt(vec![
                                ("name", Shape::Scalar),
                                ("image", Shape::Scalar),
                            ])),
                        },
                    ),
                ]),
            ),
        ])
    }

    fn apply<'a>(manager: &'a str, force: bool, ignored: &'a FieldSet) -> Apply<'a> {
        Apply {
            manager,
            api_version: "apps/v1",
            subresource: None,
            force,
            ignored,
            now: "2026-01-01T00:00:00Z",
        }
    }

    fn entry<'a>(m: &'a ManagedFields, name: &str) -> Option<&'a Entry> {
        m.entries.iter().find(|e| e.manager == name)
    }

    /// `SSA-01`, `SSA-04`, `SSA-05`, `SSA-03`, `SSA-07`: create on apply, re-apply is a
    /// no-op, a second applier of the same value shares, of another value conflicts,
    /// `force` takes over, dropping a field the applier alone owned removes it.
    #[test]
    fn list_order_is_structured_merge_diffs() {
        let pes = |s: &str| -> Vec<Option<PathElement>> {
            s.chars()
                .map(|c| Some(PathElement::Value(json!(c.to_string()))))
                .collect()
        };
        let names = |live: &str, config: &str| -> String {
            let (l, c): (Vec<char>, Vec<char>) = (live.chars().collect(), config.chars().collect());
            list_order(&pes(live), &pes(config))
                .into_iter()
                .map(|(li, ci)| ci.map_or_else(|| l[li.unwrap()], |i| c[i]))
                .collect()
        };
        // Live-only items stay in place, the configuration's in its order.
        assert_eq!(names("abc", "cda"), "bcda");
        assert_eq!(names("h", "m"), "hm");
        assert_eq!(names("ab", "ba"), "ba");
        assert_eq!(names("xab", "cab"), "xcab");
        assert_eq!(names("", "ab"), "ab");
        assert_eq!(names("ab", ""), "ab");
        // Items without a key are never shared.
        let none = vec![None, None];
        assert_eq!(
            list_order(&none, &none),
            [
                (Some(0), None),
                (Some(1), None),
                (None, Some(0)),
                (None, Some(1))
            ]
        );
    }

    /// An applier that owns a map itself (`"."`, as after kubectl's client-side-apply
    /// migration) and drops one entry: the entry goes, the map and the rest stay.
    #[test]
    fn pruning_keeps_a_map_with_owned_entries() {
        let none = FieldSet::new();
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1", "b": "2"}});
        let mut owned = FieldSet::new();
        let data = PathElement::Field("data".into());
        owned.insert(std::slice::from_ref(&data));
        for k in ["a", "b"] {
            owned.insert(&[data.clone(), PathElement::Field(k.into())]);
        }
        let managed = ManagedFields {
            entries: vec![Entry {
                manager: "me".into(),
                operation: Operation::Apply,
                api_version: "v1".into(),
                time: None,
                subresource: None,
                fields: owned,
            }],
        };
        let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}});
        let out = apply("me", false, &none)
            .run(&live, &cfg, &Shape::Deduced, managed.clone())
            .unwrap();
        assert_eq!(out.object["data"], json!({"a": "1"}));
        // Dropping the whole map: it goes.
        let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        let out = apply("me", false, &none)
            .run(&live, &cfg, &Shape::Deduced, managed)
            .unwrap();
        assert!(out.object.get("data").is_none(), "{}", out.object);
    }

    #[test]
    fn apply_conflict_share_force_prune() {
        let none = FieldSet::new();
        let s = shape();
        let cfg = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                         "spec": {"replicas": 3, "containers": [{"name": "app", "image": "v1"}]}});
        let a = apply("alice", false, &none)
            .run(&json!({}), &cfg, &s, ManagedFields::default())
            .unwrap();
        assert!(a.changed);
        assert_eq!(a.object, cfg);
        assert_eq!(
            entry(&a.managed, "alice").unwrap().fields.to_fields_v1(),
            json!({"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}}}, "f:replicas": {}}})
        );
        // Applying again changes nothing.
        let again = apply("alice", false, &none)
            .run(&a.object, &cfg, &s, a.managed.clone())
            .unwrap();
        assert!(!again.changed);
        assert_eq!(again.managed, a.managed);
        // Bob applies the same replicas: shared. Another value: a conflict.
        let bob_same = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 3}});
        let shared = apply("bob", false, &none)
            .run(&a.object, &bob_same, &s, a.managed.clone())
            .unwrap();
        let replicas = [
            PathElement::Field("spec".into()),
            PathElement::Field("replicas".into()),
        ];
        assert!(
            entry(&shared.managed, "alice")
                .unwrap()
                .fields
                .contains(&replicas)
        );
        assert!(
            entry(&shared.managed, "bob")
                .unwrap()
                .fields
                .contains(&replicas)
        );
        let bob_other = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 5}});
        let err = apply("bob", false, &none)
            .run(&a.object, &bob_other, &s, a.managed.clone())
            .unwrap_err();
        assert_eq!(
            err,
            vec![Conflict {
                manager: "\"alice\"".into(),
                field: ".spec.replicas".into(),
                path: replicas.to_vec(),
            }]
        );
        assert_eq!(
            conflict_message(&err),
            "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas"
        );
        let forced = apply("bob", true, &none)
            .run(&a.object, &bob_other, &s, a.managed.clone())
            .unwrap();
        assert_eq!(forced.object["spec"]["replicas"], 5);
        assert!(
            !entry(&forced.managed, "alice")
                .unwrap()
                .fields
                .contains(&replicas)
        );
        // Alice drops the container she alone owns: it goes; replicas is Bob's now, and
        // dropping it from her config leaves it.
        let cfg2 =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}});
        let pruned = apply("alice", false, &none)
            .run(&forced.object, &cfg2, &s, forced.managed.clone())
            .unwrap();
        assert_eq!(
            pruned.object["spec"],
            json!({"replicas": 5, "containers": []})
        );
        assert!(
            entry(&pruned.managed, "alice").is_none(),
            "an applier owning nothing disappears"
        );
    }

    #[test]
    fn map_lists_merge_by_key_and_messages_list_every_conflict() {
        let s = shape();
        let live = json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}});
        let cfg = json!({"spec": {"containers": [{"name": "b", "image": "2"}, {"name": "c", "image": "1"}]}});
        let merged = merge(Some(&live), &cfg, &s);
        // `a` (live only) keeps its place; `b` and `c` follow in the configuration's order.
        assert_eq!(
            merged["spec"]["containers"],
            json!([{"name": "a", "image": "1"}, {"name": "b", "image": "2"}, {"name": "c", "image": "1"}])
        );
        let mut m = ManagedFields::default();
        let mut owned = FieldSet::new();
        let path = |n: &str| {
            vec![
                PathElement::Field("spec".into()),
                PathElement::Field("containers".into()),
                PathElement::key([("name".to_owned(), json!(n))]),
                PathElement::Field("image".into()),
            ]
        };
        owned.insert(&path("b"));
        m.entries.push(Entry {
            manager: "ctl".into(),
            operation: Operation::Update,
            api_version: "apps/v1".into(),
            time: None,
            subresource: None,
            fields: owned.clone(),
        });
        m.entries.push(Entry {
            manager: "ops".into(),
            operation: Operation::Apply,
            api_version: "apps/v1".into(),
            time: None,
            subresource: Some("status".into()),
            fields: owned,
        });
        let none = FieldSet::new();
        let err = apply("me", false, &none)
            .run(&live, &cfg, &s, m)
            .unwrap_err();
        assert_eq!(
            conflict_message(&err),
            "Apply failed with 2 conflicts: conflicts with \"ctl\" using apps/v1:\n- .spec.containers[name=\"b\"].image\nconflicts with \"ops\" with subresource \"status\":\n- .spec.containers[name=\"b\"].image"
        );
    }

    /// Issue 11's properties, on schemaless objects (`SSA-07`).
    mod props {
        use super::*;
        use proptest::prelude::*;

        use crate::fieldset::testing::json_object;

        fn object() -> impl Strategy<Value = Value> {
            json_object(1)
        }

        proptest! {
            /// Applying the same configuration twice: the second changes nothing, neither
            /// the object nor the entries.
            #[test]
            fn applying_twice_is_a_no_op(live in object(), cfg in object()) {
                let none = FieldSet::new();
                let a = apply("me", false, &none).run(&live, &cfg, &Shape::Deduced, ManagedFields::default()).unwrap();
                let b = apply("me", false, &none).run(&a.object, &cfg, &Shape::Deduced, a.managed.clone()).unwrap();
                prop_assert!(!b.changed);
                prop_assert_eq!(&b.object, &a.object);
                prop_assert_eq!(b.managed, a.managed);
            }

            /// Apply, then apply again without one of the fields: the field is gone (the
            /// applier was its only owner).
            #[test]
            fn a_dropped_field_is_removed(cfg in object()) {
                let none = FieldSet::new();
                let a = apply("me", false, &none).run(&json!({}), &cfg, &Shape::Deduced, ManagedFields::default()).unwrap();
                let mut smaller = cfg.clone();
                let key = smaller.as_object().unwrap().keys().next().unwrap().clone();
                smaller.as_object_mut().unwrap().remove(&key);
                let b = apply("me", false, &none).run(&a.object, &smaller, &Shape::Deduced, a.managed).unwrap();
                prop_assert!(b.object.get(&key).is_none(), "{} still in {}", key, b.object);
                prop_assert_eq!(b.object, smaller);
            }
        }
    }
}
