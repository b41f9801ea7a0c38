//! Request files in, review JSON out: what `plugin run` and `plugin test` read and print.
//! Pure: no runtime, no I/O.
//!
//! A request file is YAML or JSON and holds one of:
//! * an `admission.k8s.io/v1` `AdmissionReview` (its `request`);
//! * an `apiextensions.k8s.io/v1` `ConversionReview` (its `request`);
//! * objects: a `List` (or any `*List` with `items`), a JSON array or several YAML
//!   documents (to print), or one object (a create of it, for the admission hooks).
//!
//! Answers are what a kube webhook answers: an `AdmissionReview` with `response.uid`,
//! `allowed`, `status`, `patch` (base64) and `patchType: JSONPatch`, `warnings`,
//! `auditAnnotations`; a `ConversionReview` with `response.convertedObjects` and
//! `result`; and, for printing, a `meta.k8s.io/v1` `Table`.

use base64::Engine as _;
use serde_json::{Map, Value, json};
use wasmgate_plugin_runtime::wit;

/// The uid of a request made up from a plain object.
pub(crate) const MADE_UP_UID: &str = "00000000-0000-0000-0000-000000000000";

/// A decoded request file.
#[derive(Debug)]
pub(crate) enum Request {
    /// For `mutate` and `validate`. `api_version` is the review's, answered in kind.
    Admission {
        api_version: String,
        request: Box<wit::AdmissionRequest>,
    },
    /// For `convert`.
    Conversion {
        api_version: String,
        request: wit::ConversionRequest,
    },
    /// Plain objects; `list` when the file held a list (even of one).
    Objects { items: Vec<Value>, list: bool },
}

/// Decodes a request file (YAML or JSON).
pub(crate) fn decode(text: &str) -> Result<Request, String> {
    let trimmed = text.trim_start();
    let mut docs: Vec<Value> = if trimmed.starts_with('{') || trimmed.starts_with('[') {
        vec![serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?]
    } else {
        serde_saphyr::from_multiple(text).map_err(|e| format!("not YAML: {e}"))?
    };
    docs.retain(|d| !d.is_null());
    let doc = match docs.len() {
        0 => return Err("it holds no object".into()),
        1 => docs.remove(0),
        _ => {
            return Ok(Request::Objects {
                items: docs,
                list: true,
            });
        }
    };
    let kind = doc["kind"].as_str().unwrap_or("");
    let api_version = doc["apiVersion"].as_str().unwrap_or("").to_owned();
    match (&doc, kind) {
        (Value::Array(items), _) => Ok(Request::Objects {
            items: items.clone(),
            list: true,
        }),
        (_, "AdmissionReview") => {
            let r = doc.get("request").filter(|r| r.is_object()).ok_or(
                "an AdmissionReview without a request (the file is to hold what the gateway \
                 sends, not what a plugin answers)",
            )?;
            Ok(Request::Admission {
                api_version: or(api_version, "admission.k8s.io/v1"),
                request: Box::new(admission_request(r)?),
            })
        }
        (_, "ConversionReview") => {
            let r = doc.get("request").filter(|r| r.is_object()).ok_or(
                "a ConversionReview without a request (the file is to hold what the gateway \
                 sends, not what a plugin answers)",
            )?;
            Ok(Request::Conversion {
                api_version: or(api_version, "apiextensions.k8s.io/v1"),
                request: conversion_request(r)?,
            })
        }
        (_, k) if k.ends_with("List") && doc["items"].is_array() => Ok(Request::Objects {
            items: doc["items"].as_array().cloned().unwrap_or_default(),
            list: true,
        }),
        (Value::Object(_), _) => Ok(Request::Objects {
            items: vec![doc],
            list: false,
        }),
        _ => Err("it holds neither a review nor objects".into()),
    }
}

fn or(s: String, default: &str) -> String {
    if s.is_empty() { default.to_owned() } else { s }
}

