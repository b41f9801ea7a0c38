//! The write path create, update, patch, apply and delete share: the namespace guard,
//! `BeforeUpdate`, the guaranteed update (read, compute, compare-and-swap, retry),
//! admission (`wasmgate_admission::chain`, asked with the write's attributes), and what
//! a committed write waits for.

use serde_json::Value;
use wasmgate_admission::chain::{self, Admission, Change};
use wasmgate_apimachinery::options::FieldValidation;
use wasmgate_apimachinery::status::{Status, Target};
use wasmgate_apimachinery::validation::{self as v, FieldError};
use wasmgate_storage::{Precondition, Write, WriteOp};

use super::{Ctx, managed};
use crate::error::{ApiError, ApiResult, storage_error};
use crate::kinds::Obj;
use crate::object::{self, meta, meta_str};

impl Ctx {
    /// 422 for validation errors.
    pub(crate) fn invalid(&self, name: &str, errors: &[FieldError]) -> ApiError {
        Status::invalid(&self.rt.kind, &self.rt.group, name, errors).into()
    }

    /// A namespace must exist and not be terminating to receive new objects. Returns the
    /// namespace's revision, which the create then guards on.
    pub(crate) async fn ensure_namespace_accepts_creates(
        &self,
        ns: &str,
        name: &str,
    ) -> ApiResult<u64> {
        let key = format!("core/namespaces//{ns}");
        let ns_target = Target {
            group: "",
            resource: "namespaces",
            name: ns,
        };
        let found = self.read_latest_at(&key, ns_target).await?;
        let nsobj = object::from_stored(&found.value).map_err(ApiError::internal)?;
        if object::is_deleting(&nsobj) {
            let mut s = Status::forbidden(
                self.target(name),
                &format!(
                    "unable to create new content in namespace {ns} because it is being terminated"
                ),
            );
            s.details.causes = vec![wasmgate_apimachinery::status::StatusCause {
                reason: "NamespaceTerminating".into(),
                message: format!("namespace {ns} is being terminated"),
                field: "metadata.namespace".into(),
            }];
            return Err(s.into());
        }
        Ok(found.revision)
    }

    /// What kube-apiserver's `BeforeUpdate` does: system fields come from the stored
    /// object, the strategy prepares the rest, then the object is validated.
    pub(crate) fn before_update(&self, new: &mut Value, old: &Value) -> ApiResult<()> {
        // The writer's ownership first: kube's field manager runs before the strategy
        // (and takes a `managedFields` reset out before validation sees it).
        if !self.applying {
            managed::record_update(self, Some(old), new);
        }
        {
            let old_meta = meta(old);
            let m = object::meta_mut(new);
            if m.get("uid")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
                && let Some(uid) = old_meta.get("uid")
            {
                m.insert("uid".into(), uid.clone());
            }
            for f in [
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
            ] {
                match old_meta.get(f) {
                    Some(v) => {
                        m.insert(f.into(), v.clone());
                    }
                    None => {
                        m.remove(f);
                    }
                }
            }
            m.remove("selfLink");
            if m.get("namespace").is_none()
                && let Some(ns) = old_meta.get("namespace")
            {
                m.insert("namespace".into(), ns.clone());
            }
        }
        self.kind().prepare_update(new, old);
        let name = meta_str(old, "name").unwrap_or("").to_owned();
        let errs = self.kind().validate_object(new, Some(old));
        if !errs.is_empty() {
            return Err(self.invalid(&name, &errs));
        }
        Ok(())
    }

