//! The Wasmgate plugin tutorial: objects labelled `hello=forbidden` are denied, every other
//! object gets a `hello.wasmgate.dev/greeting` annotation.

use wasmgate_sdk::{Admission, Cause, Conversion, Printer, Request, Response, export_plugin, json};

pub struct Hello;

impl Admission for Hello {
    fn mutate(req: &Request) -> Response {
        let Some(mut obj) = req.object().cloned() else {
            return Response::allow();
        };
        obj["metadata"]["annotations"]["hello.wasmgate.dev/greeting"] = json!("hello from wasm");
        Response::patched(obj)
    }

    fn validate(req: &Request) -> Response {
        if req.label("hello") == Some("forbidden") {
            return Response::deny("objects labelled hello=forbidden are not allowed").with_cause(
                Cause::invalid("metadata.labels.hello", "must not be \"forbidden\""),
            );
        }
        Response::allow()
    }
}

impl Conversion for Hello {}
impl Printer for Hello {}

export_plugin!(Hello, name: "hello-admission", version: "0.1.0", hooks: [mutate, validate]);

#[cfg(test)]
mod tests {
    use super::*;
    use wasmgate_sdk::testing;

    fn cm(labels: wasmgate_sdk::Value) -> wasmgate_sdk::Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": labels}})
    }

    #[test]
    fn forbidden_objects_are_denied_with_the_label_as_cause() {
        let resp = Hello::validate(&testing::create(cm(json!({"hello": "forbidden"}))));
        assert!(!resp.allowed);
        let denial = resp.denial.as_ref().unwrap();
        assert_eq!((denial.code, denial.reason.as_str()), (403, "Forbidden"));
        assert_eq!(resp.causes()[0].field, "metadata.labels.hello");
        assert!(Hello::validate(&testing::create(cm(json!({"hello": "world"})))).allowed);
    }

    #[test]
    fn every_object_is_greeted() {
        let resp = Hello::mutate(&testing::create(cm(json!({}))));
        let patched = resp.patched.unwrap();
        assert_eq!(
            patched["metadata"]["annotations"]["hello.wasmgate.dev/greeting"],
            "hello from wasm"
        );
        assert!(
            Hello::mutate(&testing::delete(cm(json!({}))))
                .patched
                .is_none()
        );
    }
}
