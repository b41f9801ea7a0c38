//! `patch` (`PATCH-01`..`PATCH-04`): JSON patch (with `test`), merge patch and strategic
//! merge patch (server-side apply: `apply.rs`), applied to the current object and then written like an update. A patch
//! that sets `metadata.resourceVersion` is a precondition (409 when stale); a patch that
//! changes nothing writes nothing.

use bytes::Bytes;
use http::{Response, StatusCode, header};
use serde_json::Value;
use wasmgate_apimachinery::media::{self, PatchType};
use wasmgate_apimachinery::options::WriteOptions;
use wasmgate_apimachinery::status::Status;
use wasmgate_apimachinery::strategic_merge::{self, SmpError};

use super::Ctx;
use super::jsonpatch::JsonPatch;
use crate::body::Body;
use crate::error::{ApiError, ApiResult};
use crate::response::header_str;

pub(super) async fn patch(ctx: &mut Ctx, body: Bytes) -> ApiResult<Response<Body>> {
    let opts = WriteOptions::from_query(&ctx.query).map_err(|e| Status::bad_request(e.0))?;
    let ty =
        media::patch_type(header_str(&ctx.headers, header::CONTENT_TYPE)).map_err(Status::from)?;
    if ty == PatchType::Apply {
        return super::apply::apply(ctx, body, &opts).await;
    }
    if ty == PatchType::StrategicMerge && ctx.kind().is_custom() {
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
    let json_patch: Option<JsonPatch> = match ty {
        PatchType::Json => Some(JsonPatch::decode(&patch).map_err(Status::bad_request)?),
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
                    p.apply(&mut doc, ctx.inner.max_request_body_bytes())?;
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
            ctx.kind()
                .check_fields_into(&mut new, &[], opts.field_validation, &mut warnings)?;
            ctx.before_update(&mut new, current)?;
            Ok(new)
        })
        .await?;
    warnings.sort();
    warnings.dedup();
    ctx.warnings.extend(warnings);
    ctx.respond_object(StatusCode::OK, out).await
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
