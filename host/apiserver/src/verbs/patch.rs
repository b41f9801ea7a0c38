//! `patch` (`PATCH-01`..`PATCH-04`): JSON patch (with `test`), merge patch and strategic
//! merge patch (server-side apply: `apply.rs`), applied to the current object and then written like an update. A patch
//! that sets `metadata.resourceVersion` is a precondition (409 when stale); a patch that
//! changes nothing writes nothing.

use bytes::Bytes;
use http::{Response, StatusCode, header};
use serde::Deserialize;
use serde_json::Value;
use wasmgate_apimachinery::media::{self, PatchType};
use wasmgate_apimachinery::options::WriteOptions;
use wasmgate_apimachinery::status::Status;
use wasmgate_apimachinery::strategic_merge::{self, SmpError};

use super::Ctx;
use crate::body::Body;
use crate::error::{ApiError, ApiResult};
use crate::handler::header_str;

pub(super) async fn patch(ctx: &mut Ctx, body: Bytes) -> ApiResult<Response<Body>> {
    let opts = WriteOptions::from_query(&ctx.query).map_err(|e| Status::bad_request(e.0))?;
    let ty =
        media::patch_type(header_str(&ctx.headers, header::CONTENT_TYPE)).map_err(Status::from)?;
    if ty == PatchType::Apply {
        return super::apply::apply(ctx, body, &opts).await;
    }
    if ty == PatchType::StrategicMerge && ctx.is_custom() {
        // PATCH-04: strategic merge patch needs Go struct tags custom resources lack.
        return Err(Status::from(media::UnsupportedMediaType {
            accepted: "application/json-patch+json, application/merge-patch+json",
        })
        .into());
    }
    if opts.force.is_some() {
        return Err(Status::bad_request(
            "force: Forbidden: may not be specified for non-apply patch",
        )
        .into());
    }
    let patch: Value = serde_json::from_slice(&body)
        .map_err(|e| Status::bad_request(format!("error decoding patch: {e}")))?;
    let json_patch: Option<json_patch::Patch> = match ty {
        PatchType::Json => Some(
            json_patch::Patch::deserialize(&patch)
                .map_err(|e| Status::bad_request(format!("error decoding patch: {e}")))?,
        ),
        _ => {
            if !patch.is_object() {
                return Err(Status::bad_request(
                    "error decoding patch: json: cannot unmarshal non-object into Go value of type map[string]interface {}",
                )
                .into());
            }
            None
        }
    };
    let schema = strategic_merge::builtin_schema(&ctx.api_version(), &ctx.rt.kind);
    let name = ctx.name().to_owned();
    let mut warnings = Vec::new();
    let pinned = pins_resource_version(&patch);
    let out = ctx
        .guaranteed_update(&name, opts.dry_run, pinned, |current| {
            let mut new = match (ty, &json_patch) {
                (PatchType::Json, Some(p)) => {
                    let mut doc = current.clone();
                    apply_json_patch(&mut doc, p, ctx.inner.options.max_request_body_bytes)?;
                    doc
                }
                (PatchType::Merge, _) => {
                    let mut doc = current.clone();
                    json_patch::merge(&mut doc, &patch);
                    doc
                }
                _ => strategic_merge::apply(current, &patch, &schema).map_err(smp_error)?,
            };
            ctx.check_type_meta(&mut new, &body)?;
            ctx.check_fields_into(&mut new, &[], opts.field_validation, &mut warnings)?;
            ctx.before_update(&mut new, current)?;
            Ok(new)
        })
        .await?;
    warnings.sort();
    warnings.dedup();
    ctx.warnings.extend(warnings);
    ctx.respond_object(StatusCode::OK, out).await
}

/// Most operations in one JSON patch (kube-apiserver's limit).
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// Applies a JSON patch (`PATCH-02`) to a copy of an object, bounded as kube-apiserver
/// bounds it: at most 10,000 operations, and `copy` operations may copy at most
/// `max_copy_bytes` in total (otherwise a small patch could double the object again and
/// again). A failed `test` or a bad path is 422.
pub(super) fn apply_json_patch(
    doc: &mut Value,
    patch: &json_patch::Patch,
    max_copy_bytes: usize,
) -> ApiResult<()> {
    if patch.0.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(Status::failure(
            413,
            "RequestEntityTooLarge",
            format!(
                "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                patch.0.len()
            ),
        )
        .into());
    }
    let mut copied = 0usize;
    for op in &patch.0 {
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
        json_patch::patch(doc, std::slice::from_ref(op)).map_err(|e| {
            ApiError::from(Status::failure(
                422,
                "Invalid",
                format!("the server rejected our request due to an error in our request: {e}"),
            ))
        })?;
    }
    Ok(())
}

/// Whether a patch sets `metadata.resourceVersion` (then a precondition, `UPD-02`).
fn pins_resource_version(patch: &Value) -> bool {
    match patch {
        Value::Array(ops) => ops.iter().any(|op| {
            op.get("path").and_then(Value::as_str) == Some("/metadata/resourceVersion")
                && op.get("op").and_then(Value::as_str) != Some("remove")
        }),
        _ => patch
            .get("metadata")
            .and_then(|m| m.get("resourceVersion"))
            .is_some_and(Value::is_string),
    }
}

fn smp_error(e: SmpError) -> ApiError {
    match e {
        SmpError::InvalidPatch { .. } => Status::bad_request(e.to_string()).into(),
        other => Status::failure(422, "Invalid", other.to_string()).into(),
    }
}
