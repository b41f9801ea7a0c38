//! `delete` (`DEL-01`..`DEL-04`, `GAP-06`): preconditions, finalizers (the first delete of
//! an object with finalizers only sets `deletionTimestamp`), namespace termination, dry run.
//!
//! `propagationPolicy` is accepted and validated; dependents named by `ownerReferences`
//! are not garbage-collected by this server (README, "Not yet").

use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::{Value, json};
use wasmgate_apimachinery::options::DeleteOptions;
use wasmgate_apimachinery::status::{Status, Target};
use wasmgate_storage::{Precondition, ReadAt, StorageError, Write, WriteOp};

use super::{Ctx, Obj};
use crate::body::Body;
use crate::builtin::IMMORTAL_NAMESPACES;
use crate::error::{ApiError, ApiResult, storage_error};
use crate::object::{self, meta_mut, meta_str};
use crate::registry::Builtin;

/// What a delete did.
pub(super) enum Deleted {
    /// Removed from storage; the object as it was.
    Removed(Value),
    /// Marked for deletion (finalizers pending); the object as stored now.
    Pending(Value),
}

pub(super) async fn delete(ctx: &mut Ctx, body: Bytes) -> ApiResult<Response<Body>> {
    let opts = delete_options(ctx, &body)?;
    let name = ctx.name().to_owned();
    let ns = ctx.namespace().map(str::to_owned);
    match delete_one(ctx, ns.as_deref(), &name, &opts).await? {
        Deleted::Pending(mut obj) => {
            ctx.present_value(&mut obj);
            ctx.respond_object(StatusCode::OK, Obj::Value(obj))
        }
        Deleted::Removed(mut obj) if ctx.delete_returns_object() => {
            ctx.present_value(&mut obj);
            ctx.respond_object(StatusCode::OK, Obj::Value(obj))
        }
        Deleted::Removed(obj) => {
            let uid = meta_str(&obj, "uid").unwrap_or("").to_owned();
            let s = Status::success(ctx.target(&name), &uid);
            Ok(crate::handler::bytes_response(
                StatusCode::OK,
                "application/json",
                s.to_json(),
            ))
        }
    }
}

/// Delete options from the body (JSON or YAML `DeleteOptions`) and the query.
pub(super) fn delete_options(ctx: &Ctx, body: &Bytes) -> ApiResult<DeleteOptions> {
    let from_body = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        let decoded = ctx.decode_body(body)?;
        Some(
            serde_json::from_value::<DeleteOptions>(decoded.value)
                .map_err(|e| Status::bad_request(format!("unable to decode DeleteOptions: {e}")))?,
        )
    };
    DeleteOptions::from_body_and_query(from_body, &ctx.query)
        .map_err(|e| Status::bad_request(e.0).into())
}

/// Deletes one object, retrying on conflicts unless the client gave preconditions.
pub(super) async fn delete_one(
    ctx: &Ctx,
    namespace: Option<&str>,
    name: &str,
    opts: &DeleteOptions,
) -> ApiResult<Deleted> {
    let target = ctx.target(name);
    if ctx.rt.builtin() == Some(Builtin::Namespace) && IMMORTAL_NAMESPACES.contains(&name) {
        return Err(Status::forbidden(target, "this namespace may not be deleted").into());
    }
    let key = ctx.rt.key(namespace, name);
    let dry = opts.is_dry_run();
    let pinned = opts
        .preconditions
        .as_ref()
        .is_some_and(|p| p.uid.is_some() || p.resource_version.is_some());
    for _ in 0..64 {
        let (_, cur) = ctx
            .inner
            .store
            .get(&key, ReadAt::Latest)
            .await
            .map_err(|e| storage_error(e, target))?;
        let cur = cur.ok_or_else(|| ApiError::from(Status::not_found(target)))?;
        let mut obj = object::from_stored(&cur.value).map_err(ApiError::internal)?;
        check_preconditions(target, opts, &obj)?;
        let pending = if ctx.rt.builtin() == Some(Builtin::Namespace) {
            let spec_finalizers = obj
                .get("spec")
                .and_then(|s| s.get("finalizers"))
                .and_then(Value::as_array)
                .is_some_and(|f| !f.is_empty());
            spec_finalizers || !object::finalizers(&obj).is_empty()
        } else {
            !object::finalizers(&obj).is_empty()
        };
        let write = if pending {
            if object::is_deleting(&obj) {
                // Already being deleted: nothing more to do.
                return Ok(Deleted::Pending(obj));
            }
            let m = meta_mut(&mut obj);
            if !m.contains_key("deletionTimestamp") {
                m.insert("deletionTimestamp".into(), json!(object::now_rfc3339()));
                m.insert("deletionGracePeriodSeconds".into(), json!(0));
            }
            if ctx.rt.builtin() == Some(Builtin::Namespace) {
                obj["status"]["phase"] = json!("Terminating");
            }
            if dry {
                return Ok(Deleted::Pending(obj));
            }
            WriteOp::Put(object::to_stored(&obj))
        } else {
            if dry {
                return Ok(Deleted::Removed(obj));
            }
            WriteOp::Delete(object::to_stored(&obj))
        };
        let res = ctx
            .inner
            .store
            .write(Write {
                key: key.clone(),
                precondition: Precondition::Revision(cur.revision),
                op: write,
                guards: Vec::new(),
            })
            .await;
        match res {
            Ok(c) => {
                ctx.after_write(c.revision).await;
                let stored = object::from_stored(&c.value).map_err(ApiError::internal)?;
                return Ok(if pending {
                    Deleted::Pending(stored)
                } else {
                    Deleted::Removed(stored)
                });
            }
            Err(StorageError::Conflict { .. }) if !pinned => continue,
            Err(StorageError::NotFound { .. }) => return Err(Status::not_found(target).into()),
            Err(e) => return Err(storage_error(e, target)),
        }
    }
    Err(Status::conflict(target, "the object kept changing; please try again").into())
}

fn check_preconditions(target: Target<'_>, opts: &DeleteOptions, obj: &Value) -> ApiResult<()> {
    let Some(p) = &opts.preconditions else {
        return Ok(());
    };
    let uid = meta_str(obj, "uid").unwrap_or("");
    if let Some(want) = &p.uid
        && want != uid
    {
        return Err(Status::conflict(
            target,
            &format!("Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"),
        )
        .into());
    }
    let rv = meta_str(obj, "resourceVersion").unwrap_or("");
    if let Some(want) = &p.resource_version
        && want != rv
    {
        return Err(Status::conflict(
                target,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {rv}"
                ),
            )
            .into());
    }
    Ok(())
}
