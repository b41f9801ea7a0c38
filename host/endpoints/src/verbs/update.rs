//! `update` (PUT) (`VERB-02`, `UPD-01`, `UPD-02`): a whole object, conditional on its
//! `metadata.resourceVersion` when the client sets one.

use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::Value;
use wasmgate_apimachinery::options::WriteOptions;
use wasmgate_apimachinery::status::Status;

use super::Ctx;
use crate::body::Body;
use crate::error::ApiResult;
use crate::object::{meta_mut, meta_str};

pub(super) async fn update(ctx: &mut Ctx, body: Bytes) -> ApiResult<Response<Body>> {
    let opts = WriteOptions::from_query(&ctx.query).map_err(|e| Status::bad_request(e.0))?;
    let mut obj = super::cpu_bound(body.len(), || -> ApiResult<Value> {
        let decoded = ctx.decode_object(&body)?;
        let mut obj = decoded.value;
        ctx.check_type_meta(&mut obj, &body)?;
        ctx.check_fields(&mut obj, &decoded.duplicates, opts.field_validation)?;
        Ok(obj)
    })?;
    let name = ctx.name().to_owned();
    match meta_str(&obj, "name").unwrap_or("") {
        "" => {
            meta_mut(&mut obj).insert("name".into(), Value::String(name.clone()));
        }
        n if n != name => {
            return Err(Status::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            ))
            .into());
        }
        _ => {}
    }
    if let Some(ns) = ctx.namespace() {
        match meta_str(&obj, "namespace").unwrap_or("") {
            "" => {
                meta_mut(&mut obj).insert("namespace".into(), Value::String(ns.to_owned()));
            }
            n if n != ns => {
                return Err(Status::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                )
                .into());
            }
            _ => {}
        }
    }
    let pinned = meta_str(&obj, "resourceVersion").is_some_and(|v| !v.is_empty());
    let out = ctx
        .guaranteed_update(&name, opts.dry_run, pinned, |current| {
            super::cpu_bound(body.len(), || {
                let mut new = obj.clone();
                ctx.before_update(&mut new, current)?;
                Ok(new)
            })
        })
        .await?;
    ctx.respond_object(StatusCode::OK, out).await
}
