//! Server-side apply (`SSA-01`..`SSA-07`, `SSA-13`): `PATCH` with
//! `application/apply-patch+yaml` (JSON bodies too). The configuration is merged into the
//! object by the field-set engine of `wasmgate_apimachinery::fieldset::apply`, through the
//! type's shape (a custom resource's schema markers, the built-in kinds' merge keys), and
//! then written like any update (admission, validation, conversion); an apply to a missing
//! object creates it. Conflicts with other managers are a 409 naming each field.
//!
//! Every other write (create, update, patch, subresources) records an `Update` entry for
//! its manager and moves ownership of what it changed ([`record_update`], `SSA-14`).

use bytes::Bytes;
use http::{HeaderValue, Response, header};
use serde_json::{Value, json};
use wasmgate_apimachinery::fieldset::apply::{Apply, Conflict, conflict_message};
use wasmgate_apimachinery::fieldset::last_applied;
use wasmgate_apimachinery::fieldset::managed::ManagedFields;
use wasmgate_apimachinery::fieldset::{Comparison, FieldSet, PathElement, Shape, builtin_shape};
use wasmgate_apimachinery::json as wjson;
use wasmgate_apimachinery::options::WriteOptions;
use wasmgate_apimachinery::status::{Status, StatusCause};
use wasmgate_apimachinery::validation::FieldError;

use super::Ctx;
use crate::body::Body;
use crate::error::{ApiError, ApiResult};
use crate::object::{self, meta_mut, meta_str};

pub(super) async fn apply(
    ctx: &mut Ctx,
    body: Bytes,
    opts: &WriteOptions,
) -> ApiResult<Response<Body>> {
    let Some(manager) = opts.field_manager.clone().filter(|m| !m.is_empty()) else {
        return Err(Status::invalid(
            "PatchOptions",
            "meta.k8s.io",
            "",
            &[FieldError::required(
                "fieldManager",
                "is required for apply patch",
            )],
        )
        .into());
    };
    let config = parse(ctx, &body)?;
    ctx.applying = true;
    let name = ctx.name().to_owned();
    let shape = shape(ctx);
    let ignored = ignored(ctx);
    let now = object::now_rfc3339();
    let api_version = ctx.api_version();
    let subresource = ctx.req.subresource.clone();
    let run = Apply {
        manager: &manager,
        api_version: &api_version,
        subresource: subresource.as_deref(),
        force: opts.force.unwrap_or(false),
        ignored: &ignored,
        now: &now,
    };
    let mut warnings = Vec::new();
    let updated = ctx
        .guaranteed_update(&name, opts.dry_run, false, |current| {
            let mut managed = ManagedFields::decode(current.pointer("/metadata/managedFields"))
                .unwrap_or_default();
            if managed.entries.is_empty() {
                // An object no manager is recorded for: what it holds now belongs to
                // `before-first-apply`, so the apply can conflict with it (kube's seeding).
                let empty = json!({"apiVersion": current["apiVersion"], "kind": current["kind"]});
                let seed = Comparison::of(&empty, current, &shape);
                managed.update(
                    "before-first-apply",
                    &api_version,
                    None,
                    seed,
                    &ignored,
                    &now,
                );
            }
            let upgrading = manager == last_applied::MANAGER && !run.force;
            let retry = upgrading.then(|| managed.clone());
            let applied = match (run.run(current, &config, &shape, managed), retry) {
                (Ok(a), _) => a,
                // kubectl's first server-side apply over its client-side applies: conflicts
                // on fields still as the last-applied annotation has them are allowed.
                (Err(conflicts), Some(managed)) => {
                    match last_applied::allowed_conflicts(current, &api_version, &shape) {
                        Some(allowed) => {
                            let rest: Vec<_> = conflicts
                                .into_iter()
                                .filter(|c| !allowed.contains(&c.path))
                                .collect();
                            if !rest.is_empty() {
                                return Err(conflict(rest));
                            }
                            Apply { force: true, ..run }
                                .run(current, &config, &shape, managed)
                                .map_err(conflict)?
                        }
                        None => return Err(conflict(conflicts)),
                    }
                }
                (Err(conflicts), None) => return Err(conflict(conflicts)),
            };
            let mut new = applied.object;
            set_managed(&mut new, &applied.managed);
            if manager == last_applied::MANAGER {
                last_applied::sync(&mut new, &config);
            }
            ctx.kind()
                .check_fields_into(&mut new, &[], opts.field_validation, &mut warnings)?;
            ctx.before_update(&mut new, current)?;
            Ok(new)
        })
        .await;
    let out = match updated {
        // Create on apply (not through a subresource), for a user who may also create
        // (`SSA-15`, `AUTH-03`; else the 404 stands): the configuration applied to
        // nothing, then created as it is.
        Err(e) if e.status.code == 404 && subresource.is_none() && may_create(ctx, &name) => {
            let empty = json!({"apiVersion": api_version, "kind": ctx.rt.kind});
            let applied = run
                .run(&empty, &config, &shape, ManagedFields::default())
                .map_err(conflict)?;
            let mut obj = applied.object;
            set_managed(&mut obj, &applied.managed);
            let bytes = Bytes::from(serde_json::to_vec(&obj).map_err(ApiError::internal)?);
            ctx.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            return super::create::create(ctx, bytes).await;
        }
        r => r?,
    };
    warnings.sort();
    warnings.dedup();
    ctx.warnings.extend(warnings);
    ctx.respond_object(http::StatusCode::OK, out).await
}

