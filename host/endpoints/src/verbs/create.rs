//! `create` (`VERB-04`, `META-02`..`META-06`, `DRY-01`..`DRY-03`, `FV-*`).

use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::Value;
use wasmgate_apimachinery::options::WriteOptions;
use wasmgate_apimachinery::status::Status;
use wasmgate_apimachinery::validation::FieldError;
use wasmgate_storage::{Precondition, StorageError, Write, WriteOp};

use super::{Ctx, Obj};
use crate::body::Body;
use crate::error::{ApiError, ApiResult, storage_error};
use crate::object::{self, meta_mut, meta_str};

/// How often a create with `generateName` retries a name that turned out taken.
const GENERATE_NAME_ATTEMPTS: usize = 8;

/// How often a create starts over because the namespace or the CRD it checked changed
/// before the write.
const GUARD_ATTEMPTS: usize = 8;

/// Why one attempt did not finish.
enum Attempt {
    /// A final answer.
    Done(ApiResult<Response<Body>>),
    /// The namespace or CRD guarding the write changed (to `actual`): start over.
    GuardChanged { key: String, actual: u64 },
}

pub(super) async fn create(ctx: &mut Ctx, body: Bytes) -> ApiResult<Response<Body>> {
    let opts = WriteOptions::from_query(&ctx.query).map_err(|e| Status::bad_request(e.0))?;
    for _ in 0..GUARD_ATTEMPTS {
        match create_once(ctx, &opts, &body).await {
            Attempt::Done(r) => return r,
            Attempt::GuardChanged { key, actual } => {
                if ctx.rt.custom().is_some_and(|c| c.crd_key == key) {
                    // The CRD changed: serve this create with the type as it is now.
                    crate::crd_controller::wait_synced(&ctx.inner, actual).await;
                    let catalog = ctx.inner.types().snapshot();
                    ctx.rt = catalog
                        .lookup(&ctx.req.group, &ctx.req.version, &ctx.req.resource)
                        .cloned()
                        .ok_or_else(|| ApiError::from(Status::not_found_path()))?;
                    if let Some(c) = ctx.rt.custom().filter(|c| c.terminating) {
                        return Err(refused_while_terminating(&c.crd_name));
                    }
                }
            }
        }
    }
    Err(Status::conflict(
        ctx.target(""),
        "the namespace or the resource type kept changing; please retry",
    )
    .into())
}

/// One create: everything from the body to the guarded write.
async fn create_once(ctx: &mut Ctx, opts: &WriteOptions, body: &Bytes) -> Attempt {
    let (mut obj, generated) = match super::cpu_bound(body.len(), || prepare(ctx, opts, body)) {
        Ok(x) => x,
        Err(e) => return Attempt::Done(Err(e)),
    };
    // The creator owns what it set (`SSA-14`); a create on apply brings the apply's entry.
    if !ctx.applying {
        super::managed::record_update(ctx, None, &mut obj);
    }
    // Mutating plugins, validation (once, of the object as they left it), validating
    // plugins: kube's order.
    let op = crate::plugins::Op::Create;
    let stored = match ctx
        .admit(op, &mut obj, None, None, opts.dry_run, false, body.len())
        .await
    {
        Ok(s) => s,
        Err(e) => return Attempt::Done(Err(e)),
    };
    let mut guards = Vec::new();
    if let Some(ns) = ctx.namespace().map(str::to_owned) {
        let name = meta_str(&obj, "name").unwrap_or("").to_owned();
        match ctx.ensure_namespace_accepts_creates(&ns, &name).await {
            Ok(rev) => guards.push((format!("core/namespaces//{ns}"), rev)),
            Err(e) => return Attempt::Done(Err(e)),
        }
    }
    // Objects of a CRD are written only while that CRD is the one this request served.
    if let Some(c) = ctx.rt.custom() {
        guards.push((c.crd_key.clone(), c.crd_revision));
    }
    if opts.dry_run {
        // Everything ran but the store: nothing is written, no revision is used.
        meta_mut(&mut obj).remove("resourceVersion");
        return Attempt::Done(
            ctx.respond_object(StatusCode::CREATED, Obj::Value(obj))
                .await,
        );
    }
    // Only `metadata.name` changes between attempts; the storage form is kept throughout.
    if let Err(e) = ctx.store_form(&mut obj, stored).await {
        return Attempt::Done(Err(e));
    }
    let attempts = if generated { GENERATE_NAME_ATTEMPTS } else { 1 };
    for attempt in 0..attempts {
        if attempt > 0 {
            let prefix = meta_str(&obj, "generateName").unwrap_or("").to_owned();
            meta_mut(&mut obj).insert("name".into(), Value::String(object::generate_name(&prefix)));
        }
        let name = meta_str(&obj, "name").unwrap_or("").to_owned();
        let write = Write {
            key: ctx.key(&name),
            precondition: Precondition::Absent,
            op: WriteOp::Put(object::to_stored(&obj)),
            guards: std::mem::take(&mut guards),
        };
        let kept = write.guards.clone();
        match ctx.inner.store().write(write).await {
            Ok(c) => {
                ctx.after_write(c.revision).await;
                // The object just stored, with its revision: its bytes need no decoding.
                object::set_resource_version(&mut obj, c.revision);
                let presented =
                    crate::kinds::present_decoded(ctx.kind().presenter().as_ref(), c.value, obj)
                        .await;
                return Attempt::Done(match presented {
                    Ok(out) => ctx.respond_object(StatusCode::CREATED, out).await,
                    Err(e) => Err(e),
                });
            }
            Err(StorageError::Conflict { key, actual, .. })
                if kept.iter().any(|(k, _)| *k == key) =>
            {
                return Attempt::GuardChanged { key, actual };
            }
            Err(StorageError::AlreadyExists { .. }) if attempt + 1 < attempts => guards = kept,
            Err(e) => return Attempt::Done(Err(storage_error(e, ctx.target(&name)))),
        }
    }
    Attempt::Done(Err(ApiError::internal(
        "unreachable: create attempts exhausted",
    )))
}

