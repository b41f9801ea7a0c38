//! Per-kind behaviour behind the verbs: the one place that tells built-in kinds, the CRD
//! kind and custom resources apart. Verbs call these; they never match on the behaviour
//! themselves.

use bytes::Bytes;
use serde_json::{Value, json};
use wasmgate_apimachinery::options::FieldValidation;
use wasmgate_apimachinery::schema;
use wasmgate_apimachinery::status::Status;
use wasmgate_apimachinery::table::{self, ColumnDefinition};
use wasmgate_apimachinery::validation::FieldError;

use crate::custom::{self, CustomVersion};
use crate::error::{ApiError, ApiResult};
use crate::openapi::builtin_definitions;
use crate::registry::{Behavior, Builtin};
use crate::verbs::{Ctx, Obj};
use crate::{builtin, crd};

impl Ctx {
    /// The requested version of a custom resource type.
    pub(crate) fn custom_version(&self) -> Option<&CustomVersion> {
        self.rt.custom()?.version(&self.req.version)
    }

    /// Whether the request is for a custom resource.
    pub(crate) fn is_custom(&self) -> bool {
        self.rt.custom().is_some()
    }

    /// Unknown and duplicate fields (`FV-01`..`FV-06`): 400 under Strict, `Warning`s under
    /// Warn, silence under Ignore; unknown fields are pruned in every mode. For built-in
    /// kinds, type errors are 400 here; for custom resources, defaults of the request's
    /// version are applied (`CRDV-04`) and type errors come later as 422 causes.
    pub(crate) fn check_fields_into(
        &self,
        obj: &mut Value,
        duplicates: &[String],
        mode: FieldValidation,
        warnings: &mut Vec<String>,
    ) -> ApiResult<()> {
        let unknown = match &self.rt.behavior {
            Behavior::Builtin(_) => {
                let defs = builtin_definitions();
                let root = json!({"$ref": format!("#/components/schemas/{}", self.rt.schema_name)});
                let report = schema::check(obj, &root, defs);
                if let Some(e) = report.type_error {
                    return Err(Status::bad_request(schema::type_error_message(
                        &self.rt.kind,
                        &self.req.version,
                        &e,
                    ))
                    .into());
                }
                report.unknown
            }
            Behavior::Custom(_) => {
                let ver = self
                    .custom_version()
                    .ok_or_else(|| ApiError::from(Status::not_found_path()))?;
                let unknown = ver.schema.prune(obj);
                ver.schema.apply_defaults(obj);
                unknown
            }
        };
        let mut problems: Vec<String> = unknown
            .iter()
            .map(|p| format!("unknown field {p:?}"))
            .collect();
        problems.extend(duplicates.iter().map(|p| format!("duplicate field {p:?}")));
        match mode {
            FieldValidation::Ignore => {}
            FieldValidation::Warn => warnings.extend(problems),
            FieldValidation::Strict if !problems.is_empty() => {
                return Err(Status::bad_request(format!(
                    "strict decoding error: {}",
                    problems.join(", ")
                ))
                .into());
            }
            FieldValidation::Strict => {}
        }
        Ok(())
    }

    /// PrepareForCreate of the kind.
    pub(crate) fn prepare_create(&self, obj: &mut Value) {
        match &self.rt.behavior {
            Behavior::Builtin(Builtin::CustomResourceDefinition) => crd::prepare_for_create(obj),
            Behavior::Builtin(_) => builtin::prepare_for_create(&self.rt, obj),
            Behavior::Custom(_) => {
                if let Some(v) = self.custom_version() {
                    custom::prepare_for_create(v, obj);
                }
            }
        }
    }

    /// PrepareForUpdate of the kind (main resource or subresource).
    pub(crate) fn prepare_update(&self, new: &mut Value, old: &Value) {
        let sub = self.req.subresource.as_deref();
        match &self.rt.behavior {
            Behavior::Builtin(Builtin::CustomResourceDefinition) => {
                crd::prepare_for_update(new, old, sub)
            }
            Behavior::Builtin(_) => builtin::prepare_for_update(&self.rt, new, old, sub),
            Behavior::Custom(_) => {
                if let Some(v) = self.custom_version() {
                    custom::prepare_for_update(v, new, old, sub);
                }
            }
        }
    }

    /// Validation of the kind (422 causes), for a create (`old` is `None`) or an update.
    pub(crate) fn validate_object(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        match &self.rt.behavior {
            Behavior::Builtin(Builtin::CustomResourceDefinition) => {
                let mut errs = crd::validate(obj, old);
                if let Some(old) = old {
                    errs.extend(builtin::validate_meta_update(obj, old));
                }
                if errs.is_empty() {
                    errs = crd::collisions(obj, &self.inner.registry.snapshot());
                }
                errs
            }
            Behavior::Builtin(_) => builtin::validate(&self.rt, obj, old),
            Behavior::Custom(_) => match self.custom_version() {
                Some(v) => {
                    let mut errs =
                        custom::validate(v, &self.rt, obj, old, self.req.subresource.as_deref());
                    if let Some(old) = old {
                        errs.extend(builtin::validate_meta_update(obj, old));
                    }
                    errs
                }
                None => Vec::new(),
            },
        }
    }

