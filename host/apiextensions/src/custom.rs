//! Custom resources: the types CRDs define (`CRD-01`, `CRDV-*`, `SUB-01`, `SUB-02`,
//! `TABLE-05`, `CONV-01`, `CONV-02`, `WARN-02`).
//!
//! A [`CustomType`] is built from a stored (already validated) CRD: per served version its
//! structural schema, validation rules, subresources and printer columns. The functions
//! here are what kube-apiserver's custom resource strategy does: generation, status
//! handling, pruning, defaulting, validation, table rows, and conversion between versions
//! (strategy `None`: only `apiVersion` changes).

use std::sync::Arc;

use serde_json::{Map, Value, json};
use wasmgate_apimachinery::jsonpath::JsonPath;
use wasmgate_apimachinery::structural::Schema;
use wasmgate_apimachinery::table::{self, ColumnDefinition};
use wasmgate_apimachinery::validation::{self as v, FieldError};

use crate::object::{meta, meta_mut};
use crate::registry::{ALL_VERBS, Behavior, ResourceType, compare_versions};

/// The finalizer with which a CRD's custom resources are deleted before the CRD goes.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

pub use crate::registry::custom_type::Conversion;
pub use crate::registry::custom_type::{
    CustomType, CustomVersion, PrinterColumn, ScaleSpec, schema_name,
};

