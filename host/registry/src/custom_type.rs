//! The model of a custom resource type, as the registry holds it: what a CRD defines per
//! version (schema, rules, subresources, printer columns) and how its versions convert.
//! Built from a stored CRD by the API server's `custom` module, which also holds what
//! the custom resource strategy does with it.

use std::sync::Arc;

use wasmgate_apimachinery::jsonpath::JsonPath;
use wasmgate_apimachinery::structural::Schema;
use wasmgate_apimachinery::table::ColumnDefinition;

use super::Subresource;

/// One CRD's custom resource type.
#[derive(Debug)]
pub struct CustomType {
    /// The CRD's name (`<plural>.<group>`).
    pub crd_name: String,
    /// The CRD's storage key and the revision it was built from: creates of its objects
    /// are guarded on them, so none lands after the CRD began to go.
    pub crd_key: String,
    /// See `crd_key`.
    pub crd_revision: u64,
    /// The CRD's uid: a CRD deleted and created again is another type.
    pub crd_uid: String,
    /// Every version of the CRD, in spec order; shared by every type built from the same
    /// spec (see the API server's `custom::reuse`).
    pub versions: Arc<[CustomVersion]>,
    /// The group/kind, for messages.
    pub group: String,
    pub kind: String,
    /// The CRD's `metadata.generation`: while it (and the uid) stays, so does the spec.
    pub generation: Option<i64>,
    /// Whether the CRD is being deleted (its objects may be read and deleted, not created).
    pub terminating: bool,
    /// What converts between versions (`spec.conversion.strategy: Webhook`); `None`:
    /// only `apiVersion` changes.
    pub conversion: Option<Conversion>,
}

/// What converts objects of a custom resource between its versions.
#[derive(Debug, Clone)]
pub enum Conversion {
    /// `clientConfig.url: wasm://NAME`: the `WasmPlugin`'s `convert`.
    Plugin(String),
    /// An HTTPS conversion webhook (`ConversionReview` v1); `Err`: why it cannot be
    /// called (every conversion then fails with it).
    Webhook(Result<wasmgate_outbound::Target, String>),
}

/// One version of a custom resource type.
#[derive(Debug)]
pub struct CustomVersion {
    /// Version name.
    pub name: String,
    /// Served at `/apis/<group>/<name>`.
    pub served: bool,
    /// Objects are stored at this version.
    pub storage: bool,
    /// The `Warning` sent with every request for this version, if deprecated (`WARN-02`).
    pub deprecation_warning: Option<String>,
    /// The structural schema.
    pub schema: Schema,
    /// Whether the schema declares any `default` (then reads apply defaults too).
    pub has_defaults: bool,
    /// The CEL validation rules of the schema.
    pub rules: Option<wasmgate_cel::Rules>,
    /// `subresources.status`.
    pub status: bool,
    /// `subresources.scale`.
    pub scale: Option<ScaleSpec>,
    /// Table columns after Name.
    pub columns: Vec<PrinterColumn>,
    /// How its objects merge and are owned (server-side apply, `managedFields`): built
    /// from the schema the first time a write needs it.
    pub field_shape: std::sync::OnceLock<Arc<wasmgate_apimachinery::fieldset::Shape>>,
}

/// `subresources.scale` (`SUB-02`).
#[derive(Debug, Clone)]
pub struct ScaleSpec {
    /// `.spec.replicas`-like path.
    pub spec_replicas: JsonPath,
    /// `.status.replicas`-like path.
    pub status_replicas: JsonPath,
    /// `.status.selector`-like path.
    pub label_selector: Option<JsonPath>,
}

/// One `additionalPrinterColumns` entry (`TABLE-05`).
#[derive(Debug, Clone)]
pub struct PrinterColumn {
    /// The column as the Table shows it.
    pub definition: ColumnDefinition,
    /// Where its value comes from.
    pub path: JsonPath,
}

/// `<reversed group>.<version>.<Kind>`, the OpenAPI name of a custom kind.
pub fn schema_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

impl CustomVersion {
    /// The field-set shape of this version's objects: the schema's list and map markers,
    /// `metadata` as ObjectMeta.
    pub fn field_shape(&self) -> Arc<wasmgate_apimachinery::fieldset::Shape> {
        use wasmgate_apimachinery::fieldset::{Shape, object_meta};
        self.field_shape
            .get_or_init(|| {
                let mut s = Shape::of_schema(self.schema.root());
                if let Shape::Map { fields, .. } = &mut s {
                    fields.insert("apiVersion".into(), Shape::Scalar);
                    fields.insert("kind".into(), Shape::Scalar);
                    fields.insert("metadata".into(), object_meta());
                }
                Arc::new(s)
            })
            .clone()
    }
}

impl CustomType {
    /// A served version.
    pub fn version(&self, name: &str) -> Option<&CustomVersion> {
        self.versions.iter().find(|v| v.name == name && v.served)
    }

    /// The storage version.
    pub fn storage(&self) -> Option<&CustomVersion> {
        self.versions.iter().find(|v| v.storage)
    }

    /// The subresources served at a version.
    pub fn subresources(&self, version: &str, kind: &str) -> Vec<Subresource> {
        let Some(v) = self.version(version) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if v.scale.is_some() {
            out.push(Subresource {
                name: "scale".into(),
                kind: "Scale".into(),
                group_version: "autoscaling/v1".into(),
                verbs: vec!["get", "patch", "update"],
            });
        }
        if v.status {
            out.push(Subresource {
                name: "status".into(),
                kind: kind.into(),
                group_version: String::new(),
                verbs: vec!["get", "patch", "update"],
            });
        }
        out
    }

    /// `group/version Kind`, for messages.
    pub fn describe(&self, version: &str) -> String {
        format!("{}/{version} {}", self.group, self.kind)
    }
}
