//! Per-kind behaviour behind the verbs: the one place that tells built-in kinds, the CRD
//! kind and custom resources apart. Verbs call these; they never match on the behaviour
//! themselves.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};
use wasmgate_apimachinery::options::FieldValidation;
use wasmgate_apimachinery::schema;
use wasmgate_apimachinery::status::Status;
use wasmgate_apimachinery::table::{self, ColumnDefinition};
use wasmgate_apimachinery::validation::FieldError;

use crate::Context;
use crate::custom::{self, CustomVersion};
use crate::error::{ApiError, ApiResult};
use crate::openapi::builtin_definitions;
use crate::registry::{Behavior, Builtin, ResourceType};
use crate::{builtin, crd};
pub(crate) use wasmgate_apiextensions::conversion::{Converter, Versions};

/// The kind a request is for, as served at the request's version: its strategy (kube's
/// `RESTCreateStrategy` and `RESTUpdateStrategy`: field checks, `PrepareFor*`, `Validate*`),
/// how its objects are stored and shown, its table. The one place that tells built-in
/// kinds, the CRD kind and custom resources apart.
pub(crate) struct Kind<'a> {
    pub(crate) rt: &'a ResourceType,
    /// The request's version.
    pub(crate) version: &'a str,
    pub(crate) subresource: Option<&'a str>,
    /// The server: the served types (a CRD's name collisions), conversion's plugins and
    /// outbound client.
    pub(crate) server: &'a Arc<dyn Context>,
}

impl<'a> Kind<'a> {
    /// The requested version of a custom resource type.
    pub(crate) fn custom_version(&self) -> Option<&'a CustomVersion> {
        self.rt.custom()?.version(self.version)
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
                        self.version,
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
            Behavior::Builtin(_) => builtin::prepare_for_create(self.rt, obj),
            Behavior::Custom(_) => {
                if let Some(v) = self.custom_version() {
                    custom::prepare_for_create(v, obj);
                }
            }
        }
    }

    /// PrepareForUpdate of the kind (main resource or subresource).
    pub(crate) fn prepare_update(&self, new: &mut Value, old: &Value) {
        let sub = self.subresource;
        match &self.rt.behavior {
            Behavior::Builtin(Builtin::CustomResourceDefinition) => {
                crd::prepare_for_update(new, old, sub)
            }
            Behavior::Builtin(_) => builtin::prepare_for_update(self.rt, new, old, sub),
            Behavior::Custom(_) => {
                if let Some(v) = self.custom_version() {
                    custom::prepare_for_update(v, new, old, sub);
                }
            }
        }
    }

    /// Whether the kind's validation reads labels or annotations beyond ObjectMeta's
    /// own checks of them (a Secret's service-account annotation): then a mutation of
    /// them needs the whole validation again (`Change::LabelsOnly`).
    pub(crate) fn validation_reads_labels(&self) -> bool {
        matches!(self.rt.builtin(), Some(Builtin::Secret))
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
                    errs = crd::collisions(obj, &self.server.types().snapshot());
                }
                errs
            }
            Behavior::Builtin(_) => builtin::validate(self.rt, obj, old),
            Behavior::Custom(_) => match self.custom_version() {
                Some(v) => {
                    let mut errs = custom::validate(v, self.rt, obj, old, self.subresource);
                    if let Some(old) = old {
                        errs.extend(builtin::validate_meta_update(obj, old));
                    }
                    errs
                }
                None => Vec::new(),
            },
        }
    }

    /// The object as stored: custom resources are stored at the storage version,
    /// converted by the CRD's Wasm plugin, or else only `apiVersion` changes (`CONV-02`).
    pub(crate) async fn to_storage(&self, obj: &mut Value) -> ApiResult<()> {
        if let Some(v) = self.versions() {
            *obj = v.to_storage(std::mem::take(obj)).await?;
        } else if let Some(n) = Native::of(self.rt) {
            *obj = (n.to_stored)(std::mem::take(obj));
        }
        Ok(())
    }

    /// How objects move between the request's version and the storage version of a
    /// custom resource; `None` when the two are the same (or for built-in kinds, which
    /// have one version).
    pub(crate) fn versions(&self) -> Option<Versions> {
        if !self.is_custom() || self.version == self.rt.storage_version {
            return None;
        }
        Some(Versions::new(
            &self.rt.group,
            self.version,
            &self.rt.storage_version,
            self.converter(),
        ))
    }

    fn converter(&self) -> Option<Converter> {
        let conversion = self.rt.custom()?.conversion.clone()?;
        Some(Converter::new(
            self.server.clone(),
            conversion,
            &self.rt.kind,
        ))
    }

    /// How stored objects are shown at the request's version (`None`: as stored). It copies
    /// the storage version's schema: build it once per request and borrow it.
    pub(crate) fn presenter(&self) -> Option<Presenter> {
        if let Some(n) = Native::of(self.rt) {
            return Some(Presenter {
                prefix: String::new(),
                group: self.rt.group.clone(),
                version: self.version.to_owned(),
                storage_api_version: String::new(),
                defaults: None,
                converter: None,
                native: Some(n.to_shown),
            });
        }
        let c = self.rt.custom()?;
        Some(Presenter {
            prefix: format!("{{\"apiVersion\":\"{}/{}\"", self.rt.group, self.version),
            group: self.rt.group.clone(),
            version: self.version.to_owned(),
            storage_api_version: format!("{}/{}", self.rt.group, self.rt.storage_version),
            defaults: c
                .storage()
                .filter(|s| s.has_defaults)
                .map(|s| s.schema.clone()),
            converter: self.converter(),
            native: None,
        })
    }

    /// A stored object as the request's version shows it (`CONV-01`): see [`Presenter`].
    pub(crate) async fn present(&self, raw: Bytes) -> ApiResult<Obj> {
        present_stored(self.presenter().as_ref(), raw).await
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

/// A stored object: raw bytes (served as is when possible) or a decoded value.
pub(crate) enum Obj {
    Raw(Bytes),
    Value(Value),
}

impl Obj {
    pub(crate) fn value(&self) -> ApiResult<std::borrow::Cow<'_, Value>> {
        match self {
            Obj::Value(v) => Ok(std::borrow::Cow::Borrowed(v)),
            Obj::Raw(b) => crate::object::from_stored(b)
                .map(std::borrow::Cow::Owned)
                .map_err(|e| ApiError::internal(format!("stored object is not JSON: {e}"))),
        }
    }
}

