//! What kube-apiserver's per-type strategies do for the built-in kinds served here:
//! preparing objects for create and update, and validating them (422 causes).

use base64::Engine as _;
use serde_json::{Map, Value, json};
use wasmgate_apimachinery::validation::{self as v, FieldError};

use crate::object::{NAMESPACE_FINALIZER, meta, meta_mut};
use crate::registry::{Builtin, ResourceType};

/// The label kube-apiserver puts on every namespace.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// Namespaces that may not be deleted.
pub const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];
const MAX_DATA_BYTES: usize = 1024 * 1024;

/// Name validation of a type: DNS-1123 label for namespaces, a path segment for RBAC
/// objects (`system:basic-user`), a DNS-1123 subdomain otherwise.
pub fn name_check(t: &ResourceType) -> fn(&str) -> Vec<String> {
    match t.builtin() {
        Some(Builtin::Namespace) => v::is_dns1123_label,
        Some(
            Builtin::Role
            | Builtin::RoleBinding
            | Builtin::ClusterRole
            | Builtin::ClusterRoleBinding,
        ) => v::is_path_segment_name,
        _ => v::is_dns1123_subdomain,
    }
}

/// PrepareForCreate.
pub fn prepare_for_create(t: &ResourceType, obj: &mut Value) {
    match t.builtin() {
        Some(Builtin::Namespace) => {
            let name = meta(obj).get("name").cloned().unwrap_or(Value::Null);
            set_label(obj, NAMESPACE_NAME_LABEL, name);
            obj["status"] = json!({"phase": "Active"});
            obj["spec"] = json!({"finalizers": [NAMESPACE_FINALIZER]});
        }
        Some(Builtin::Secret) => normalize_secret(obj),
        Some(
            b @ (Builtin::MutatingWebhookConfiguration | Builtin::ValidatingWebhookConfiguration),
        ) => {
            crate::webhooks::config::set_defaults(obj, b == Builtin::MutatingWebhookConfiguration);
        }
        Some(Builtin::ValidatingAdmissionPolicy) => {
            // The status is the server's (type checking): none on create.
            if let Some(m) = obj.as_object_mut() {
                m.remove("status");
            }
            crate::policies::set_policy_defaults(obj);
        }
        Some(Builtin::ApiService) => {
            // The status is the server's (availability): none on create.
            if let Some(m) = obj.as_object_mut() {
                m.remove("status");
            }
        }
        Some(Builtin::ValidatingAdmissionPolicyBinding) => {
            crate::policies::set_binding_defaults(obj);
        }
        _ => {}
    }
}

/// PrepareForUpdate: what a write to the main resource or a subresource may change.
pub fn prepare_for_update(
    t: &ResourceType,
    new: &mut Value,
    old: &Value,
    subresource: Option<&str>,
) {
    match (t.builtin(), subresource) {
        (Some(Builtin::Namespace), None) => {
            let name = meta(old).get("name").cloned().unwrap_or(Value::Null);
            set_label(new, NAMESPACE_NAME_LABEL, name);
            copy_field(new, old, "spec");
            copy_field(new, old, "status");
        }
        (Some(Builtin::Namespace), Some("status")) => {
            status_only(new, old);
        }
        (Some(Builtin::Namespace), Some("finalize")) => {
            let finalizers = new.get("spec").and_then(|s| s.get("finalizers")).cloned();
            *new = old.clone();
            match finalizers {
                Some(f) => new["spec"]["finalizers"] = f,
                None => {
                    if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
                        spec.remove("finalizers");
                    }
                }
            }
        }
        (Some(Builtin::Secret), _) => normalize_secret(new),
        (
            Some(
                b @ (Builtin::MutatingWebhookConfiguration
                | Builtin::ValidatingWebhookConfiguration),
            ),
            _,
        ) => {
            crate::webhooks::config::set_defaults(new, b == Builtin::MutatingWebhookConfiguration);
        }
        (Some(Builtin::ValidatingAdmissionPolicy), None) => {
            copy_field(new, old, "status");
            crate::policies::set_policy_defaults(new);
        }
        (Some(Builtin::ApiService), None) => copy_field(new, old, "status"),
        (Some(Builtin::ValidatingAdmissionPolicy | Builtin::ApiService), Some("status")) => {
            status_only(new, old);
        }
        (Some(Builtin::ValidatingAdmissionPolicyBinding), _) => {
            crate::policies::set_binding_defaults(new);
        }
        _ => {}
    }
}