/// Builds the resource type of a stored CRD (at storage key `key`, mod revision
/// `revision`). An error when the CRD cannot be served (it was validated at write; this
/// only guards against stored data from elsewhere).
pub fn resource_type(crd: &Value, key: &str, revision: u64) -> Result<ResourceType, String> {
    let spec = crd.get("spec").ok_or("no spec")?;
    let group = str_at(spec, &["group"]).ok_or("no spec.group")?.to_owned();
    let names = spec.get("names").ok_or("no spec.names")?;
    let plural = str_at(names, &["plural"]).ok_or("no plural")?.to_owned();
    let kind = str_at(names, &["kind"]).ok_or("no kind")?.to_owned();
    let singular = str_at(names, &["singular"]).map_or_else(|| kind.to_lowercase(), str::to_owned);
    let list_kind =
        str_at(names, &["listKind"]).map_or_else(|| format!("{kind}List"), str::to_owned);
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let short_names = strings(names.get("shortNames"));
    let categories = strings(names.get("categories"));
    let namespaced = str_at(spec, &["scope"]) == Some("Namespaced");
    let mut versions = Vec::new();
    for (i, ver) in spec
        .get("versions")
        .and_then(Value::as_array)
        .ok_or("no spec.versions")?
        .iter()
        .enumerate()
    {
        let name = str_at(ver, &["name"])
            .ok_or("version without name")?
            .to_owned();
        let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
        let raw = ver
            .get("schema")
            .and_then(|s| s.get("openAPIV3Schema"))
            .cloned()
            .unwrap_or_else(
                || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            );
        let schema = Schema::parse(&raw, &path)
            .map_err(|e| format!("{path}: {}", v::aggregate_message(&e)))?;
        let rules = wasmgate_cel::compile(&schema, &path)
            .map_err(|e| format!("{path}: {}", v::aggregate_message(&e)))?;
        let deprecated = ver.get("deprecated").and_then(Value::as_bool) == Some(true);
        let deprecation_warning = deprecated.then(|| {
            str_at(ver, &["deprecationWarning"]).map_or_else(
                || format!("{group}/{name} {kind} is deprecated"),
                str::to_owned,
            )
        });
        let subresources = ver.get("subresources");
        let scale = match subresources.and_then(|s| s.get("scale")) {
            Some(sc) => Some(ScaleSpec {
                spec_replicas: JsonPath::parse(
                    str_at(sc, &["specReplicasPath"]).unwrap_or(".spec.replicas"),
                )
                .map_err(|e| e.to_string())?,
                status_replicas: JsonPath::parse(
                    str_at(sc, &["statusReplicasPath"]).unwrap_or(".status.replicas"),
                )
                .map_err(|e| e.to_string())?,
                label_selector: match str_at(sc, &["labelSelectorPath"]) {
                    Some(p) => Some(JsonPath::parse(p).map_err(|e| e.to_string())?),
                    None => None,
                },
            }),
            None => None,
        };
        let mut columns = Vec::new();
        let apcs = ver
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_else(|| {
                vec![json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})]
            });
        for c in apcs {
            let col_name = str_at(&c, &["name"]).unwrap_or("").to_owned();
            let ty = str_at(&c, &["type"]).unwrap_or("string");
            let path = JsonPath::parse(str_at(&c, &["jsonPath"]).unwrap_or(""))
                .map_err(|e| e.to_string())?;
            let description = str_at(&c, &["description"]).map_or_else(
                || {
                    format!(
                        "Custom resource definition column (in JSONPath format): {}",
                        str_at(&c, &["jsonPath"]).unwrap_or("")
                    )
                },
                str::to_owned,
            );
            columns.push(PrinterColumn {
                definition: ColumnDefinition::new(
                    &col_name,
                    ty,
                    str_at(&c, &["format"]).unwrap_or(""),
                    &description,
                    c.get("priority").and_then(Value::as_i64).unwrap_or(0) as i32,
                ),
                path,
            });
        }
        versions.push(CustomVersion {
            served: ver.get("served").and_then(Value::as_bool).unwrap_or(false),
            storage: ver.get("storage").and_then(Value::as_bool).unwrap_or(false),
            has_defaults: schema.has_defaults(),
            schema,
            rules: (!rules.is_empty()).then_some(rules),
            deprecation_warning,
            status: subresources.and_then(|s| s.get("status")).is_some(),
            scale,
            columns,
            name,
            field_shape: std::sync::OnceLock::new(),
        });
    }
    let storage_version = versions
        .iter()
        .find(|v| v.storage)
        .map(|v| v.name.clone())
        .ok_or("no storage version")?;
    let mut served: Vec<String> = versions
        .iter()
        .filter(|v| v.served)
        .map(|v| v.name.clone())
        .collect();
    served.sort_by(|a, b| compare_versions(a, b));
    // The default deprecation text names the preferred non-deprecated version, if any.
    let preferred = served
        .iter()
        .find(|n| {
            versions
                .iter()
                .any(|v| &v.name == *n && v.deprecation_warning.is_none())
        })
        .cloned();
    for ver in &mut versions {
        let explicit = spec
            .get("versions")
            .and_then(Value::as_array)
            .and_then(|vs| {
                vs.iter()
                    .find(|x| str_at(x, &["name"]) == Some(ver.name.as_str()))
            })
            .and_then(|x| str_at(x, &["deprecationWarning"]))
            .is_some();
        if let (Some(w), Some(p), false) = (&mut ver.deprecation_warning, &preferred, explicit)
            && *p != ver.name
        {
            w.push_str(&format!("; use {group}/{p} {kind}"));
        }
    }
    let crd_name = str_at(crd, &["metadata", "name"]).unwrap_or("").to_owned();
    let custom = Arc::new(CustomType {
        crd_name,
        crd_key: key.to_owned(),
        crd_revision: revision,
        crd_uid: str_at(crd, &["metadata", "uid"]).unwrap_or("").to_owned(),
        versions: versions.into(),
        group: group.clone(),
        kind: kind.clone(),
        generation: generation(crd),
        terminating: crate::object::is_deleting(crd),
        conversion: conversion(spec),
    });
    Ok(ResourceType {
        schema_name: schema_name(&group, &storage_version, &kind),
        group,
        versions: served,
        storage_version,
        resource: plural,
        singular,
        kind,
        list_kind,
        short_names,
        categories,
        namespaced,
        verbs: ALL_VERBS.to_vec(),
        subresources: Vec::new(),
        behavior: Behavior::Custom(custom),
        storage_group: None,
    })
}

/// The resource type of a stored CRD whose spec is the one `prev` was built from: same
/// storage key, same uid and same `metadata.generation` (which moves with every spec
/// change). Everything the spec decides, the compiled versions above all, is shared with
/// `prev`; the revision and whether the CRD is being deleted are taken from `crd`. `None`
/// when `prev` does not fit, and [`resource_type`] must build it anew.
pub fn reuse(prev: &ResourceType, crd: &Value, key: &str, revision: u64) -> Option<ResourceType> {
    let old = prev.custom()?;
    let uid = str_at(crd, &["metadata", "uid"]).filter(|u| !u.is_empty())?;
    let generation = generation(crd)?;
    if old.crd_key != key || old.crd_uid != uid || old.generation != Some(generation) {
        return None;
    }
    let custom = Arc::new(CustomType {
        crd_name: old.crd_name.clone(),
        crd_key: old.crd_key.clone(),
        crd_revision: revision,
        crd_uid: old.crd_uid.clone(),
        versions: old.versions.clone(),
        group: old.group.clone(),
        kind: old.kind.clone(),
        generation: old.generation,
        terminating: crate::object::is_deleting(crd),
        conversion: old.conversion.clone(),
    });
    Some(ResourceType {
        behavior: Behavior::Custom(custom),
        ..prev.clone()
    })
}

