//! The CustomResourceDefinition kind itself (`CRD-01`..`CRD-04`, `DISC-10`, `CONV-09`):
//! defaulting, validation (422 with one cause per problem, kube's paths and wording), name
//! collisions, stored versions.

use serde_json::{Value, json};
use wasmgate_apimachinery::jsonpath::JsonPath;
use wasmgate_apimachinery::structural::Schema;
use wasmgate_apimachinery::validation::{self as v, FieldError};

use crate::custom::CLEANUP_FINALIZER;
use crate::object::{meta, meta_mut};
use crate::registry::Catalog;

/// v1 defaulting (`SetDefaults_*`): singular and listKind names, conversion strategy.
pub fn set_defaults(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if names
            .get("singular")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
            && !kind.is_empty()
        {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
        if names
            .get("listKind")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
            && !kind.is_empty()
        {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
    if spec.get("conversion").is_none_or(Value::is_null) {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
}

/// PrepareForCreate: status starts with the stored version; generation 1; the cleanup
/// finalizer so that deleting the CRD first deletes its objects.
pub fn prepare_for_create(crd: &mut Value) {
    set_defaults(crd);
    let storage = storage_version(crd);
    crd["status"] = json!({
        "conditions": [],
        "acceptedNames": {"plural": "", "kind": ""},
        "storedVersions": storage.into_iter().collect::<Vec<_>>(),
    });
    let m = meta_mut(crd);
    m.insert("generation".into(), json!(1));
    let fins = m.entry("finalizers").or_insert_with(|| json!([]));
    if let Value::Array(a) = fins
        && !a.iter().any(|f| f == CLEANUP_FINALIZER)
    {
        a.push(json!(CLEANUP_FINALIZER));
    }
}

/// PrepareForUpdate: the main resource keeps status (but records a new storage version in
/// `storedVersions`, `CONV-09`) and bumps generation on spec changes; `/status` changes
/// only status.
pub fn prepare_for_update(new: &mut Value, old: &Value, subresource: Option<&str>) {
    if subresource == Some("status") {
        let status = new.get("status").cloned().unwrap_or(Value::Null);
        *new = old.clone();
        new["status"] = status;
        return;
    }
    set_defaults(new);
    new["status"] = old.get("status").cloned().unwrap_or_else(|| json!({}));
    if let Some(storage) = storage_version(new) {
        let stored = new["status"]
            .as_object_mut()
            .map(|s| s.entry("storedVersions").or_insert_with(|| json!([])));
        if let Some(Value::Array(a)) = stored
            && !a.iter().any(|x| x.as_str() == Some(storage.as_str()))
        {
            a.push(json!(storage));
        }
    }
    let generation = meta(old)
        .get("generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let bumped = if new.get("spec") != old.get("spec") {
        generation + 1
    } else {
        generation
    };
    meta_mut(new).insert("generation".into(), json!(bumped));
}

fn storage_version(crd: &Value) -> Option<String> {
    crd.get("spec")?
        .get("versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .map(str::to_owned)
}

fn s<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn dns1035(errs: &mut Vec<FieldError>, field: &str, value: &str) {
    for msg in v::is_dns1035_label(value) {
        errs.push(FieldError::invalid(field, value, msg));
    }
}

/// The annotation that records the API review of a CRD in a Kubernetes-owned group.
const API_APPROVED: &str = "api-approved.kubernetes.io";

/// What a CRD's approval annotation says (kube's `GetAPIApprovalState`).
#[derive(Debug, PartialEq, Eq)]
enum Approval {
    Approved,
    Bypassed,
    Missing,
    Invalid,
}

fn approval_state(crd: &Value) -> Approval {
    let value = meta(crd)
        .get("annotations")
        .and_then(|a| a.get(API_APPROVED))
        .and_then(Value::as_str)
        .unwrap_or("");
    // A URL with a scheme and a host, as Go's `url.ParseRequestURI` reads one.
    let is_url = value.split_once("://").is_some_and(|(scheme, rest)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            && !rest.split('/').next().unwrap_or("").is_empty()
            && !value.contains(char::is_whitespace)
    });
    if value.is_empty() {
        Approval::Missing
    } else if value.starts_with("unapproved") {
        Approval::Bypassed
    } else if is_url {
        Approval::Approved
    } else {
        Approval::Invalid
    }
}

/// kube's `validateAPIApproval`: a CRD in `k8s.io`, `kubernetes.io` or a subdomain of
/// either must carry the approval annotation (a URL, or a reason starting with
/// `unapproved`); an update that leaves the state as it was is never refused.
fn validate_api_approval(crd: &Value, old: Option<&Value>, group: &str) -> Vec<FieldError> {
    let protected = ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|p| group == *p || group.ends_with(&format!(".{p}")));
    if !protected {
        return Vec::new();
    }
    let new_state = approval_state(crd);
    if old.is_some_and(|o| approval_state(o) == new_state) {
        return Vec::new();
    }
    let field = format!("metadata.annotations[{API_APPROVED}]");
    match new_state {
        Approval::Missing => vec![FieldError::required(
            field,
            format!(
                "protected groups must have approval annotation {API_APPROVED:?}, see https://github.com/kubernetes/enhancements/pull/1111"
            ),
        )],
        Approval::Invalid => {
            let value = meta(crd)["annotations"][API_APPROVED].clone();
            vec![FieldError::invalid(
                field,
                value,
                format!(
                    "protected groups must have approval annotation {API_APPROVED:?} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
                ),
            )]
        }
        Approval::Approved | Approval::Bypassed => Vec::new(),
    }
}

/// ValidateCustomResourceDefinition (+ Update when `old` is given).
pub fn validate(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = v::validate_object_meta(
        crd.get("metadata").unwrap_or(&Value::Null),
        false,
        v::is_dns1123_subdomain,
    );
    let empty = json!({});
    let spec = crd.get("spec").unwrap_or(&empty);
    let group = s(spec, "group").unwrap_or("");
    let names = spec.get("names").unwrap_or(&empty);
    let plural = s(names, "plural").unwrap_or("");
    let name = meta(crd).get("name").and_then(Value::as_str).unwrap_or("");
    if name != format!("{plural}.{group}") {
        errs.push(FieldError::invalid(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else {
        for msg in v::is_dns1123_subdomain(group) {
            errs.push(FieldError::invalid("spec.group", group, msg));
        }
        if group.split('.').count() < 2 {
            errs.push(FieldError::invalid(
                "spec.group",
                group,
                "should be a domain with at least one dot",
            ));
        }
    }
    errs.extend(validate_api_approval(crd, old, group));
    match s(spec, "scope") {
        Some("Namespaced" | "Cluster") => {}
        None | Some("") => errs.push(FieldError::required("spec.scope", "")),
        Some(other) => errs.push(FieldError::not_supported(
            "spec.scope",
            other,
            &["Cluster", "Namespaced"],
        )),
    }
    // names
    if plural.is_empty() {
        errs.push(FieldError::required("spec.names.plural", ""));
    } else {
        dns1035(&mut errs, "spec.names.plural", plural);
    }
    if let Some(singular) = s(names, "singular").filter(|x| !x.is_empty()) {
        dns1035(&mut errs, "spec.names.singular", singular);
    }
    let kind = s(names, "kind").unwrap_or("");
    if kind.is_empty() {
        errs.push(FieldError::required("spec.names.kind", ""));
    } else {
        for msg in v::is_dns1035_label(&kind.to_lowercase()) {
            errs.push(FieldError::invalid("spec.names.kind", kind, msg));
        }
    }
    if let Some(list_kind) = s(names, "listKind").filter(|x| !x.is_empty()) {
        for msg in v::is_dns1035_label(&list_kind.to_lowercase()) {
            errs.push(FieldError::invalid("spec.names.listKind", list_kind, msg));
        }
        if list_kind == kind {
            errs.push(FieldError::invalid(
                "spec.names.listKind",
                list_kind,
                "kind and listKind may not be the same",
            ));
        }
    }
    for (field, key) in [
        ("spec.names.shortNames", "shortNames"),
        ("spec.names.categories", "categories"),
    ] {
        if let Some(a) = names.get(key).and_then(Value::as_array) {
            for (i, x) in a.iter().enumerate() {
                dns1035(
                    &mut errs,
                    &format!("{field}[{i}]"),
                    x.as_str().unwrap_or(""),
                );
            }
        }
    }
    // versions
    let versions: &[Value] = spec
        .get("versions")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    if versions.is_empty() {
        errs.push(FieldError::required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
    }
    let storage_count = versions
        .iter()
        .filter(|x| x.get("storage").and_then(Value::as_bool) == Some(true))
        .count();
    if !versions.is_empty() && storage_count != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            Value::Array(versions.to_vec()),
            "must have exactly one version marked as storage version",
        ));
    }
    let mut seen = Vec::new();
    for (i, ver) in versions.iter().enumerate() {
        let base = format!("spec.versions[{i}]");
        let vname = s(ver, "name").unwrap_or("");
        if vname.is_empty() {
            errs.push(FieldError::required(format!("{base}.name"), ""));
        } else {
            dns1035(&mut errs, &format!("{base}.name"), vname);
        }
        if seen.contains(&vname) {
            errs.push(FieldError::invalid(
                "spec.versions",
                vname,
                "must contain unique version names",
            ));
        }
        seen.push(vname);
        match ver.get("schema").and_then(|x| x.get("openAPIV3Schema")) {
            None => errs.push(FieldError::required(
                format!("{base}.schema.openAPIV3Schema"),
                "schemas are required",
            )),
            Some(raw) => {
                let path = format!("{base}.schema.openAPIV3Schema");
                match Schema::parse(raw, &path) {
                    Err(e) => errs.extend(e),
                    // CEL rules compile (type-checked, cost-estimated) when the CRD is
                    // written (ERR-09), never at the first object.
                    Ok(schema) => {
                        if let Err(e) = wasmgate_cel::compile(&schema, &path) {
                            errs.extend(e);
                        }
                    }
                }
            }
        }
        if let Some(scale) = ver.get("subresources").and_then(|x| x.get("scale")) {
            let sb = format!("{base}.subresources.scale");
            check_path(
                &mut errs,
                &format!("{sb}.specReplicasPath"),
                s(scale, "specReplicasPath"),
                &[".spec."],
                true,
            );
            check_path(
                &mut errs,
                &format!("{sb}.statusReplicasPath"),
                s(scale, "statusReplicasPath"),
                &[".status."],
                true,
            );
            check_path(
                &mut errs,
                &format!("{sb}.labelSelectorPath"),
                s(scale, "labelSelectorPath"),
                &[".spec.", ".status."],
                false,
            );
        }
        if let Some(cols) = ver
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
        {
            let mut col_names = Vec::new();
            for (j, c) in cols.iter().enumerate() {
                let cb = format!("{base}.additionalPrinterColumns[{j}]");
                let cname = s(c, "name").unwrap_or("");
                if cname.is_empty() {
                    errs.push(FieldError::required(format!("{cb}.name"), ""));
                } else if col_names.contains(&cname) {
                    errs.push(FieldError::duplicate(format!("{cb}.name"), cname));
                }
                col_names.push(cname);
                match s(c, "type") {
                    Some("integer" | "number" | "string" | "boolean" | "date") => {}
                    None | Some("") => errs.push(FieldError::required(format!("{cb}.type"), "")),
                    Some(other) => errs.push(FieldError::not_supported(
                        format!("{cb}.type"),
                        other,
                        &["boolean", "date", "integer", "number", "string"],
                    )),
                }
                if let Some(f) = s(c, "format").filter(|f| !f.is_empty())
                    && ![
                        "int32",
                        "int64",
                        "float",
                        "double",
                        "byte",
                        "date",
                        "date-time",
                        "password",
                    ]
                    .contains(&f)
                {
                    errs.push(FieldError::not_supported(
                        format!("{cb}.format"),
                        f,
                        &[
                            "byte",
                            "date",
                            "date-time",
                            "double",
                            "float",
                            "int32",
                            "int64",
                            "password",
                        ],
                    ));
                }
                match s(c, "jsonPath") {
                    None | Some("") => {
                        errs.push(FieldError::required(format!("{cb}.jsonPath"), ""))
                    }
                    Some(p) => {
                        if let Err(e) = JsonPath::parse(p) {
                            errs.push(FieldError::invalid(format!("{cb}.jsonPath"), p, e.reason));
                        }
                    }
                }
                if c.get("priority")
                    .and_then(Value::as_i64)
                    .is_some_and(|p| p < 0)
                {
                    errs.push(FieldError::invalid(
                        format!("{cb}.priority"),
                        c["priority"].clone(),
                        "must be greater than or equal to 0",
                    ));
                }
            }
        }
    }
    match spec.get("conversion").and_then(|c| s(c, "strategy")) {
        None | Some("None") => {}
        Some("Webhook") => {
            let webhook = spec.pointer("/conversion/webhook");
            if crate::custom::conversion_plugin(spec).is_none() {
                crate::webhooks::config::validate_client_config(
                    webhook.and_then(|w| w.get("clientConfig")),
                    "spec.conversion.webhook.clientConfig",
                    &mut errs,
                );
            }
            let versions: Vec<&str> = webhook
                .and_then(|w| w.get("conversionReviewVersions"))
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if versions.is_empty() {
                errs.push(FieldError::required(
                    "spec.conversion.webhook.conversionReviewVersions",
                    "must include at least one of v1, v1beta1",
                ));
            } else if !versions.contains(&"v1") {
                errs.push(FieldError::invalid(
                    "spec.conversion.webhook.conversionReviewVersions",
                    json!(versions),
                    "must include v1 (the only ConversionReview version Wasmgate sends)",
                ));
            }
        }
        Some(other) => errs.push(FieldError::not_supported(
            "spec.conversion.strategy",
            other,
            &["None", "Webhook"],
        )),
    }
    if let Some(old) = old {
        let old_spec = old.get("spec").unwrap_or(&empty);
        if s(old_spec, "scope") != s(spec, "scope") {
            errs.push(FieldError::invalid(
                "spec.scope",
                s(spec, "scope").unwrap_or(""),
                "field is immutable",
            ));
        }
        if s(old_spec, "group") != s(spec, "group") {
            errs.push(FieldError::invalid(
                "spec.group",
                group,
                "field is immutable",
            ));
        }
        let stored: Vec<String> = crd
            .get("status")
            .and_then(|st| st.get("storedVersions"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        for (i, sv) in stored.iter().enumerate() {
            if !seen.contains(&sv.as_str()) {
                errs.push(FieldError::invalid(
                    format!("status.storedVersions[{i}]"),
                    sv.as_str(),
                    "must appear in spec.versions",
                ));
            }
        }
    }
    errs
}

fn check_path(
    errs: &mut Vec<FieldError>,
    field: &str,
    value: Option<&str>,
    prefixes: &[&str],
    required: bool,
) {
    match value {
        None | Some("") if required => errs.push(FieldError::required(field, "")),
        None | Some("") => {}
        Some(p) => {
            let ok_prefix = prefixes.iter().any(|pre| p.starts_with(pre));
            match JsonPath::parse(p) {
                Ok(jp) if jp.is_simple() && ok_prefix => {}
                _ => {
                    let under = prefixes
                        .iter()
                        .map(|x| x.trim_end_matches('.'))
                        .collect::<Vec<_>>()
                        .join(" or ");
                    errs.push(FieldError::invalid(
                        field,
                        p,
                        format!("should be a json path under {under}"),
                    ));
                }
            }
        }
    }
}

/// Names another type in the same group already uses (kube: `NamesAccepted` false; here a
/// 422 at write, so a CRD is never accepted half-served).
pub fn collisions(crd: &Value, catalog: &Catalog) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let empty = json!({});
    let spec = crd.get("spec").unwrap_or(&empty);
    let group = s(spec, "group").unwrap_or("");
    let me = meta(crd).get("name").and_then(Value::as_str).unwrap_or("");
    let names = spec.get("names").unwrap_or(&empty);
    let mine = |key: &str| -> Vec<String> {
        match names.get(key) {
            Some(Value::String(x)) if !x.is_empty() => vec![x.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        }
    };
    for t in catalog.types().iter().filter(|t| t.group == group) {
        if t.custom().is_some_and(|c| c.crd_name == me) {
            continue;
        }
        let mut taken: Vec<&str> = vec![&t.resource, &t.singular];
        taken.extend(t.short_names.iter().map(String::as_str));
        for (key, field) in [
            ("plural", "spec.names.plural"),
            ("singular", "spec.names.singular"),
            ("shortNames", "spec.names.shortNames"),
        ] {
            for n in mine(key) {
                if taken.contains(&n.as_str()) {
                    errs.push(FieldError::invalid(
                        field,
                        n.as_str(),
                        format!("{n:?} is already in use"),
                    ));
                }
            }
        }
        for (key, field) in [
            ("kind", "spec.names.kind"),
            ("listKind", "spec.names.listKind"),
        ] {
            for n in mine(key) {
                if n == t.kind || n == t.list_kind {
                    errs.push(FieldError::invalid(
                        field,
                        n.as_str(),
                        format!("{n:?} is already in use"),
                    ));
                }
            }
        }
    }
    errs
}