/// An update of the `status` subresource: the stored object with the new status.
fn status_only(new: &mut Value, old: &Value) {
    let status = new.get("status").cloned();
    *new = old.clone();
    match status {
        Some(s) => new["status"] = s,
        None => {
            if let Some(m) = new.as_object_mut() {
                m.remove("status");
            }
        }
    }
}

fn copy_field(new: &mut Value, old: &Value, field: &str) {
    let Some(m) = new.as_object_mut() else { return };
    match old.get(field) {
        Some(v) => {
            m.insert(field.to_owned(), v.clone());
        }
        None => {
            m.remove(field);
        }
    }
}

fn set_label(obj: &mut Value, key: &str, value: Value) {
    let meta = meta_mut(obj);
    let labels = meta
        .entry("labels")
        .or_insert_with(|| Value::Object(Map::new()));
    if !labels.is_object() {
        *labels = Value::Object(Map::new());
    }
    if let Value::Object(l) = labels {
        l.insert(key.to_owned(), value);
    }
}

/// `stringData` folds into `data`; the type defaults to `Opaque`.
fn normalize_secret(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else { return };
    if let Some(Value::Object(sd)) = m.remove("stringData") {
        let data = m.entry("data").or_insert_with(|| Value::Object(Map::new()));
        if !data.is_object() {
            *data = Value::Object(Map::new());
        }
        if let Value::Object(d) = data {
            for (k, val) in sd {
                if let Value::String(s) = val {
                    d.insert(
                        k,
                        Value::String(base64::engine::general_purpose::STANDARD.encode(s)),
                    );
                }
            }
        }
    }
    if m.get("type")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        m.insert("type".into(), Value::String("Opaque".into()));
    }
}

/// Validates a new object (`old` is the stored object for updates).
pub fn validate(t: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = v::validate_object_meta(
        obj.get("metadata").unwrap_or(&Value::Null),
        t.namespaced,
        name_check(t),
    );
    if let Some(old) = old {
        errs.extend(validate_meta_update(obj, old));
    }
    // Events: the event's rules first, then the metadata's, as kube lists them; through
    // events.k8s.io on the core form (the paths are the core type's, as kube's are).
    match t.builtin() {
        Some(Builtin::Event) => return crate::events::validate(obj, old, false, errs),
        Some(Builtin::EventsApiEvent) => {
            use wasmgate_apimachinery::events::v1_to_core;
            let old = old.map(|o| v1_to_core(o.clone()));
            return crate::events::validate(&v1_to_core(obj.clone()), old.as_ref(), true, errs);
        }
        _ => {}
    }
    match t.builtin() {
        Some(Builtin::Namespace) => {
            if let Some(f) = obj
                .get("spec")
                .and_then(|s| s.get("finalizers"))
                .and_then(Value::as_array)
            {
                for (i, f) in f.iter().enumerate() {
                    let s = f.as_str().unwrap_or("");
                    for msg in v::is_qualified_name(s) {
                        errs.push(FieldError::invalid(format!("spec.finalizers[{i}]"), s, msg));
                    }
                }
            }
        }
        Some(Builtin::ConfigMap) => {
            errs.extend(validate_data(obj, &["data", "binaryData"]));
            errs.extend(validate_immutable(obj, old, &["data", "binaryData"]));
        }
        Some(Builtin::Secret) => {
            errs.extend(validate_data(obj, &["data"]));
            errs.extend(validate_secret_type(obj));
            errs.extend(validate_immutable(obj, old, &["data"]));
            if let Some(old) = old
                && old.get("type") != obj.get("type")
            {
                errs.push(FieldError::invalid(
                    "type",
                    obj.get("type").cloned().unwrap_or(Value::Null),
                    "field is immutable",
                ));
            }
        }
        Some(Builtin::Lease) => {
            let spec = obj.get("spec");
            if let Some(d) = spec
                .and_then(|s| s.get("leaseDurationSeconds"))
                .and_then(Value::as_i64)
                && d <= 0
            {
                errs.push(FieldError::invalid(
                    "spec.leaseDurationSeconds",
                    d,
                    "must be greater than 0",
                ));
            }
            if let Some(n) = spec
                .and_then(|s| s.get("leaseTransitions"))
                .and_then(Value::as_i64)
                && n < 0
            {
                errs.push(FieldError::invalid(
                    "spec.leaseTransitions",
                    n,
                    "must be greater than or equal to 0",
                ));
            }
        }
        Some(b @ (Builtin::Role | Builtin::ClusterRole)) => {
            errs.extend(crate::rbac::validate_rules(obj, b == Builtin::Role));
        }
        Some(b @ (Builtin::RoleBinding | Builtin::ClusterRoleBinding)) => {
            errs.extend(crate::rbac::validate_binding(
                obj,
                old,
                b == Builtin::RoleBinding,
            ));
        }
        Some(
            b @ (Builtin::MutatingWebhookConfiguration | Builtin::ValidatingWebhookConfiguration),
        ) => {
            errs.extend(crate::webhooks::config::validate(
                obj,
                b == Builtin::MutatingWebhookConfiguration,
            ));
        }
        Some(Builtin::ValidatingAdmissionPolicy) => {
            errs.extend(crate::policies::validate_policy(obj));
        }
        Some(Builtin::ValidatingAdmissionPolicyBinding) => {
            errs.extend(crate::policies::validate_binding(obj));
        }
        Some(Builtin::ApiService) => errs.extend(crate::aggregator::validate(obj)),
        _ => {}
    }
    errs
}