/// Records a non-apply write of `new` over `live` (`None`: a create) in `new`'s
/// `metadata.managedFields` (`SSA-14`), as kube's field manager does for Updates: the
/// entries start from the request's own (unless it resets them with `[]` or `[{}]`),
/// else the stored ones; an existing object nobody manages stays untracked until an
/// apply; the manager is `fieldManager`, else the User-Agent's product.
pub(super) fn record_update(ctx: &Ctx, live: Option<&Value>, new: &mut Value) {
    // The request's entries, out of the object (compared without them, rewritten below).
    let sent = new
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("managedFields"));
    let stored = || {
        ManagedFields::decode(live.and_then(|l| l.pointer("/metadata/managedFields")))
            .unwrap_or_default()
    };
    let base = if ctx.req.subresource.is_some() {
        stored()
    } else if ManagedFields::is_reset(sent.as_ref()) {
        ManagedFields::default()
    } else {
        match ManagedFields::decode(sent.as_ref()) {
            Ok(m) if !m.entries.is_empty() => m,
            _ => stored(),
        }
    };
    if base.entries.is_empty() && live.is_some() {
        return;
    }
    let mut managed = base;
    let shape = shape(ctx);
    let changes = match live {
        Some(l) => Comparison::of(l, new, &shape),
        None => Comparison::of(
            &json!({"apiVersion": ctx.api_version(), "kind": ctx.rt.kind}),
            new,
            &shape,
        ),
    };
    let manager = wasmgate_apimachinery::fieldset::managed::manager_name(
        ctx.query.get("fieldManager"),
        crate::response::header_str(&ctx.headers, header::USER_AGENT),
    );
    managed.update(
        &manager,
        &ctx.api_version(),
        ctx.req.subresource.as_deref(),
        changes,
        &ignored(ctx),
        &object::now_rfc3339(),
    );
    set_managed(new, &managed);
}

/// Whether the user may create the object (apply creates only then, as kube's
/// `forceAllowCreate`).
fn may_create(ctx: &Ctx, name: &str) -> bool {
    use crate::rbac;
    let attrs = rbac::Attributes {
        user: &ctx.user,
        verb: "create".into(),
        resource: Some(rbac::ResourceAttributes {
            group: ctx.rt.group.clone(),
            resource: ctx.rt.resource.clone(),
            subresource: String::new(),
            namespace: ctx.namespace().unwrap_or("").to_owned(),
            name: name.to_owned(),
        }),
        path: String::new(),
    };
    rbac::permits(&ctx.inner, &attrs)
}

