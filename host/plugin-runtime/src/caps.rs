//! What a plugin may return: the caps on every answer, checked right after a hook returns
//! and before its caller sees the answer. An answer over a cap is the plugin's failure,
//! [`CallError::TooLarge`] (cause `output_too_large`), which callers handle under the
//! binding's `failurePolicy` like a trap: with `Fail` the request fails, with `Ignore` the
//! answer is dropped whole (nothing of it is stored or sent) and the request goes on.
//!
//! These are the numbers the SDK documents to plugin authors: change them together. Sizes
//! are in bytes of UTF-8 text as the plugin returns it. They keep what one plugin answer
//! can make the gateway hold, log and send well within what a client and its HTTP/2
//! connection accept (kube-apiserver limits a request body to 3 MiB and truncates
//! `Warning` headers to a total; both apply after these).

use crate::CallError;
use crate::wit::{AdmissionResponse, ColumnDefinition, Mutation, Status};

/// A denial's `status.message`.
pub const MAX_STATUS_MESSAGE_BYTES: usize = 32 << 10;
/// A denial's `status.causes`: how many.
pub const MAX_STATUS_CAUSES: usize = 100;
/// A denial's `status.causes`: their `message`, `field` and `reason` together.
pub const MAX_STATUS_CAUSES_BYTES: usize = 64 << 10;
/// `warnings` (sent to the client as `Warning` headers): how many.
pub const MAX_WARNINGS: usize = 100;
/// `warnings`: all of them together.
pub const MAX_WARNINGS_BYTES: usize = 64 << 10;
/// `audit-annotations`: how many.
pub const MAX_AUDIT_ANNOTATIONS: usize = 64;
/// `audit-annotations`: keys and values together.
pub const MAX_AUDIT_ANNOTATIONS_BYTES: usize = 64 << 10;
/// A `mutation`: the whole object or the JSON patch, as text (kube-apiserver's request
/// body limit). The object a mutation leaves is held to the gateway's request-body limit
/// (the same 3 MiB by default) by the caller, which applies it.
pub const MAX_MUTATION_BYTES: usize = 3 << 20;
/// Each object `conversion.convert` returns.
pub const MAX_CONVERTED_OBJECT_BYTES: usize = 3 << 20;
/// `printer.columns`, and the cells of each row of `printer.rows`.
pub const MAX_COLUMNS: usize = 64;
/// Each cell of `printer.rows` (a JSON value), and each text of a column definition.
pub const MAX_CELL_BYTES: usize = 64 << 10;

fn too_large(what: &str, size: usize, unit: &str, limit: usize) -> CallError {
    CallError::TooLarge(format!(
        "{what}: {size} {unit}, more than the {limit} allowed"
    ))
}

/// At most `max` entries.
fn count(what: &str, n: usize, max: usize) -> Result<(), CallError> {
    if n > max {
        return Err(too_large(what, n, "entries", max));
    }
    Ok(())
}

/// At most `max` bytes.
fn bytes(what: &str, n: usize, max: usize) -> Result<(), CallError> {
    if n > max {
        return Err(too_large(what, n, "bytes", max));
    }
    Ok(())
}

/// An admission answer: the denial's status, warnings, audit annotations, mutation.
pub(crate) fn admission(resp: &AdmissionResponse) -> Result<(), CallError> {
    if !resp.allowed
        && let Some(s) = &resp.status
    {
        status(s)?;
    }
    count("warnings", resp.warnings.len(), MAX_WARNINGS)?;
    let warnings: usize = resp.warnings.iter().map(String::len).sum();
    bytes("warnings", warnings, MAX_WARNINGS_BYTES)?;
    let n = resp.audit_annotations.len();
    count("audit annotations", n, MAX_AUDIT_ANNOTATIONS)?;
    let annotations: usize = (resp.audit_annotations.iter())
        .map(|(k, v)| k.len() + v.len())
        .sum();
    bytes(
        "audit annotations",
        annotations,
        MAX_AUDIT_ANNOTATIONS_BYTES,
    )?;
    match &resp.mutation {
        Some(Mutation::Object(o)) => bytes("mutated object", o.len(), MAX_MUTATION_BYTES),
        Some(Mutation::JsonPatch(p)) => bytes("JSON patch", p.len(), MAX_MUTATION_BYTES),
        None => Ok(()),
    }
}

/// A denial or refusal: its message and causes.
pub(crate) fn status(s: &Status) -> Result<(), CallError> {
    bytes("status message", s.message.len(), MAX_STATUS_MESSAGE_BYTES)?;
    count("status causes", s.causes.len(), MAX_STATUS_CAUSES)?;
    let causes: usize = (s.causes.iter())
        .map(|c| c.message.len() + c.field.len() + c.reason.len())
        .sum();
    bytes("status causes", causes, MAX_STATUS_CAUSES_BYTES)
}