/// ValidateObjectMetaUpdate: what no update may change.
pub(crate) fn validate_meta_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for field in ["uid", "namespace", "name"] {
        let (n, o) = (meta(new).get(field), meta(old).get(field));
        if n != o {
            errs.push(FieldError::invalid(
                format!("metadata.{field}"),
                n.cloned().unwrap_or(Value::String(String::new())),
                "field is immutable",
            ));
        }
    }
    if crate::object::is_deleting(old) {
        // Linear in the lists' lengths (sets, not pairwise comparisons); one error naming
        // every new finalizer, sorted, as kube's `ValidateObjectMetaUpdate` words it.
        let old_f: std::collections::HashSet<String> =
            crate::object::finalizers(old).into_iter().collect();
        let added: std::collections::BTreeSet<String> = crate::object::finalizers(new)
            .into_iter()
            .filter(|f| !old_f.contains(f))
            .collect();
        if !added.is_empty() {
            let list: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
            errs.push(FieldError::forbidden(
                "metadata.finalizers",
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    list.join(", ")
                ),
            ));
        }
    }
    errs
}

fn validate_data(obj: &Value, fields: &[&str]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut total = 0usize;
    // A set: a ConfigMap may have 100,000 keys, and a pairwise check is quadratic.
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for field in fields {
        let Some(map) = obj.get(*field).and_then(Value::as_object) else {
            continue;
        };
        for (k, val) in map {
            for msg in v::is_config_map_key(k) {
                errs.push(FieldError::invalid(field.to_string(), k.as_str(), msg));
            }
            if !seen.insert(k.as_str()) {
                errs.push(FieldError::invalid(
                    field.to_string(),
                    k.as_str(),
                    "duplicate of key present in data",
                ));
            }
            total += match val {
                Value::String(s) if *field == "data" && fields.len() == 1 => {
                    base64::engine::general_purpose::STANDARD
                        .decode(s)
                        .map_or(s.len(), |b| b.len())
                }
                Value::String(s) => s.len(),
                _ => 0,
            };
        }
    }
    if total > MAX_DATA_BYTES {
        errs.push(FieldError::too_long(fields[0], Some(MAX_DATA_BYTES)));
    }
    errs
}

fn validate_immutable(obj: &Value, old: Option<&Value>, fields: &[&str]) -> Vec<FieldError> {
    let Some(old) = old else { return Vec::new() };
    if old.get("immutable").and_then(Value::as_bool) != Some(true) {
        return Vec::new();
    }
    let mut errs = Vec::new();
    if obj.get("immutable").and_then(Value::as_bool) != Some(true) {
        errs.push(FieldError::forbidden(
            "immutable",
            "field is immutable when `immutable` is set",
        ));
    }
    for f in fields {
        if obj.get(*f) != old.get(*f) {
            errs.push(FieldError::forbidden(
                *f,
                "field is immutable when `immutable` is set",
            ));
        }
    }
    errs
}