/// The plugin named by a `Webhook` conversion with a `wasm://NAME` URL.
pub fn conversion_plugin(spec: &Value) -> Option<String> {
    let conv = spec.get("conversion")?;
    if str_at(conv, &["strategy"]) != Some("Webhook") {
        return None;
    }
    str_at(conv, &["webhook", "clientConfig", "url"])?
        .strip_prefix(WASM_SCHEME)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
}

/// What converts between the versions of a CRD with `spec` (`None`: strategy `None`).
fn conversion(spec: &Value) -> Option<Conversion> {
    let conv = spec.get("conversion")?;
    if str_at(conv, &["strategy"]) != Some("Webhook") {
        return None;
    }
    if let Some(plugin) = conversion_plugin(spec) {
        return Some(Conversion::Plugin(plugin));
    }
    let cc = conv
        .pointer("/webhook/clientConfig")
        .unwrap_or(&Value::Null);
    Some(Conversion::Webhook(crate::webhooks::config::target(cc)))
}

/// The URL scheme of conversion by a Wasm plugin.
pub const WASM_SCHEME: &str = "wasm://";

fn generation(crd: &Value) -> Option<i64> {
    meta(crd).get("generation").and_then(Value::as_i64)
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(*k))?.as_str()
}

/// Create: generation 1; with the status subresource, status cannot be set (`SUB-01`).
pub fn prepare_for_create(ver: &CustomVersion, obj: &mut Value) {
    meta_mut(obj).insert("generation".into(), json!(1));
    if ver.status
        && let Some(m) = obj.as_object_mut()
    {
        m.remove("status");
    }
}

/// Update of the main resource or of `/status` (`SUB-01`, `META-07`).
pub fn prepare_for_update(
    ver: &CustomVersion,
    new: &mut Value,
    old: &Value,
    subresource: Option<&str>,
) {
    match subresource {
        Some("status") => {
            // Only status changes; everything else comes from the stored object.
            let status = new.get("status").cloned();
            let managed = meta(new).get("managedFields").cloned();
            *new = old.clone();
            if let Some(m) = new.as_object_mut() {
                match status {
                    Some(s) => {
                        m.insert("status".into(), s);
                    }
                    None => {
                        m.remove("status");
                    }
                }
            }
            if let Some(mf) = managed {
                meta_mut(new).insert("managedFields".into(), mf);
            }
        }
        _ => {
            if ver.status
                && let Some(m) = new.as_object_mut()
            {
                match old.get("status") {
                    Some(s) => {
                        m.insert("status".into(), s.clone());
                    }
                    None => {
                        m.remove("status");
                    }
                }
            }
            let generation = meta(old)
                .get("generation")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            let bumped = if spec_changed(new, old) {
                generation + 1
            } else {
                generation
            };
            meta_mut(new).insert("generation".into(), json!(bumped));
        }
    }
}

/// Whether anything but `metadata` and `status` differs.
fn spec_changed(new: &Value, old: &Value) -> bool {
    let empty = Map::new();
    let (n, o) = (new.as_object(), old.as_object());
    !crate::object::eq_without(
        n.unwrap_or(&empty),
        o.unwrap_or(&empty),
        &["metadata", "status"],
    )
}

/// Validation of a create or update (`CRDV-01`, `CRDV-02`): ObjectMeta, then the schema
/// (only `.status` for the status subresource), then the CEL rules.
pub fn validate(
    ver: &CustomVersion,
    rt: &ResourceType,
    obj: &Value,
    old: Option<&Value>,
    subresource: Option<&str>,
) -> Vec<FieldError> {
    let mut errs = v::validate_object_meta(
        obj.get("metadata").unwrap_or(&Value::Null),
        rt.namespaced,
        v::is_dns1123_subdomain,
    );
    if subresource == Some("status") {
        errs.extend(ver.schema.validate_status(obj));
    } else {
        errs.extend(ver.schema.validate(obj));
        if crate::plugins::crd::is_wasmplugins(rt) {
            // What the schema cannot say; a field the schema faulted is not faulted again.
            for e in crate::plugins::validation::validate(obj) {
                if !errs.iter().any(|x| x.field == e.field) {
                    errs.push(e);
                }
            }
        }
    }
    if errs.is_empty()
        && let Some(rules) = &ver.rules
    {
        errs.extend(rules.validate(obj, old));
    }
    errs
}

