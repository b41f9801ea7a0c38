//! A policy for the core group (bound by `examples/plugins/core-policy.yaml` to ConfigMaps
//! in namespaces labelled `policy=strict`): such ConfigMaps need an `owner` label.

use wasmgate_sdk::{
    Admission, Cause, Conversion, Operation, Printer, Request, Response, export_plugin,
};

pub struct CorePolicy;

impl Admission for CorePolicy {
    fn validate(req: &Request) -> Response {
        if req.operation == Operation::Delete {
            return Response::allow();
        }
        match req.label("owner") {
            Some(owner) if !owner.is_empty() => Response::allow(),
            _ => Response::deny(format!(
                "{} {:?} needs an owner label in this namespace",
                req.kind.kind, req.name
            ))
            .with_cause(Cause::required(
                "metadata.labels.owner",
                "required in namespaces labelled policy=strict",
            )),
        }
    }
}

impl Conversion for CorePolicy {}
impl Printer for CorePolicy {}

export_plugin!(CorePolicy, name: "core-policy", version: "0.1.0", hooks: [validate]);

#[cfg(test)]
mod tests {
    use super::*;
    use wasmgate_sdk::{json, testing};

    #[test]
    fn configmaps_without_owner_are_denied() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        let resp = CorePolicy::validate(&testing::create(cm));
        assert!(!resp.allowed);
        assert_eq!(resp.causes()[0].field, "metadata.labels.owner");
        let owned = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"owner": "me"}}});
        assert!(CorePolicy::validate(&testing::create(owned.clone())).allowed);
        assert!(CorePolicy::validate(&testing::delete(owned)).allowed);
    }
}
