//! The `scale` subresource of custom resources (`SUB-02`): get, update and patch an
//! `autoscaling/v1` Scale whose `spec.replicas` is the object's `specReplicasPath`.

use bytes::Bytes;
use http::{Response, StatusCode, header};
use serde_json::{Value, json};
use wasmgate_apimachinery::json as wjson;
use wasmgate_apimachinery::media::{self, Output, PatchType};
use wasmgate_apimachinery::options::WriteOptions;
use wasmgate_apimachinery::request_info::Verb;
use wasmgate_apimachinery::status::Status;

use super::{Ctx, encode_json};
use crate::body::Body;
use crate::custom::{ScaleSpec, scale_of};
use crate::error::{ApiError, ApiResult};
use crate::object::meta_str;
use crate::response::bytes_response as response;
use crate::response::header_str;

pub(super) async fn scale(ctx: &mut Ctx, body: Bytes) -> ApiResult<Response<Body>> {
    let spec = ctx
        .kind()
        .custom_version()
        .and_then(|v| v.scale.clone())
        .ok_or_else(|| ApiError::from(Status::not_found_path()))?;
    let name = ctx.name().to_owned();
    let ctx_limit = ctx.inner.max_request_body_bytes();
    let scale = match ctx.req.verb {
        Verb::Get => {
            let found = ctx.read_latest(&name).await?;
            scale_of(&spec, &*ctx.kind().present(found.value).await?.value()?)
        }
        Verb::Update => {
            let desired = ctx.decode_body(&body)?.value;
            write(ctx, &spec, &name, |_| Ok(desired.clone())).await?
        }
        Verb::Patch => {
            let ty = media::patch_type(header_str(&ctx.headers, header::CONTENT_TYPE))
                .map_err(Status::from)?;
            let patch: Value = serde_json::from_slice(&body)
                .map_err(|e| Status::bad_request(format!("error decoding patch: {e}")))?;
            // Decoded once; a bad JSON patch is reported where it is applied (after the
            // object is read: a missing object is 404 first).
            let json_patch =
                (ty == PatchType::Json).then(|| super::jsonpatch::JsonPatch::decode(&patch));
            write(ctx, &spec, &name, |current| {
                let mut doc = current.clone();
                match ty {
                    PatchType::Json => {
                        if let Some(p) = &json_patch {
                            let p = p
                                .as_ref()
                                .map_err(|e| ApiError::from(Status::bad_request(e.clone())))?;
                            p.apply(&mut doc, ctx_limit)?;
                        }
                    }
                    // A Scale has no lists: strategic merge is a merge patch here.
                    PatchType::Merge | PatchType::StrategicMerge => {
                        json_patch::merge(&mut doc, &patch)
                    }
                    PatchType::Apply => {
                        return Err(Status::failure(
                            415,
                            "UnsupportedMediaType",
                            "server-side apply is not implemented by this server yet",
                        )
                        .into());
                    }
                }
                Ok(doc)
            })
            .await?
        }
        _ => {
            return Err(Status::failure(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
            .into());
        }
    };
    let pretty = ctx.query.bool("pretty").ok().flatten().unwrap_or(false);
    match ctx.encoding.output()? {
        Output::Yaml => Ok(response(
            StatusCode::OK,
            "application/yaml",
            wjson::to_yaml(&scale),
        )),
        Output::Protobuf => super::protobuf_response::object_response(
            StatusCode::OK,
            "autoscaling/v1",
            "Scale",
            &scale,
        ),
        _ => Ok(response(
            StatusCode::OK,
            "application/json",
            encode_json(&scale, pretty),
        )),
    }
}

/// Applies a desired Scale (computed from the current one) to the object.
async fn write(
    ctx: &mut Ctx,
    spec: &ScaleSpec,
    name: &str,
    mut desired: impl FnMut(&Value) -> ApiResult<Value>,
) -> ApiResult<Value> {
    let opts = WriteOptions::from_query(&ctx.query).map_err(|e| Status::bad_request(e.0))?;
    let ctx_ref = &*ctx;
    let out = ctx_ref
        .guaranteed_update(name, opts.dry_run, false, |current| {
            let want = desired(&scale_of(spec, current))?;
            if want.get("kind").and_then(Value::as_str).is_some_and(|k| k != "Scale") {
                return Err(Status::bad_request("the body must be an autoscaling/v1 Scale").into());
            }
            let replicas = want
                .get("spec")
                .and_then(|s| s.get("replicas"))
                .and_then(Value::as_i64)
                .ok_or_else(|| ApiError::from(Status::bad_request("spec.replicas: Required value: an integer is required")))?;
            if replicas < 0 {
                return Err(Status::invalid("Scale", "autoscaling", name, &[wasmgate_apimachinery::validation::FieldError::invalid("spec.replicas", replicas, "must be greater than or equal to 0")]).into());
            }
            // A Scale carrying a resourceVersion is a precondition on the object (checked
            // again on every retry, so a stale one is always 409).
            let rv = meta_str(&want, "resourceVersion").filter(|v| !v.is_empty()).map(str::to_owned);
            if let Some(rv) = &rv
                && meta_str(current, "resourceVersion") != Some(rv.as_str()) {
                    return Err(Status::conflict(ctx_ref.target(name), "the object has been modified; please apply your changes to the latest version and try again").into());
                }
            let mut new = current.clone();
            if !spec.spec_replicas.set(&mut new, json!(replicas)) {
                return Err(Status::internal().into());
            }
            ctx_ref.before_update(&mut new, current)?;
            Ok(new)
        })
        .await?;
    Ok(scale_of(spec, &*out.value()?))
}
