//! What the runtime's benchmark and tests send: a widget create as the gateway sends it.

use serde_json::json;
use wasmgate_plugin_runtime::wit::{
    AdmissionRequest, GroupVersionKind, GroupVersionResource, Operation, UserInfo,
};

/// A ~1.7 KB Widget (1 KiB of notes, managed fields: what `wasmgate-bench --kind widget`
/// creates) that the widgets plugin allows.
pub fn widget() -> serde_json::Value {
    json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default", "uid": "6f1d1c55-3c1c-4d5e-9a55-1b2c3d4e5f60",
                     "labels": {"app": "demo", "tier": "web"}, "creationTimestamp": "2026-11-25T10:00:00Z",
                     "annotations": {"note": "a Widget as the gateway sends it on a create"},
                     "managedFields": [{"manager": "kubectl-create", "operation": "Update", "apiVersion": "example.com/v1",
                                        "time": "2026-11-25T10:00:00Z", "fieldsType": "FieldsV1",
                                        "fieldsV1": {"f:spec": {".": {}, "f:color": {}, "f:notes": {}, "f:replicas": {}}}}]},
        "spec": {"color": "blue", "replicas": 4, "maxReplicas": 10, "size": 9,
                 "notes": "x".repeat(1024)},
    })
}

/// The admission request of a create of [`widget`].
pub fn widget_request() -> AdmissionRequest {
    let object = widget();
    let gvk = GroupVersionKind {
        group: "example.com".into(),
        version: "v1".into(),
        kind: "Widget".into(),
    };
    let gvr = GroupVersionResource {
        group: "example.com".into(),
        version: "v1".into(),
        resource: "widgets".into(),
    };
    AdmissionRequest {
        uid: "1".into(),
        kind: gvk.clone(),
        resource: gvr.clone(),
        sub_resource: None,
        request_kind: Some(gvk),
        request_resource: Some(gvr),
        request_sub_resource: None,
        name: "w1".into(),
        namespace: Some("default".into()),
        operation: Operation::Create,
        user_info: UserInfo {
            username: "admin".into(),
            uid: String::new(),
            groups: vec!["system:masters".into()],
            extra: vec![],
        },
        object: Some(object.to_string()),
        old_object: None,
        dry_run: false,
        options: None,
    }
}