/// Stored bytes as `presenter` shows them (`None`: as stored): the bytes themselves when
/// they need no change, else the decoded and changed object.
pub(crate) async fn present_stored(presenter: Option<&Presenter>, raw: Bytes) -> ApiResult<Obj> {
    match presenter {
        Some(p) if p.needs(&raw) => {
            let mut obj = crate::object::from_stored(&raw).map_err(ApiError::internal)?;
            p.apply(&mut obj).await?;
            Ok(Obj::Value(obj))
        }
        _ => Ok(Obj::Raw(raw)),
    }
}

/// [`present_stored`] for stored bytes already decoded into `obj`.
pub(crate) async fn present_decoded(
    presenter: Option<&Presenter>,
    raw: Bytes,
    mut obj: Value,
) -> ApiResult<Obj> {
    match presenter {
        Some(p) if p.needs(&raw) => {
            p.apply(&mut obj).await?;
            Ok(Obj::Value(obj))
        }
        _ => Ok(Obj::Raw(raw)),
    }
}

/// [`present_stored`] for many objects (stored bytes, decoded when already at hand),
/// converted by one plugin call.
pub(crate) async fn present_many(
    presenter: Option<&Presenter>,
    items: Vec<(Bytes, Option<Value>)>,
) -> ApiResult<Vec<Obj>> {
    let Some(p) = presenter else {
        return Ok(items.into_iter().map(|(raw, _)| Obj::Raw(raw)).collect());
    };
    let mut out: Vec<Option<Obj>> = Vec::with_capacity(items.len());
    let mut todo = Vec::new();
    let mut values = Vec::new();
    for (i, (raw, obj)) in items.into_iter().enumerate() {
        if p.needs(&raw) {
            let obj = match obj {
                Some(o) => o,
                None => crate::object::from_stored(&raw).map_err(ApiError::internal)?,
            };
            todo.push(i);
            values.push(obj);
            out.push(None);
        } else {
            out.push(Some(Obj::Raw(raw)));
        }
    }
    p.apply_all(&mut values).await?;
    for (i, v) in todo.into_iter().zip(values) {
        out[i] = Some(Obj::Value(v));
    }
    Ok(out.into_iter().flatten().collect())
}

