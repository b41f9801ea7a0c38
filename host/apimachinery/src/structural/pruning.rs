//! Pruning unknown fields (CRD-05, CRD-06, CRD-08): `pkg/apiserver/schema/pruning`.

use std::fmt::Write as _;

use serde_json::Value;

use super::model::{NodeData, schema_of};

fn is_meta_field(k: &str) -> bool {
    matches!(k, "apiVersion" | "kind" | "metadata")
}

/// `pruning.PruneWithOptions` with unknown-field tracking.
pub(super) struct Pruner<'a> {
    nodes: &'a [NodeData],
    path: String,
    /// The paths of the pruned fields, in the order they were found.
    pub(super) out: Vec<String>,
}

impl<'a> Pruner<'a> {
    pub(super) fn new(nodes: &'a [NodeData]) -> Self {
        Pruner {
            nodes,
            path: String::new(),
            out: Vec::new(),
        }
    }

    fn append_key(&mut self, k: &str) {
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(k);
    }

    fn record(&mut self, k: &str) {
        let len = self.path.len();
        self.append_key(k);
        self.out.push(self.path.clone());
        self.path.truncate(len);
    }

    /// `force_embedded` treats `s` as an embedded resource (the resource root).
    pub(super) fn prune(&mut self, x: &mut Value, s: Option<usize>, force_embedded: bool) {
        let nodes = self.nodes;
        if let Some(id) = s
            && nodes[id].preserves()
        {
            self.skip_prune(x, id, force_embedded);
            return;
        }
        let len = self.path.len();
        match x {
            Value::Object(map) => {
                let Some(id) = s else {
                    let keys: Vec<String> = map.keys().cloned().collect();
                    for k in keys {
                        self.record(&k);
                    }
                    map.clear();
                    return;
                };
                let n = &nodes[id];
                let embedded = n.x_embedded_resource || force_embedded;
                map.retain(|k, v| {
                    if embedded && is_meta_field(k) {
                        return true;
                    }
                    if let Some(p) = n.property(k) {
                        self.append_key(k);
                        self.prune(v, Some(p), false);
                        self.path.truncate(len);
                        true
                    } else if let Some(ap) = n.additional_properties {
                        self.append_key(k);
                        self.prune(v, schema_of(ap), false);
                        self.path.truncate(len);
                        true
                    } else {
                        if !is_meta_field(k) || !self.path.is_empty() {
                            self.record(k);
                        }
                        false
                    }
                });
            }
            Value::Array(items) => {
                let item_schema = s.and_then(|id| nodes[id].items_schema());
                for (i, v) in items.iter_mut().enumerate() {
                    let _ = write!(self.path, "[{i}]");
                    self.prune(v, item_schema, false);
                    self.path.truncate(len);
                }
            }
            _ => {}
        }
    }

    /// Under `x-kubernetes-preserve-unknown-fields`: keep unknown fields, but prune below
    /// specified properties.
    fn skip_prune(&mut self, x: &mut Value, id: usize, force_embedded: bool) {
        let nodes = self.nodes;
        let n = &nodes[id];
        let len = self.path.len();
        match x {
            Value::Object(map) => {
                let embedded = n.x_embedded_resource || force_embedded;
                for (k, v) in map.iter_mut() {
                    if embedded && is_meta_field(k) {
                        continue;
                    }
                    if let Some(p) = n.property(k) {
                        self.append_key(k);
                        self.prune(v, Some(p), false);
                        self.path.truncate(len);
                    } else if let Some(ap) = n.additional_properties {
                        self.append_key(k);
                        self.prune(v, schema_of(ap), false);
                        self.path.truncate(len);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = n.items_schema() {
                    for (i, v) in items.iter_mut().enumerate() {
                        let _ = write!(self.path, "[{i}]");
                        self.skip_prune(v, item_schema, false);
                        self.path.truncate(len);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::structural::test_util::*;
    use serde_json::json;

    #[test]
    fn crd05_prunes_some_random_field() {
        let s = parse(crontab());
        let mut obj = crontab_object(json!({
            "cronSpec": "* * * * */5", "image": "my-awesome-cron-image", "someRandomField": 42
        }));
        obj["status"] = json!({"x": 1});
        assert_eq!(s.prune(&mut obj), vec!["spec.someRandomField", "status"]);
        assert_eq!(
            obj,
            crontab_object(json!({"cronSpec": "* * * * */5", "image": "my-awesome-cron-image"}))
        );
    }

    #[test]
    fn crd06_preserve_unknown_fields_and_pruning_resumes() {
        let s = parse(json!({"type": "object", "properties": {"json": {
            "x-kubernetes-preserve-unknown-fields": true,
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "foo": {"type": "string"}, "bar": {"type": "string"}
            }}}
        }}}));
        let mut obj = json!({"json": {
            "spec": {"foo": "abc", "bar": "def", "something": "x"},
            "status": {"something": "x"}
        }});
        assert_eq!(s.prune(&mut obj), vec!["json.spec.something"]);
        assert_eq!(
            obj,
            json!({"json": {"spec": {"foo": "abc", "bar": "def"}, "status": {"something": "x"}}})
        );
        // Only objects are allowed with `type: object`.
        assert_eq!(
            msgs(&s.validate(&json!({"json": 1}))),
            vec![
                r#"json: Invalid value: "integer": json in body must be of type object: "integer""#
            ]
        );
        // Without a type, anything goes.
        let any = parse(json!({"type": "object", "properties": {
            "json": {"x-kubernetes-preserve-unknown-fields": true}
        }}));
        let mut v = json!({"json": [1, {"a": [true]}], "extra": 1});
        assert_eq!(any.prune(&mut v), vec!["extra"]);
        assert!(any.validate(&v).is_empty());
    }
}
