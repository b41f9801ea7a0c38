//! Label and field selectors of lists and watches.

use serde_json::Value;
use wasmgate_apimachinery::selectors;
use wasmgate_apimachinery::status::Status;

use crate::error::ApiResult;
use crate::object::meta;
use crate::registry::ResourceType;

/// Label and field selector filtering for lists and watches (`SEL-01`, `GAP-04`).
pub(crate) struct Filter {
    pub(crate) labels: selectors::LabelSelector,
    pub(crate) fields: selectors::FieldSelector,
    group: String,
    resource: String,
}

impl Filter {
    pub(crate) fn new(
        rt: &ResourceType,
        labels: selectors::LabelSelector,
        fields: selectors::FieldSelector,
    ) -> ApiResult<Filter> {
        if rt.custom().is_some() {
            // kube's custom resource converter: the name, and the namespace of namespaced
            // types (selectable fields of CRD versions are not served yet).
            let supported =
                |f: &str| f == "metadata.name" || (rt.namespaced && f == "metadata.namespace");
            if let Some(f) = fields.first_unsupported(supported) {
                return Err(Status::bad_request(format!("field label not supported: {f}")).into());
            }
        } else if let Some(f) = fields
            .first_unsupported(|f| selectors::builtin_field_supported(&rt.group, &rt.resource, f))
        {
            return Err(Status::bad_request(selectors::builtin_field_label_error(
                &rt.group,
                &rt.resource,
                f,
            ))
            .into());
        }
        Ok(Filter {
            labels,
            fields,
            group: rt.group.clone(),
            resource: rt.resource.clone(),
        })
    }

    pub(crate) fn is_everything(&self) -> bool {
        self.labels.is_everything() && self.fields.is_everything()
    }

    pub(crate) fn matches(&self, obj: &Value) -> bool {
        let labels = meta(obj).get("labels").and_then(Value::as_object);
        self.labels.matches(labels)
            && self
                .fields
                .matches(|f| selectors::builtin_field_value(&self.group, &self.resource, obj, f))
    }
}
