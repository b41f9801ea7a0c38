//! The `example.com` Widgets plugin (bound to the group by `examples/plugins/widgets.yaml`).
//!
//! - **convert**: `v1alpha1` spells the colour `spec.colour` and nests the size under
//!   `spec.dimensions.size`; `v1` has `spec.color` and `spec.size`. Every other field is
//!   carried over untouched, so a round trip is lossless.
//! - **mutate**: a widget gets the label `example.com/color` with its colour, so that
//!   `kubectl get widgets -l example.com/color=red` works. Admission hooks see widgets at
//!   the storage version (`v1`) whatever version the client wrote: the gateway converts
//!   them with `convert` first, so these hooks read `v1`'s fields only.
//! - **validate**: a widget of size 8 or more runs at most 5 replicas (a rule across two
//!   fields).
//! - **print**: `kubectl get widgets` shows the colour, replicas, size and the computed
//!   capacity (replicas x size).

use serde::Deserialize;
use wasmgate_sdk::{
    Admission, Cause, Column, Conversion, Denial, Operation, Printer, Request, Response, Value,
    export_plugin, json, pointer_token,
};

pub struct Widgets;

/// The label the mutating hook sets.
pub const COLOR_LABEL: &str = "example.com/color";

/// What the admission hooks read of a widget (at v1, the storage version). Read with
/// [`Request::object_as`]: the rest of the object is skipped while parsing, never built
/// (building it was most of what the hooks' own code cost). The leaves are `Value`s so that
/// a field of the wrong type reads as absent, as the schema validation after mutation will
/// reject it anyway.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Fields {
    metadata: MetaFields,
    spec: SpecFields,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct MetaFields {
    labels: Value,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SpecFields {
    color: Value,
    size: Value,
    replicas: Value,
}

impl Admission for Widgets {
    fn mutate(req: &Request) -> Response {
        if req.operation == Operation::Delete {
            return Response::allow();
        }
        // No object, or not one a widget could be: nothing to default.
        let Ok(Some(w)) = req.object_as::<Option<Fields>>() else {
            return Response::allow();
        };
        // At the storage version, v1, whatever version the client wrote.
        let Some(color) = w.spec.color.as_str() else {
            return Response::allow();
        };
        let labels = &w.metadata.labels;
        if labels[COLOR_LABEL].as_str() == Some(color) {
            return Response::allow();
        }
        // A JSON patch: only the change crosses back to the gateway.
        let label_path = format!("/metadata/labels/{}", pointer_token(COLOR_LABEL));
        Response::json_patch(if labels.is_object() {
            json!([{"op": "add", "path": label_path, "value": color}])
        } else {
            json!([{"op": "add", "path": "/metadata/labels", "value": {COLOR_LABEL: color}}])
        })
    }

    fn validate(req: &Request) -> Response {
        let Ok(Some(w)) = req.object_as::<Option<Fields>>() else {
            return Response::allow();
        };
        let size = w.spec.size.as_i64().unwrap_or(0);
        let replicas = w.spec.replicas.as_i64().unwrap_or(0);
        if size >= 8 && replicas > 5 {
            return Response::deny(format!(
                "a widget of size {size} runs at most 5 replicas, not {replicas}"
            ))
            .with_cause(Cause::invalid(
                "spec.replicas",
                "must be at most 5 when spec.size is 8 or more",
            ));
        }
        Response::allow()
    }
}

/// `spec.color` (v1) or `spec.colour` (v1alpha1): the printer shows either version.
fn color(spec: &Value) -> Option<&Value> {
    spec.get("color").or_else(|| spec.get("colour"))
}

/// `spec.size` (v1) or `spec.dimensions.size` (v1alpha1); 0 when unset.
fn size(spec: &Value) -> i64 {
    spec.get("size")
        .or_else(|| spec.pointer("/dimensions/size"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

impl Conversion for Widgets {
    fn convert(desired: &str, objects: Vec<Value>) -> Result<Vec<Value>, Denial> {
        objects
            .into_iter()
            .map(|o| convert_one(desired, o))
            .collect()
    }
}

fn convert_one(desired: &str, mut obj: Value) -> Result<Value, Denial> {
    let from = obj["apiVersion"].as_str().unwrap_or("").to_owned();
    if from == desired {
        return Ok(obj);
    }
    let spec = obj
        .get_mut("spec")
        .and_then(Value::as_object_mut)
        .map(std::mem::take);
    let spec = match (from.as_str(), desired, spec) {
        (_, _, None) => None,
        ("example.com/v1alpha1", "example.com/v1", Some(mut s)) => {
            if let Some(c) = s.remove("colour") {
                s.insert("color".into(), c);
            }
            if let Some(Value::Object(mut d)) = s.remove("dimensions") {
                if let Some(size) = d.remove("size") {
                    s.insert("size".into(), size);
                }
                if !d.is_empty() {
                    // Anything else in `dimensions` is kept where it was.
                    s.insert("dimensions".into(), Value::Object(d));
                }
            }
            Some(s)
        }
        ("example.com/v1", "example.com/v1alpha1", Some(mut s)) => {
            if let Some(c) = s.remove("color") {
                s.insert("colour".into(), c);
            }
            if let Some(size) = s.remove("size") {
                let mut d = match s.remove("dimensions") {
                    Some(Value::Object(d)) => d,
                    _ => Default::default(),
                };
                d.insert("size".into(), size);
                s.insert("dimensions".into(), Value::Object(d));
            }
            Some(s)
        }
        _ => {
            return Err(Denial::new(
                400,
                "BadRequest",
                format!("cannot convert a Widget from {from} to {desired}"),
            ));
        }
    };
    if let Some(s) = spec {
        obj["spec"] = Value::Object(s);
    }
    obj["apiVersion"] = json!(desired);
    Ok(obj)
}

impl Printer for Widgets {
    fn columns(_api_version: &str, _kind: &str) -> Vec<Column> {
        let mut name = Column::new("Name", "string", "The widget's name.");
        name.format = "name".into();
        let mut age = Column::new("Age", "date", "Time since the widget was created.");
        age.format = String::new();
        vec![
            name,
            Column::new("Color", "string", "The widget's colour."),
            Column::new("Replicas", "integer", "Copies of the widget."),
            Column::new("Size", "integer", "The size of one copy."),
            Column::new("Capacity", "integer", "Replicas times size."),
            age,
        ]
    }

    fn rows(_api_version: &str, _kind: &str, objects: &[Value]) -> Result<Vec<Vec<Value>>, Denial> {
        Ok(objects
            .iter()
            .map(|o| {
                let spec = &o["spec"];
                let color = color(spec).cloned().unwrap_or(json!("<none>"));
                let size = size(spec);
                let replicas = spec["replicas"].as_i64().unwrap_or(0);
                vec![
                    o["metadata"]["name"].clone(),
                    color,
                    json!(replicas),
                    json!(size),
                    json!(replicas * size),
                    o["metadata"]["creationTimestamp"].clone(),
                ]
            })
            .collect())
    }
}

export_plugin!(Widgets, name: "widgets", version: "0.1.0", hooks: [mutate, validate, convert, print]);

#[cfg(test)]
mod tests {
    use super::*;
    use wasmgate_sdk::testing;

    fn widget(spec: Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
    }

    #[test]
    fn conversion_round_trips_without_loss() {
        let v1 = widget(json!({"color": "red", "size": 4, "replicas": 2, "notes": "n"}));
        let alpha = Widgets::convert("example.com/v1alpha1", vec![v1.clone()]).unwrap();
        assert_eq!(alpha[0]["apiVersion"], "example.com/v1alpha1");
        assert_eq!(alpha[0]["spec"]["colour"], "red");
        assert_eq!(alpha[0]["spec"]["dimensions"]["size"], 4);
        assert!(alpha[0]["spec"].get("color").is_none());
        let back = Widgets::convert("example.com/v1", alpha).unwrap();
        assert_eq!(back[0], v1);
    }

    #[test]
    fn conversion_keeps_order_and_refuses_unknown_versions() {
        let a = widget(json!({"color": "red"}));
        let b = widget(json!({"color": "blue"}));
        let out = Widgets::convert("example.com/v1alpha1", vec![a, b]).unwrap();
        assert_eq!(out[1]["spec"]["colour"], "blue");
        let err = Widgets::convert("example.com/v2", vec![widget(json!({}))]).unwrap_err();
        assert_eq!(err.code, 400);
    }

    #[test]
    fn mutate_labels_the_colour() {
        let resp = Widgets::mutate(&testing::create(widget(json!({"color": "green"}))));
        assert_eq!(
            resp.json_patch.unwrap(),
            json!([{"op": "add", "path": "/metadata/labels", "value": {COLOR_LABEL: "green"}}])
        );
        let mut labelled = widget(json!({"color": "red"}));
        labelled["metadata"]["labels"] = json!({"app": "x"});
        let resp = Widgets::mutate(&testing::create(labelled.clone()));
        assert_eq!(
            resp.json_patch.unwrap(),
            json!([{"op": "add", "path": "/metadata/labels/example.com~1color", "value": "red"}])
        );
        labelled["metadata"]["labels"][COLOR_LABEL] = json!("red");
        assert!(
            Widgets::mutate(&testing::create(labelled))
                .json_patch
                .is_none()
        );
    }

    #[test]
    fn large_widgets_run_at_most_five_replicas() {
        let resp = Widgets::validate(&testing::create(widget(json!({"size": 9, "replicas": 6}))));
        assert!(!resp.allowed);
        assert_eq!(resp.causes()[0].field, "spec.replicas");
        assert!(
            Widgets::validate(&testing::create(widget(json!({"size": 9, "replicas": 5})))).allowed
        );
    }

    #[test]
    fn rows_compute_the_capacity() {
        let rows = Widgets::rows(
            "example.com/v1",
            "Widget",
            &[widget(json!({"color": "red", "size": 3, "replicas": 4}))],
        )
        .unwrap();
        assert_eq!(rows[0][4], 12);
        assert_eq!(
            Widgets::columns("example.com/v1", "Widget").len(),
            rows[0].len()
        );
    }
}
