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
use crate::error::{ApiResult, storage_error};
use crate::object::{self, meta_mut, meta_str};

/// How often a create with `generateName` retries a name that turned out taken.
const GENERATE_NAME_ATTEMPTS: usize = 8;

pub(super) async fn create(ctx: &mut Ctx, body: Bytes) -> ApiResult<Response<Body>> {
    let opts = WriteOptions::from_query(&ctx.query).map_err(|e| Status::bad_request(e.0))?;
    let decoded = ctx.decode_body(&body)?;
    let mut obj = decoded.value;
    ctx.check_type_meta(&mut obj)?;
    ctx.check_fields(&mut obj, &decoded.duplicates, opts.field_validation)?;
    let generated = before_create(ctx, &mut obj)?;
    if let Some(ns) = ctx.namespace().map(str::to_owned) {
        let name = meta_str(&obj, "name").unwrap_or("").to_owned();
        ctx.ensure_namespace_accepts_creates(&ns, &name).await?;
    }
    let attempts = if generated { GENERATE_NAME_ATTEMPTS } else { 1 };
    for attempt in 0..attempts {
        if attempt > 0 {
            let prefix = meta_str(&obj, "generateName").unwrap_or("").to_owned();
            meta_mut(&mut obj).insert("name".into(), Value::String(object::generate_name(&prefix)));
        }
        let name = meta_str(&obj, "name").unwrap_or("").to_owned();
        if opts.dry_run {
            // Everything ran but the store: nothing is written, no revision is used.
            object::meta_mut(&mut obj).remove("resourceVersion");
            return ctx.respond_object(StatusCode::CREATED, Obj::Value(obj));
        }
        let mut stored = obj.clone();
        ctx.to_storage(&mut stored);
        let write = Write {
            key: ctx.key(&name),
            precondition: Precondition::Absent,
            op: WriteOp::Put(object::to_stored(&stored)),
        };
        match ctx.inner.store.write(write).await {
            Ok(c) => {
                ctx.after_write(c.revision).await;
                let out = ctx.present(c.value)?;
                return ctx.respond_object(StatusCode::CREATED, out);
            }
            Err(StorageError::AlreadyExists { .. }) if attempt + 1 < attempts => continue,
            Err(e) => return Err(storage_error(e, ctx.target(&name))),
        }
    }
    Err(crate::error::ApiError::internal(
        "unreachable: create attempts exhausted",
    ))
}

/// kube-apiserver's `BeforeCreate`: namespace from the URL, system fields set, name
/// generated, strategy prepared, object validated. Returns whether the name was generated.
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
    ctx.prepare_create(obj);
    let errs = ctx.validate_object(obj, None);
    if !errs.is_empty() {
        return Err(ctx.invalid(meta_str(obj, "name").unwrap_or(""), &errs));
    }
    Ok(generated)
}