    /// kube's GuaranteedUpdate: read the current object, compute the new one, write it
    /// guarded by the revision read; on a conflict, retry unless the client pinned a
    /// `resourceVersion`. An object whose last finalizer is removed while it is being
    /// deleted is deleted. Returns the object as the request's version shows it: as stored
    /// (or as it would be, on a dry run), or unchanged when the update changes nothing.
    ///
    /// `pinned`: the client set `metadata.resourceVersion` (in a PUT body or in a patch),
    /// making it a precondition: a mismatch is 409, never retried (`UPD-02`).
    pub(crate) async fn guaranteed_update(
        &self,
        name: &str,
        dry_run: bool,
        pinned: bool,
        mut compute: impl FnMut(&Value) -> ApiResult<Value>,
    ) -> ApiResult<Obj> {
        let key = self.key(name);
        let target = self.target(name);
        let presenter = self.kind().presenter();
        for _ in 0..64 {
            let cur = self.read_latest_at(&key, target).await?;
            let mut cur_obj = object::from_stored(&cur.value).map_err(ApiError::internal)?;
            // At the storage version, when the request is at another one and plugins may
            // see it (else admission converts what the request's version shows).
            let mut cur_stored = None;
            let presented = match &presenter {
                Some(p) if p.needs(&cur.value) => {
                    if !self.inner.plugins().snapshot().is_empty()
                        && self.kind().versions().is_some()
                    {
                        cur_stored = p.storage_form(&cur_obj);
                    }
                    p.apply(&mut cur_obj).await?;
                    true
                }
                _ => false,
            };
            let mut new = compute(&cur_obj)?;
            if pinned && let Some(rv) = meta_str(&new, "resourceVersion") {
                // Not a revision at all: the request is wrong, not late (a 409 would make
                // clients retry for ever).
                if let Err(e) = rv.parse::<u64>() {
                    return Err(Status::bad_request(format!(
                        "metadata.resourceVersion: Invalid value: {}: strconv.ParseUint: parsing {}: {}",
                        wasmgate_apimachinery::validation::go_quote(rv),
                        wasmgate_apimachinery::validation::go_quote(rv),
                        if matches!(e.kind(), std::num::IntErrorKind::PosOverflow) {
                            "value out of range"
                        } else {
                            "invalid syntax"
                        }
                    ))
                    .into());
                }
            }
            if pinned
                && meta_str(&new, "resourceVersion") != Some(cur.revision.to_string().as_str())
            {
                return Err(storage_error(
                    wasmgate_storage::StorageError::Conflict {
                        key: key.clone(),
                        expected: 0,
                        actual: cur.revision,
                    },
                    target,
                ));
            }
            let stored = self
                .admit(
                    crate::plugins::Op::Update,
                    &mut new,
                    Some(&cur_obj),
                    cur_stored.as_ref(),
                    dry_run,
                    true,
                    0,
                )
                .await?;
            object::set_resource_version(&mut new, cur.revision);
            // No change: no write, no new resourceVersion (kubectl prints "unchanged") —
            // unless the stored form is stale (an old encryption key): then it is written
            // again, as kube does, so that rewriting objects moves them to the current key.
            if object::same_content(&new, &cur_obj)
                && (dry_run
                    || !self
                        .inner
                        .store()
                        .stale(&key)
                        .await
                        .map_err(|e| storage_error(e, target))?)
            {
                return Ok(if presented {
                    Obj::Value(cur_obj)
                } else {
                    Obj::Raw(cur.value)
                });
            }
            if dry_run {
                return Ok(Obj::Value(new));
            }
            self.store_form(&mut new, stored).await?;
            // The revision read, in the storage form too.
            object::set_resource_version(&mut new, cur.revision);
            let finished = crate::object::removal_due(&new);
            let op = if finished {
                WriteOp::Delete(object::to_stored(&new))
            } else {
                WriteOp::Put(object::to_stored(&new))
            };
            match self
                .inner
                .store()
                .write(Write::new(
                    key.clone(),
                    Precondition::Revision(cur.revision),
                    op,
                ))
                .await
            {
                Ok(c) if !finished => {
                    self.after_write(c.revision).await;
                    // The object just stored, with its revision: its bytes need no decoding.
                    object::set_resource_version(&mut new, c.revision);
                    return crate::kinds::present_decoded(presenter.as_ref(), c.value, new).await;
                }
                Ok(c) => {
                    self.after_write(c.revision).await;
                    return crate::kinds::present_stored(presenter.as_ref(), c.value).await;
                }
                Err(wasmgate_storage::StorageError::Conflict { .. }) if !pinned => {
                    continue;
                }
                Err(e) => return Err(storage_error(e, target)),
            }
        }
        Err(Status::conflict(target, "the object kept changing; please apply your changes to the latest version and try again").into())
    }
}

