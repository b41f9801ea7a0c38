//! Helpers shared by the tests of the structural schema modules.

use serde_json::{Value, json};

use super::Schema;
use crate::validation::FieldError;

pub(super) const P: &str = "spec.versions[0].schema.openAPIV3Schema";

pub(super) fn msgs(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

pub(super) fn parse(v: Value) -> Schema {
    match Schema::parse(&v, P) {
        Ok(s) => s,
        Err(e) => panic!("unexpected errors:\n{}", msgs(&e).join("\n")),
    }
}

pub(super) fn parse_err(v: Value) -> Vec<String> {
    match Schema::parse(&v, P) {
        Ok(_) => panic!("expected errors for {v}"),
        Err(e) => msgs(&e),
    }
}

pub(super) fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// The CronTab schema of the seed's "Validation" section.
pub(super) fn crontab() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "cronSpec": {"type": "string", "pattern": r"^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$"},
                    "image": {"type": "string"},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10}
                }
            }
        }
    })
}

pub(super) fn crontab_object(spec: Value) -> Value {
    json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": "my-new-cron-object", "namespace": "default"},
        "spec": spec
    })
}
