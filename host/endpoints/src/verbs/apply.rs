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
use wasmgate_apimachinery::fieldset::Comparison;
use wasmgate_apimachinery::fieldset::apply::{Apply, Conflict, conflict_message};
use wasmgate_apimachinery::fieldset::last_applied;
use wasmgate_apimachinery::fieldset::managed::ManagedFields;
use wasmgate_apimachinery::json as wjson;
use wasmgate_apimachinery::options::WriteOptions;
use wasmgate_apimachinery::status::{Status, StatusCause};
use wasmgate_apimachinery::validation::FieldError;

use super::Ctx;
use super::managed::{ignored, set_managed, shape};
use crate::body::Body;
use crate::error::{ApiError, ApiResult};
use crate::object::{self, meta_str};

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