/// The configuration: YAML or JSON, an object of this endpoint's type and name, without
/// `managedFields` (`SSA-06`).
fn parse(ctx: &Ctx, body: &Bytes) -> ApiResult<Value> {
    let config = wjson::from_yaml(body)
        .map_err(|e| Status::bad_request(format!("error decoding YAML: {e}")))?
        .value;
    if !config.is_object() {
        return Err(Status::bad_request("the apply configuration is not an object").into());
    }
    let (av, kind) = (
        config
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or(""),
        config.get("kind").and_then(Value::as_str).unwrap_or(""),
    );
    if av != ctx.api_version() || kind != ctx.rt.kind {
        return Err(
            Status::bad_request(format!("invalid object type: {}", gvk_string(av, kind))).into(),
        );
    }
    if let Some(n) = meta_str(&config, "name")
        && n != ctx.name()
    {
        return Err(Status::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({})",
            ctx.name()
        ))
        .into());
    }
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(|m| !m.is_null())
    {
        return Err(Status::bad_request("metadata.managedFields must be nil").into());
    }
    Ok(config)
}

/// Go's `schema.GroupVersionKind` printed: `apps/v1, Kind=Deployment` (`/v1, Kind=…` for
/// the core group).
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// How this type's values merge and are owned (built once per custom resource version
/// and per built-in kind).
fn shape(ctx: &Ctx) -> std::sync::Arc<Shape> {
    use std::collections::HashMap;
    use std::sync::{Arc, OnceLock};
    if let Some(ver) = ctx.rt.custom().and_then(|c| c.version(&ctx.req.version)) {
        return ver.field_shape();
    }
    // Every write asks: the built-in kinds' shapes are built once, together.
    static BUILTIN: OnceLock<HashMap<crate::registry::Builtin, Arc<Shape>>> = OnceLock::new();
    let shapes = BUILTIN.get_or_init(|| {
        crate::registry::builtin_types()
            .iter()
            .filter_map(|t| {
                let av = t.group_version(&t.storage_version);
                Some((t.builtin()?, Arc::new(builtin_shape(&av, &t.kind))))
            })
            .collect()
    });
    match ctx.rt.builtin().and_then(|b| shapes.get(&b)) {
        Some(s) => s.clone(),
        None => Arc::new(builtin_shape(&ctx.api_version(), &ctx.rt.kind)),
    }
}

/// Fields that count for no one: `status` on the main resource of a type with a status
/// subresource, everything but `status` on that subresource.
fn ignored(ctx: &Ctx) -> FieldSet {
    let mut s = FieldSet::new();
    let has_status = ctx
        .rt
        .subresources_for(&ctx.req.version)
        .iter()
        .any(|r| r.name == "status");
    match ctx.req.subresource.as_deref() {
        None if has_status => s.insert(&[PathElement::Field("status".into())]),
        Some("status") => s.insert(&[PathElement::Field("spec".into())]),
        _ => {}
    }
    s
}

fn set_managed(obj: &mut Value, managed: &ManagedFields) {
    match managed.encode() {
        Some(m) => {
            meta_mut(obj).insert("managedFields".into(), m);
        }
        None => {
            meta_mut(obj).remove("managedFields");
        }
    }
}

/// The 409 of an apply that conflicts (`SSA-04`): one cause per field.
fn conflict(conflicts: Vec<Conflict>) -> ApiError {
    let mut st = Status::failure(409, "Conflict", conflict_message(&conflicts));
    st.details.causes = conflicts
        .iter()
        .map(|c| StatusCause {
            reason: "FieldManagerConflict".into(),
            message: format!("conflict with {}", c.manager),
            field: c.field.clone(),
        })
        .collect();
    st.into()
}