impl Ctx {
    /// Admission of a create or update (`old`: the stored object): mutating plugins, the
    /// kind's validation of the object as they left it (pruned and defaulted again when
    /// they changed it), validating plugins — kube's order. `validated`: the caller already
    /// validated the object (updates do, in `before_update`), so only a mutated object is
    /// validated again. `size`: the request body's, for [`cpu_bound`]. `old_stored`: `old`
    /// as stored, when at hand.
    ///
    /// Returns the object at the storage version when admission already converted it for
    /// the plugins ([`Ctx::store_form`] takes it instead of converting again).
    #[allow(
        clippy::too_many_arguments,
        reason = "the write as admission needs it: the old object in both forms, the options"
    )]
    pub(crate) async fn admit(
        &self,
        op: crate::plugins::Op,
        obj: &mut Value,
        old: Option<&Value>,
        old_stored: Option<&Value>,
        dry_run: bool,
        validated: bool,
        size: usize,
    ) -> ApiResult<Option<Value>> {
        let mut adm = self
            .admission(op, Some(obj), old, old_stored, dry_run)
            .await?;
        let result = self
            .admit_with(adm.as_mut(), obj, old, validated, size)
            .await;
        if let Some(a) = adm.as_mut() {
            self.add_audit_annotations(a.take_annotations());
        }
        result?;
        Ok(adm.and_then(|a| a.into_stored_form(obj)))
    }

    /// `obj` as stored: `stored` when admission already converted this very object (see
    /// [`Ctx::admit`]), else converted now.
    pub(crate) async fn store_form(&self, obj: &mut Value, stored: Option<Value>) -> ApiResult<()> {
        match stored {
            Some(s) => {
                *obj = s;
                Ok(())
            }
            None => self.kind().to_storage(obj).await,
        }
    }

    /// [`Ctx::admit`] with the admission built.
    async fn admit_with(
        &self,
        mut adm: Option<&mut Admission>,
        obj: &mut Value,
        old: Option<&Value>,
        validated: bool,
        size: usize,
    ) -> ApiResult<()> {
        let mut warnings = Vec::new();
        let mut mutated = Change::None;
        if let Some(a) = adm.as_deref_mut() {
            mutated = a.mutate(obj, &mut warnings).await?;
            if mutated == Change::LabelsOnly && self.kind().validation_reads_labels() {
                mutated = Change::Object;
            }
            if mutated == Change::Object {
                let mut ignored = Vec::new();
                self.kind()
                    .check_fields_into(obj, &[], FieldValidation::Ignore, &mut ignored)?;
            }
        }
        if mutated == Change::LabelsOnly && validated {
            // Only labels and annotations changed since the object was validated: their
            // own checks, as ObjectMeta's validation makes them, and no schema pass.
            let m = meta(obj);
            let null = Value::Null;
            let mut errs = v::validate_labels(m.get("labels").unwrap_or(&null), "metadata.labels");
            errs.extend(v::validate_annotations(
                m.get("annotations").unwrap_or(&null),
                "metadata.annotations",
            ));
            if !errs.is_empty() {
                return Err(self.invalid(meta_str(obj, "name").unwrap_or(""), &errs));
            }
        } else if mutated != Change::None || !validated {
            cpu_bound(size, || {
                let errs = self.kind().validate_object(obj, old);
                if errs.is_empty() {
                    Ok(())
                } else {
                    Err(self.invalid(meta_str(obj, "name").unwrap_or(""), &errs))
                }
            })?;
        }
        if matches!(
            self.rt.builtin(),
            Some(
                crate::registry::Builtin::Role
                    | crate::registry::Builtin::RoleBinding
                    | crate::registry::Builtin::ClusterRole
                    | crate::registry::Builtin::ClusterRoleBinding
            )
        ) {
            let index = self.inner.rbac().borrow().clone();
            crate::rbac::confirm_no_escalation(
                &index,
                &self.user,
                &self.rt.resource,
                self.namespace().unwrap_or(""),
                self.req.name.as_deref().unwrap_or(""),
                obj,
                old,
            )?;
        }
        if let Some(a) = adm {
            a.validate(Some(obj), &mut warnings).await?;
        }
        self.add_late_warnings(warnings);
        Ok(())
    }

    /// Validating admission of a delete of `old`.
    /// `old` is as stored: admission sees it as reads show it (at the request's version,
    /// defaulted); plugins at the storage version.
    pub(crate) async fn admit_delete(&self, old: &Value, dry_run: bool) -> ApiResult<()> {
        let op = crate::plugins::Op::Delete;
        if !chain::configured(&*self.inner, &self.rt.group) {
            return Ok(());
        }
        let presenter = self.kind().presenter();
        let (shown, stored) = match &presenter {
            Some(p) => {
                let mut shown = old.clone();
                p.apply(&mut shown).await?;
                (std::borrow::Cow::Owned(shown), p.storage_form(old))
            }
            None => (std::borrow::Cow::Borrowed(old), None),
        };
        let Some(mut adm) = self
            .admission(op, None, Some(&shown), stored.as_ref(), dry_run)
            .await?
        else {
            return Ok(());
        };
        let mut warnings = Vec::new();
        let result = adm.validate(None, &mut warnings).await;
        self.add_audit_annotations(adm.take_annotations());
        result?;
        self.add_late_warnings(warnings);
        Ok(())
    }

    /// The admission chain of this request's write (`obj`: the new object, `old`: the
    /// stored one for updates and deletes, at the request's version; `old_stored`: the same
    /// at the storage version, when at hand); `None` when nothing admits it.
    async fn admission(
        &self,
        op: crate::plugins::Op,
        obj: Option<&Value>,
        old: Option<&Value>,
        old_stored: Option<&Value>,
        dry_run: bool,
    ) -> ApiResult<Option<Admission>> {
        let attrs = chain::Attributes {
            group: &self.rt.group,
            version: &self.req.version,
            kind: &self.rt.kind,
            resource: &self.rt.resource,
            subresource: self.req.subresource.as_deref(),
            namespaced: self.rt.namespaced,
            served_versions: &self.rt.versions,
            namespace: self.namespace(),
            name: self.name(),
            operation: op,
            object: obj,
            old_object: old,
            old_stored,
            user: &self.user,
            dry_run,
        };
        let storage = || {
            self.kind()
                .versions()
                .map(|v| Box::new(v) as Box<dyn chain::VersionConverter>)
        };
        Admission::new(self.inner.clone(), &attrs, storage).await
    }

    /// After a committed write: writes to CRDs return once the registry serves the change
    /// (`CRD-02`: a created CRD's endpoints exist when `create` returns). Not status
    /// writes: what is served does not depend on them, and the CRD controller makes them
    /// while the registry waits for it.
    pub(crate) async fn after_write(&self, revision: u64) {
        use crate::registry::Builtin;
        match self.rt.builtin() {
            Some(Builtin::CustomResourceDefinition)
                if self.req.subresource.as_deref() != Some("status") =>
            {
                crate::crd_controller::wait_synced(&self.inner, revision).await;
            }
            // The next request is authorized with this role or binding.
            Some(
                Builtin::Role
                | Builtin::RoleBinding
                | Builtin::ClusterRole
                | Builtin::ClusterRoleBinding,
            ) => crate::rbac::wait_for(&self.inner, revision).await,
            // The next request is admitted with this webhook configuration.
            Some(
                Builtin::MutatingWebhookConfiguration
                | Builtin::ValidatingWebhookConfiguration
                | Builtin::ValidatingAdmissionPolicyBinding,
            ) => {
                wasmgate_admission::configuration::wait_for(&self.inner, revision).await;
            }
            // Not status writes: the controller that makes them is the one waited for.
            Some(Builtin::ValidatingAdmissionPolicy)
                if self.req.subresource.as_deref() != Some("status") =>
            {
                wasmgate_admission::configuration::wait_for(&self.inner, revision).await;
            }
            Some(Builtin::ApiService) if self.req.subresource.as_deref() != Some("status") => {
                crate::aggregator::wait_for(&self.inner, revision).await;
            }
            _ => {}
        }
    }
}

/// Bodies from this size on are decoded and validated off the async workers' queue.
const CPU_BOUND_BODY_BYTES: usize = 256 * 1024;

/// Runs the CPU-heavy part of a request with a body of `size` bytes (decoding, pruning,
/// validation: tens of milliseconds for a few MiB) so that it does not starve the other
/// tasks of its runtime worker: on a multi-threaded runtime the worker first hands them to
/// another thread (`block_in_place`). Small bodies run inline, where that hand-over would
/// cost more than the work.
pub(crate) fn cpu_bound<T>(size: usize, work: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let multi_thread =
        Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    if size >= CPU_BOUND_BODY_BYTES && multi_thread {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}
