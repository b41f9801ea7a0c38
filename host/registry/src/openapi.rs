//! OpenAPI v3 (`GAP-01`, `DISC-11`): the `/openapi/v3` index and one document per served
//! group-version, which kubectl reads for server-side field validation (`fieldValidation`
//! on PATCH operations), patch-type choice (`requestBody` content types) and `explain`
//! (`x-kubernetes-group-version-kind` on schemas).
//!
//! Schemas of built-in kinds come from `k8s-openapi`'s schemars implementations (the
//! Kubernetes API's own descriptions), plus the list-type and patch-strategy extensions
//! that crate does not carry.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha512};

use crate::openapi_text as text;
use crate::{Catalog, ResourceType};

/// All definitions of built-in kinds, by OpenAPI name (`io.k8s.api.core.v1.ConfigMap`).
pub fn builtin_definitions() -> &'static Map<String, Value> {
    static DEFS: OnceLock<Map<String, Value>> = OnceLock::new();
    DEFS.get_or_init(generate_definitions)
}

fn generate_definitions() -> Map<String, Value> {
    use k8s_openapi::api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
        ValidatingWebhookConfiguration,
    };
    use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenReview};
    use k8s_openapi::api::authorization::v1::{
        LocalSubjectAccessReview, SelfSubjectAccessReview, SelfSubjectRulesReview,
        SubjectAccessReview,
    };
    use k8s_openapi::api::autoscaling::v1::Scale;
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Secret, ServiceAccount};
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{DeleteOptions, ListMeta, Status};
    let mut generator = schemars::generate::SchemaSettings::openapi3().into_generator();
    generator.subschema_for::<ConfigMap>();
    generator.subschema_for::<Secret>();
    generator.subschema_for::<Namespace>();
    generator.subschema_for::<ServiceAccount>();
    generator.subschema_for::<Event>();
    generator.subschema_for::<k8s_openapi::api::events::v1::Event>();
    generator.subschema_for::<TokenReview>();
    generator.subschema_for::<SelfSubjectReview>();
    generator.subschema_for::<SubjectAccessReview>();
    generator.subschema_for::<SelfSubjectAccessReview>();
    generator.subschema_for::<LocalSubjectAccessReview>();
    generator.subschema_for::<SelfSubjectRulesReview>();
    generator.subschema_for::<Lease>();
    generator.subschema_for::<Role>();
    generator.subschema_for::<RoleBinding>();
    generator.subschema_for::<ClusterRole>();
    generator.subschema_for::<ClusterRoleBinding>();
    generator.subschema_for::<MutatingWebhookConfiguration>();
    generator.subschema_for::<ValidatingWebhookConfiguration>();
    generator.subschema_for::<ValidatingAdmissionPolicy>();
    generator.subschema_for::<ValidatingAdmissionPolicyBinding>();
    generator
        .subschema_for::<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService>(
        );
    generator.subschema_for::<DeleteOptions>();
    generator.subschema_for::<Status>();
    generator.subschema_for::<ListMeta>();
    generator.subschema_for::<CustomResourceDefinition>();
    generator.subschema_for::<Scale>();
    let mut defs = generator.take_definitions(true);
    // `JSON` is any JSON value (kube publishes it without a type); k8s-openapi says object.
    if let Some(Value::Object(j)) =
        defs.get_mut("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON")
    {
        j.remove("type");
        j.insert(
            "x-kubernetes-preserve-unknown-fields".into(),
            Value::Bool(true),
        );
    }
    for (name, schema) in defs.iter_mut() {
        // k8s-openapi marks `metadata` required because its Rust field is not optional;
        // the API does not require it.
        if let Some(req) = schema.get_mut("required").and_then(Value::as_array_mut) {
            req.retain(|r| r != "metadata");
            if req.is_empty()
                && let Some(m) = schema.as_object_mut()
            {
                m.remove("required");
            }
        }
        add_extensions(name, schema);
    }
    defs
}