fn string(v: &Value) -> String {
    v.as_str().unwrap_or("").to_owned()
}

fn opt_string(v: &Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

/// `{"group", "version", "kind"}`.
fn gvk(v: &Value) -> Option<wit::GroupVersionKind> {
    v.is_object().then(|| wit::GroupVersionKind {
        group: string(&v["group"]),
        version: string(&v["version"]),
        kind: string(&v["kind"]),
    })
}

/// `{"group", "version", "resource"}`.
fn gvr(v: &Value) -> Option<wit::GroupVersionResource> {
    v.is_object().then(|| wit::GroupVersionResource {
        group: string(&v["group"]),
        version: string(&v["version"]),
        resource: string(&v["resource"]),
    })
}

/// `AdmissionReview.request` as the WIT record. Fields the file leaves out are made up
/// from the object: its kind, a resource named as its kind in lower case plus `s`, its
/// name and namespace, and the operation (CREATE with only an object, DELETE with only an
/// old object, UPDATE with both).
pub(crate) fn admission_request(r: &Value) -> Result<wit::AdmissionRequest, String> {
    let object = r.get("object").filter(|o| !o.is_null());
    let old = r.get("oldObject").filter(|o| !o.is_null());
    if let Some(o) = object.or(old)
        && !o.is_object()
    {
        return Err("request.object is not an object".into());
    }
    let any = object.or(old).cloned().unwrap_or(Value::Null);
    let (group, version) = match any["apiVersion"].as_str().unwrap_or("").split_once('/') {
        Some((g, v)) => (g.to_owned(), v.to_owned()),
        None => (String::new(), string(&any["apiVersion"])),
    };
    let kind = gvk(&r["kind"]).unwrap_or_else(|| wit::GroupVersionKind {
        group: group.clone(),
        version: version.clone(),
        kind: string(&any["kind"]),
    });
    let resource = gvr(&r["resource"]).unwrap_or_else(|| wit::GroupVersionResource {
        group: kind.group.clone(),
        version: kind.version.clone(),
        resource: format!("{}s", kind.kind.to_lowercase()),
    });
    let operation = match r["operation"].as_str() {
        Some("CREATE") => wit::Operation::Create,
        Some("UPDATE") => wit::Operation::Update,
        Some("DELETE") => wit::Operation::Delete,
        Some("CONNECT") => wit::Operation::Connect,
        Some(other) => {
            return Err(format!(
                "request.operation {other:?} is not CREATE, UPDATE, DELETE or CONNECT"
            ));
        }
        None => match (object, old) {
            (Some(_), Some(_)) => wit::Operation::Update,
            (None, Some(_)) => wit::Operation::Delete,
            _ => wit::Operation::Create,
        },
    };
    let u = &r["userInfo"];
    let user_info = wit::UserInfo {
        username: string(&u["username"]),
        uid: string(&u["uid"]),
        groups: strings(&u["groups"]),
        extra: u["extra"]
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
            .unwrap_or_default(),
    };
    Ok(wit::AdmissionRequest {
        uid: opt_string(&r["uid"]).unwrap_or_else(|| MADE_UP_UID.into()),
        kind,
        resource,
        sub_resource: opt_string(&r["subResource"]),
        request_kind: gvk(&r["requestKind"]),
        request_resource: gvr(&r["requestResource"]),
        request_sub_resource: opt_string(&r["requestSubResource"]),
        name: opt_string(&r["name"]).unwrap_or_else(|| string(&any["metadata"]["name"])),
        namespace: opt_string(&r["namespace"])
            .or_else(|| opt_string(&any["metadata"]["namespace"])),
        operation,
        user_info,
        object: object.map(Value::to_string),
        old_object: old.map(Value::to_string),
        dry_run: r["dryRun"].as_bool().unwrap_or(false),
        options: r
            .get("options")
            .filter(|o| !o.is_null())
            .map(Value::to_string),
    })
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().filter_map(opt_string).collect())
        .unwrap_or_default()
}