/// Decode, type checks, field validation, BeforeCreate. Returns the object and whether its
/// name was generated.
fn prepare(ctx: &mut Ctx, opts: &WriteOptions, body: &Bytes) -> ApiResult<(Value, bool)> {
    let decoded = ctx.decode_object(body)?;
    let mut obj = decoded.value;
    ctx.check_type_meta(&mut obj, body)?;
    ctx.check_fields(&mut obj, &decoded.duplicates, opts.field_validation)?;
    let generated = before_create(ctx, &mut obj)?;
    Ok((obj, generated))
}

/// kube-apiserver's `BeforeCreate` up to validation: namespace from the URL, system fields
/// set, name generated, strategy prepared (validation follows mutating admission, in
/// [`Ctx::admit`]). Returns whether the name was generated.
fn before_create(ctx: &Ctx, obj: &mut Value) -> ApiResult<bool> {
    let url_ns = ctx.namespace().map(str::to_owned);
    let rt = ctx.rt.clone();
    let generated;
    {
        let m = meta_mut(obj);
        if rt.namespaced {
            let body_ns = m.get("namespace").and_then(Value::as_str).unwrap_or("");
            match &url_ns {
                Some(ns) if body_ns.is_empty() => {
                    m.insert("namespace".into(), Value::String(ns.clone()));
                }
                Some(ns) if body_ns != ns => {
                    return Err(Status::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    )
                    .into());
                }
                _ => {}
            }
        } else {
            m.remove("namespace");
        }
        if m.get("resourceVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty())
        {
            return Err(Status::bad_request(
                "resourceVersion should not be set on objects to be created",
            )
            .into());
        }
        let name = m
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let generate = m
            .get("generateName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        generated = name.is_empty() && !generate.is_empty();
        if generated {
            m.insert(
                "name".into(),
                Value::String(object::generate_name(&generate)),
            );
        }
        m.insert("uid".into(), Value::String(object::new_uid()));
        m.insert(
            "creationTimestamp".into(),
            Value::String(object::now_rfc3339()),
        );
        for f in [
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
            "generation",
            "resourceVersion",
        ] {
            m.remove(f);
        }
    }
    if meta_str(obj, "name").unwrap_or("").is_empty() {
        let errs = [FieldError::required(
            "metadata.name",
            "name or generateName is required",
        )];
        return Err(ctx.invalid("", &errs));
    }
    ctx.kind().prepare_create(obj);
    Ok(generated)
}

/// 405 for a create of a custom resource whose CRD is being deleted.
pub(super) fn refused_while_terminating(crd_name: &str) -> ApiError {
    Status::failure(
        405,
        "MethodNotAllowed",
        format!("create not allowed while custom resource definition {crd_name} is terminating"),
    )
    .into()
}
