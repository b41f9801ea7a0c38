//! `metadata.managedFields`: who owns which fields (`SSA-02`, `SSA-13`, `SSA-14`), and how
//! an Update (POST, PUT, a non-apply PATCH) moves ownership, as kube-apiserver's field
//! manager does:
//! - every manager loses the fields the write changed or removed; a manager left with
//!   nothing disappears;
//! - the writer's entry (manager, `Update`, apiVersion, subresource) gains what it added or
//!   modified, and its `time` becomes now; a write that only removed fields gives it
//!   nothing (no entry, no new time);
//! - `apiVersion`, `kind`, `metadata` itself and metadata's system fields are never owned;
//! - past 10 Update entries, the oldest ones of an apiVersion are folded into an
//!   `ancient-changes` entry;
//! - entries are written Apply first, then oldest first, then by manager, apiVersion and
//!   subresource; none at all is no `managedFields`.
//!
//! Not here (yet): sets recorded at another apiVersion than the write's are compared as if
//! they were at the write's (kube converts both objects to the entry's version first).

use std::cmp::Ordering;

use serde_json::{Map, Value, json};

use super::{Comparison, FieldSet, PathElement};

/// An entry's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Any other write.
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The manager's name.
    pub manager: String,
    /// Apply or Update.
    pub operation: Operation,
    /// The version the set is expressed in.
    pub api_version: String,
    /// When the manager last changed something (RFC 3339, whole seconds).
    pub time: Option<String>,
    /// `status`, `scale`, … (`None`: the main resource).
    pub subresource: Option<String>,
    /// The fields it owns.
    pub fields: FieldSet,
}

impl Entry {
    /// Whether this is the entry of `id`: Apply entries are one per (manager,
    /// subresource), Update entries one per (manager, apiVersion, subresource).
    fn is(&self, id: &Entry) -> bool {
        self.manager == id.manager
            && self.operation == id.operation
            && self.subresource == id.subresource
            && (self.operation == Operation::Apply || self.api_version == id.api_version)
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), json!(self.manager));
        m.insert("operation".into(), json!(self.operation.as_str()));
        m.insert("apiVersion".into(), json!(self.api_version));
        if let Some(t) = &self.time {
            m.insert("time".into(), json!(t));
        }
        m.insert("fieldsType".into(), json!("FieldsV1"));
        m.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if let Some(s) = &self.subresource {
            m.insert("subresource".into(), json!(s));
        }
        Value::Object(m)
    }

    fn from_json(v: &Value) -> Result<Entry, String> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
        let operation = match s("operation") {
            Some("Apply") => Operation::Apply,
            Some("Update") => Operation::Update,
            other => return Err(format!("operation {other:?} is not Apply or Update")),
        };
        let api_version = s("apiVersion").ok_or("apiVersion is empty")?.to_owned();
        if s("fieldsType") != Some("FieldsV1") {
            return Err("fieldsType is not FieldsV1".into());
        }
        let fields = match v.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::new(),
            Some(f) => FieldSet::from_fields_v1(f).map_err(|e| e.to_string())?,
        };
        Ok(Entry {
            manager: s("manager").unwrap_or("unknown").to_owned(),
            operation,
            api_version,
            time: s("time").map(str::to_owned),
            subresource: s("subresource").map(str::to_owned),
            fields,
        })
    }
}

/// The entries of one object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManagedFields {
    /// In no particular order until encoded.
    pub entries: Vec<Entry>,
}

/// Most Update entries kept before the oldest are folded together.
pub const MAX_UPDATE_MANAGERS: usize = 10;

impl ManagedFields {
    /// Reads `metadata.managedFields`; an invalid entry makes the whole list invalid
    /// (kube then falls back to the stored entries). Entries with the same identity: the
    /// last one wins.
    pub fn decode(v: Option<&Value>) -> Result<ManagedFields, String> {
        let mut out = ManagedFields::default();
        let Some(Value::Array(items)) = v else {
            return match v {
                None | Some(Value::Null) => Ok(out),
                Some(_) => Err("managedFields is not a list".into()),
            };
        };
        for item in items {
            let e = Entry::from_json(item)?;
            out.entries.retain(|x| !x.is(&e));
            out.entries.push(e);
        }
        Ok(out)
    }