/// A decoded object in its stored form, changed as `presenter` shows it.
pub(crate) async fn present_value(presenter: Option<&Presenter>, mut obj: Value) -> ApiResult<Obj> {
    if let Some(p) = presenter {
        p.apply(&mut obj).await?;
    }
    Ok(Obj::Value(obj))
}

/// Shows stored custom resources at a requested version: stored bytes pass through
/// untouched when they already are that version and need no read-time defaulting;
/// otherwise the storage version's defaults are applied (`CRDV-04`) and the object is
/// converted: by the CRD's Wasm plugin, or else by rewriting `apiVersion` (conversion
/// strategy `None`, `CONV-01`, `CONV-02`).
pub(crate) struct Presenter {
    prefix: String,
    group: String,
    version: String,
    /// `group/version` objects are stored at now.
    storage_api_version: String,
    defaults: Option<wasmgate_apimachinery::structural::Schema>,
    converter: Option<Converter>,
    /// A built-in view of another resource's objects: stored in that resource's form,
    /// shown converted by this ([`Native`]).
    native: Option<fn(Value) -> Value>,
}

impl Presenter {
    /// Whether stored bytes must be decoded and changed to be shown.
    pub(crate) fn needs(&self, raw: &[u8]) -> bool {
        self.native.is_some() || self.defaults.is_some() || !raw.starts_with(self.prefix.as_bytes())
    }

    /// A decoded stored object as admission plugins see it (at the storage version, with
    /// the storage version's defaults, as reads show it), without a conversion: `None`
    /// when it lies at another version (written under an earlier storage version).
    pub(crate) fn storage_form(&self, stored: &Value) -> Option<Value> {
        if self.native.is_some() {
            return None;
        }
        if stored.get("apiVersion").and_then(Value::as_str) != Some(&self.storage_api_version) {
            return None;
        }
        let mut obj = stored.clone();
        if let Some(s) = &self.defaults {
            s.apply_defaults(&mut obj);
        }
        Some(obj)
    }

    /// Changes a decoded stored object into its shown form.
    pub(crate) async fn apply(&self, obj: &mut Value) -> ApiResult<()> {
        self.apply_all(std::slice::from_mut(obj)).await
    }

    /// [`Presenter::apply`] for many objects: one plugin call converts them all.
    pub(crate) async fn apply_all(&self, objs: &mut [Value]) -> ApiResult<()> {
        if let Some(show) = self.native {
            for o in objs.iter_mut() {
                *o = show(std::mem::take(o));
            }
            return Ok(());
        }
        if let Some(s) = &self.defaults {
            for o in objs.iter_mut() {
                s.apply_defaults(o);
            }
        }
        let desired = format!("{}/{}", self.group, self.version);
        if let Some(conv) = &self.converter {
            let todo: Vec<usize> = (0..objs.len())
                .filter(|&i| objs[i].get("apiVersion").and_then(Value::as_str) != Some(&desired))
                .collect();
            if !todo.is_empty() {
                let batch = todo.iter().map(|&i| std::mem::take(&mut objs[i])).collect();
                let out = conv.convert(batch, &desired).await?;
                for (i, o) in todo.into_iter().zip(out) {
                    objs[i] = o;
                }
            }
            return Ok(());
        }
        for o in objs.iter_mut() {
            custom::set_version(o, &self.group, &self.version);
        }
        Ok(())
    }
}

/// How a built-in view of another resource's objects ([`ResourceType::storage_group`])
/// moves them between its form and the stored one: natively, both ways, by fixed rules
/// (kube's generated conversions).
///
/// [`ResourceType::storage_group`]: crate::registry::ResourceType::storage_group
#[derive(Clone, Copy)]
pub(crate) struct Native {
    /// This view's form to the stored form.
    pub(crate) to_stored: fn(Value) -> Value,
    /// The stored form to this view's.
    pub(crate) to_shown: fn(Value) -> Value,
}

impl Native {
    /// The conversion of `rt`, when it is such a view.
    pub(crate) fn of(rt: &crate::registry::ResourceType) -> Option<Native> {
        use wasmgate_apimachinery::events;
        match rt.builtin()? {
            Builtin::EventsApiEvent => Some(Native {
                to_stored: events::v1_to_core,
                to_shown: events::core_to_v1,
            }),
            _ => None,
        }
    }
}