/// A create of `object`, as the gateway would send it.
pub(crate) fn create_request(object: Value) -> Result<wit::AdmissionRequest, String> {
    admission_request(&json!({"operation": "CREATE", "object": object}))
}

/// `ConversionReview.request` as the WIT record.
pub(crate) fn conversion_request(r: &Value) -> Result<wit::ConversionRequest, String> {
    let desired = r["desiredAPIVersion"]
        .as_str()
        .ok_or("request.desiredAPIVersion is missing")?;
    let objects = r["objects"]
        .as_array()
        .ok_or("request.objects is not a list")?;
    Ok(wit::ConversionRequest {
        uid: opt_string(&r["uid"]).unwrap_or_else(|| MADE_UP_UID.into()),
        desired_api_version: desired.to_owned(),
        objects: objects.iter().map(Value::to_string).collect(),
    })
}

/// A `metav1.Status` of a failure (a denial answers 403 unless it says otherwise).
pub(crate) fn status(s: &wit::Status) -> Value {
    let mut out = json!({
        "metadata": {},
        "status": "Failure",
        "message": s.message,
        "reason": s.reason,
        "code": if s.code == 0 { 403 } else { s.code },
    });
    if !s.causes.is_empty() {
        let causes: Vec<Value> = s
            .causes
            .iter()
            .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
            .collect();
        out["details"] = json!({ "causes": causes });
    }
    out
}

/// What the admission hooks answered, together.
#[derive(Debug, Default)]
pub(crate) struct Admitted {
    pub allowed: bool,
    pub status: Option<wit::Status>,
    /// The JSON patch (an array of operations) from the request's object to the mutated
    /// one, when a hook changed it.
    pub patch: Option<Value>,
    pub warnings: Vec<String>,
    pub audit_annotations: Vec<(String, String)>,
}

/// The `AdmissionReview` answering request `uid`.
pub(crate) fn admission_review(api_version: &str, uid: &str, a: &Admitted) -> Value {
    let mut resp = json!({"uid": uid, "allowed": a.allowed});
    if !a.allowed {
        resp["status"] = status(a.status.as_ref().unwrap_or(&wit::Status {
            code: 403,
            reason: "Forbidden".into(),
            message: String::new(),
            causes: Vec::new(),
        }));
    }
    if let Some(p) = &a.patch {
        let b64 = base64::engine::general_purpose::STANDARD.encode(p.to_string());
        resp["patch"] = json!(b64);
        resp["patchType"] = json!("JSONPatch");
    }
    if !a.warnings.is_empty() {
        resp["warnings"] = json!(a.warnings);
    }
    if !a.audit_annotations.is_empty() {
        let m: Map<String, Value> = a
            .audit_annotations
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        resp["auditAnnotations"] = Value::Object(m);
    }
    json!({"apiVersion": api_version, "kind": "AdmissionReview", "response": resp})
}

/// Applies a mutation to `obj` (the request's object): the new object and the JSON patch
/// from the old one to it (the plugin's own patch, or the difference when it returned
/// the whole object).
pub(crate) fn apply_mutation(obj: &Value, m: &wit::Mutation) -> Result<(Value, Value), String> {
    match m {
        wit::Mutation::Object(s) => {
            let out: Value = serde_json::from_str(s)
                .map_err(|e| format!("the mutated object is not JSON: {e}"))?;
            if !out.is_object() {
                return Err("the mutated object is not an object".into());
            }
            let patch = json_patch::diff(obj, &out);
            let patch = serde_json::to_value(patch).map_err(|e| e.to_string())?;
            Ok((out, patch))
        }
        wit::Mutation::JsonPatch(p) => {
            let patch: json_patch::Patch =
                serde_json::from_str(p).map_err(|e| format!("the JSON patch is invalid: {e}"))?;
            let mut out = obj.clone();
            json_patch::patch(&mut out, &patch)
                .map_err(|e| format!("the JSON patch does not apply: {e}"))?;
            if !out.is_object() {
                return Err("the patched object is not an object".into());
            }
            let patch = serde_json::to_value(patch).map_err(|e| e.to_string())?;
            Ok((out, patch))
        }
    }
}