    /// Whether `v` asks to clear the entries: an empty list (not null) or one empty entry.
    pub fn is_reset(v: Option<&Value>) -> bool {
        match v {
            Some(Value::Array(a)) => {
                a.is_empty()
                    || (a.len() == 1 && a[0].as_object().is_some_and(serde_json::Map::is_empty))
            }
            _ => false,
        }
    }

    /// `metadata.managedFields` as written: sorted; `None` when there is no entry.
    pub fn encode(&self) -> Option<Value> {
        if self.entries.is_empty() {
            return None;
        }
        let mut e: Vec<&Entry> = self.entries.iter().collect();
        e.sort_by(|a, b| order(a, b));
        Some(Value::Array(e.into_iter().map(Entry::to_json).collect()))
    }

    /// An Update by `manager` at `api_version` (on `subresource`) that made `changes`
    /// (fields under `ignored`, such as `status` on the main resource, count for no one);
    /// `now` is its time (RFC 3339, whole seconds).
    pub fn update(
        &mut self,
        manager: &str,
        api_version: &str,
        subresource: Option<&str>,
        changes: Comparison,
        ignored: &FieldSet,
        now: &str,
    ) {
        let Comparison {
            added: mut changed,
            modified,
            mut removed,
        } = changes;
        changed.absorb(modified);
        changed.remove_subtrees(ignored);
        removed.remove_subtrees(ignored);
        for e in &mut self.entries {
            e.fields.remove_all(&changed);
            e.fields.remove_all(&removed);
        }
        self.entries.retain(|e| !e.fields.is_empty());
        let mut mine = changed;
        mine.remove_all(strip());
        if mine.is_empty() {
            return;
        }
        let id = Entry {
            manager: manager.to_owned(),
            operation: Operation::Update,
            api_version: api_version.to_owned(),
            time: Some(now.to_owned()),
            subresource: subresource.map(str::to_owned),
            fields: FieldSet::new(),
        };
        match self.entries.iter_mut().find(|e| e.is(&id)) {
            Some(e) => {
                e.fields = e.fields.union(&mine);
                e.time = Some(now.to_owned());
            }
            None => self.entries.push(Entry { fields: mine, ..id }),
        }
        self.cap(MAX_UPDATE_MANAGERS);
    }

    /// Folds the oldest Update entries of an apiVersion into `ancient-changes` while
    /// there are more than `max` Update entries.
    pub fn cap(&mut self, max: usize) {
        let updates = |m: &ManagedFields| {
            m.entries
                .iter()
                .filter(|e| e.operation == Operation::Update)
                .count()
        };
        if updates(self) <= max {
            return;
        }
        let mut order: Vec<Entry> = self
            .entries
            .iter()
            .filter(|e| e.operation == Operation::Update && e.manager != ANCIENT)
            .cloned()
            .collect();
        order.sort_by(|a, b| {
            a.time
                .cmp(&b.time)
                .then_with(|| a.manager.cmp(&b.manager))
                .then_with(|| a.subresource.cmp(&b.subresource))
        });
        let mut first_of: Vec<(String, Entry)> = Vec::new();
        for e in order {
            if updates(self) <= max {
                break;
            }
            let Some(first) = first_of
                .iter()
                .find(|(v, _)| *v == e.api_version)
                .map(|(_, f)| f.clone())
            else {
                first_of.push((e.api_version.clone(), e));
                continue;
            };
            let bucket_id = Entry {
                manager: ANCIENT.into(),
                operation: Operation::Update,
                api_version: e.api_version.clone(),
                time: None,
                subresource: None,
                fields: FieldSet::new(),
            };
            if !self.entries.iter().any(|x| x.is(&bucket_id)) {
                self.entries.retain(|x| !x.is(&first));
                self.entries.push(Entry {
                    fields: first.fields.clone(),
                    time: first.time.clone(),
                    ..bucket_id.clone()
                });
            }
            self.entries.retain(|x| !x.is(&e));
            if let Some(b) = self.entries.iter_mut().find(|x| x.is(&bucket_id)) {
                b.fields = b.fields.union(&e.fields);
                b.time.clone_from(&e.time);
            }
        }
    }
}