    /// The object as stored: custom resources are stored at the storage version
    /// (conversion strategy `None`: only `apiVersion` changes, `CONV-02`).
    pub(crate) fn to_storage(&self, obj: &mut Value) {
        if self.is_custom() && self.req.version != self.rt.storage_version {
            custom::set_version(obj, &self.rt.group, &self.rt.storage_version);
        }
    }

    /// How stored objects are shown at the request's version (`None`: as stored). It copies
    /// the storage version's schema: build it once per request and borrow it.
    pub(crate) fn presenter(&self) -> Option<Presenter> {
        let c = self.rt.custom()?;
        Some(Presenter {
            prefix: format!(
                "{{\"apiVersion\":\"{}/{}\"",
                self.rt.group, self.req.version
            ),
            group: self.rt.group.clone(),
            version: self.req.version.clone(),
            defaults: c
                .storage()
                .filter(|s| s.has_defaults)
                .map(|s| s.schema.clone()),
        })
    }

    /// A stored object as the request's version shows it (`CONV-01`): see [`Presenter`].
    pub(crate) fn present(&self, raw: Bytes) -> ApiResult<Obj> {
        present_stored(self.presenter().as_ref(), raw)
    }

    /// Table columns of the kind at the request's version (`TABLE-05`).
    pub(crate) fn table_columns(&self) -> Vec<ColumnDefinition> {
        match self.custom_version() {
            Some(v) => custom::columns(v),
            None => table::columns_for(&self.rt.group, &self.rt.resource),
        }
    }

    /// Table cells of one object.
    pub(crate) fn table_cells(&self, obj: &Value, now: time::OffsetDateTime) -> Vec<Value> {
        match self.custom_version() {
            Some(v) => custom::cells(v, obj, now),
            None => table::cells_for(&self.rt.group, &self.rt.resource, obj, now),
        }
    }

    /// Whether a successful delete answers with the deleted object (custom resources, as
    /// kube-apiserver's CR store does) rather than a success Status.
    pub(crate) fn delete_returns_object(&self) -> bool {
        self.is_custom()
    }
}

/// Stored bytes as `presenter` shows them (`None`: as stored): the bytes themselves when
/// they need no change, else the decoded and changed object.
pub(crate) fn present_stored(presenter: Option<&Presenter>, raw: Bytes) -> ApiResult<Obj> {
    match presenter {
        Some(p) if p.needs(&raw) => {
            let mut obj = crate::object::from_stored(&raw).map_err(ApiError::internal)?;
            p.apply(&mut obj);
            Ok(Obj::Value(obj))
        }
        _ => Ok(Obj::Raw(raw)),
    }
}

/// [`present_stored`] for stored bytes already decoded into `obj`.
pub(crate) fn present_decoded(presenter: Option<&Presenter>, raw: Bytes, mut obj: Value) -> Obj {
    match presenter {
        Some(p) if p.needs(&raw) => {
            p.apply(&mut obj);
            Obj::Value(obj)
        }
        _ => Obj::Raw(raw),
    }
}

/// A decoded object in its stored form, changed as `presenter` shows it.
pub(crate) fn present_value(presenter: Option<&Presenter>, mut obj: Value) -> Obj {
    if let Some(p) = presenter {
        p.apply(&mut obj);
    }
    Obj::Value(obj)
}

/// Shows stored custom resources at a requested version: stored bytes pass through
/// untouched when they already are that version and need no read-time defaulting;
/// otherwise the storage version's defaults are applied (`CRDV-04`) and `apiVersion` is
/// rewritten (conversion strategy `None`, `CONV-01`, `CONV-02`).
pub(crate) struct Presenter {
    prefix: String,
    group: String,
    version: String,
    defaults: Option<wasmgate_apimachinery::structural::Schema>,
}

impl Presenter {
    /// Whether stored bytes must be decoded and changed to be shown.
    pub(crate) fn needs(&self, raw: &[u8]) -> bool {
        self.defaults.is_some() || !raw.starts_with(self.prefix.as_bytes())
    }

    /// Changes a decoded stored object into its shown form.
    pub(crate) fn apply(&self, obj: &mut Value) {
        if let Some(s) = &self.defaults {
            s.apply_defaults(obj);
        }
        custom::set_version(obj, &self.group, &self.version);
    }
}
