//! `metadata.managedFields` (kube's field manager): who owns which fields, recorded for
//! every write — as `Update` entries for creates, updates and patches here, as `Apply`
//! entries by server-side apply (`apply.rs`) — over the type's merge shape.

use http::header;
use serde_json::{Value, json};
use wasmgate_apimachinery::fieldset::managed::ManagedFields;
use wasmgate_apimachinery::fieldset::{Comparison, FieldSet, PathElement, Shape, builtin_shape};

use super::Ctx;
use crate::object::{self, meta_mut};

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

/// How this type's values merge and are owned (built once per custom resource version
/// and per built-in kind).
pub(super) fn shape(ctx: &Ctx) -> std::sync::Arc<Shape> {
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
pub(super) fn ignored(ctx: &Ctx) -> FieldSet {
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

/// Writes `managed` into `obj`'s `metadata.managedFields` (none: removes them).
pub(super) fn set_managed(obj: &mut Value, managed: &ManagedFields) {
    match managed.encode() {
        Some(m) => {
            meta_mut(obj).insert("managedFields".into(), m);
        }
        None => {
            meta_mut(obj).remove("managedFields");
        }
    }
}
