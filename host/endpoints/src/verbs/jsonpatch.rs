//! JSON patches (`application/json-patch+json`, `PATCH-02`) as kube-apiserver applies them
//! (`gopkg.in/evanphx/json-patch.v4`), bounded as it bounds them.
//!
//! Every operation but `test` is RFC 6902's, applied by the `json-patch` crate. `test`
//! follows evanphx v4, which clients rely on and which differs from the RFC: a `value` of
//! `null` (or none) matches a member that is missing as well as one that is `null`, so
//! `[{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add",…}]` — what
//! kube-runtime's `finalizer()` sends for an object without finalizers — succeeds. A test
//! whose parent does not exist fails ("is missing path"), as does an index past the end
//! of an array. Values compare as JSON values.

use serde::Deserialize as _;
use serde_json::Value;
use wasmgate_apimachinery::status::Status;

use crate::error::{ApiError, ApiResult};

/// Most operations in one JSON patch (kube-apiserver's limit).
const MAX_OPERATIONS: usize = 10_000;

/// A decoded JSON patch.
#[derive(Debug)]
pub(crate) struct JsonPatch(Vec<Op>);

#[derive(Debug)]
enum Op {
    /// evanphx v4's `test`: the pointer and the value (`None`: none, or `null`).
    Test {
        path: String,
        value: Option<Value>,
    },
    Other(json_patch::PatchOperation),
}

impl JsonPatch {
    /// Decodes a patch document (already parsed as JSON); the error is the message of a
    /// `400`.
    pub(crate) fn decode(patch: &Value) -> Result<JsonPatch, String> {
        let Value::Array(ops) = patch else {
            return Err(
                "error decoding patch: json: cannot unmarshal object into Go value of type jsonpatch.Patch"
                    .to_owned(),
            );
        };
        ops.iter()
            .map(|op| match op.get("op").and_then(Value::as_str) {
                Some("test") => {
                    let path = op
                        .get("path")
                        .and_then(Value::as_str)
                        .ok_or("error decoding patch: test operation has no path")?;
                    Ok(Op::Test {
                        path: path.to_owned(),
                        value: op.get("value").filter(|v| !v.is_null()).cloned(),
                    })
                }
                _ => json_patch::PatchOperation::deserialize(op)
                    .map(Op::Other)
                    .map_err(|e| format!("error decoding patch: {e}")),
            })
            .collect::<Result<_, _>>()
            .map(JsonPatch)
    }

    /// Applies the patch to `doc`: at most 10,000 operations, and `copy` operations may
    /// copy at most `max_copy_bytes` in total (otherwise a small patch could double the
    /// object again and again; both `413`). A failed `test` or a bad path is `422`; `doc`
    /// is then partly patched (callers patch a copy).
    pub(crate) fn apply(&self, doc: &mut Value, max_copy_bytes: usize) -> ApiResult<()> {
        if self.0.len() > MAX_OPERATIONS {
            return Err(Status::failure(
                413,
                "RequestEntityTooLarge",
                format!(
                    "The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {}",
                    self.0.len()
                ),
            )
            .into());
        }
        let mut copied = 0usize;
        for op in &self.0 {
            let result = match op {
                Op::Test { path, value } => test(doc, path, value.as_ref()),
                Op::Other(op) => {
                    if let json_patch::PatchOperation::Copy(c) = op {
                        let size = doc
                            .pointer(c.from.as_str())
                            .map_or(0, |v| serde_json::to_vec(v).map_or(0, |b| b.len()));
                        copied = copied.saturating_add(size);
                        if copied > max_copy_bytes {
                            return Err(Status::failure(
                                413,
                                "RequestEntityTooLarge",
                                format!("The allowed accumulated copy size of {max_copy_bytes} bytes is exceeded by this JSON patch"),
                            )
                            .into());
                        }
                    }
                    json_patch::patch(doc, std::slice::from_ref(op)).map_err(|e| e.to_string())
                }
            };
            result.map_err(|e| {
                ApiError::from(Status::failure(
                    422,
                    "Invalid",
                    format!("the server rejected our request due to an error in our request: {e}"),
                ))
            })?;
        }
        Ok(())
    }
}

