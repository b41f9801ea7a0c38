//! `delete` (`DEL-01`..`DEL-04`, `GAP-06`): preconditions, finalizers (the first delete of
//! an object with finalizers only sets `deletionTimestamp`), namespace termination, dry run.
//!
//! `propagationPolicy` / `orphanDependents` become the garbage collector's finalizers
//! (`orphan`, `foregroundDeletion`) as kube's `genericregistry.Store` sets them; the
//! collector (`wasmgate_controllers::gc`) then orphans or deletes the dependents and removes them.

use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::{Value, json};
use wasmgate_apimachinery::options::{
    DeleteOptions, FINALIZER_DELETE_DEPENDENTS as FOREGROUND,
    FINALIZER_ORPHAN_DEPENDENTS as ORPHAN, PropagationPolicy,
};
use wasmgate_apimachinery::status::{Status, Target};
use wasmgate_storage::{Precondition, StorageError, Write, WriteOp};

use super::{Ctx, Obj};
use crate::body::Body;
use crate::builtin::IMMORTAL_NAMESPACES;
use crate::error::{ApiError, ApiResult, storage_error};
use crate::kinds::{Presenter, present_decoded, present_stored, present_value};
use crate::object::{self, has_finalizers, meta_mut, meta_str};
use crate::registry::Builtin;

/// What a delete did; objects are as the request's version shows them.
pub(super) enum Deleted {
    /// Removed from storage; the object as it was, and its uid.
    Removed { obj: Obj, uid: String },
    /// Marked for deletion (finalizers pending); the object as stored now.
    Pending(Obj),
}