/// The manager that holds the oldest Update entries past the cap.
pub const ANCIENT: &str = "ancient-changes";

/// kube's order of entries: Apply first, then oldest first, then manager, apiVersion,
/// subresource.
fn order(a: &Entry, b: &Entry) -> Ordering {
    a.operation
        .cmp(&b.operation)
        .then_with(|| a.time.cmp(&b.time))
        .then_with(|| a.manager.cmp(&b.manager))
        .then_with(|| a.api_version.cmp(&b.api_version))
        .then_with(|| a.subresource.cmp(&b.subresource))
}

/// `set` without `apiVersion`, `kind`, `metadata` itself and metadata's system fields.
pub fn strip_meta(set: &FieldSet) -> FieldSet {
    set.difference(strip())
}

/// The fields no manager owns (see [`strip_meta`]).
fn strip() -> &'static FieldSet {
    static STRIP: std::sync::OnceLock<FieldSet> = std::sync::OnceLock::new();
    STRIP.get_or_init(strip_set)
}

fn strip_set() -> FieldSet {
    let f = |n: &str| PathElement::Field(n.to_owned());
    let mut strip = FieldSet::new();
    strip.insert(&[f("apiVersion")]);
    strip.insert(&[f("kind")]);
    strip.insert(&[f("metadata")]);
    for m in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        strip.insert(&[f("metadata"), f(m)]);
    }
    strip
}