fn validate_secret_type(obj: &Value) -> Vec<FieldError> {
    let ty = obj.get("type").and_then(Value::as_str).unwrap_or("Opaque");
    let data = obj.get("data").and_then(Value::as_object);
    let has = |k: &str| data.is_some_and(|d| d.contains_key(k));
    let mut errs = Vec::new();
    let mut require = |k: &str| {
        if !has(k) {
            errs.push(FieldError::required(format!("data[{k}]"), ""));
        }
    };
    match ty {
        "kubernetes.io/tls" => {
            require("tls.crt");
            require("tls.key");
        }
        "kubernetes.io/dockerconfigjson" => require(".dockerconfigjson"),
        "kubernetes.io/dockercfg" => require(".dockercfg"),
        "kubernetes.io/ssh-auth" => require("ssh-privatekey"),
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            errs.push(FieldError::required("data[username]", ""));
            errs.push(FieldError::required("data[password]", ""));
        }
        "kubernetes.io/service-account-token" => {
            let ann = meta(obj)
                .get("annotations")
                .and_then(|a| a.get("kubernetes.io/service-account.name"));
            if ann.and_then(Value::as_str).is_none_or(str::is_empty) {
                errs.push(FieldError::required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "",
                ));
            }
        }
        _ => {}
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::builtin_types;

    fn ty(resource: &str) -> ResourceType {
        builtin_types()
            .into_iter()
            .find(|t| t.resource == resource)
            .unwrap()
    }

    #[test]
    fn namespace_create_sets_phase_finalizer_and_name_label() {
        let t = ty("namespaces");
        let mut ns = json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"demo"}});
        prepare_for_create(&t, &mut ns);
        assert_eq!(ns["status"]["phase"], "Active");
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(
            ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
            "demo"
        );
        assert!(validate(&t, &ns, None).is_empty());
        let bad = json!({"metadata":{"name":"Demo.X"}});
        assert!(!validate(&t, &bad, None).is_empty());
    }

    #[test]
    fn secret_string_data_and_type_rules() {
        let t = ty("secrets");
        let mut s =
            json!({"metadata":{"name":"s","namespace":"d"},"stringData":{"password":"hunter2"}});
        prepare_for_create(&t, &mut s);
        assert_eq!(s["data"]["password"], "aHVudGVyMg==");
        assert_eq!(s["type"], "Opaque");
        assert!(s.get("stringData").is_none());
        let tls = json!({"metadata":{"name":"s","namespace":"d"},"type":"kubernetes.io/tls","data":{"tls.crt":""}});
        let errs = validate(&t, &tls, None);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "data[tls.key]");
    }

    #[test]
    fn configmap_keys_and_immutability() {
        let t = ty("configmaps");
        let bad = json!({"metadata":{"name":"c","namespace":"d"},"data":{"bad key":"x"}});
        assert_eq!(validate(&t, &bad, None).len(), 1);
        let old = json!({"metadata":{"name":"c","namespace":"d","uid":"u"},"data":{"k":"1"},"immutable":true});
        let new = json!({"metadata":{"name":"c","namespace":"d","uid":"u"},"data":{"k":"2"},"immutable":true});
        let errs = validate(&t, &new, Some(&old));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(errs[0].field, "data");
    }

    #[test]
    fn del_02_no_new_finalizers_while_deleting() {
        let t = ty("configmaps");
        let old = json!({"metadata":{"name":"c","namespace":"d","uid":"u","deletionTimestamp":"2024-01-01T00:00:00Z","finalizers":["a/b"]}});
        let new = json!({"metadata":{"name":"c","namespace":"d","uid":"u","deletionTimestamp":"2024-01-01T00:00:00Z","finalizers":["a/b","c/d"]}});
        let errs = validate(&t, &new, Some(&old));
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "metadata.finalizers");
        let removed = json!({"metadata":{"name":"c","namespace":"d","uid":"u","deletionTimestamp":"2024-01-01T00:00:00Z"}});
        assert!(validate(&t, &removed, Some(&old)).is_empty());
    }
}