/// The list and patch markers kube's OpenAPI carries for the fields of our kinds.
fn add_extensions(name: &str, schema: &mut Value) {
    let set = |schema: &mut Value, field: &str, ext: Value| {
        if let (Some(p), Value::Object(ext)) = (
            schema.get_mut("properties").and_then(|p| p.get_mut(field)),
            ext,
        ) && let Some(pm) = p.as_object_mut()
        {
            pm.extend(ext);
        }
    };
    match name {
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" => {
            set(
                schema,
                "finalizers",
                json!({"x-kubernetes-list-type":"set","x-kubernetes-patch-strategy":"merge"}),
            );
            set(
                schema,
                "ownerReferences",
                json!({"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["uid"],"x-kubernetes-patch-merge-key":"uid","x-kubernetes-patch-strategy":"merge"}),
            );
            set(
                schema,
                "managedFields",
                json!({"x-kubernetes-list-type":"atomic"}),
            );
        }
        "io.k8s.api.core.v1.ServiceAccount" => {
            set(
                schema,
                "secrets",
                json!({"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"x-kubernetes-patch-merge-key":"name","x-kubernetes-patch-strategy":"merge"}),
            );
            set(
                schema,
                "imagePullSecrets",
                json!({"x-kubernetes-list-type":"atomic"}),
            );
        }
        "io.k8s.api.core.v1.NamespaceStatus" => {
            set(
                schema,
                "conditions",
                json!({"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["type"],"x-kubernetes-patch-merge-key":"type","x-kubernetes-patch-strategy":"merge"}),
            );
        }
        "io.k8s.api.core.v1.NamespaceSpec" => {
            set(
                schema,
                "finalizers",
                json!({"x-kubernetes-list-type":"atomic"}),
            );
        }
        _ => {}
    }
}

/// Rendered documents of one catalog.
#[derive(Debug)]
pub struct Documents {
    /// `/openapi/v3` index.
    pub index: Bytes,
    /// Per group-version path (`api/v1`, `apis/g/v`): (document, upper-hex SHA-512).
    pub docs: HashMap<String, (Bytes, String)>,
    /// `/openapi/v2` as JSON, and as gnostic protobuf (what kubectl asks for), with their
    /// ETag; built on first use.
    v2: OnceLock<(Bytes, Bytes, String)>,
}

impl Documents {
    /// The OpenAPI v2 (Swagger 2.0) document of every group-version: (JSON, protobuf, hash).
    pub fn v2(&self) -> &(Bytes, Bytes, String) {
        self.v2.get_or_init(|| {
            let mut keys: Vec<&String> = self.docs.keys().collect();
            keys.sort();
            let v3: Vec<Value> = keys
                .iter()
                .filter_map(|k| serde_json::from_slice(&self.docs[*k].0).ok())
                .collect();
            let swagger = wasmgate_apimachinery::openapi_v2::swagger_from_v3(
                &v3,
                "Wasmgate",
                crate::version::GIT_VERSION,
            );
            let json = serde_json::to_vec(&swagger).unwrap_or_default();
            let proto = match wasmgate_apimachinery::openapi_v2::encode_document(&swagger) {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(error = %e, "encoding OpenAPI v2 as protobuf failed");
                    Vec::new()
                }
            };
            let hash = format!("{:X}", Sha512::digest(&json));
            (Bytes::from(json), Bytes::from(proto), hash)
        })
    }
}

/// The `/openapi/v3` path segment of a group-version.
pub fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// Builds every document of a catalog (see [`Catalog::openapi`], which keeps them).
pub fn build(catalog: &Catalog) -> Documents {
    let defs = builtin_definitions();
    let mut docs = HashMap::new();
    let mut index = Map::new();
    for (group, versions) in catalog.groups() {
        for version in versions {
            let types = catalog.in_group_version(&group, &version);
            let doc = document(&group, &version, &types, defs);
            let bytes = serde_json::to_vec(&doc).unwrap_or_default();
            let hash = format!("{:X}", Sha512::digest(&bytes));
            let path = gv_path(&group, &version);
            index.insert(
                path.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")}),
            );
            docs.insert(path, (Bytes::from(bytes), hash));
        }
    }
    let index = serde_json::to_vec(&json!({"paths": index})).unwrap_or_default();
    Documents {
        index: Bytes::from(index),
        docs,
        v2: OnceLock::new(),
    }
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "version": version, "kind": kind})
}

/// A query parameter with kube's description of it.
fn query_param(name: &str, ty: &str, patch: bool) -> Value {
    let description = text::query_parameter(name, patch);
    json!({"name": name, "in": "query", "description": description, "schema": {"type": ty, "uniqueItems": true}})
}

fn write_params(patch: bool) -> Vec<Value> {
    let mut p = vec![
        query_param("dryRun", "string", patch),
        query_param("fieldManager", "string", patch),
        query_param("fieldValidation", "string", patch),
        query_param("pretty", "string", patch),
    ];
    if patch {
        p.push(query_param("force", "boolean", patch));
    }
    p
}

/// What a delete of one object takes.
fn delete_params() -> Vec<Value> {
    [
        ("dryRun", "string"),
        ("gracePeriodSeconds", "integer"),
        ("orphanDependents", "boolean"),
        ("propagationPolicy", "string"),
        ("pretty", "string"),
    ]
    .iter()
    .map(|(n, t)| query_param(n, t, false))
    .collect()
}

fn list_params() -> Vec<Value> {
    [
        ("allowWatchBookmarks", "boolean"),
        ("continue", "string"),
        ("fieldSelector", "string"),
        ("labelSelector", "string"),
        ("limit", "integer"),
        ("resourceVersion", "string"),
        ("resourceVersionMatch", "string"),
        ("sendInitialEvents", "boolean"),
        ("timeoutSeconds", "integer"),
        ("watch", "boolean"),
        ("pretty", "string"),
    ]
    .iter()
    .map(|(n, t)| query_param(n, t, false))
    .collect()
}

/// What a deletecollection takes: the list options that select, and the delete options.
fn delete_collection_params() -> Vec<Value> {
    [
        ("continue", "string"),
        ("dryRun", "string"),
        ("fieldSelector", "string"),
        ("gracePeriodSeconds", "integer"),
        ("labelSelector", "string"),
        ("limit", "integer"),
        ("orphanDependents", "boolean"),
        ("propagationPolicy", "string"),
        ("resourceVersion", "string"),
        ("resourceVersionMatch", "string"),
        ("sendInitialEvents", "boolean"),
        ("timeoutSeconds", "integer"),
        ("pretty", "string"),
    ]
    .iter()
    .map(|(n, t)| query_param(n, t, false))
    .collect()
}

fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn content(schema: &Value, types: &[&str]) -> Value {
    let mut m = Map::new();
    for t in types {
        m.insert((*t).to_owned(), json!({"schema": schema}));
    }
    Value::Object(m)
}

const READ_TYPES: [&str; 3] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

fn op(
    action: &str,
    id: &str,
    gvk: &Value,
    params: Vec<Value>,
    response: (&str, Value),
    body: Option<Value>,
) -> Value {
    // The described kind is the object's own (a subresource's parent for `status`).
    let kind = gvk["kind"].as_str().unwrap_or("");
    let mut o = json!({
        "description": text::operation(action, kind, None),
        "operationId": id,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
        "parameters": params,
        "responses": {response.0: {"description": "OK", "content": content(&response.1, &READ_TYPES)}},
    });
    if let Some(b) = body {
        o["requestBody"] = json!({"content": b, "required": true});
    }
    o
}

fn document(
    group: &str,
    version: &str,
    types: &[&Arc<ResourceType>],
    defs: &Map<String, Value>,
) -> Value {
    let prefix = format!("/{}", gv_path(group, version));
    let mut paths = BTreeMap::new();
    let mut wanted: BTreeSet<String> = BTreeSet::new();
    let mut schemas = Map::new();
    wanted.insert("io.k8s.apimachinery.pkg.apis.meta.v1.Status".into());
    wanted.insert("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions".into());
    let mut custom_refs = Vec::new();
    for t in types {
        let kind_gvk = gvk(group, version, &t.kind);
        let schema_name = t.schema_name_for(version);
        match t.custom().and_then(|c| c.version(version)) {
            // A custom kind's schema is its CRD's, as published (DISC-11).
            Some(v) => {
                let mut published = v.schema.published_v3();
                published["x-kubernetes-group-version-kind"] = json!([kind_gvk.clone()]);
                collect_refs(&published, &mut custom_refs);
                schemas.insert(schema_name.clone(), published);
            }
            None => {
                wanted.insert(schema_name.clone());
            }
        }
        let list_name = format!("{schema_name}List");
        if t.serves("list") {
            schemas.insert(
                list_name.clone(),
                json!({
                    "description": format!("{}List is a list of {} objects.", t.kind, t.kind),
                    "type": "object",
                    "required": ["items"],
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"allOf": [reference("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta")], "default": {}},
                        "items": {"type": "array", "items": {"allOf": [reference(&schema_name)], "default": {}}},
                    },
                    "x-kubernetes-group-version-kind": [gvk(group, version, &t.list_kind)],
                }),
            );
            wanted.insert("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta".into());
        }
        let obj = reference(&schema_name);
        let list = reference(&list_name);
        let status = reference("io.k8s.apimachinery.pkg.apis.meta.v1.Status");
        let patch_schema = json!({"type": "object"});
        // Strategic merge is listed only for built-in kinds: kubectl then uses merge patch
        // for custom resources, as against kube-apiserver (KUBECTL-WIRE §4).
        let mut patch_types: Vec<&str> = vec![
            "application/json-patch+json",
            "application/merge-patch+json",
        ];
        if t.custom().is_none() {
            patch_types.push("application/strategic-merge-patch+json");
        }
        let (collection, item) = if t.namespaced {
            (
                format!("{prefix}/namespaces/{{namespace}}/{}", t.resource),
                format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", t.resource),
            )
        } else {
            (
                format!("{prefix}/{}", t.resource),
                format!("{prefix}/{}/{{name}}", t.resource),
            )
        };
        let ns_param = json!({"name": "namespace", "in": "path", "description": text::NAMESPACE, "required": true, "schema": {"type": "string", "uniqueItems": true}});
        let name_param = json!({"name": "name", "in": "path", "description": text::name(&t.kind), "required": true, "schema": {"type": "string", "uniqueItems": true}});
        let mut coll_params = Vec::new();
        let mut item_params = vec![name_param];
        if t.namespaced {
            coll_params.push(ns_param.clone());
            item_params.push(ns_param);
        }
        let id = |verb: &str| format!("{verb}{}", t.kind);
        let mut coll = Map::new();
        coll.insert("parameters".into(), Value::Array(coll_params));
        if t.serves("list") {
            coll.insert(
                "get".into(),
                op(
                    "list",
                    &id("list"),
                    &kind_gvk,
                    list_params(),
                    ("200", list.clone()),
                    None,
                ),
            );
        }
        if t.serves("create") {
            coll.insert(
                "post".into(),
                op(
                    "post",
                    &id("create"),
                    &kind_gvk,
                    write_params(false),
                    ("201", obj.clone()),
                    Some(content(&obj, &READ_TYPES)),
                ),
            );
        }
        if t.serves("deletecollection") {
            coll.insert(
                "delete".into(),
                op(
                    "deletecollection",
                    &id("deletecollection"),
                    &kind_gvk,
                    delete_collection_params(),
                    ("200", status.clone()),
                    None,
                ),
            );
        }
        paths.insert(collection, Value::Object(coll));
        let mut it = Map::new();
        it.insert("parameters".into(), Value::Array(item_params.clone()));
        if t.serves("get") {
            it.insert(
                "get".into(),
                op(
                    "get",
                    &id("read"),
                    &kind_gvk,
                    vec![query_param("pretty", "string", false)],
                    ("200", obj.clone()),
                    None,
                ),
            );
        }
        if t.serves("update") {
            it.insert(
                "put".into(),
                op(
                    "put",
                    &id("replace"),
                    &kind_gvk,
                    write_params(false),
                    ("200", obj.clone()),
                    Some(content(&obj, &READ_TYPES)),
                ),
            );
        }
        if t.serves("patch") {
            it.insert(
                "patch".into(),
                op(
                    "patch",
                    &id("patch"),
                    &kind_gvk,
                    write_params(true),
                    ("200", obj.clone()),
                    Some(content(&patch_schema, &patch_types)),
                ),
            );
        }
        if t.serves("delete") {
            it.insert(
                "delete".into(),
                op(
                    "delete",
                    &id("delete"),
                    &kind_gvk,
                    delete_params(),
                    ("200", status.clone()),
                    Some(content(
                        &reference("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"),
                        &["application/json", "application/yaml"],
                    )),
                ),
            );
        }
        // A kind with no verb on single objects (the reviews) has no such path.
        if it.len() > 1 {
            paths.insert(item.clone(), Value::Object(it));
        }
        if t.namespaced && t.serves("list") {
            paths.insert(
                format!("{prefix}/{}", t.resource),
                json!({"get": op("list", &format!("{}ForAllNamespaces", id("list")), &kind_gvk, list_params(), ("200", list.clone()), None)}),
            );
        }
        for sub in &t.subresources_for(version) {
            let sub_obj = if sub.name == "scale" {
                wanted.insert("io.k8s.api.autoscaling.v1.Scale".into());
                reference("io.k8s.api.autoscaling.v1.Scale")
            } else {
                obj.clone()
            };
            let sub_gvk = if sub.name == "scale" {
                gvk("autoscaling", "v1", "Scale")
            } else {
                kind_gvk.clone()
            };
            let mut s = Map::new();
            s.insert("parameters".into(), Value::Array(item_params.clone()));
            for verb in &sub.verbs {
                let (method, action, body) = match *verb {
                    "get" => ("get", "get", None),
                    "update" => (
                        "put",
                        "put",
                        Some(content(&sub_obj, &["application/json", "application/yaml"])),
                    ),
                    "patch" => ("patch", "patch", Some(content(&patch_schema, &patch_types))),
                    _ => continue,
                };
                let params = if method == "get" {
                    vec![]
                } else {
                    write_params(method == "patch")
                };
                let mut o = op(
                    action,
                    &format!("{}{}", id(method), sub.name),
                    &sub_gvk,
                    params,
                    ("200", sub_obj.clone()),
                    body,
                );
                o["description"] = json!(text::operation(action, &t.kind, Some(&sub.name)));
                s.insert(method.into(), o);
            }
            paths.insert(format!("{item}/{}", sub.name), Value::Object(s));
        }
    }
    // Transitive closure of referenced definitions.
    let mut queue: Vec<String> = wanted.into_iter().collect();
    queue.extend(custom_refs);
    let mut seen = BTreeSet::new();
    while let Some(name) = queue.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let Some(def) = defs.get(&name) else { continue };
        let mut def = def.clone();
        collect_refs(&def, &mut queue);
        if let Some(t) = types
            .iter()
            .find(|t| t.custom().is_none() && t.schema_name == name)
        {
            def["x-kubernetes-group-version-kind"] = json!([gvk(group, version, &t.kind)]);
        }
        schemas.insert(name, def);
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Wasmgate", "version": crate::version::GIT_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str)
                && let Some(name) = r.strip_prefix("#/components/schemas/")
            {
                out.push(name.to_owned());
            }
            for x in m.values() {
                collect_refs(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Registry, builtin_types};

    #[test]
    fn gap_01_documents_carry_what_kubectl_reads() {
        let reg = Registry::new(builtin_types());
        let docs = build(&reg.snapshot());
        let index: Value = serde_json::from_slice(&docs.index).unwrap();
        let url = index["paths"]["api/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        assert!(url.starts_with("/openapi/v3/api/v1?hash="));
        assert!(index["paths"]["apis/coordination.k8s.io/v1"].is_object());
        let (bytes, _) = &docs.docs["api/v1"];
        let doc: Value = serde_json::from_slice(bytes).unwrap();
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group":"","version":"v1","kind":"ConfigMap"})
        );
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        assert!(
            patch["requestBody"]["content"]["application/strategic-merge-patch+json"].is_object()
        );
        let cm = &doc["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"];
        assert_eq!(
            cm["x-kubernetes-group-version-kind"],
            json!([{"group":"","version":"v1","kind":"ConfigMap"}])
        );
        assert!(
            cm["properties"]["data"]["description"]
                .as_str()
                .unwrap()
                .contains("configuration data")
        );
        assert!(cm.get("required").is_none());
        assert!(
            doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
                .is_object()
        );
    }
}