/// evanphx v4's `test`, with its messages.
fn test(doc: &Value, path: &str, value: Option<&Value>) -> Result<(), String> {
    let failed = || format!("testing value {path} failed");
    if path.is_empty() {
        return (value == Some(doc)).then_some(()).ok_or_else(failed);
    }
    let Some(tokens) = path.strip_prefix('/') else {
        return Err(format!(
            "test operation does not apply: is missing path: {path}"
        ));
    };
    let tokens: Vec<String> = tokens
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect();
    let Some((last, parents)) = tokens.split_last() else {
        return Err(failed());
    };
    let missing = || format!("test operation does not apply: is missing path: {path}");
    let mut container = doc;
    for t in parents {
        container = match container {
            Value::Object(m) => m.get(t.as_str()).filter(|v| !v.is_null()),
            Value::Array(a) => t.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        }
        .ok_or_else(missing)?;
    }
    let found = match container {
        Value::Object(m) => m.get(last.as_str()),
        Value::Array(a) => {
            let i = last
                .parse::<i64>()
                .map_err(|_| format!("error in test for path: '{path}': invalid index {last:?}"))?;
            let at = usize::try_from(i).ok().and_then(|i| a.get(i));
            Some(at.ok_or_else(|| {
                format!("error in test for path: '{path}': Unable to access invalid index: {i}")
            })?)
        }
        _ => return Err(missing()),
    }
    .filter(|v| !v.is_null());
    match (found, value) {
        (None, None) => Ok(()),
        (Some(f), Some(v)) if f == v => Ok(()),
        _ => Err(failed()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use serde_json::json;

    use super::*;

    fn run(doc: Value, patch: Value) -> Result<Value, String> {
        let p = JsonPatch::decode(&patch)?;
        let mut doc = doc;
        p.apply(&mut doc, 1 << 20)
            .map(|()| doc)
            .map_err(|e| e.status.message.clone())
    }

    /// ISSUE-24.6, PATCH-02: kube-runtime's `finalizer()` patch on an object without
    /// finalizers: `test` of `null` on a missing member succeeds, then the `add` applies.
    #[test]
    fn null_tests_a_missing_member() {
        let obj = json!({"metadata": {"name": "a"}});
        let patch = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["x/cleanup"]}
        ]);
        assert_eq!(
            run(obj, patch).unwrap()["metadata"]["finalizers"],
            json!(["x/cleanup"])
        );
    }

    /// PATCH-02: every `test` edge case as evanphx/json-patch v4 (kube-apiserver) has it.
    #[test]
    fn test_edge_cases_as_evanphx_v4() {
        let obj = json!({"a": {"b": 1, "n": null, "l": [1, {"c": "d"}]}, "s": "x"});
        let t = |path: &str, value: Option<Value>| {
            let mut op = json!({"op": "test", "path": path});
            if let Some(v) = value {
                op["value"] = v;
            }
            run(obj.clone(), json!([op])).map(|_| ())
        };
        // Present and equal, at every depth and in arrays.
        assert!(t("/a/b", Some(json!(1))).is_ok());
        assert!(t("/a/l/1", Some(json!({"c": "d"}))).is_ok());
        assert!(t("/a/l/1/c", Some(json!("d"))).is_ok());
        assert!(t("", Some(obj.clone())).is_ok());
        // null (or no value) matches a missing member and a null one, nothing else.
        assert!(t("/a/missing", Some(Value::Null)).is_ok());
        assert!(t("/a/missing", None).is_ok());
        assert!(t("/a/n", Some(Value::Null)).is_ok());
        assert!(t("/a/n", None).is_ok());
        let e = t("/a/b", Some(Value::Null)).unwrap_err();
        assert!(e.ends_with("testing value /a/b failed"), "{e}");
        assert!(t("/a/b", None).is_err());
        // A value against a missing member, or a different value: failed.
        assert!(t("/a/missing", Some(json!(1))).is_err());
        assert!(t("/a/b", Some(json!(2))).is_err());
        assert!(t("/a/b", Some(json!("1"))).is_err());
        // The parent must exist.
        let e = t("/nope/x", Some(Value::Null)).unwrap_err();
        assert!(
            e.ends_with("test operation does not apply: is missing path: /nope/x"),
            "{e}"
        );
        assert!(t("/a/n/x", None).is_err(), "a null parent is missing");
        // An index past the end of an array is an error, not a missing member.
        let e = t("/a/l/5", Some(Value::Null)).unwrap_err();
        assert!(e.contains("Unable to access invalid index: 5"), "{e}");
        // Escapes in the pointer.
        let esc = json!({"a/b": {"m~n": 1}});
        assert!(
            run(
                esc,
                json!([{"op": "test", "path": "/a~1b/m~0n", "value": 1}])
            )
            .is_ok()
        );
        // A failed test stops the patch (422).
        let patch = JsonPatch::decode(&json!([
            {"op": "test", "path": "/s", "value": "y"},
            {"op": "add", "path": "/t", "value": 1}
        ]))
        .unwrap();
        let mut doc = obj.clone();
        let e = patch.apply(&mut doc, 1 << 20).unwrap_err();
        assert_eq!(e.status.code, 422);
        assert!(doc.get("t").is_none());
    }

    /// PATCH-02: a patch that is not an array of operations is a 400.
    #[test]
    fn bad_patches_are_refused() {
        assert!(JsonPatch::decode(&json!({"op": "add"})).is_err());
        assert!(JsonPatch::decode(&json!([{"op": "frobnicate", "path": "/a"}])).is_err());
        assert!(JsonPatch::decode(&json!([{"op": "test"}])).is_err());
    }
}