/// Rewrites `apiVersion` for another version (conversion strategy `None`, `CONV-02`).
pub fn set_version(obj: &mut Value, group: &str, version: &str) {
    if let Some(m) = obj.as_object_mut() {
        m.insert(
            "apiVersion".into(),
            Value::String(format!("{group}/{version}")),
        );
    }
}

/// The Table columns of a version: Name, then its printer columns.
pub fn columns(ver: &CustomVersion) -> Vec<ColumnDefinition> {
    let mut cols = vec![ColumnDefinition::new(
        "Name",
        "string",
        "name",
        "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
        0,
    )];
    cols.extend(ver.columns.iter().map(|c| c.definition.clone()));
    cols
}

/// The Table cells of an object: its name, then each printer column's value, typed as the
/// column says (a value of another type is omitted, `TABLE-05`); `date` columns show ages.
pub fn cells(ver: &CustomVersion, obj: &Value, now: time::OffsetDateTime) -> Vec<Value> {
    let mut cells = vec![meta(obj).get("name").cloned().unwrap_or(Value::Null)];
    for c in &ver.columns {
        let found = c.path.first(obj);
        let cell = match (c.definition.type_.as_str(), found) {
            (_, None) => Value::Null,
            ("integer", Some(v)) if v.is_i64() || v.is_u64() => v.clone(),
            ("number", Some(v)) if v.is_number() => v.clone(),
            ("boolean", Some(v)) if v.is_boolean() => v.clone(),
            ("date", v) => table::date_cell(v, now),
            ("string", Some(Value::String(s))) => Value::String(s.clone()),
            ("string", Some(v)) if !v.is_null() => Value::String(match v {
                Value::Array(_) | Value::Object(_) => v.to_string(),
                other => other.to_string().trim_matches('"').to_owned(),
            }),
            _ => Value::Null,
        };
        cells.push(cell);
    }
    cells
}

/// The `autoscaling/v1` Scale of an object (`SUB-02`): missing spec or status replicas
/// read as 0, a missing selector as "".
pub fn scale_of(spec: &ScaleSpec, obj: &Value) -> Value {
    let m = meta(obj);
    let mut scale_meta = Map::new();
    for f in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = m.get(f) {
            scale_meta.insert(f.into(), v.clone());
        }
    }
    let spec_replicas = spec
        .spec_replicas
        .first(obj)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let status_replicas = spec
        .status_replicas
        .first(obj)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let selector = spec
        .label_selector
        .as_ref()
        .and_then(|p| p.first(obj))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut status = json!({"replicas": status_replicas});
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": spec_replicas},
        "status": status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(uid: &str, generation: Option<i64>) -> Value {
        let mut crd = json!({
            "metadata": {"name": "widgets.example.com", "uid": uid},
            "spec": {
                "group": "example.com",
                "names": {"plural": "widgets", "kind": "Widget"},
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }],
            },
        });
        if let Some(g) = generation {
            crd["metadata"]["generation"] = json!(g);
        }
        crd
    }

    #[test]
    fn reuse_shares_versions_only_for_the_same_spec() {
        const KEY: &str = "apiextensions.k8s.io/customresourcedefinitions//widgets.example.com";
        let prev = resource_type(&crd("u1", Some(1)), KEY, 5).unwrap();
        let mut deleting = crd("u1", Some(1));
        deleting["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        let next = reuse(&prev, &deleting, KEY, 7).unwrap();
        let (p, n) = (prev.custom().unwrap(), next.custom().unwrap());
        assert!(Arc::ptr_eq(&p.versions, &n.versions));
        assert_eq!((n.crd_revision, n.terminating), (7, true));
        assert_eq!(
            (next.resource.as_str(), next.kind.as_str()),
            ("widgets", "Widget")
        );
        assert!(
            reuse(&prev, &crd("u1", Some(2)), KEY, 7).is_none(),
            "spec changed"
        );
        assert!(
            reuse(&prev, &crd("u2", Some(1)), KEY, 7).is_none(),
            "another CRD"
        );
        assert!(
            reuse(&prev, &crd("u1", None), KEY, 7).is_none(),
            "no generation"
        );
        assert!(
            reuse(&prev, &crd("u1", Some(1)), "other", 7).is_none(),
            "another key"
        );
    }
}