/// The manager of a write: `fieldManager`, else the `User-Agent` up to its first `/`
/// (printable characters, at most 128 bytes), else `unknown`.
pub fn manager_name(field_manager: Option<&str>, user_agent: Option<&str>) -> String {
    if let Some(m) = field_manager.filter(|m| !m.is_empty()) {
        return m.to_owned();
    }
    let ua: String = user_agent
        .unwrap_or("")
        .split('/')
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    let mut end = ua.len().min(128);
    while !ua.is_char_boundary(end) {
        end -= 1;
    }
    match &ua[..end] {
        "" => "unknown".to_owned(),
        s => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use crate::fieldset::Shape;

    fn data_shape() -> Shape {
        Shape::Map {
            atomic: false,
            fields: [(
                "data".to_owned(),
                Shape::Map {
                    atomic: false,
                    fields: Default::default(),
                    entries: Some(Box::new(Shape::Scalar)),
                },
            )]
            .into(),
            entries: None,
        }
    }

    fn update(mf: &mut ManagedFields, who: &str, old: Value, new: Value, now: &str) {
        let c = Comparison::of(&old, &new, &data_shape());
        mf.update(who, "v1", None, c, &FieldSet::new(), now);
    }

    /// `kubectl create configmap` then edits (`SSA-14`, the research note's worked
    /// example): the creator owns the map and its keys; an edit that changes `a` and
    /// deletes `b` takes `a`, takes `b` from everyone and leaves the creator the map.
    #[test]
    fn updates_move_ownership() {
        let mut mf = ManagedFields::default();
        let t0 = "2026-01-01T00:00:00Z";
        update(
            &mut mf,
            "kubectl-create",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1", "b": "2"}}),
            t0,
        );
        assert_eq!(
            mf.encode().unwrap(),
            json!([{"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                    "time": t0, "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {".": {}, "f:a": {}, "f:b": {}}}}])
        );
        let t1 = "2026-01-01T00:01:00Z";
        update(
            &mut mf,
            "kubectl-edit",
            json!({"data": {"a": "1", "b": "2"}}),
            json!({"data": {"a": "9"}}),
            t1,
        );
        let e = mf.encode().unwrap();
        assert_eq!(e[0]["manager"], "kubectl-create");
        assert_eq!(e[0]["fieldsV1"], json!({"f:data": {}}));
        assert_eq!(e[0]["time"], t0, "untouched entries keep their time");
        assert_eq!(e[1]["manager"], "kubectl-edit");
        assert_eq!(e[1]["fieldsV1"], json!({"f:data": {"f:a": {}}}));
        // A write that only deletes gives its writer no entry.
        update(
            &mut mf,
            "deleter",
            json!({"data": {"a": "9"}}),
            json!({"data": {}}),
            t1,
        );
        let e = mf.encode().unwrap();
        assert_eq!(e.as_array().unwrap().len(), 1, "{e}");
        assert_eq!(e[0]["manager"], "kubectl-create");
        // An unchanged write changes nothing.
        let before = mf.clone();
        update(
            &mut mf,
            "noop",
            json!({"data": {}}),
            json!({"data": {}}),
            t1,
        );
        assert_eq!(mf, before);
    }

    #[test]
    fn entries_round_trip_sorted_and_resets_are_recognised() {
        let doc = json!([
            {"manager": "b", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:02Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:x": {}}}},
            {"manager": "a", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:01Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:y": {}}}, "subresource": "status"},
            {"manager": "kubectl", "operation": "Apply", "apiVersion": "v1", "time": "2026-01-01T00:00:09Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:z": {}}}}
        ]);
        let mf = ManagedFields::decode(Some(&doc)).unwrap();
        let out = mf.encode().unwrap();
        let names: Vec<&str> = out
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["kubectl", "a", "b"],
            "Apply first, then oldest first"
        );
        assert_eq!(out[1]["subresource"], "status");
        assert!(ManagedFields::decode(Some(&json!([{"manager": "x", "operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}]))).is_err());
        assert!(ManagedFields::decode(Some(&json!([{"manager": "x", "operation": "Update", "apiVersion": "", "fieldsType": "FieldsV1"}]))).is_err());
        assert!(ManagedFields::is_reset(Some(&json!([]))));
        assert!(ManagedFields::is_reset(Some(&json!([{}]))));
        assert!(!ManagedFields::is_reset(Some(&Value::Null)));
        assert!(!ManagedFields::is_reset(None));
        assert_eq!(ManagedFields::default().encode(), None);
    }

    #[test]
    fn the_oldest_update_entries_of_a_version_fold_into_ancient_changes() {
        let mut mf = ManagedFields::default();
        for i in 0..12 {
            let now = format!("2026-01-01T00:00:{i:02}Z");
            update(
                &mut mf,
                &format!("m{i:02}"),
                json!({}),
                json!({"data": {format!("k{i}"): "v"}}),
                &now,
            );
        }
        let updates: Vec<&Entry> = mf
            .entries
            .iter()
            .filter(|e| e.operation == Operation::Update)
            .collect();
        assert_eq!(updates.len(), MAX_UPDATE_MANAGERS);
        let ancient = mf.entries.iter().find(|e| e.manager == ANCIENT).unwrap();
        // m00 (the first of v1) went in with m01 and m02: each owned its key (the map
        // itself passed to each newer writer).
        assert_eq!(
            ancient.fields.len(),
            3,
            "{:?}",
            ancient.fields.to_fields_v1()
        );
        assert!(
            !mf.entries
                .iter()
                .any(|e| e.manager == "m00" || e.manager == "m01")
        );
    }

    #[test]
    fn managers_are_named_by_field_manager_or_user_agent() {
        assert_eq!(manager_name(Some("flux"), Some("kubectl/v1.32")), "flux");
        assert_eq!(
            manager_name(None, Some("kubectl/v1.32.0 (linux/amd64) kubernetes/abc")),
            "kubectl"
        );
        assert_eq!(manager_name(None, None), "unknown");
        assert_eq!(manager_name(Some(""), Some("")), "unknown");
        assert_eq!(manager_name(None, Some(&"x".repeat(300))).len(), 128);
    }

    #[test]
    fn ignored_fields_count_for_no_one_and_meta_is_never_owned() {
        let mut ignored = FieldSet::new();
        ignored.insert(&[PathElement::Field("status".into())]);
        let c = Comparison::of(
            &json!({}),
            &json!({"apiVersion": "v1", "metadata": {"name": "x", "labels": {"a": "b"}}, "status": {"phase": "Up"}}),
            &Shape::Deduced,
        );
        let mut mf = ManagedFields::default();
        mf.update("w", "v1", None, c, &ignored, "2026-01-01T00:00:00Z");
        assert_eq!(
            mf.entries[0].fields.to_fields_v1(),
            json!({"f:metadata": {"f:labels": {".": {}, "f:a": {}}}})
        );
    }
}