/// The `ConversionReview` answering request `uid`: the objects, or the plugin's refusal.
pub(crate) fn conversion_review(
    api_version: &str,
    uid: &str,
    result: &Result<Vec<Value>, wit::Status>,
) -> Value {
    let resp = match result {
        Ok(objects) => json!({
            "uid": uid,
            "convertedObjects": objects,
            "result": {"metadata": {}, "status": "Success"},
        }),
        Err(s) => json!({"uid": uid, "result": status(s)}),
    };
    json!({"apiVersion": api_version, "kind": "ConversionReview", "response": resp})
}

/// The `Table` of `objects` with the plugin's columns and rows (cells as it returned
/// them: a `date` is the plugin's string, where the gateway shows an age), or the
/// `Status` of its refusal.
pub(crate) fn table(
    columns: &[wit::ColumnDefinition],
    rows: Result<Vec<Vec<Value>>, &wit::Status>,
    objects: &[Value],
) -> Value {
    let rows = match rows {
        Ok(r) => r,
        Err(s) => {
            let mut st = status(s);
            st["kind"] = json!("Status");
            st["apiVersion"] = json!("v1");
            return st;
        }
    };
    let column_definitions: Vec<Value> = columns
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "type": c.type_,
                "format": c.format,
                "description": c.description,
                "priority": c.priority,
            })
        })
        .collect();
    let rows: Vec<Value> = rows
        .into_iter()
        .zip(objects)
        .map(|(cells, o)| {
            json!({
                "cells": cells,
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": o["metadata"],
                },
            })
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": column_definitions,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_admission_review_keeps_every_field_it_names() {
        let r = decode(
            "apiVersion: admission.k8s.io/v1\nkind: AdmissionReview\nrequest:\n  uid: u1\n  \
             kind: {group: apps, version: v1, kind: Deployment}\n  resource: {group: apps, \
             version: v1, resource: deployments}\n  subResource: scale\n  name: d\n  \
             namespace: ns\n  operation: UPDATE\n  userInfo: {username: alice, groups: [a], \
             extra: {k: [v]}}\n  object: {apiVersion: apps/v1, kind: Deployment}\n  \
             oldObject: {apiVersion: apps/v1, kind: Deployment}\n  dryRun: true\n",
        )
        .unwrap();
        let Request::Admission {
            api_version,
            request,
        } = r
        else {
            panic!("not an admission request: {r:?}")
        };
        assert_eq!(api_version, "admission.k8s.io/v1");
        assert_eq!(request.uid, "u1");
        assert_eq!(request.resource.resource, "deployments");
        assert_eq!(request.sub_resource.as_deref(), Some("scale"));
        assert_eq!(request.operation, wit::Operation::Update);
        assert_eq!(request.user_info.extra, [("k".into(), vec!["v".into()])]);
        assert!(request.object.is_some() && request.old_object.is_some() && request.dry_run);
    }

    #[test]
    fn a_plain_object_is_a_create_and_a_list_is_objects() {
        let Request::Objects { items, list } =
            decode(r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}"#).unwrap()
        else {
            panic!()
        };
        assert!(!list);
        let r = create_request(items[0].clone()).unwrap();
        assert_eq!(r.operation, wit::Operation::Create);
        assert_eq!((r.name.as_str(), r.namespace.as_deref()), ("a", Some("n")));
        assert_eq!(r.kind.kind, "ConfigMap");
        assert_eq!(r.resource.resource, "configmaps");
        assert_eq!(r.uid, MADE_UP_UID);

        for text in [
            "kind: List\napiVersion: v1\nitems: [{kind: A}, {kind: B}]\n",
            "kind: A\n---\nkind: B\n---\n",
            "[{\"kind\": \"A\"}, {\"kind\": \"B\"}]",
        ] {
            let Request::Objects { items, list } = decode(text).unwrap() else {
                panic!("{text}")
            };
            assert!(list, "{text}");
            assert_eq!(items.len(), 2, "{text}");
        }
        assert!(decode("").is_err());
        assert!(decode("kind: AdmissionReview\nresponse: {}\n").is_err());
    }

    #[test]
    fn a_conversion_review_needs_the_desired_version() {
        let r = decode(
            "kind: ConversionReview\napiVersion: apiextensions.k8s.io/v1\nrequest:\n  uid: c\n  \
             desiredAPIVersion: example.com/v1\n  objects: [{a: 1}]\n",
        )
        .unwrap();
        let Request::Conversion { request, .. } = r else {
            panic!()
        };
        assert_eq!(request.desired_api_version, "example.com/v1");
        assert_eq!(request.objects, [r#"{"a":1}"#]);
        assert!(decode("kind: ConversionReview\nrequest: {objects: []}\n").is_err());
    }

    #[test]
    fn a_whole_object_becomes_a_patch_and_a_patch_applies() {
        let obj = json!({"metadata": {"name": "a"}});
        let m =
            wit::Mutation::Object(r#"{"metadata": {"name": "a", "labels": {"x": "y"}}}"#.into());
        let (out, patch) = apply_mutation(&obj, &m).unwrap();
        assert_eq!(out["metadata"]["labels"]["x"], "y");
        assert_eq!(
            patch,
            json!([{"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}])
        );
        let m = wit::Mutation::JsonPatch(r#"[{"op": "remove", "path": "/metadata/name"}]"#.into());
        let (out, _) = apply_mutation(&obj, &m).unwrap();
        assert_eq!(out, json!({"metadata": {}}));
        let bad = wit::Mutation::JsonPatch(r#"[{"op": "remove", "path": "/nope"}]"#.into());
        assert!(apply_mutation(&obj, &bad).is_err());
        assert!(apply_mutation(&obj, &wit::Mutation::Object("[]".into())).is_err());
    }

    #[test]
    fn a_denial_is_a_review_with_a_status_and_a_patch_is_base64() {
        let a = Admitted {
            allowed: false,
            status: Some(wit::Status {
                code: 0,
                reason: "Forbidden".into(),
                message: "no".into(),
                causes: vec![wit::StatusCause {
                    reason: "FieldValueInvalid".into(),
                    message: "bad".into(),
                    field: "spec.x".into(),
                }],
            }),
            warnings: vec!["careful".into()],
            audit_annotations: vec![("k".into(), "v".into())],
            ..Admitted::default()
        };
        let r = admission_review("admission.k8s.io/v1", "u", &a);
        assert_eq!(r["response"]["uid"], "u");
        assert_eq!(r["response"]["status"]["code"], 403);
        assert_eq!(
            r["response"]["status"]["details"]["causes"][0]["field"],
            "spec.x"
        );
        assert_eq!(r["response"]["warnings"], json!(["careful"]));
        assert_eq!(r["response"]["auditAnnotations"], json!({"k": "v"}));
        assert!(r["response"].get("patch").is_none());

        let a = Admitted {
            allowed: true,
            patch: Some(json!([{"op": "add", "path": "/a", "value": 1}])),
            ..Admitted::default()
        };
        let r = admission_review("admission.k8s.io/v1", "u", &a);
        assert_eq!(r["response"]["patchType"], "JSONPatch");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(r["response"]["patch"].as_str().unwrap())
            .unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&bytes).unwrap(),
            a.patch.unwrap()
        );
        assert!(r["response"].get("status").is_none());
    }
}