/// `conversion.convert`'s answer.
pub(crate) fn converted(r: &Result<Vec<String>, Status>) -> Result<(), CallError> {
    match r {
        Ok(objects) => (objects.iter().enumerate()).try_for_each(|(i, o)| {
            bytes(
                &format!("converted object {i}"),
                o.len(),
                MAX_CONVERTED_OBJECT_BYTES,
            )
        }),
        Err(s) => status(s),
    }
}

/// `printer.columns`' answer.
pub(crate) fn columns(columns: &[ColumnDefinition]) -> Result<(), CallError> {
    count("columns", columns.len(), MAX_COLUMNS)?;
    for c in columns {
        for text in [&c.name, &c.type_, &c.format, &c.description] {
            bytes(&format!("column {:?}", c.name), text.len(), MAX_CELL_BYTES)?;
        }
    }
    Ok(())
}

/// `printer.rows`' answer.
pub(crate) fn rows(r: &Result<Vec<Vec<String>>, Status>) -> Result<(), CallError> {
    match r {
        Ok(rows) => {
            for (i, row) in rows.iter().enumerate() {
                count(&format!("cells of row {i}"), row.len(), MAX_COLUMNS)?;
                for (j, cell) in row.iter().enumerate() {
                    bytes(&format!("cell {j} of row {i}"), cell.len(), MAX_CELL_BYTES)?;
                }
            }
            Ok(())
        }
        Err(s) => status(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wit::StatusCause;

    fn allowed() -> AdmissionResponse {
        AdmissionResponse {
            allowed: true,
            status: None,
            mutation: None,
            warnings: Vec::new(),
            audit_annotations: Vec::new(),
        }
    }

    /// issue 25 item 3: every cap holds at its limit and refuses one past it, naming the
    /// cap, the size and the limit.
    #[test]
    fn each_cap_holds_at_its_limit_and_refuses_past_it() {
        let mut r = allowed();
        r.warnings = vec!["w".repeat(MAX_WARNINGS_BYTES / MAX_WARNINGS); MAX_WARNINGS];
        admission(&r).unwrap();
        r.warnings.push(String::new());
        let e = admission(&r).unwrap_err();
        assert_eq!(e.cause(), "output_too_large");
        assert_eq!(
            e.to_string(),
            "returned too much: warnings: 101 entries, more than the 100 allowed"
        );
        let mut r = allowed();
        r.warnings = vec!["w".repeat(MAX_WARNINGS_BYTES + 1)];
        assert!(
            admission(&r)
                .unwrap_err()
                .to_string()
                .contains("65537 bytes")
        );

        let mut r = allowed();
        r.audit_annotations = vec![("k".into(), "v".into()); MAX_AUDIT_ANNOTATIONS + 1];
        assert!(admission(&r).is_err());
        r.audit_annotations = vec![("k".into(), "v".repeat(MAX_AUDIT_ANNOTATIONS_BYTES))];
        assert!(admission(&r).is_err());

        let mut r = allowed();
        r.mutation = Some(Mutation::JsonPatch("p".repeat(MAX_MUTATION_BYTES)));
        admission(&r).unwrap();
        r.mutation = Some(Mutation::Object("o".repeat(MAX_MUTATION_BYTES + 1)));
        assert!(admission(&r).is_err());

        let status = |message: usize, causes: usize, each: usize| Status {
            code: 403,
            reason: "Forbidden".into(),
            message: "m".repeat(message),
            causes: (0..causes)
                .map(|_| StatusCause {
                    reason: String::new(),
                    message: "c".repeat(each),
                    field: String::new(),
                })
                .collect(),
        };
        let mut r = allowed();
        r.allowed = false;
        r.status = Some(status(MAX_STATUS_MESSAGE_BYTES, MAX_STATUS_CAUSES, 655));
        admission(&r).unwrap();
        for s in [
            status(MAX_STATUS_MESSAGE_BYTES + 1, 0, 0),
            status(0, MAX_STATUS_CAUSES + 1, 0),
            status(0, 2, MAX_STATUS_CAUSES_BYTES / 2 + 1),
        ] {
            r.status = Some(s);
            assert!(admission(&r).is_err());
        }
        // An allowed answer's status is ignored by every caller: not checked.
        r.allowed = true;
        admission(&r).unwrap();

        assert!(converted(&Ok(vec!["o".repeat(MAX_CONVERTED_OBJECT_BYTES + 1)])).is_err());
        assert!(converted(&Ok(vec!["o".repeat(MAX_CONVERTED_OBJECT_BYTES)])).is_ok());
        let column = ColumnDefinition {
            name: "C".into(),
            type_: "string".into(),
            format: String::new(),
            description: String::new(),
            priority: 0,
        };
        assert!(columns(&vec![column.clone(); MAX_COLUMNS]).is_ok());
        assert!(columns(&vec![column; MAX_COLUMNS + 1]).is_err());
        assert!(rows(&Ok(vec![vec!["c".repeat(MAX_CELL_BYTES)]])).is_ok());
        assert!(rows(&Ok(vec![vec!["c".repeat(MAX_CELL_BYTES + 1)]])).is_err());
        assert!(rows(&Ok(vec![vec![String::new(); MAX_COLUMNS + 1]])).is_err());
    }
}