pub(super) async fn delete(ctx: &mut Ctx, body: Bytes) -> ApiResult<Response<Body>> {
    let opts = delete_options(ctx, &body)?;
    let name = ctx.name().to_owned();
    let ns = ctx.namespace().map(str::to_owned);
    let presenter = ctx.kind().presenter();
    match delete_one(ctx, presenter.as_ref(), ns.as_deref(), &name, &opts).await? {
        // kube answers 202 for a delete that waits on dependents when the client asked for
        // cascading with the deprecated `orphanDependents: false`, 200 otherwise.
        Deleted::Pending(obj) if opts.orphan_dependents == Some(false) => {
            ctx.respond_object(StatusCode::ACCEPTED, obj).await
        }
        Deleted::Pending(obj) => ctx.respond_object(StatusCode::OK, obj).await,
        Deleted::Removed { obj, .. } if ctx.kind().delete_returns_object() => {
            ctx.respond_object(StatusCode::OK, obj).await
        }
        Deleted::Removed { uid, .. } => {
            let s = Status::success(ctx.target(&name), &uid);
            Ok(ctx.respond_status(StatusCode::OK, &s))
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
/// `presenter` is the request's `Kind::presenter`.
pub(super) async fn delete_one(
    ctx: &Ctx,
    presenter: Option<&Presenter>,
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
        let cur = ctx.read_latest_at(&key, target).await?;
        let mut obj = object::from_stored(&cur.value).map_err(ApiError::internal)?;
        check_preconditions(target, opts, &obj)?;
        ctx.admit_delete(&obj, dry).await?;
        let uid = meta_str(&obj, "uid").unwrap_or("").to_owned();
        let gc_changed = apply_deletion_finalizers(&mut obj, opts);
        let pending = has_finalizers(&obj);
        let already_deleting = object::is_deleting(&obj);
        let write = if pending {
            if already_deleting && !gc_changed {
                // Already being deleted: nothing more to do.
                return Ok(Deleted::Pending(
                    present_decoded(presenter, cur.value, obj).await?,
                ));
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
                return Ok(Deleted::Pending(present_value(presenter, obj).await?));
            }
            WriteOp::Put(object::to_stored(&obj))
        } else {
            if dry {
                let obj = if gc_changed {
                    present_value(presenter, obj).await?
                } else {
                    present_decoded(presenter, cur.value, obj).await?
                };
                return Ok(Deleted::Removed { obj, uid });
            }
            WriteOp::Delete(object::to_stored(&obj))
        };
        let res = ctx
            .inner
            .store()
            .write(Write::new(
                key.clone(),
                Precondition::Revision(cur.revision),
                write,
            ))
            .await;
        match res {
            Ok(c) => {
                ctx.after_write(c.revision).await;
                let obj = present_stored(presenter, c.value).await?;
                return Ok(if pending {
                    Deleted::Pending(obj)
                } else {
                    Deleted::Removed { obj, uid }
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

/// Sets the garbage-collection finalizers a delete with `opts` implies, as kube's
/// `deletionFinalizersForGarbageCollection` does: an explicit `orphanDependents` or
/// `propagationPolicy` wins, else a GC finalizer already on the object, else `Background`
/// (no finalizer). Returns whether the set of finalizers changed.
fn apply_deletion_finalizers(obj: &mut Value, opts: &DeleteOptions) -> bool {
    let current = object::finalizers(obj);
    let has = |f: &str| current.iter().any(|c| c == f);
    let (orphan, foreground) = match (opts.orphan_dependents, opts.propagation_policy) {
        (Some(o), _) => (o, false),
        (None, Some(PropagationPolicy::Orphan)) => (true, false),
        (None, Some(PropagationPolicy::Foreground)) => (false, true),
        (None, Some(PropagationPolicy::Background)) => (false, false),
        (None, None) => (has(ORPHAN) && !has(FOREGROUND), has(FOREGROUND)),
    };
    let mut next: Vec<String> = current
        .iter()
        .filter(|f| *f != ORPHAN && *f != FOREGROUND)
        .cloned()
        .collect();
    if orphan {
        next.push(ORPHAN.into());
    }
    if foreground {
        next.push(FOREGROUND.into());
    }
    let same = next.len() == current.len() && next.iter().all(|f| has(f));
    if same {
        return false;
    }
    let m = meta_mut(obj);
    if next.is_empty() {
        m.remove("finalizers");
    } else {
        m.insert("finalizers".into(), json!(next));
    }
    true
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    fn opts(orphan: Option<bool>, policy: Option<PropagationPolicy>) -> DeleteOptions {
        DeleteOptions {
            orphan_dependents: orphan,
            propagation_policy: policy,
            ..Default::default()
        }
    }

    /// GC-01: the finalizers a delete sets, per kube's `deletionFinalizersForGarbageCollection`.
    #[test]
    fn deletion_finalizers_follow_the_policy() {
        let mut o = json!({"metadata": {"finalizers": ["x"]}});
        assert!(apply_deletion_finalizers(
            &mut o,
            &opts(None, Some(PropagationPolicy::Foreground))
        ));
        assert_eq!(o["metadata"]["finalizers"], json!(["x", FOREGROUND]));
        // No options: the finalizer already there is honoured.
        assert!(!apply_deletion_finalizers(&mut o, &opts(None, None)));
        // Switching policy replaces one GC finalizer by the other.
        assert!(apply_deletion_finalizers(
            &mut o,
            &opts(None, Some(PropagationPolicy::Orphan))
        ));
        assert_eq!(o["metadata"]["finalizers"], json!(["x", ORPHAN]));
        assert!(apply_deletion_finalizers(&mut o, &opts(Some(false), None)));
        assert_eq!(o["metadata"]["finalizers"], json!(["x"]));
        let mut plain = json!({"metadata": {}});
        assert!(!apply_deletion_finalizers(&mut plain, &opts(None, None)));
        assert!(!apply_deletion_finalizers(
            &mut plain,
            &opts(None, Some(PropagationPolicy::Background))
        ));
        assert!(plain["metadata"].get("finalizers").is_none());
        assert!(apply_deletion_finalizers(
            &mut plain,
            &opts(Some(true), None)
        ));
        assert_eq!(plain["metadata"]["finalizers"], json!([ORPHAN]));
    }
}
