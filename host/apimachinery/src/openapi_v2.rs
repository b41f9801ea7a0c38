//! OpenAPI v2 (Swagger 2.0) for `GET /openapi/v2`: the document kube-apiserver serves there,
//! built from the per-group-version OpenAPI v3 documents, and its gnostic protobuf encoding.
//!
//! kubectl 1.28 (`create -f`, `apply -f`) and kubectl 1.32 on a `kind: List` manifest send
//! `GET /openapi/v2` with `Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`
//! and decode the body as the protobuf message `openapi.v2.Document` of
//! `github.com/google/gnostic-models` (`openapiv2/OpenAPIv2.proto`), whatever the
//! Content-Type says. They read it for the field-validation query-parameter check (the
//! `patch` operation carrying `x-kubernetes-group-version-kind` and a `fieldValidation`
//! query parameter), for client-side schema validation (definitions carrying
//! `x-kubernetes-group-version-kind`) and for `kubectl explain --output=plaintext-openapiv2`.
//!
//! ## Two steps
//!
//! 1. [`swagger_from_v3`] merges the OpenAPI v3 documents into one Swagger 2.0 JSON document.
//! 2. [`encode_document`] encodes a Swagger 2.0 JSON document as kube-apiserver does: it
//!    parses its JSON with gnostic's `openapi_v2.ParseDocument` and marshals the result with
//!    Go's `proto.Marshal`. The bytes are those Go produces for the same JSON text (the text
//!    `serde_json` writes for the [`Value`]).
//!
//! ## How gnostic turns JSON into messages (what the encoder follows)
//!
//! * Fields are written in field-number order; proto3 scalars only when not zero/empty;
//!   sub-messages whenever their key is present (also when empty); oneof members always.
//! * JSON objects used as maps (`paths`, `definitions`, `properties`, `responses`, vendor
//!   extensions, …) become repeated `Named*` pairs in document order. In `Paths` only keys
//!   starting with `/` are paths, in `Responses` only `default` and three-digit codes are
//!   responses; keys starting with `x-` are vendor extensions (`NamedAny`) everywhere.
//! * `default`, `example`, `enum` items and vendor extension values are `Any { yaml }`: the
//!   YAML `gopkg.in/yaml.v3` writes for the value after gnostic clears its style (block
//!   style, 4-space indent, quotes only where needed). This module has its own emitter for
//!   that subset of YAML.
//! * `Schema.type` is `TypeItem { repeated string value }`, `Schema.items` is
//!   `ItemsItem { repeated Schema schema }` with one schema, `additionalProperties` is
//!   `AdditionalPropertiesItem` (`schema` or `boolean`).
//! * A parameter with `$ref` is a `JsonReference`; otherwise `in` picks `BodyParameter`
//!   or one of the `NonBodyParameter` sub-schemas (header, formData, query, path). A response
//!   with `$ref` is a `JsonReference`; a response schema of type `file` is a `FileSchema`.
//! * String fields accept strings, integers (their text) and `null` (empty), as gnostic does.
//!
//! Keys gnostic does not know are skipped (gnostic itself would reject the whole document).
//! Values of the wrong shape (for example `properties` that is not an object, or a string
//! field holding a boolean) are an [`OpenApiV2Error`] naming their place as a JSON pointer.
//!
//! ## From OpenAPI v3 to Swagger 2.0
//!
//! `#/components/schemas/X` references become `#/definitions/X`. An `allOf` holding just one
//! `$ref` (OpenAPI 3.0's way of giving a reference siblings such as `description` and
//! `default`) becomes that `$ref` with the siblings, as in kube-apiserver's own v2 document:
//! kubectl's v2 model (`k8s.io/kube-openapi/pkg/util/proto`) ignores `allOf`, so a wrapped
//! `metadata` would be neither validated nor explained. Other `allOf`s are kept. Keys with
//! no Swagger 2.0 form (`nullable`, `oneOf`, `anyOf`, `not`, `writeOnly`, `deprecated`) are
//! dropped, after applying kube-apiserver's v2 rules for CRD schemas (`nullable` and
//! `x-kubernetes-preserve-unknown-fields` drop `type`/`items`/`properties`, an array without
//! `items` loses its `type`). Together with dropping `$ref` siblings, unknown types and
//! dangling references, this keeps every definition parseable by kubectl's v2 model, which
//! otherwise rejects the whole document over one bad definition. Maps are written in sorted
//! key order, as Go's `encoding/json` writes kube-apiserver's document.
//!
//! kube-apiserver additionally strips value validations (`required`, `format`, `enum`, …)
//! from CRD schemas in v2; the v3 documents do not say which schemas are CRDs, so that is
//! left to the caller.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

type Object = Map<String, Value>;

/// Why a Swagger document could not be encoded as `openapi.v2.Document`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenApiV2Error {
    /// A value has the wrong JSON type for its place in the document.
    #[error("invalid OpenAPI v2 document at {pointer:?}: expected {expected}, found {found}")]
    UnexpectedType {
        /// JSON pointer (RFC 6901) of the value, `""` for the whole document.
        pointer: String,
        /// What the place needs, e.g. `object`.
        expected: &'static str,
        /// The JSON type found there.
        found: &'static str,
    },
    /// A value has the right JSON type but no Swagger 2.0 meaning.
    #[error("invalid OpenAPI v2 document at {pointer:?}: {message}")]
    Invalid {
        /// JSON pointer (RFC 6901) of the value.
        pointer: String,
        /// What is wrong.
        message: String,
    },
}

type Result<T = ()> = std::result::Result<T, OpenApiV2Error>;

// ---------------------------------------------------------------------------------------------
// OpenAPI v3 → Swagger 2.0
// ---------------------------------------------------------------------------------------------

/// The HTTP methods of a Swagger 2.0 path item, in `PathItem` field order.
const METHODS: [&str; 7] = ["get", "put", "post", "delete", "options", "head", "patch"];

/// Schema keys Swagger 2.0 (and gnostic's `Schema`) knows, other than `x-*`.
const SCHEMA_KEYS: [&str; 30] = [
    "$ref",
    "additionalProperties",
    "allOf",
    "default",
    "description",
    "discriminator",
    "enum",
    "example",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "externalDocs",
    "format",
    "items",
    "maxItems",
    "maxLength",
    "maxProperties",
    "maximum",
    "minItems",
    "minLength",
    "minProperties",
    "minimum",
    "multipleOf",
    "pattern",
    "properties",
    "readOnly",
    "required",
    "title",
    "type",
    "uniqueItems",
    "xml",
];

/// Keys of a `FileSchema`, other than `x-*`.
const FILE_SCHEMA_KEYS: [&str; 9] = [
    "default",
    "description",
    "example",
    "externalDocs",
    "format",
    "readOnly",
    "required",
    "title",
    "type",
];

/// Validation keys a non-body parameter, a response header or `items` of either can carry,
/// in their shared field order (`type` first, `multipleOf` last).
const PRIMITIVE_KEYS: [&str; 17] = [
    "type",
    "format",
    "items",
    "collectionFormat",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "enum",
    "multipleOf",
];

/// Merges per-group-version OpenAPI v3 documents into one Swagger 2.0 document as
/// kube-apiserver serves at /openapi/v2 (JSON form): "swagger":"2.0", info, paths
/// (operations with parameters turned into Swagger 2.0 form: query/path params with `type`,
/// body params from requestBody with `schema`, `consumes`/`produces` from content types,
/// responses with `schema`), "definitions" (from components.schemas, every
/// `#/components/schemas/X` ref rewritten to `#/definitions/X`; vendor extensions kept), and
/// top-level `x-*` extensions preserved.
///
/// An `allOf` holding a single `$ref` becomes that `$ref` with its siblings (`description`,
/// `default`, …): that is how kube-apiserver writes it in v2, and kubectl's v2 model ignores
/// `allOf`, so a wrapped `metadata` would be neither validated nor explained. Other `allOf`s
/// are kept. When several documents have the same path, schema, security scheme or top-level
/// extension, the first one wins. Paths, definitions, properties, responses and extensions
/// come out in sorted key order.
/// `components.securitySchemes` of HTTP bearer, HTTP basic and API-key type become
/// `securityDefinitions`; other security schemes, cookie parameters and
/// `components.{parameters,responses,requestBodies}` have no counterpart here.
pub fn swagger_from_v3(documents: &[Value], title: &str, version: &str) -> Value {
    let mut paths = BTreeMap::new();
    let mut definitions = BTreeMap::new();
    let mut security_definitions = BTreeMap::new();
    let mut security = None;
    let mut extensions = BTreeMap::new();

    for document in documents {
        let Some(document) = document.as_object() else {
            continue;
        };
        if let Some(Value::Object(items)) = document.get("paths") {
            for (path, item) in items {
                if path.starts_with('/') {
                    paths
                        .entry(path.clone())
                        .or_insert_with(|| convert_path_item(item));
                }
            }
        }
        if let Some(Value::Object(components)) = document.get("components") {
            if let Some(Value::Object(schemas)) = components.get("schemas") {
                for (name, schema) in schemas {
                    definitions
                        .entry(name.clone())
                        .or_insert_with(|| convert_schema(schema));
                }
            }
            if let Some(Value::Object(schemes)) = components.get("securitySchemes") {
                for (name, scheme) in schemes {
                    if let Some(converted) = convert_security_scheme(scheme) {
                        security_definitions
                            .entry(name.clone())
                            .or_insert(converted);
                    }
                }
            }
        }
        if security.is_none()
            && let Some(Value::Array(requirements)) = document.get("security")
        {
            security = Some(Value::Array(requirements.clone()));
        }
        for (key, value) in document {
            if is_extension(key) {
                extensions
                    .entry(key.clone())
                    .or_insert_with(|| sorted_value(value));
            }
        }
    }

    let names: BTreeSet<String> = definitions.keys().cloned().collect();
    for schema in definitions.values_mut() {
        drop_dangling_refs(schema, &names);
    }

    let mut out = Object::new();
    out.insert("swagger".into(), Value::from("2.0"));
    let mut info = Object::new();
    info.insert("title".into(), Value::from(title));
    info.insert("version".into(), Value::from(version));
    out.insert("info".into(), Value::Object(info));
    out.insert("paths".into(), Value::Object(paths.into_iter().collect()));
    out.insert(
        "definitions".into(),
        Value::Object(definitions.into_iter().collect()),
    );
    if !security_definitions.is_empty() {
        out.insert(
            "securityDefinitions".into(),
            Value::Object(security_definitions.into_iter().collect()),
        );
    }
    if let Some(security) = security {
        out.insert("security".into(), security);
    }
    out.extend(extensions);
    Value::Object(out)
}

fn is_extension(key: &str) -> bool {
    key.starts_with("x-")
}

/// Copies the `x-*` keys of `from` into `to`, sorted, with their values' keys sorted.
fn insert_extensions(to: &mut Object, from: &Object) {
    let sorted: BTreeMap<&String, &Value> =
        from.iter().filter(|(key, _)| is_extension(key)).collect();
    for (key, value) in sorted {
        to.insert(key.clone(), sorted_value(value));
    }
}

/// The value with every object's keys sorted, as Go's `encoding/json` writes a map.
fn sorted_value(value: &Value) -> Value {
    match value {
        Value::Object(object) => {
            let sorted: BTreeMap<&String, Value> = object
                .iter()
                .map(|(key, value)| (key, sorted_value(value)))
                .collect();
            Value::Object(
                sorted
                    .into_iter()
                    .map(|(key, value)| (key.clone(), value))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted_value).collect()),
        other => other.clone(),
    }
}

fn rewrite_ref(reference: &str, v3_prefix: &str, v2_prefix: &str) -> String {
    match reference.strip_prefix(v3_prefix) {
        Some(name) => format!("{v2_prefix}{name}"),
        None => reference.to_owned(),
    }
}

fn rewrite_schema_ref(reference: &str) -> String {
    rewrite_ref(reference, "#/components/schemas/", "#/definitions/")
}

fn copy_key(to: &mut Object, from: &Object, key: &str) {
    if let Some(value) = from.get(key) {
        to.insert(key.to_owned(), value.clone());
    }
}

fn convert_path_item(item: &Value) -> Value {
    let Some(item) = item.as_object() else {
        return item.clone();
    };
    let mut out = Object::new();
    if let Some(Value::String(reference)) = item.get("$ref") {
        out.insert("$ref".into(), Value::from(reference.as_str()));
    }
    for method in METHODS {
        if let Some(operation) = item.get(method) {
            out.insert(method.into(), convert_operation(operation));
        }
    }
    if let Some(Value::Array(parameters)) = item.get("parameters") {
        out.insert(
            "parameters".into(),
            Value::Array(parameters.iter().filter_map(convert_parameter).collect()),
        );
    }
    insert_extensions(&mut out, item);
    Value::Object(out)
}

fn convert_operation(operation: &Value) -> Value {
    let Some(operation) = operation.as_object() else {
        return operation.clone();
    };
    let mut out = Object::new();
    copy_key(&mut out, operation, "description");

    // The request body's media types; `*/*` (kube-apiserver's default) without a body.
    let request_body = operation.get("requestBody").and_then(Value::as_object);
    let consumes: Vec<Value> = match request_body
        .and_then(|body| body.get("content"))
        .and_then(Value::as_object)
    {
        Some(content) if !content.is_empty() => content
            .keys()
            .map(|key| Value::from(key.as_str()))
            .collect(),
        _ => vec![Value::from("*/*")],
    };
    out.insert("consumes".into(), Value::Array(consumes));
    let responses = operation.get("responses").and_then(Value::as_object);
    let mut produces: Vec<&str> = Vec::new();
    for response in responses
        .into_iter()
        .flat_map(|responses| responses.values())
    {
        if let Some(Value::Object(content)) = response.get("content") {
            for media_type in content.keys() {
                if !produces.contains(&media_type.as_str()) {
                    produces.push(media_type);
                }
            }
        }
    }
    if !produces.is_empty() {
        out.insert(
            "produces".into(),
            Value::Array(produces.into_iter().map(Value::from).collect()),
        );
    }
    for key in [
        "tags",
        "summary",
        "description",
        "externalDocs",
        "operationId",
        "deprecated",
        "security",
    ] {
        copy_key(&mut out, operation, key);
    }

    let mut parameters = Vec::new();
    if let Some(body) = request_body
        && let Some(parameter) = convert_request_body(operation, body)
    {
        parameters.push(parameter);
    }
    if let Some(Value::Array(listed)) = operation.get("parameters") {
        parameters.extend(listed.iter().filter_map(convert_parameter));
    }
    if !parameters.is_empty() || operation.contains_key("parameters") {
        out.insert("parameters".into(), Value::Array(parameters));
    }

    let mut converted = BTreeMap::new();
    for (code, response) in responses.into_iter().flatten() {
        if is_response_code(code) {
            converted.insert(code.clone(), convert_response(response));
        }
    }
    let mut responses_out: Object = converted.into_iter().collect();
    if let Some(responses) = responses {
        insert_extensions(&mut responses_out, responses);
    }
    out.insert("responses".into(), Value::Object(responses_out));
    insert_extensions(&mut out, operation);
    Value::Object(out)
}

/// The Swagger 2.0 body parameter for an OpenAPI v3 `requestBody`: the schema of its first
/// media type that has one. `None` when no media type has a schema.
fn convert_request_body(operation: &Object, body: &Object) -> Option<Value> {
    let schema = body
        .get("content")
        .and_then(Value::as_object)?
        .values()
        .find_map(|media| media.get("schema"))?;
    let name = operation
        .get("x-codegen-request-body-name")
        .and_then(Value::as_str)
        .unwrap_or("body");
    let mut out = Object::new();
    out.insert("name".into(), Value::from(name));
    out.insert("in".into(), Value::from("body"));
    if let Some(Value::String(description)) = body.get("description") {
        out.insert("description".into(), Value::from(description.as_str()));
    }
    if body.get("required") == Some(&Value::Bool(true)) {
        out.insert("required".into(), Value::Bool(true));
    }
    out.insert("schema".into(), convert_schema(schema));
    insert_extensions(&mut out, body);
    Some(Value::Object(out))
}

/// A Swagger 2.0 non-body parameter for an OpenAPI v3 parameter: the validations of its
/// `schema` move up to the parameter. `None` for cookie parameters (no Swagger 2.0 form).
fn convert_parameter(parameter: &Value) -> Option<Value> {
    let parameter = parameter.as_object()?;
    if let Some(Value::String(reference)) = parameter.get("$ref") {
        let mut out = Object::new();
        out.insert(
            "$ref".into(),
            Value::from(rewrite_ref(
                reference,
                "#/components/parameters/",
                "#/parameters/",
            )),
        );
        return Some(Value::Object(out));
    }
    let location = parameter.get("in").and_then(Value::as_str)?;
    if !matches!(location, "query" | "header" | "path" | "formData") {
        return None;
    }
    let mut out = Object::new();
    let schema = parameter.get("schema").and_then(Value::as_object);
    lift_primitive(&mut out, schema);
    if out.get("type").and_then(Value::as_str) == Some("array") {
        out.insert(
            "collectionFormat".into(),
            Value::from(collection_format(parameter, location)),
        );
    }
    copy_key(&mut out, parameter, "description");
    copy_key(&mut out, parameter, "name");
    copy_key(&mut out, parameter, "in");
    if let Some(Value::Bool(required)) = parameter.get("required") {
        out.insert("required".into(), Value::Bool(*required));
    }
    if matches!(location, "query" | "formData")
        && let Some(Value::Bool(allow)) = parameter.get("allowEmptyValue")
    {
        out.insert("allowEmptyValue".into(), Value::Bool(*allow));
    }
    insert_extensions(&mut out, parameter);
    Some(Value::Object(out))
}

/// Moves the validations of an OpenAPI v3 parameter or header schema into Swagger 2.0's
/// flat form. Types Swagger 2.0 does not allow there (`object`, none) become `string`.
fn lift_primitive(out: &mut Object, schema: Option<&Object>) {
    let schema_type = schema
        .and_then(|schema| schema.get("type"))
        .and_then(Value::as_str)
        .filter(|t| matches!(*t, "string" | "number" | "integer" | "boolean" | "array"))
        .unwrap_or("string");
    out.insert("type".into(), Value::from(schema_type));
    let Some(schema) = schema else {
        return;
    };
    for key in PRIMITIVE_KEYS {
        match key {
            "type" | "collectionFormat" => {}
            "items" => {
                if schema_type == "array" {
                    let items = schema.get("items").and_then(Value::as_object);
                    let mut converted = Object::new();
                    lift_primitive(&mut converted, items);
                    if converted.get("type").and_then(Value::as_str) == Some("array") {
                        converted.insert("collectionFormat".into(), Value::from("csv"));
                    }
                    out.insert("items".into(), Value::Object(converted));
                }
            }
            "default" | "enum" => {
                if let Some(value) = schema.get(key) {
                    out.insert(key.into(), sorted_value(value));
                }
            }
            _ => copy_key(out, schema, key),
        }
    }
}

/// Swagger 2.0's `collectionFormat` for an OpenAPI v3 array parameter's `style`/`explode`.
fn collection_format(parameter: &Object, location: &str) -> &'static str {
    let default_style = if matches!(location, "query" | "formData") {
        "form"
    } else {
        "simple"
    };
    let style = parameter
        .get("style")
        .and_then(Value::as_str)
        .unwrap_or(default_style);
    let explode = parameter
        .get("explode")
        .and_then(Value::as_bool)
        .unwrap_or(style == "form");
    match style {
        "form" if explode && matches!(location, "query" | "formData") => "multi",
        "spaceDelimited" => "ssv",
        "pipeDelimited" => "pipes",
        _ => "csv",
    }
}

fn convert_response(response: &Value) -> Value {
    let Some(response) = response.as_object() else {
        return response.clone();
    };
    let mut out = Object::new();
    if let Some(Value::String(reference)) = response.get("$ref") {
        out.insert(
            "$ref".into(),
            Value::from(rewrite_ref(
                reference,
                "#/components/responses/",
                "#/responses/",
            )),
        );
        return Value::Object(out);
    }
    let description = response
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("");
    out.insert("description".into(), Value::from(description));
    if let Some(schema) = response
        .get("content")
        .and_then(Value::as_object)
        .and_then(|content| content.values().find_map(|media| media.get("schema")))
    {
        out.insert("schema".into(), convert_schema(schema));
    }
    if let Some(Value::Object(headers)) = response.get("headers") {
        let mut converted = BTreeMap::new();
        for (name, header) in headers {
            let Some(header) = header.as_object() else {
                continue;
            };
            let mut header_out = Object::new();
            lift_primitive(
                &mut header_out,
                header.get("schema").and_then(Value::as_object),
            );
            copy_key(&mut header_out, header, "description");
            insert_extensions(&mut header_out, header);
            converted.insert(name.clone(), Value::Object(header_out));
        }
        if !converted.is_empty() {
            out.insert(
                "headers".into(),
                Value::Object(converted.into_iter().collect()),
            );
        }
    }
    insert_extensions(&mut out, response);
    Value::Object(out)
}

/// The `$ref` an `allOf: [{"$ref": …}]` wrapper stands for, when the schema holding it has
/// nothing that would conflict with a reference (`$ref`, `type`, `properties`, `items`,
/// `additionalProperties`).
fn single_ref_all_of(schema: &Object) -> Option<String> {
    let Some(Value::Array(all_of)) = schema.get("allOf") else {
        return None;
    };
    let [Value::Object(only)] = all_of.as_slice() else {
        return None;
    };
    if only.len() != 1 {
        return None;
    }
    let reference = only.get("$ref")?.as_str()?;
    let conflicting = [
        "$ref",
        "type",
        "properties",
        "items",
        "additionalProperties",
    ];
    if conflicting.iter().any(|key| schema.contains_key(*key)) {
        return None;
    }
    Some(rewrite_schema_ref(reference))
}

/// Keys a schema with `$ref` keeps: OpenAPI 3.0 ignores every other sibling of `$ref`, and
/// kubectl's v2 model rejects the whole document when a reference has `type` or `properties`.
const REF_SIBLING_KEYS: [&str; 6] = [
    "description",
    "default",
    "example",
    "readOnly",
    "title",
    "externalDocs",
];

/// The six JSON Schema types a Swagger 2.0 schema may name; kubectl's v2 model rejects the
/// whole document on any other `type`.
const SCHEMA_TYPES: [&str; 6] = ["string", "number", "integer", "boolean", "array", "object"];

fn is_true(schema: &Object, key: &str) -> bool {
    schema.get(key) == Some(&Value::Bool(true))
}

fn is_nullable(schema: &Value) -> bool {
    schema
        .as_object()
        .is_some_and(|schema| is_true(schema, "nullable"))
}

/// One OpenAPI v3 schema in Swagger 2.0 form. Besides renaming references, this applies what
/// kube-apiserver does to CRD schemas for v2 (`ToStructuralOpenAPIV2`), which also keeps every
/// definition parseable by kubectl's v2 model (`k8s.io/kube-openapi/pkg/util/proto`), where a
/// single unparseable definition fails every command that needs the document:
///
/// * `nullable: true` drops `type`, `items` and `properties` (and the property from its
///   parent's `required`; a nullable `additionalProperties` drops the parent's `required`);
/// * `x-kubernetes-preserve-unknown-fields: true` drops `items` and `properties`;
/// * an `array` left without `items` loses its `type`;
/// * a `$ref` keeps only [`REF_SIBLING_KEYS`] beside it, and `type` must be one of
///   [`SCHEMA_TYPES`].
fn convert_schema(schema: &Value) -> Value {
    let Some(schema) = schema.as_object() else {
        return schema.clone();
    };
    let unwrapped = single_ref_all_of(schema);
    let is_reference = unwrapped.is_some() || schema.contains_key("$ref");
    let nullable = is_true(schema, "nullable");
    let open = is_true(schema, "x-kubernetes-preserve-unknown-fields");
    let mut out = Object::new();
    for (key, value) in schema {
        if is_reference
            && !matches!(key.as_str(), "$ref" | "allOf")
            && !REF_SIBLING_KEYS.contains(&key.as_str())
        {
            continue;
        }
        match key.as_str() {
            "$ref" => {
                if let Value::String(reference) = value {
                    out.insert(key.clone(), Value::from(rewrite_schema_ref(reference)));
                }
            }
            "allOf" => match (&unwrapped, value) {
                (Some(reference), _) => {
                    out.insert("$ref".into(), Value::from(reference.as_str()));
                }
                (None, Value::Array(items)) if !is_reference => {
                    out.insert(
                        key.clone(),
                        Value::Array(items.iter().map(convert_schema).collect()),
                    );
                }
                (None, _) => {}
            },
            "type" => {
                if let Value::String(name) = value
                    && SCHEMA_TYPES.contains(&name.as_str())
                    && !nullable
                {
                    out.insert(key.clone(), value.clone());
                }
            }
            "properties" if !nullable && !open => {
                if let Value::Object(properties) = value {
                    let sorted: BTreeMap<&String, Value> = properties
                        .iter()
                        .map(|(name, property)| (name, convert_schema(property)))
                        .collect();
                    out.insert(
                        key.clone(),
                        Value::Object(
                            sorted
                                .into_iter()
                                .map(|(name, property)| (name.clone(), property))
                                .collect(),
                        ),
                    );
                }
            }
            "items" if !nullable && !open && value.is_object() => {
                out.insert(key.clone(), convert_schema(value));
            }
            "additionalProperties" => match value {
                Value::Bool(_) => {
                    out.insert(key.clone(), value.clone());
                }
                Value::Object(_) => {
                    out.insert(key.clone(), convert_schema(value));
                }
                _ => {}
            },
            "required" => {
                let nullable_values = schema.get("additionalProperties").is_some_and(is_nullable);
                let properties = schema.get("properties").and_then(Value::as_object);
                if let Value::Array(names) = value
                    && !nullable_values
                {
                    let kept: Vec<Value> = names
                        .iter()
                        .filter(|name| {
                            let property = name
                                .as_str()
                                .and_then(|name| properties.and_then(|p| p.get(name)));
                            !property.is_some_and(is_nullable)
                        })
                        .cloned()
                        .collect();
                    if !kept.is_empty() {
                        out.insert(key.clone(), Value::Array(kept));
                    }
                }
            }
            "enum" if value.is_array() => {
                out.insert(key.clone(), sorted_value(value));
            }
            // Dropped by the rules above, or with no gnostic form (array `items`, non-array
            // `enum`).
            "properties" | "items" | "enum" => {}
            "default" | "example" => {
                out.insert(key.clone(), sorted_value(value));
            }
            "discriminator" => match value {
                Value::String(_) => {
                    out.insert(key.clone(), value.clone());
                }
                Value::Object(discriminator) => {
                    if let Some(Value::String(property)) = discriminator.get("propertyName") {
                        out.insert(key.clone(), Value::from(property.as_str()));
                    }
                }
                _ => {}
            },
            other if SCHEMA_KEYS.contains(&other) => {
                out.insert(key.clone(), value.clone());
            }
            // `x-*` are added below, sorted; `nullable`, `oneOf`, `anyOf`, `not`,
            // `writeOnly`, `deprecated` have no Swagger 2.0 form.
            _ => {}
        }
    }
    if out.get("type").and_then(Value::as_str) == Some("array") && !out.contains_key("items") {
        out.remove("type");
    }
    insert_extensions(&mut out, schema);
    Value::Object(out)
}

/// Removes from a converted schema every `$ref` that names no definition: kubectl's v2 model
/// rejects the whole document over one dangling or non-local reference. Only schema
/// positions are visited, not `default` or `example` values.
fn drop_dangling_refs(schema: &mut Value, definitions: &BTreeSet<String>) {
    let Some(schema) = schema.as_object_mut() else {
        return;
    };
    let dangling = match schema.get("$ref") {
        Some(Value::String(reference)) => reference
            .strip_prefix("#/definitions/")
            .is_none_or(|name| !definitions.contains(name)),
        Some(_) => true,
        None => false,
    };
    if dangling {
        schema.remove("$ref");
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = schema.get_mut(key) {
            drop_dangling_refs(child, definitions);
        }
    }
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for property in properties.values_mut() {
            drop_dangling_refs(property, definitions);
        }
    }
    if let Some(Value::Array(all_of)) = schema.get_mut("allOf") {
        for item in all_of {
            drop_dangling_refs(item, definitions);
        }
    }
}

/// Swagger 2.0's form of an OpenAPI v3 security scheme, as kube-apiserver publishes its
/// `BearerToken` scheme (`apiKey` in the `authorization` header).
fn convert_security_scheme(scheme: &Value) -> Option<Value> {
    let scheme = scheme.as_object()?;
    let mut out = Object::new();
    match scheme.get("type").and_then(Value::as_str)? {
        "http" => {
            let kind = scheme.get("scheme").and_then(Value::as_str)?;
            if kind.eq_ignore_ascii_case("bearer") {
                out.insert("type".into(), Value::from("apiKey"));
                out.insert("name".into(), Value::from("authorization"));
                out.insert("in".into(), Value::from("header"));
            } else if kind.eq_ignore_ascii_case("basic") {
                out.insert("type".into(), Value::from("basic"));
            } else {
                return None;
            }
        }
        "apiKey" => {
            let location = scheme.get("in").and_then(Value::as_str)?;
            if !matches!(location, "header" | "query") {
                return None;
            }
            out.insert("type".into(), Value::from("apiKey"));
            copy_key(&mut out, scheme, "name");
            out.insert("in".into(), Value::from(location));
        }
        _ => return None,
    }
    copy_key(&mut out, scheme, "description");
    insert_extensions(&mut out, scheme);
    Some(Value::Object(out))
}

fn is_response_code(key: &str) -> bool {
    key == "default" || (key.len() == 3 && key.bytes().all(|b| b.is_ascii_digit()))
}

// ---------------------------------------------------------------------------------------------
// Swagger 2.0 JSON → gnostic protobuf
// ---------------------------------------------------------------------------------------------

/// Encodes a Swagger 2.0 JSON document as the gnostic protobuf `openapi.v2.Document`
/// (github.com/google/gnostic-models openapiv2/OpenAPIv2.proto), byte-compatible with what
/// Go's gnostic would produce for the same document, so kubectl's
/// `openapi_v2.ParseDocument`/proto unmarshal accepts it and
/// `kubectl explain --output=plaintext-openapiv2` and client-side validation work.
///
/// Keys gnostic does not know are skipped; values of the wrong shape are an error.
pub fn encode_document(swagger: &Value) -> std::result::Result<Vec<u8>, OpenApiV2Error> {
    let mut writer = Writer::default();
    document(&mut writer, swagger, &Pointer::ROOT)?;
    Ok(writer.buf)
}

/// A protobuf encoder for the wire types these messages use.
#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
}

const WIRE_VARINT: u8 = 0;
const WIRE_FIXED64: u8 = 1;
const WIRE_LEN: u8 = 2;

impl Writer {
    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.buf.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.buf.push(value as u8);
    }

    fn key(&mut self, field: u32, wire_type: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire_type));
    }

    fn len_delimited(&mut self, field: u32, bytes: &[u8]) {
        self.key(field, WIRE_LEN);
        self.varint(bytes.len() as u64);
        self.buf.extend_from_slice(bytes);
    }

    /// A proto3 `string`: nothing when empty.
    fn string(&mut self, field: u32, value: &str) {
        if !value.is_empty() {
            self.len_delimited(field, value.as_bytes());
        }
    }

    /// One element of a `repeated string`: written even when empty.
    fn repeated_string(&mut self, field: u32, value: &str) {
        self.len_delimited(field, value.as_bytes());
    }

    /// A proto3 `bool`: nothing when false.
    fn bool(&mut self, field: u32, value: bool) {
        if value {
            self.oneof_bool(field, true);
        }
    }

    /// A `bool` oneof member: written whatever its value.
    fn oneof_bool(&mut self, field: u32, value: bool) {
        self.key(field, WIRE_VARINT);
        self.varint(u64::from(value));
    }

    /// A proto3 `int64`: nothing when zero; negative numbers take ten bytes.
    fn int64(&mut self, field: u32, value: i64) {
        if value != 0 {
            self.key(field, WIRE_VARINT);
            self.varint(value as u64);
        }
    }

    /// A proto3 `double`: nothing when +0.0 (Go writes -0.0).
    fn double(&mut self, field: u32, value: f64) {
        if value.to_bits() != 0 {
            self.key(field, WIRE_FIXED64);
            self.buf.extend_from_slice(&value.to_le_bytes());
        }
    }

    /// A sub-message: written (possibly empty) whenever called.
    fn message(&mut self, field: u32, encode: impl FnOnce(&mut Writer) -> Result) -> Result {
        let mut inner = Writer::default();
        encode(&mut inner)?;
        self.len_delimited(field, &inner.buf);
        Ok(())
    }
}

/// Where a value is, for error messages; rendered as a JSON pointer only on error.
#[derive(Clone, Copy)]
struct Pointer<'a> {
    parent: Option<&'a Pointer<'a>>,
    token: Token<'a>,
}

#[derive(Clone, Copy)]
enum Token<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

impl<'a> Pointer<'a> {
    const ROOT: Pointer<'static> = Pointer {
        parent: None,
        token: Token::Root,
    };

    fn key(&'a self, key: &'a str) -> Pointer<'a> {
        Pointer {
            parent: Some(self),
            token: Token::Key(key),
        }
    }

    fn index(&'a self, index: usize) -> Pointer<'a> {
        Pointer {
            parent: Some(self),
            token: Token::Index(index),
        }
    }

    fn render(&self) -> String {
        let mut tokens = Vec::new();
        let mut current = Some(self);
        while let Some(pointer) = current {
            tokens.push(pointer.token);
            current = pointer.parent;
        }
        let mut out = String::new();
        for token in tokens.iter().rev() {
            match token {
                Token::Root => {}
                Token::Key(key) => {
                    out.push('/');
                    out.push_str(&key.replace('~', "~0").replace('/', "~1"));
                }
                Token::Index(index) => {
                    out.push('/');
                    out.push_str(&index.to_string());
                }
            }
        }
        out
    }

    fn unexpected(&self, expected: &'static str, found: &Value) -> OpenApiV2Error {
        OpenApiV2Error::UnexpectedType {
            pointer: self.render(),
            expected,
            found: json_type(found),
        }
    }

    fn invalid(&self, message: String) -> OpenApiV2Error {
        OpenApiV2Error::Invalid {
            pointer: self.render(),
            message,
        }
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

type Encode = fn(&mut Writer, &Value, &Pointer<'_>) -> Result;

fn object<'v>(value: &'v Value, at: &Pointer<'_>) -> Result<&'v Object> {
    value
        .as_object()
        .ok_or_else(|| at.unexpected("object", value))
}

fn array<'v>(value: &'v Value, at: &Pointer<'_>) -> Result<&'v [Value]> {
    match value {
        Value::Array(items) => Ok(items),
        other => Err(at.unexpected("array", other)),
    }
}

/// gnostic's `StringForScalarNode`: strings, integers (their text) and null (empty).
fn scalar_string(value: &Value) -> Option<Cow<'_, str>> {
    match value {
        Value::String(text) => Some(Cow::Borrowed(text)),
        Value::Number(number) if number.is_i64() || number.is_u64() => {
            Some(Cow::Owned(number.to_string()))
        }
        Value::Null => Some(Cow::Borrowed("")),
        _ => None,
    }
}

/// The text YAML holds for a scalar (what gnostic's `TypeItem` keeps).
fn scalar_text(value: &Value) -> Option<Cow<'_, str>> {
    match value {
        Value::String(text) => Some(Cow::Borrowed(text)),
        Value::Number(number) => Some(Cow::Owned(number.to_string())),
        Value::Bool(flag) => Some(Cow::Borrowed(if *flag { "true" } else { "false" })),
        Value::Null => Some(Cow::Borrowed("null")),
        Value::Array(_) | Value::Object(_) => None,
    }
}

fn string(w: &mut Writer, field: u32, m: &Object, key: &str, at: &Pointer<'_>) -> Result {
    if let Some(value) = m.get(key) {
        let text = scalar_string(value).ok_or_else(|| at.key(key).unexpected("string", value))?;
        w.string(field, &text);
    }
    Ok(())
}

fn bool(w: &mut Writer, field: u32, m: &Object, key: &str, at: &Pointer<'_>) -> Result {
    match m.get(key) {
        None => Ok(()),
        Some(Value::Bool(flag)) => {
            w.bool(field, *flag);
            Ok(())
        }
        Some(other) => Err(at.key(key).unexpected("boolean", other)),
    }
}

fn int64(w: &mut Writer, field: u32, m: &Object, key: &str, at: &Pointer<'_>) -> Result {
    match m.get(key) {
        None => Ok(()),
        Some(value) => {
            let number = value
                .as_i64()
                .ok_or_else(|| at.key(key).unexpected("integer", value))?;
            w.int64(field, number);
            Ok(())
        }
    }
}

fn double(w: &mut Writer, field: u32, m: &Object, key: &str, at: &Pointer<'_>) -> Result {
    match m.get(key) {
        None => Ok(()),
        Some(value) => {
            let number = value
                .as_f64()
                .ok_or_else(|| at.key(key).unexpected("number", value))?;
            w.double(field, number);
            Ok(())
        }
    }
}

/// A `repeated string` from a JSON array; elements that are not string-like are skipped,
/// as gnostic's `StringArrayForSequenceNode` does.
fn string_array(w: &mut Writer, field: u32, m: &Object, key: &str, at: &Pointer<'_>) -> Result {
    if let Some(value) = m.get(key) {
        for item in array(value, &at.key(key))? {
            if let Some(text) = scalar_string(item) {
                w.repeated_string(field, &text);
            }
        }
    }
    Ok(())
}

/// An `Any` holding the YAML of the value.
fn any_value(w: &mut Writer, field: u32, value: &Value) -> Result {
    w.message(field, |w| {
        w.string(2, &yaml::to_yaml(value));
        Ok(())
    })
}

fn any(w: &mut Writer, field: u32, m: &Object, key: &str) -> Result {
    match m.get(key) {
        Some(value) => any_value(w, field, value),
        None => Ok(()),
    }
}

fn any_array(w: &mut Writer, field: u32, m: &Object, key: &str, at: &Pointer<'_>) -> Result {
    if let Some(value) = m.get(key) {
        for item in array(value, &at.key(key))? {
            any_value(w, field, item)?;
        }
    }
    Ok(())
}

/// `repeated NamedAny vendor_extension`: every `x-*` key, in document order.
fn extensions(w: &mut Writer, field: u32, m: &Object) -> Result {
    for (key, value) in m {
        if is_extension(key) {
            w.message(field, |w| {
                w.string(1, key);
                any_value(w, 2, value)
            })?;
        }
    }
    Ok(())
}

fn optional(
    w: &mut Writer,
    field: u32,
    m: &Object,
    key: &str,
    at: &Pointer<'_>,
    encode: Encode,
) -> Result {
    match m.get(key) {
        Some(value) => w.message(field, |w| encode(w, value, &at.key(key))),
        None => Ok(()),
    }
}

fn repeated(
    w: &mut Writer,
    field: u32,
    m: &Object,
    key: &str,
    at: &Pointer<'_>,
    encode: Encode,
) -> Result {
    if let Some(value) = m.get(key) {
        let at = at.key(key);
        for (index, item) in array(value, &at)?.iter().enumerate() {
            w.message(field, |w| encode(w, item, &at.index(index)))?;
        }
    }
    Ok(())
}

/// A map as `repeated Named* field = 1` pairs `{ string name = 1; value = 2; }`.
fn named_map(w: &mut Writer, value: &Value, at: &Pointer<'_>, encode: Encode) -> Result {
    for (name, item) in object(value, at)? {
        w.message(1, |w| {
            w.string(1, name);
            w.message(2, |w| encode(w, item, &at.key(name)))
        })?;
    }
    Ok(())
}

fn document(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    string(w, 1, m, "swagger", at)?;
    optional(w, 2, m, "info", at, info)?;
    string(w, 3, m, "host", at)?;
    string(w, 4, m, "basePath", at)?;
    string_array(w, 5, m, "schemes", at)?;
    string_array(w, 6, m, "consumes", at)?;
    string_array(w, 7, m, "produces", at)?;
    optional(w, 8, m, "paths", at, paths)?;
    optional(w, 9, m, "definitions", at, |w, v, at| {
        named_map(w, v, at, schema)
    })?;
    optional(w, 10, m, "parameters", at, |w, v, at| {
        named_map(w, v, at, parameter)
    })?;
    optional(w, 11, m, "responses", at, |w, v, at| {
        named_map(w, v, at, response)
    })?;
    repeated(w, 12, m, "security", at, security_requirement)?;
    optional(w, 13, m, "securityDefinitions", at, |w, v, at| {
        named_map(w, v, at, security_definitions_item)
    })?;
    repeated(w, 14, m, "tags", at, tag)?;
    optional(w, 15, m, "externalDocs", at, external_docs)?;
    extensions(w, 16, m)
}

fn info(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    string(w, 1, m, "title", at)?;
    string(w, 2, m, "version", at)?;
    string(w, 3, m, "description", at)?;
    string(w, 4, m, "termsOfService", at)?;
    optional(w, 5, m, "contact", at, contact)?;
    optional(w, 6, m, "license", at, license)?;
    extensions(w, 7, m)
}

fn contact(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    string(w, 1, m, "name", at)?;
    string(w, 2, m, "url", at)?;
    string(w, 3, m, "email", at)?;
    extensions(w, 4, m)
}

fn license(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    string(w, 1, m, "name", at)?;
    string(w, 2, m, "url", at)?;
    extensions(w, 3, m)
}

fn external_docs(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    string(w, 1, m, "description", at)?;
    string(w, 2, m, "url", at)?;
    extensions(w, 3, m)
}

fn tag(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    string(w, 1, m, "name", at)?;
    string(w, 2, m, "description", at)?;
    optional(w, 3, m, "externalDocs", at, external_docs)?;
    extensions(w, 4, m)
}

fn paths(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    extensions(w, 1, m)?;
    for (path, item) in m {
        if path.starts_with('/') {
            w.message(2, |w| {
                w.string(1, path);
                w.message(2, |w| path_item(w, item, &at.key(path)))
            })?;
        }
    }
    Ok(())
}

fn path_item(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    string(w, 1, m, "$ref", at)?;
    for (field, method) in (2..).zip(METHODS) {
        optional(w, field, m, method, at, operation)?;
    }
    repeated(w, 9, m, "parameters", at, parameters_item)?;
    extensions(w, 10, m)
}

fn operation(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    string_array(w, 1, m, "tags", at)?;
    string(w, 2, m, "summary", at)?;
    string(w, 3, m, "description", at)?;
    optional(w, 4, m, "externalDocs", at, external_docs)?;
    string(w, 5, m, "operationId", at)?;
    string_array(w, 6, m, "produces", at)?;
    string_array(w, 7, m, "consumes", at)?;
    repeated(w, 8, m, "parameters", at, parameters_item)?;
    optional(w, 9, m, "responses", at, responses)?;
    string_array(w, 10, m, "schemes", at)?;
    bool(w, 11, m, "deprecated", at)?;
    repeated(w, 12, m, "security", at, security_requirement)?;
    extensions(w, 13, m)
}

/// `ParametersItem`: `oneof { Parameter parameter = 1; JsonReference json_reference = 2; }`.
fn parameters_item(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    value_or_reference(w, value, at, parameter)
}

/// A `oneof { <value> = 1; JsonReference json_reference = 2; }`: a reference when the
/// object has `$ref`, else the value as `encode` writes it.
fn value_or_reference(w: &mut Writer, value: &Value, at: &Pointer<'_>, encode: Encode) -> Result {
    let m = object(value, at)?;
    if m.contains_key("$ref") {
        w.message(2, |w| json_reference(w, value, at))
    } else {
        w.message(1, |w| encode(w, value, at))
    }
}

fn json_reference(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    string(w, 1, m, "$ref", at)?;
    string(w, 2, m, "description", at)
}

/// `Parameter`: `oneof { BodyParameter body_parameter = 1; NonBodyParameter non_body = 2; }`,
/// and `NonBodyParameter`: `oneof { header = 1; form_data = 2; query = 3; path = 4; }`.
fn parameter(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    let location = match m.get("in") {
        Some(Value::String(location)) => location.as_str(),
        Some(other) => return Err(at.key("in").unexpected("string", other)),
        None => return Err(at.invalid("parameter has no \"in\"".into())),
    };
    // (sub-schema field in NonBodyParameter, whether it has `allowEmptyValue`)
    let (sub_schema, allow_empty_value) = match location {
        "body" => return w.message(1, |w| body_parameter(w, m, at)),
        "header" => (1, false),
        "formData" => (2, true),
        "query" => (3, true),
        "path" => (4, false),
        other => {
            return Err(at.key("in").invalid(format!(
                "parameter location {other:?} is not one of body, query, path, header, formData"
            )));
        }
    };
    w.message(2, |w| {
        w.message(sub_schema, |w| {
            non_body_parameter(w, m, at, allow_empty_value)
        })
    })
}

fn body_parameter(w: &mut Writer, m: &Object, at: &Pointer<'_>) -> Result {
    string(w, 1, m, "description", at)?;
    string(w, 2, m, "name", at)?;
    string(w, 3, m, "in", at)?;
    bool(w, 4, m, "required", at)?;
    optional(w, 5, m, "schema", at, schema)?;
    extensions(w, 6, m)
}

/// Header, formData, query and path parameter sub-schemas share one layout; formData and
/// query have `allowEmptyValue = 5`, which shifts every later field by one.
fn non_body_parameter(
    w: &mut Writer,
    m: &Object,
    at: &Pointer<'_>,
    allow_empty_value: bool,
) -> Result {
    bool(w, 1, m, "required", at)?;
    string(w, 2, m, "in", at)?;
    string(w, 3, m, "description", at)?;
    string(w, 4, m, "name", at)?;
    let shift = if allow_empty_value {
        bool(w, 5, m, "allowEmptyValue", at)?;
        1
    } else {
        0
    };
    primitive_fields(w, 5 + shift, m, at)?;
    extensions(w, 22 + shift, m)
}

/// The seventeen validation fields ([`PRIMITIVE_KEYS`]) numbered from `first` on.
fn primitive_fields(w: &mut Writer, first: u32, m: &Object, at: &Pointer<'_>) -> Result {
    for (field, key) in (first..).zip(PRIMITIVE_KEYS) {
        match key {
            "type" | "format" | "collectionFormat" | "pattern" => string(w, field, m, key, at)?,
            "items" => optional(w, field, m, key, at, primitives_items)?,
            "default" => any(w, field, m, key)?,
            "maximum" | "minimum" | "multipleOf" => double(w, field, m, key, at)?,
            "exclusiveMaximum" | "exclusiveMinimum" | "uniqueItems" => bool(w, field, m, key, at)?,
            "enum" => any_array(w, field, m, key, at)?,
            // maxLength, minLength, maxItems, minItems
            _ => int64(w, field, m, key, at)?,
        }
    }
    Ok(())
}

fn primitives_items(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    primitive_fields(w, 1, m, at)?;
    extensions(w, 18, m)
}

fn responses(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    for (code, item) in m {
        if is_response_code(code) {
            w.message(1, |w| {
                w.string(1, code);
                // `ResponseValue`: `oneof { Response response = 1; JsonReference json_reference = 2; }`.
                w.message(2, |w| value_or_reference(w, item, &at.key(code), response))
            })?;
        }
    }
    extensions(w, 2, m)
}

fn response(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    string(w, 1, m, "description", at)?;
    optional(w, 2, m, "schema", at, schema_item)?;
    optional(w, 3, m, "headers", at, |w, v, at| {
        named_map(w, v, at, header)
    })?;
    optional(w, 4, m, "examples", at, named_any_map)?;
    extensions(w, 5, m)
}

fn named_any_map(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    for (name, item) in object(value, at)? {
        w.message(1, |w| {
            w.string(1, name);
            any_value(w, 2, item)
        })?;
    }
    Ok(())
}

fn header(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    primitive_fields(w, 1, m, at)?;
    string(w, 18, m, "description", at)?;
    extensions(w, 19, m)
}

/// `SchemaItem`: `oneof { Schema schema = 1; FileSchema file_schema = 2; }`. gnostic takes the
/// file schema when it parses: `type` is `file` and no key only a `Schema` has is present.
fn schema_item(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    let is_file = m.get("type").and_then(Value::as_str) == Some("file")
        && m.keys().all(|key| {
            is_extension(key)
                || FILE_SCHEMA_KEYS.contains(&key.as_str())
                || !SCHEMA_KEYS.contains(&key.as_str())
        });
    if is_file {
        w.message(2, |w| file_schema(w, m, at))
    } else {
        w.message(1, |w| schema(w, value, at))
    }
}

fn file_schema(w: &mut Writer, m: &Object, at: &Pointer<'_>) -> Result {
    string(w, 1, m, "format", at)?;
    string(w, 2, m, "title", at)?;
    string(w, 3, m, "description", at)?;
    any(w, 4, m, "default")?;
    string_array(w, 5, m, "required", at)?;
    string(w, 6, m, "type", at)?;
    bool(w, 7, m, "readOnly", at)?;
    optional(w, 8, m, "externalDocs", at, external_docs)?;
    any(w, 9, m, "example")?;
    extensions(w, 10, m)
}

fn schema(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    string(w, 1, m, "$ref", at)?;
    string(w, 2, m, "format", at)?;
    string(w, 3, m, "title", at)?;
    string(w, 4, m, "description", at)?;
    any(w, 5, m, "default")?;
    double(w, 6, m, "multipleOf", at)?;
    double(w, 7, m, "maximum", at)?;
    bool(w, 8, m, "exclusiveMaximum", at)?;
    double(w, 9, m, "minimum", at)?;
    bool(w, 10, m, "exclusiveMinimum", at)?;
    int64(w, 11, m, "maxLength", at)?;
    int64(w, 12, m, "minLength", at)?;
    string(w, 13, m, "pattern", at)?;
    int64(w, 14, m, "maxItems", at)?;
    int64(w, 15, m, "minItems", at)?;
    bool(w, 16, m, "uniqueItems", at)?;
    int64(w, 17, m, "maxProperties", at)?;
    int64(w, 18, m, "minProperties", at)?;
    string_array(w, 19, m, "required", at)?;
    any_array(w, 20, m, "enum", at)?;
    optional(w, 21, m, "additionalProperties", at, additional_properties)?;
    optional(w, 22, m, "type", at, type_item)?;
    optional(w, 23, m, "items", at, items_item)?;
    repeated(w, 24, m, "allOf", at, schema)?;
    optional(w, 25, m, "properties", at, |w, v, at| {
        named_map(w, v, at, schema)
    })?;
    string(w, 26, m, "discriminator", at)?;
    bool(w, 27, m, "readOnly", at)?;
    optional(w, 28, m, "xml", at, xml)?;
    optional(w, 29, m, "externalDocs", at, external_docs)?;
    any(w, 30, m, "example")?;
    extensions(w, 31, m)
}

/// `AdditionalPropertiesItem`: `oneof { Schema schema = 1; bool boolean = 2; }`.
fn additional_properties(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    match value {
        Value::Bool(flag) => {
            w.oneof_bool(2, *flag);
            Ok(())
        }
        Value::Object(_) => w.message(1, |w| schema(w, value, at)),
        other => Err(at.unexpected("object or boolean", other)),
    }
}

/// `TypeItem { repeated string value = 1; }`: one scalar or an array of scalars.
fn type_item(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    match value {
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                let text =
                    scalar_text(item).ok_or_else(|| at.index(index).unexpected("string", item))?;
                w.repeated_string(1, &text);
            }
            Ok(())
        }
        Value::Object(_) => Err(at.unexpected("string or array", value)),
        scalar => {
            let text = scalar_text(scalar).unwrap_or_default();
            w.repeated_string(1, &text);
            Ok(())
        }
    }
}

/// `ItemsItem { repeated Schema schema = 1; }` with the one schema of `items`.
fn items_item(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    object(value, at)?;
    w.message(1, |w| schema(w, value, at))
}

fn xml(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    string(w, 1, m, "name", at)?;
    string(w, 2, m, "namespace", at)?;
    string(w, 3, m, "prefix", at)?;
    bool(w, 4, m, "attribute", at)?;
    bool(w, 5, m, "wrapped", at)?;
    extensions(w, 6, m)
}

/// `SecurityRequirement`: a map of `StringArray { repeated string value = 1; }`; elements
/// that are not string-like become empty strings, as in gnostic.
fn security_requirement(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    for (name, scopes) in object(value, at)? {
        let scopes = array(scopes, &at.key(name))?;
        w.message(1, |w| {
            w.string(1, name);
            w.message(2, |w| {
                for scope in scopes {
                    w.repeated_string(1, &scalar_string(scope).unwrap_or_default());
                }
                Ok(())
            })
        })?;
    }
    Ok(())
}

/// `SecurityDefinitionsItem`: basic = 1, apiKey = 2, then OAuth 2 by flow: implicit = 3,
/// password = 4, application = 5, accessCode = 6.
fn security_definitions_item(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    let m = object(value, at)?;
    let kind = m.get("type").and_then(Value::as_str).unwrap_or_default();
    let flow = m.get("flow").and_then(Value::as_str).unwrap_or_default();
    match (kind, flow) {
        ("basic", _) => w.message(1, |w| {
            string(w, 1, m, "type", at)?;
            string(w, 2, m, "description", at)?;
            extensions(w, 3, m)
        }),
        ("apiKey", _) => w.message(2, |w| {
            string(w, 1, m, "type", at)?;
            string(w, 2, m, "name", at)?;
            string(w, 3, m, "in", at)?;
            string(w, 4, m, "description", at)?;
            extensions(w, 5, m)
        }),
        ("oauth2", "implicit" | "password" | "application") => {
            let (field, url_key) = match flow {
                "implicit" => (3, "authorizationUrl"),
                "password" => (4, "tokenUrl"),
                _ => (5, "tokenUrl"),
            };
            w.message(field, |w| {
                string(w, 1, m, "type", at)?;
                string(w, 2, m, "flow", at)?;
                optional(w, 3, m, "scopes", at, oauth2_scopes)?;
                string(w, 4, m, url_key, at)?;
                string(w, 5, m, "description", at)?;
                extensions(w, 6, m)
            })
        }
        ("oauth2", "accessCode") => w.message(6, |w| {
            string(w, 1, m, "type", at)?;
            string(w, 2, m, "flow", at)?;
            optional(w, 3, m, "scopes", at, oauth2_scopes)?;
            string(w, 4, m, "authorizationUrl", at)?;
            string(w, 5, m, "tokenUrl", at)?;
            string(w, 6, m, "description", at)?;
            extensions(w, 7, m)
        }),
        _ => Err(at.invalid(format!(
            "security definition of type {kind:?} (flow {flow:?}) is not basic, apiKey or oauth2"
        ))),
    }
}

/// `Oauth2Scopes`: a map of `NamedString`; values that are not string-like become empty.
fn oauth2_scopes(w: &mut Writer, value: &Value, at: &Pointer<'_>) -> Result {
    for (name, description) in object(value, at)? {
        w.message(1, |w| {
            w.string(1, name);
            w.string(2, &scalar_string(description).unwrap_or_default());
            Ok(())
        })?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// YAML for `Any.yaml`
// ---------------------------------------------------------------------------------------------

/// The YAML gnostic stores in `Any.yaml`: `yaml.v3`'s `Marshal` of the value's node after
/// gnostic's `compiler.Marshal` cleared every node's style. This is the relevant part of
/// yaml.v3's emitter (a port of libyaml's), for nodes without tags, anchors or comments:
///
/// * block mappings and sequences indented by 4 (a sequence item's content by 2 more), empty
///   ones in flow style (`{}`, `[]`); keys over 128 bytes or with line breaks use `? key`;
/// * strings plain when YAML would read them back as the same string and no indicator or
///   special character is in the way; strings that would read back as something else
///   (`""`, `true`, `null`, `1`, `0x1F`, `1e3`, `2001-01-01`, …) double-quoted; strings
///   with `\n` as literal blocks (`|-`, `|`, `|+`) when allowed; otherwise single- or
///   double-quoted; no line is ever folded (yaml.v3 has no line width by default);
/// * numbers, booleans and null as their JSON text.
mod yaml {
    use serde_json::Value;

    const BEST_INDENT: isize = 4;

    /// The state a node is emitted in (the emitter's state stack top in libyaml terms).
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Parent {
        Document,
        SequenceItem,
        SimpleKey,
        ComplexKey,
        MappingValue,
    }

    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Style {
        Plain,
        SingleQuoted,
        DoubleQuoted,
        Literal,
    }

    pub(super) fn to_yaml(value: &Value) -> String {
        let mut emitter = Emitter {
            out: String::new(),
            column: 0,
            indent: -1,
            indents: Vec::new(),
            whitespace: true,
            indention: true,
        };
        emitter.node(value, Parent::Document);
        emitter.write_indent();
        emitter.out
    }

    struct Emitter {
        out: String,
        column: usize,
        indent: isize,
        indents: Vec<isize>,
        whitespace: bool,
        indention: bool,
    }

    impl Emitter {
        fn node(&mut self, value: &Value, parent: Parent) {
            match value {
                Value::Object(map) if map.is_empty() => self.empty_collection("{", "}"),
                Value::Array(items) if items.is_empty() => self.empty_collection("[", "]"),
                Value::Object(map) => {
                    self.increase_indent(false, parent);
                    for (key, item) in map {
                        self.write_indent();
                        if !analyze(key).multiline && key.len() <= 128 {
                            self.scalar(key, true, Parent::SimpleKey);
                            self.write_indicator(":", false, false, false);
                        } else {
                            self.write_indicator("?", true, false, true);
                            self.scalar(key, true, Parent::ComplexKey);
                            self.write_indent();
                            self.write_indicator(":", true, false, true);
                        }
                        self.node(item, Parent::MappingValue);
                    }
                    self.pop_indent();
                }
                Value::Array(items) => {
                    self.increase_indent(false, parent);
                    for item in items {
                        self.write_indent();
                        self.write_indicator("-", true, false, true);
                        self.node(item, Parent::SequenceItem);
                    }
                    self.pop_indent();
                }
                Value::String(text) => self.scalar(text, true, parent),
                Value::Number(number) => self.scalar(&number.to_string(), false, parent),
                Value::Bool(flag) => {
                    self.scalar(if *flag { "true" } else { "false" }, false, parent)
                }
                Value::Null => self.scalar("null", false, parent),
            }
        }

        fn empty_collection(&mut self, open: &str, close: &str) {
            self.write_indicator(open, true, true, false);
            self.write_indicator(close, false, false, false);
        }

        fn increase_indent(&mut self, flow: bool, parent: Parent) {
            self.indents.push(self.indent);
            if self.indent < 0 {
                self.indent = if flow { BEST_INDENT } else { 0 };
            } else if parent == Parent::SequenceItem {
                self.indent += 2;
            } else {
                self.indent = BEST_INDENT * ((self.indent + BEST_INDENT) / BEST_INDENT);
            }
        }

        fn pop_indent(&mut self) {
            self.indent = self.indents.pop().unwrap_or(-1);
        }

        /// A scalar; `is_string` for `!!str` nodes, the only ones that may need quotes to
        /// keep their type.
        fn scalar(&mut self, text: &str, is_string: bool, parent: Parent) {
            let analysis = analyze(text);
            let simple_key = parent == Parent::SimpleKey;
            let mut style = if text.contains('\n') {
                Style::Literal
            } else if is_string && resolves_to_non_string(text) {
                Style::DoubleQuoted
            } else {
                Style::Plain
            };
            if simple_key && analysis.multiline {
                style = Style::DoubleQuoted;
            }
            if style == Style::Plain
                && (!analysis.block_plain_allowed || (text.is_empty() && simple_key))
            {
                style = Style::SingleQuoted;
            }
            if style == Style::SingleQuoted && !analysis.single_quoted_allowed {
                style = Style::DoubleQuoted;
            }
            if style == Style::Literal && (!analysis.block_allowed || simple_key) {
                style = Style::DoubleQuoted;
            }
            self.increase_indent(true, parent);
            match style {
                Style::Plain => self.write_plain(text),
                Style::SingleQuoted => self.write_single_quoted(text),
                Style::DoubleQuoted => self.write_double_quoted(text),
                Style::Literal => self.write_literal(text),
            }
            self.pop_indent();
        }

        fn put(&mut self, c: char) {
            self.out.push(c);
            self.column += 1;
        }

        fn put_break(&mut self) {
            self.out.push('\n');
            self.column = 0;
            self.indention = true;
        }

        fn write_break(&mut self, c: char) {
            if c == '\n' {
                self.put_break();
            } else {
                self.out.push(c);
                self.column = 0;
                self.indention = true;
            }
        }

        fn write_indent(&mut self) {
            let indent = self.indent.max(0).unsigned_abs();
            if !self.indention
                || self.column > indent
                || (self.column == indent && !self.whitespace)
            {
                self.put_break();
            }
            while self.column < indent {
                self.put(' ');
            }
            self.whitespace = true;
        }

        fn write_indicator(
            &mut self,
            indicator: &str,
            need_whitespace: bool,
            is_whitespace: bool,
            is_indention: bool,
        ) {
            if need_whitespace && !self.whitespace {
                self.put(' ');
            }
            for c in indicator.chars() {
                self.put(c);
            }
            self.whitespace = is_whitespace;
            self.indention = self.indention && is_indention;
        }

        fn write_plain(&mut self, text: &str) {
            if !text.is_empty() && !self.whitespace {
                self.put(' ');
            }
            for c in text.chars() {
                self.put(c);
            }
            if !text.is_empty() {
                self.whitespace = false;
            }
            self.indention = false;
        }

        fn write_single_quoted(&mut self, text: &str) {
            self.write_indicator("'", true, false, false);
            let mut breaks = false;
            for c in text.chars() {
                if c == ' ' {
                    self.put(c);
                } else if is_break(c) {
                    if !breaks && c == '\n' {
                        self.put_break();
                    }
                    self.write_break(c);
                    breaks = true;
                } else {
                    if breaks {
                        self.write_indent();
                    }
                    if c == '\'' {
                        self.put('\'');
                    }
                    self.put(c);
                    self.indention = false;
                    breaks = false;
                }
            }
            self.write_indicator("'", false, false, false);
            self.whitespace = false;
            self.indention = false;
        }

        fn write_double_quoted(&mut self, text: &str) {
            self.write_indicator("\"", true, false, false);
            // libyaml checks for a byte order mark at the start of the whole value for
            // every character, so such a value is escaped throughout.
            let starts_with_bom = text.starts_with('\u{feff}');
            for c in text.chars() {
                if !is_printable(c) || starts_with_bom || is_break(c) || c == '"' || c == '\\' {
                    self.put('\\');
                    let short = match c {
                        '\0' => Some('0'),
                        '\u{7}' => Some('a'),
                        '\u{8}' => Some('b'),
                        '\t' => Some('t'),
                        '\n' => Some('n'),
                        '\u{b}' => Some('v'),
                        '\u{c}' => Some('f'),
                        '\r' => Some('r'),
                        '\u{1b}' => Some('e'),
                        '"' => Some('"'),
                        '\\' => Some('\\'),
                        '\u{85}' => Some('N'),
                        '\u{a0}' => Some('_'),
                        '\u{2028}' => Some('L'),
                        '\u{2029}' => Some('P'),
                        _ => None,
                    };
                    match short {
                        Some(letter) => self.put(letter),
                        None => {
                            let code = u32::from(c);
                            let escaped = if code <= 0xff {
                                format!("x{code:02X}")
                            } else if code <= 0xffff {
                                format!("u{code:04X}")
                            } else {
                                format!("U{code:08X}")
                            };
                            for digit in escaped.chars() {
                                self.put(digit);
                            }
                        }
                    }
                } else {
                    self.put(c);
                }
            }
            self.write_indicator("\"", false, false, false);
            self.whitespace = false;
            self.indention = false;
        }

        fn write_literal(&mut self, text: &str) {
            self.write_indicator("|", true, false, false);
            if text.starts_with(' ') || text.chars().next().is_some_and(is_break) {
                self.write_indicator(&BEST_INDENT.to_string(), false, false, false);
            }
            let mut from_end = text.chars().rev();
            let chomp = match (from_end.next(), from_end.next()) {
                (Some(last), _) if !is_break(last) => Some("-"),
                (Some(_), None) => Some("+"),
                (Some(_), Some(before_last)) if is_break(before_last) => Some("+"),
                _ => None,
            };
            if let Some(chomp) = chomp {
                self.write_indicator(chomp, false, false, false);
            }
            self.whitespace = true;
            let mut breaks = true;
            for c in text.chars() {
                if is_break(c) {
                    self.write_break(c);
                    breaks = true;
                } else {
                    if breaks {
                        self.write_indent();
                    }
                    self.put(c);
                    self.indention = false;
                    breaks = false;
                }
            }
        }
    }

    fn is_break(c: char) -> bool {
        matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
    }

    /// libyaml's `is_printable` (characters outside the BMP are not).
    fn is_printable(c: char) -> bool {
        matches!(c, '\n' | ' '..='~' | '\u{a0}'..='\u{d7ff}')
            || (('\u{e000}'..='\u{fffd}').contains(&c) && c != '\u{feff}')
    }

    struct Analysis {
        multiline: bool,
        block_plain_allowed: bool,
        single_quoted_allowed: bool,
        block_allowed: bool,
    }

    /// libyaml's `yaml_emitter_analyze_scalar`, for block context.
    fn analyze(text: &str) -> Analysis {
        if text.is_empty() {
            return Analysis {
                multiline: false,
                block_plain_allowed: true,
                single_quoted_allowed: true,
                block_allowed: false,
            };
        }
        let mut block_indicators = text.starts_with("---") || text.starts_with("...");
        let (mut line_breaks, mut special_characters, mut tab_characters) = (false, false, false);
        let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
            (false, false, false, false);
        let (mut break_space, mut space_break) = (false, false);
        let (mut previous_space, mut previous_break) = (false, false);
        let mut preceded_by_whitespace = true;
        let chars: Vec<char> = text.chars().collect();
        for (index, &c) in chars.iter().enumerate() {
            let next = chars.get(index + 1).copied();
            let followed_by_whitespace = next.is_none_or(|n| n == ' ' || n == '\t');
            let first = index == 0;
            let last = next.is_none();
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`'
                    if first =>
                {
                    block_indicators = true;
                }
                '?' | '-' if first && followed_by_whitespace => block_indicators = true,
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if !first && preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
            if c == '\t' {
                tab_characters = true;
            } else if !is_printable(c) {
                special_characters = true;
            }
            if c == ' ' {
                leading_space |= first;
                trailing_space |= last;
                break_space |= previous_break;
                previous_space = true;
                previous_break = false;
            } else if is_break(c) {
                line_breaks = true;
                leading_break |= first;
                trailing_break |= last;
                space_break |= previous_space;
                previous_space = false;
                previous_break = true;
            } else {
                previous_space = false;
                previous_break = false;
            }
            preceded_by_whitespace = matches!(c, ' ' | '\t' | '\0') || is_break(c);
        }
        let mut analysis = Analysis {
            multiline: line_breaks,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: true,
        };
        if leading_space
            || leading_break
            || trailing_space
            || trailing_break
            || line_breaks
            || block_indicators
        {
            analysis.block_plain_allowed = false;
        }
        if trailing_space || space_break || special_characters {
            analysis.block_allowed = false;
        }
        if break_space || space_break || tab_characters || special_characters {
            analysis.block_plain_allowed = false;
            analysis.single_quoted_allowed = false;
        }
        analysis
    }

    /// Whether yaml.v3 would resolve this plain text to something other than a string
    /// (null, bool, int, float, timestamp or merge key), so that a string with this text must
    /// be quoted. A port of yaml.v3's `resolve` for untagged plain scalars.
    fn resolves_to_non_string(text: &str) -> bool {
        let Some(&first) = text.as_bytes().first() else {
            return true; // "" is null
        };
        let hinted = matches!(
            first,
            b'+' | b'-' | b'0'
                ..=b'9'
                    | b'.'
                    | b'y'
                    | b'Y'
                    | b'n'
                    | b'N'
                    | b't'
                    | b'T'
                    | b'f'
                    | b'F'
                    | b'o'
                    | b'O'
                    | b'~'
        );
        if !hinted {
            return false;
        }
        if matches!(
            text,
            "~" | "null"
                | "Null"
                | "NULL"
                | "true"
                | "True"
                | "TRUE"
                | "false"
                | "False"
                | "FALSE"
                | ".nan"
                | ".NaN"
                | ".NAN"
                | ".inf"
                | ".Inf"
                | ".INF"
                | "+.inf"
                | "+.Inf"
                | "+.INF"
                | "-.inf"
                | "-.Inf"
                | "-.INF"
        ) {
            return true;
        }
        match first {
            b'.' => is_decimal_float(text) && is_finite_float(text),
            b'+' | b'-' | b'0'..=b'9' => {
                if is_timestamp(text) {
                    return true;
                }
                let plain: String = text.chars().filter(|&c| c != '_').collect();
                if parse_go_int(&plain, 0).is_some() || parse_go_uint(&plain, 0).is_some() {
                    return true;
                }
                if is_yaml_style_float(&plain) && is_finite_float(&plain) {
                    return true;
                }
                if let Some(rest) = plain.strip_prefix("0b") {
                    return parse_go_int(rest, 2).is_some() || parse_go_uint(rest, 2).is_some();
                }
                if let Some(rest) = plain.strip_prefix("-0b") {
                    return parse_go_int(&format!("-{rest}"), 2).is_some();
                }
                if let Some(rest) = plain.strip_prefix("0o") {
                    return parse_go_int(rest, 8).is_some() || parse_go_uint(rest, 8).is_some();
                }
                if let Some(rest) = plain.strip_prefix("-0o") {
                    return parse_go_int(&format!("-{rest}"), 8).is_some();
                }
                false
            }
            _ => false,
        }
    }

    /// Go's `strconv.ParseUint(text, base, 64)` succeeding; base 0 reads `0x`, `0o`, `0b`
    /// and leading-zero octal prefixes. (Underscores were removed by the caller.)
    fn parse_go_uint(text: &str, base: u32) -> Option<u64> {
        if text.is_empty() {
            return None;
        }
        let (base, digits) = if base == 0 {
            let bytes = text.as_bytes();
            if bytes[0] == b'0' {
                let prefix = bytes.get(1).map(|b| b | 0x20);
                match prefix {
                    Some(b'b') if bytes.len() >= 3 => (2, &text[2..]),
                    Some(b'o') if bytes.len() >= 3 => (8, &text[2..]),
                    Some(b'x') if bytes.len() >= 3 => (16, &text[2..]),
                    _ => (8, &text[1..]),
                }
            } else {
                (10, text)
            }
        } else {
            (base, text)
        };
        let mut value: u64 = 0;
        for c in digits.chars() {
            let digit = c.to_digit(base)?;
            value = value
                .checked_mul(u64::from(base))?
                .checked_add(u64::from(digit))?;
        }
        Some(value)
    }

    /// Go's `strconv.ParseInt(text, base, 64)` succeeding.
    fn parse_go_int(text: &str, base: u32) -> Option<i64> {
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'+') => (false, &text[1..]),
            Some(b'-') => (true, &text[1..]),
            _ => (false, text),
        };
        let magnitude = parse_go_uint(rest, base)?;
        if negative {
            if magnitude > 1 << 63 {
                None
            } else {
                Some((magnitude as i64).wrapping_neg())
            }
        } else {
            i64::try_from(magnitude).ok()
        }
    }

    /// yaml.v3's float pattern `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
    fn is_yaml_style_float(text: &str) -> bool {
        let bytes = text.as_bytes();
        let mut i = usize::from(matches!(bytes.first(), Some(b'+' | b'-')));
        let digits = |i: &mut usize| {
            let start = *i;
            while bytes.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i - start
        };
        if bytes.get(i) == Some(&b'.') {
            i += 1;
            if digits(&mut i) == 0 {
                return false;
            }
        } else {
            if digits(&mut i) == 0 {
                return false;
            }
            if bytes.get(i) == Some(&b'.') {
                i += 1;
                digits(&mut i);
            }
        }
        if matches!(bytes.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(bytes.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if digits(&mut i) == 0 {
                return false;
            }
        }
        i == bytes.len()
    }

    /// What Go's `ParseFloat` accepts for text starting with `.`: `.digits[e[sign]digits]`.
    fn is_decimal_float(text: &str) -> bool {
        text.starts_with('.') && is_yaml_style_float(text)
    }

    /// Go's `ParseFloat` fails with a range error when the value overflows.
    fn is_finite_float(text: &str) -> bool {
        text.parse::<f64>().is_ok_and(f64::is_finite)
    }

    /// yaml.v3's `parseTimestamp`: `YYYY-M-D`, `YYYY-M-DTh:m:s[.frac](Z|±hh:mm)` (also
    /// with `t`) or `YYYY-M-D h:m:s[.frac]`, with Go's `time.Parse` range checks.
    fn is_timestamp(text: &str) -> bool {
        let b = text.as_bytes();
        if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
            return false;
        }
        let year: u32 = b[..4]
            .iter()
            .fold(0, |acc, digit| acc * 10 + u32::from(digit - b'0'));
        let mut i = 5;
        let Some(month) = two_digits(b, &mut i) else {
            return false;
        };
        if !(1..=12).contains(&month) || b.get(i) != Some(&b'-') {
            return false;
        }
        i += 1;
        let Some(day) = two_digits(b, &mut i) else {
            return false;
        };
        if day < 1 || day > days_in(month, year) {
            return false;
        }
        if i == b.len() {
            return true;
        }
        let zone_required = match b[i] {
            b'T' | b't' => true,
            b' ' => false,
            _ => return false,
        };
        i += 1;
        let Some(hour) = two_digits(b, &mut i) else {
            return false;
        };
        if hour >= 24 || b.get(i) != Some(&b':') {
            return false;
        }
        i += 1;
        let Some(minute) = two_digits(b, &mut i) else {
            return false;
        };
        if minute >= 60 || b.get(i) != Some(&b':') {
            return false;
        }
        i += 1;
        let Some(second) = two_digits(b, &mut i) else {
            return false;
        };
        if second >= 60 {
            return false;
        }
        if matches!(b.get(i), Some(b'.' | b',')) && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i += 1;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        if !zone_required {
            return i == b.len();
        }
        match b.get(i) {
            Some(b'Z') => i + 1 == b.len(),
            Some(b'+' | b'-') => {
                let zone = &b[i..];
                zone.len() == 6
                    && zone[1].is_ascii_digit()
                    && zone[2].is_ascii_digit()
                    && zone[3] == b':'
                    && zone[4].is_ascii_digit()
                    && zone[5].is_ascii_digit()
                    && (zone[1] - b'0') * 10 + (zone[2] - b'0') <= 24
                    && (zone[4] - b'0') * 10 + (zone[5] - b'0') <= 60
            }
            _ => false,
        }
    }

    /// Go's `getnum(value, false)`: one digit, or two when the second is a digit.
    fn two_digits(b: &[u8], i: &mut usize) -> Option<u32> {
        let first = *b.get(*i).filter(|c| c.is_ascii_digit())?;
        *i += 1;
        let mut value = u32::from(first - b'0');
        if let Some(second) = b.get(*i).filter(|c| c.is_ascii_digit()) {
            value = value * 10 + u32::from(second - b'0');
            *i += 1;
        }
        Some(value)
    }

    fn days_in(month: u32, year: u32) -> u32 {
        match month {
            2 if year.is_multiple_of(4)
                && (!year.is_multiple_of(100) || year.is_multiple_of(400)) =>
            {
                29
            }
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        }
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use serde_json::json;

    use super::*;

    // --- a minimal protobuf reader for assertions -----------------------------------------

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Wire<'a> {
        Varint(u64),
        Fixed64(u64),
        Bytes(&'a [u8]),
    }

    fn read_varint(buf: &[u8], pos: &mut usize) -> u64 {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = buf[*pos];
            *pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return value;
            }
        }
        panic!("varint too long");
    }

    /// The (field number, value) pairs of one message, in wire order.
    fn fields(buf: &[u8]) -> Vec<(u32, Wire<'_>)> {
        let mut pos = 0;
        let mut out = Vec::new();
        while pos < buf.len() {
            let key = read_varint(buf, &mut pos);
            let field = u32::try_from(key >> 3).unwrap();
            let value = match key & 7 {
                0 => Wire::Varint(read_varint(buf, &mut pos)),
                1 => {
                    let bytes: [u8; 8] = buf[pos..pos + 8].try_into().unwrap();
                    pos += 8;
                    Wire::Fixed64(u64::from_le_bytes(bytes))
                }
                2 => {
                    let len = usize::try_from(read_varint(buf, &mut pos)).unwrap();
                    let bytes = &buf[pos..pos + len];
                    pos += len;
                    Wire::Bytes(bytes)
                }
                other => panic!("unexpected wire type {other}"),
            };
            out.push((field, value));
        }
        out
    }

    fn all(buf: &[u8], field: u32) -> Vec<&[u8]> {
        fields(buf)
            .into_iter()
            .filter(|(number, _)| *number == field)
            .map(|(_, value)| match value {
                Wire::Bytes(bytes) => bytes,
                other => panic!("field {field} is {other:?}, not length-delimited"),
            })
            .collect()
    }

    fn one(buf: &[u8], field: u32) -> &[u8] {
        let found = all(buf, field);
        assert_eq!(found.len(), 1, "field {field} occurs {} times", found.len());
        found[0]
    }

    fn text(buf: &[u8], field: u32) -> String {
        String::from_utf8(one(buf, field).to_vec()).unwrap()
    }

    fn texts(buf: &[u8], field: u32) -> Vec<String> {
        all(buf, field)
            .into_iter()
            .map(|bytes| String::from_utf8(bytes.to_vec()).unwrap())
            .collect()
    }

    /// `repeated Named* field`: (name = 1, value = 2) pairs.
    fn named(buf: &[u8], field: u32) -> Vec<(String, &[u8])> {
        all(buf, field)
            .into_iter()
            .map(|pair| (text(pair, 1), one(pair, 2)))
            .collect()
    }

    fn lookup<'a>(pairs: &[(String, &'a [u8])], name: &str) -> &'a [u8] {
        pairs
            .iter()
            .find(|(key, _)| key == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .1
    }

    /// The YAML of `repeated NamedAny vendor_extension` entry `name`.
    fn extension_yaml(message: &[u8], field: u32, name: &str) -> String {
        text(lookup(&named(message, field), name), 2)
    }

    fn encode(value: Value) -> Vec<u8> {
        encode_document(&value).unwrap()
    }

    // --- golden: bytes produced by gnostic-models v0.6.8 + gopkg.in/yaml.v3 v3.0.1 --------

    /// A Swagger document touching every message kind the encoder writes.
    const GOLDEN_JSON: &str = r##"{"swagger":"2.0",
 "info":{"title":"Kubernetes","version":"v1.32.0","description":"d","termsOfService":"tos","contact":{"name":"n","url":"u","email":"e","x-c":1},"license":{"name":"Apache","url":"l"},"x-info":{"a":[1,"b"]}},
 "host":"h","basePath":"/","schemes":["https"],"consumes":["application/json"],"produces":["application/json","application/yaml"],
 "paths":{
  "x-paths-ext":true,
  "/api/v1/namespaces/{namespace}/configmaps":{
   "parameters":[{"uniqueItems":true,"type":"string","description":"object name and auth scope","name":"namespace","in":"path","required":true},
                 {"$ref":"#/parameters/pretty"}],
   "get":{"description":"list","consumes":["*/*"],"produces":["application/json"],"schemes":["https"],"tags":["core_v1"],"summary":"s","operationId":"listCoreV1NamespacedConfigMap","deprecated":true,
     "externalDocs":{"url":"https://example.com","description":"docs"},
     "parameters":[{"uniqueItems":true,"type":"integer","description":"limit","name":"limit","in":"query","minimum":-5,"maximum":1e3,"default":500,"allowEmptyValue":true},
                   {"type":"array","items":{"type":"string","enum":["a","b"],"items":{"type":"integer"}},"collectionFormat":"multi","name":"tags","in":"query","maxItems":10,"minItems":0,"multipleOf":2.5},
                   {"type":"string","name":"X-Trace","in":"header","pattern":"^[a-z]+$","maxLength":9223372036854775807,"minLength":-1,"x-h":"v"},
                   {"type":"file","name":"upload","in":"formData","required":false,"allowEmptyValue":false}],
     "responses":{"200":{"description":"OK","schema":{"$ref":"#/definitions/io.k8s.api.core.v1.ConfigMapList"},"headers":{"X-Rate":{"type":"integer","format":"int32","description":"rate","x-hh":null}},"examples":{"application/json":{"items":[]}}},
                  "401":{"description":"Unauthorized"},"404":{"$ref":"#/responses/NotFound"},"default":{"description":"file","schema":{"type":"file","description":"raw"}},"x-resp":"r"},
     "security":[{"BearerToken":[]},{"oauth":["read","write"]}],
     "x-kubernetes-action":"list",
     "x-kubernetes-group-version-kind":{"group":"","kind":"ConfigMap","version":"v1"}},
   "post":{"consumes":["*/*"],"parameters":[{"in":"body","name":"body","required":true,"description":"b","schema":{"$ref":"#/definitions/io.k8s.api.core.v1.ConfigMap"},"x-b":[]}],
     "responses":{"201":{"description":"Created","schema":{"$ref":"#/definitions/io.k8s.api.core.v1.ConfigMap"}}}},
   "put":{"responses":{}},"delete":{"responses":{}},"options":{"responses":{}},"head":{"responses":{}},"patch":{"responses":{}},
   "x-path-item":"p"},
  "/a/{b}":{"$ref":"#/x"}
 },
 "definitions":{
  "io.k8s.api.core.v1.ConfigMap":{"description":"ConfigMap holds configuration data for pods to consume.","type":"object",
    "required":["kind"],
    "properties":{
      "apiVersion":{"description":"APIVersion","type":"string"},
      "binaryData":{"type":"object","additionalProperties":{"type":"string","format":"byte"}},
      "data":{"type":"object","additionalProperties":{"type":"string","default":""}},
      "immutable":{"type":"boolean","default":false},
      "metadata":{"$ref":"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta","default":{},"description":"Standard object's metadata."},
      "strict":{"type":"object","additionalProperties":false,"minProperties":1,"maxProperties":5},
      "loose":{"additionalProperties":true},
      "list":{"type":"array","items":{"type":["string","null"]},"uniqueItems":true,"x-kubernetes-list-type":"set","minItems":1,"maxItems":3},
      "num":{"type":"number","minimum":0.5,"maximum":-0.0,"exclusiveMinimum":true,"exclusiveMaximum":true,"multipleOf":0.1,"enum":[1,2.5,"three",null,true,{"a":"b"},["c"]]},
      "composed":{"allOf":[{"$ref":"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},{"type":"object","properties":{}}],"discriminator":"kind","readOnly":true,
        "xml":{"name":"x","namespace":"ns","prefix":"p","attribute":true,"wrapped":true,"x-xml":1},"externalDocs":{"url":"u"},"example":{"multi":"line\ntext","n":1},"title":"T"}
    },
    "x-kubernetes-group-version-kind":[{"group":"","kind":"ConfigMap","version":"v1"}]},
  "io.k8s.api.core.v1.ConfigMapList":{"type":"object","properties":{"items":{"type":"array","items":{"$ref":"#/definitions/io.k8s.api.core.v1.ConfigMap"}}}},
  "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta":{"type":"object","properties":{"name":{"type":"string"},"labels":{"type":"object","additionalProperties":{"type":"string"}}}},
  "empty":{}
 },
 "parameters":{"pretty":{"uniqueItems":true,"type":"string","name":"pretty","in":"query"},"body":{"in":"body","name":"body","schema":{"type":"object"}}},
 "responses":{"NotFound":{"description":"not found","schema":{"type":"string"}}},
 "security":[{"BearerToken":[]}],
 "securityDefinitions":{
   "BearerToken":{"type":"apiKey","name":"authorization","in":"header","description":"Bearer Token authentication"},
   "basic":{"type":"basic","x-s":1},
   "implicit":{"type":"oauth2","flow":"implicit","authorizationUrl":"https://a","scopes":{"read":"r","write":"w"}},
   "password":{"type":"oauth2","flow":"password","tokenUrl":"https://t"},
   "application":{"type":"oauth2","flow":"application","tokenUrl":"https://t","description":"app"},
   "accessCode":{"type":"oauth2","flow":"accessCode","authorizationUrl":"https://a","tokenUrl":"https://t","scopes":{}}},
 "tags":[{"name":"core_v1","description":"core","externalDocs":{"url":"u"},"x-t":"t"}],
 "externalDocs":{"description":"more","url":"https://kubernetes.io"},
 "x-kubernetes-top":{"b":2,"a":1}
}"##;

    /// `proto.Marshal(openapi_v2.ParseDocument(GOLDEN_JSON))`, produced with Go.
    const GOLDEN_PB_BASE64: &str = concat!(
        "CgMyLjASYwoKS3ViZXJuZXRlcxIHdjEuMzIuMBoBZCIDdG9zKhYKAW4SAXUaAWUiCwoDeC1jEgQSAjEKMgsKBkFwYWNoZRIB",
        "bDofCgZ4LWluZm8SFRITYToKICAgIC0gMQogICAgLSBiChoBaCIBLyoFaHR0cHMyEGFwcGxpY2F0aW9uL2pzb246EGFwcGxp",
        "Y2F0aW9uL2pzb246EGFwcGxpY2F0aW9uL3lhbWxCowkKFgoLeC1wYXRocy1leHQSBxIFdHJ1ZQoS9wgKKS9hcGkvdjEvbmFt",
        "ZXNwYWNlcy97bmFtZXNwYWNlfS9jb25maWdtYXBzEskIEqEGCgdjb3JlX3YxEgFzGgRsaXN0IhsKBGRvY3MSE2h0dHBzOi8v",
        "ZXhhbXBsZS5jb20qHWxpc3RDb3JlVjFOYW1lc3BhY2VkQ29uZmlnTWFwMhBhcHBsaWNhdGlvbi9qc29uOgMqLypCQwpBEj8a",
        "PRIFcXVlcnkaBWxpbWl0IgVsaW1pdCgBMgdpbnRlZ2VyUgYSBDUwMApZAAAAAABAj0BpAAAAAAAAFMCgAQFCUQpPEk0aSxIF",
        "cXVlcnkiBHRhZ3MyBWFycmF5QiEKBnN0cmluZxoJCgdpbnRlZ2VyggEEEgJhCoIBBBICYgpKBW11bHRpkAEKsQEAAAAAAAAE",
        "QEJNCksSSQpHEgZoZWFkZXIiB1gtVHJhY2UqBnN0cmluZ3D//////////394////////////AYIBCF5bYS16XSsksgELCgN4",
        "LWgSBBICdgpCHgocEhoSGBIIZm9ybURhdGEiBnVwbG9hZDIEZmlsZUqPAgqeAQoDMjAwEpYBCpMBCgJPSxIyCjAKLiMvZGVm",
        "aW5pdGlvbnMvaW8uazhzLmFwaS5jb3JlLnYxLkNvbmZpZ01hcExpc3QaNQozCgZYLVJhdGUSKQoHaW50ZWdlchIFaW50MzKS",
        "AQRyYXRlmgEPCgR4LWhoEgcSBW51bGwKIiIKIAoQYXBwbGljYXRpb24vanNvbhIMEgppdGVtczogW10KChcKAzQwMRIQCg4K",
        "DFVuYXV0aG9yaXplZAofCgM0MDQSGBIWChQjL3Jlc3BvbnNlcy9Ob3RGb3VuZAoiCgdkZWZhdWx0EhcKFQoEZmlsZRINEgsa",
        "A3JhdzIEZmlsZRIOCgZ4LXJlc3ASBBICcgpSBWh0dHBzWAFiEQoPCgtCZWFyZXJUb2tlbhIAYhgKFgoFb2F1dGgSDQoEcmVh",
        "ZAoFd3JpdGVqHgoTeC1rdWJlcm5ldGVzLWFjdGlvbhIHEgVsaXN0CmpLCh94LWt1YmVybmV0ZXMtZ3JvdXAtdmVyc2lvbi1r",
        "aW5kEigSJmdyb3VwOiAiIgpraW5kOiBDb25maWdNYXAKdmVyc2lvbjogdjEKGgJKACKeAToDKi8qQlEKTwpNCgFiEgRib2R5",
        "GgRib2R5IAEqLAoqIy9kZWZpbml0aW9ucy9pby5rOHMuYXBpLmNvcmUudjEuQ29uZmlnTWFwMgwKA3gtYhIFEgNbXQpKRApC",
        "CgMyMDESOwo5CgdDcmVhdGVkEi4KLAoqIy9kZWZpbml0aW9ucy9pby5rOHMuYXBpLmNvcmUudjEuQ29uZmlnTWFwKgJKADIC",
        "SgA6AkoAQgJKAEpACj4SPCI6CAESBHBhdGgaGm9iamVjdCBuYW1lIGFuZCBhdXRoIHNjb3BlIgluYW1lc3BhY2UqBnN0cmlu",
        "Z5gBAUoXEhUKEyMvcGFyYW1ldGVycy9wcmV0dHlSEwoLeC1wYXRoLWl0ZW0SBBICcAoSDwoGL2Eve2J9EgUKAyMveEqcCQqV",
        "BwocaW8uazhzLmFwaS5jb3JlLnYxLkNvbmZpZ01hcBL0BiI3Q29uZmlnTWFwIGhvbGRzIGNvbmZpZ3VyYXRpb24gZGF0YSBm",
        "b3IgcG9kcyB0byBjb25zdW1lLpoBBGtpbmSyAQgKBm9iamVjdMoB0QUKJQoKYXBpVmVyc2lvbhIXIgpBUElWZXJzaW9usgEI",
        "CgZzdHJpbmcKLwoKYmluYXJ5RGF0YRIhqgETChESBGJ5dGWyAQgKBnN0cmluZ7IBCAoGb2JqZWN0CioKBGRhdGESIqoBFAoS",
        "KgUSAyIiCrIBCAoGc3RyaW5nsgEICgZvYmplY3QKIwoJaW1tdXRhYmxlEhYqCBIGZmFsc2UKsgEJCgdib29sZWFuCm8KCG1l",
        "dGFkYXRhEmMKPSMvZGVmaW5pdGlvbnMvaW8uazhzLmFwaW1hY2hpbmVyeS5wa2cuYXBpcy5tZXRhLnYxLk9iamVjdE1ldGEi",
        "G1N0YW5kYXJkIG9iamVjdCdzIG1ldGFkYXRhLioFEgN7fQoKIAoGc3RyaWN0EhaIAQWQAQGqAQIQALIBCAoGb2JqZWN0Cg4K",
        "BWxvb3NlEgWqAQIQAQpSCgRsaXN0EkpwA3gBgAEBsgEHCgVhcnJheboBEwoRsgEOCgZzdHJpbmcKBG51bGz6ASAKFngta3Vi",
        "ZXJuZXRlcy1saXN0LXR5cGUSBhIEc2V0CgpzCgNudW0SbDGamZmZmZm5PzkAAAAAAAAAgEABSQAAAAAAAOA/UAGiAQQSAjEK",
        "ogEGEgQyLjUKogEIEgZ0aHJlZQqiAQcSBW51bGwKogEHEgV0cnVlCqIBBxIFYTogYgqiAQYSBC0gYwqyAQgKBm51bWJlcgq5",
        "AQoIY29tcG9zZWQSrAEaAVTCAT8KPSMvZGVmaW5pdGlvbnMvaW8uazhzLmFwaW1hY2hpbmVyeS5wa2cuYXBpcy5tZXRhLnYx",
        "Lk9iamVjdE1ldGHCAQ6yAQgKBm9iamVjdMoBANIBBGtpbmTYAQHiAR0KAXgSAm5zGgFwIAEoATINCgV4LXhtbBIEEgIxCuoB",
        "AxIBdfIBIxIhbXVsdGk6IHwtCiAgICBsaW5lCiAgICB0ZXh0Cm46IDEK+gFRCh94LWt1YmVybmV0ZXMtZ3JvdXAtdmVyc2lv",
        "bi1raW5kEi4SLC0gZ3JvdXA6ICIiCiAga2luZDogQ29uZmlnTWFwCiAgdmVyc2lvbjogdjEKCngKIGlvLms4cy5hcGkuY29y",
        "ZS52MS5Db25maWdNYXBMaXN0ElSyAQgKBm9iamVjdMoBRgpECgVpdGVtcxI7sgEHCgVhcnJheboBLgosCiojL2RlZmluaXRp",
        "b25zL2lvLms4cy5hcGkuY29yZS52MS5Db25maWdNYXAKfQovaW8uazhzLmFwaW1hY2hpbmVyeS5wa2cuYXBpcy5tZXRhLnYx",
        "Lk9iamVjdE1ldGESSrIBCAoGb2JqZWN0ygE8ChMKBG5hbWUSC7IBCAoGc3RyaW5nCiUKBmxhYmVscxIbqgENCguyAQgKBnN0",
        "cmluZ7IBCAoGb2JqZWN0CgkKBWVtcHR5EgBSTwooCgZwcmV0dHkSHhIcGhoSBXF1ZXJ5IgZwcmV0dHkyBnN0cmluZ6ABAQoj",
        "CgRib2R5EhsKGRIEYm9keRoEYm9keSoLsgEICgZvYmplY3RaKAomCghOb3RGb3VuZBIaCglub3QgZm91bmQSDQoLsgEICgZz",
        "dHJpbmdiEQoPCgtCZWFyZXJUb2tlbhIAatkCCk0KC0JlYXJlclRva2VuEj4SPAoGYXBpS2V5Eg1hdXRob3JpemF0aW9uGgZo",
        "ZWFkZXIiG0JlYXJlciBUb2tlbiBhdXRoZW50aWNhdGlvbgofCgViYXNpYxIWChQKBWJhc2ljGgsKA3gtcxIEEgIxCgpECghp",
        "bXBsaWNpdBI4GjYKBm9hdXRoMhIIaW1wbGljaXQaFwoJCgRyZWFkEgFyCgoKBXdyaXRlEgF3IglodHRwczovL2EKKwoIcGFz",
        "c3dvcmQSHyIdCgZvYXV0aDISCHBhc3N3b3JkIglodHRwczovL3QKNgoLYXBwbGljYXRpb24SJyolCgZvYXV0aDISC2FwcGxp",
        "Y2F0aW9uIglodHRwczovL3QqA2FwcAo8CgphY2Nlc3NDb2RlEi4yLAoGb2F1dGgyEgphY2Nlc3NDb2RlGgAiCWh0dHBzOi8v",
        "YSoJaHR0cHM6Ly90ciEKB2NvcmVfdjESBGNvcmUaAxIBdSILCgN4LXQSBBICdAp6HQoEbW9yZRIVaHR0cHM6Ly9rdWJlcm5l",
        "dGVzLmlvggEgChB4LWt1YmVybmV0ZXMtdG9wEgwSCmI6IDIKYTogMQo=",
    );

    #[test]
    fn encoding_matches_gnostic_byte_for_byte() {
        let swagger: Value = serde_json::from_str(GOLDEN_JSON).unwrap();
        let expected = base64::engine::general_purpose::STANDARD
            .decode(GOLDEN_PB_BASE64)
            .unwrap();
        assert_eq!(encode_document(&swagger).unwrap(), expected);
    }

    #[test]
    fn definitions_schemas_and_extensions_decode() {
        let swagger: Value = serde_json::from_str(GOLDEN_JSON).unwrap();
        let doc = encode_document(&swagger).unwrap();
        assert_eq!(text(&doc, 1), "2.0");
        assert_eq!(text(one(&doc, 2), 1), "Kubernetes");

        let definitions = named(one(&doc, 9), 1);
        let names: Vec<&str> = definitions.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(
            names,
            [
                "io.k8s.api.core.v1.ConfigMap",
                "io.k8s.api.core.v1.ConfigMapList",
                "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                "empty",
            ]
        );
        let config_map = lookup(&definitions, "io.k8s.api.core.v1.ConfigMap");
        assert_eq!(texts(one(config_map, 22), 1), ["object"]);
        assert_eq!(
            text(config_map, 4),
            "ConfigMap holds configuration data for pods to consume."
        );
        assert_eq!(
            extension_yaml(config_map, 31, "x-kubernetes-group-version-kind"),
            "- group: \"\"\n  kind: ConfigMap\n  version: v1\n"
        );
        // An empty schema is still written, as an empty message.
        assert!(lookup(&definitions, "empty").is_empty());

        let properties = named(one(config_map, 25), 1);
        let metadata = lookup(&properties, "metadata");
        assert_eq!(
            text(metadata, 1),
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert_eq!(text(one(metadata, 5), 2), "{}\n");
        // additionalProperties: schema (1) or boolean (2, written even when false).
        let data = lookup(&properties, "data");
        let value_schema = one(one(data, 21), 1);
        assert_eq!(texts(one(value_schema, 22), 1), ["string"]);
        assert_eq!(text(one(value_schema, 5), 2), "\"\"\n");
        let strict = lookup(&properties, "strict");
        assert_eq!(fields(one(strict, 21)), [(2, Wire::Varint(0))]);
        // type lists, items, numbers, enum values as YAML.
        let list = lookup(&properties, "list");
        let item = one(one(list, 23), 1);
        assert_eq!(texts(one(item, 22), 1), ["string", "null"]);
        let num = lookup(&properties, "num");
        let num_fields = fields(num);
        assert!(num_fields.contains(&(9, Wire::Fixed64(0.5f64.to_bits()))));
        assert!(num_fields.contains(&(7, Wire::Fixed64((-0.0f64).to_bits()))));
        let enums: Vec<String> = all(num, 20).into_iter().map(|any| text(any, 2)).collect();
        assert_eq!(
            enums,
            [
                "1\n", "2.5\n", "three\n", "null\n", "true\n", "a: b\n", "- c\n"
            ]
        );
        let composed = lookup(&properties, "composed");
        assert_eq!(all(composed, 24).len(), 2);
        assert_eq!(
            text(one(composed, 30), 2),
            "multi: |-\n    line\n    text\nn: 1\n"
        );
    }

    #[test]
    fn operations_and_parameters_decode() {
        let swagger: Value = serde_json::from_str(GOLDEN_JSON).unwrap();
        let doc = encode_document(&swagger).unwrap();
        let paths = one(&doc, 8);
        assert_eq!(extension_yaml(paths, 1, "x-paths-ext"), "true\n");
        let path_items = named(paths, 2);
        let item = lookup(&path_items, "/api/v1/namespaces/{namespace}/configmaps");

        // Path-level parameters: a path parameter, then a JsonReference.
        let path_parameters = all(item, 9);
        let namespace = one(one(one(path_parameters[0], 1), 2), 4);
        assert_eq!(text(namespace, 4), "namespace");
        assert_eq!(text(namespace, 5), "string");
        assert_eq!(fields(namespace)[0], (1, Wire::Varint(1)));
        assert_eq!(text(one(path_parameters[1], 2), 1), "#/parameters/pretty");

        let get = one(item, 2);
        assert_eq!(text(get, 5), "listCoreV1NamespacedConfigMap");
        assert_eq!(
            extension_yaml(get, 13, "x-kubernetes-group-version-kind"),
            "group: \"\"\nkind: ConfigMap\nversion: v1\n"
        );
        let parameters = all(get, 8);
        assert_eq!(parameters.len(), 4);
        let non_body = |index: usize| one(one(parameters[index], 1), 2);
        let query = one(non_body(0), 3);
        assert_eq!(text(query, 4), "limit");
        assert_eq!(text(query, 6), "integer");
        assert_eq!(text(one(query, 10), 2), "500\n");
        assert!(fields(non_body(1)).iter().all(|(field, _)| *field == 3));
        assert_eq!(text(one(non_body(2), 1), 4), "X-Trace");
        assert_eq!(text(one(non_body(3), 2), 6), "file");

        let responses = named(one(get, 9), 1);
        let codes: Vec<&str> = responses.iter().map(|(code, _)| code.as_str()).collect();
        assert_eq!(codes, ["200", "401", "404", "default"]);
        let ok = one(lookup(&responses, "200"), 1);
        assert_eq!(
            text(one(one(ok, 2), 1), 1),
            "#/definitions/io.k8s.api.core.v1.ConfigMapList"
        );
        assert_eq!(
            text(one(lookup(&responses, "404"), 2), 1),
            "#/responses/NotFound"
        );
        // A `file` response schema is a FileSchema (SchemaItem field 2).
        assert_eq!(
            text(one(one(one(lookup(&responses, "default"), 1), 2), 2), 6),
            "file"
        );

        let post = one(item, 4);
        let body = one(one(one(post, 8), 1), 1);
        assert_eq!(text(body, 2), "body");
        assert_eq!(text(body, 3), "body");
        assert_eq!(
            text(one(body, 5), 1),
            "#/definitions/io.k8s.api.core.v1.ConfigMap"
        );
        // Operations present with empty responses are still written.
        for field in [3, 5, 6, 7, 8] {
            assert_eq!(one(item, field), [0x4a, 0x00], "method field {field}");
        }
    }

    #[test]
    fn proto3_defaults_are_left_out_but_present_messages_are_not() {
        let doc = encode(json!({
            "swagger": "2.0",
            "info": {"title": "", "version": ""},
            "paths": {},
            "definitions": {"a": {"readOnly": false, "minLength": 0, "maximum": 0, "description": null}}
        }));
        // swagger, info {}, paths {}, definitions { a: {} }
        assert_eq!(
            doc,
            [
                0x0a, 0x03, b'2', b'.', b'0', 0x12, 0x00, 0x42, 0x00, 0x4a, 0x07, 0x0a, 0x05, 0x0a,
                0x01, b'a', 0x12, 0x00
            ]
            .as_slice()
        );
    }

    #[test]
    fn negative_integers_take_ten_bytes() {
        let doc = encode(json!({"definitions": {"a": {"minLength": -1}}}));
        let schema = one(one(one(&doc, 9), 1), 2);
        assert_eq!(
            schema,
            [
                0x60, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
            ]
        );
    }

    #[test]
    fn unknown_keys_are_skipped() {
        let with = encode(json!({
            "swagger": "2.0",
            "openapi": "3.0.0",
            "info": {"title": "t", "version": "v", "summary": "3.1 only"},
            "paths": {"/p": {"get": {"requestBody": {}, "responses": {"200": {"description": "OK", "content": {}}}}}},
            "definitions": {"a": {"type": "string", "nullable": true, "oneOf": [{}], "x-keep": 1}}
        }));
        let without = encode(json!({
            "swagger": "2.0",
            "info": {"title": "t", "version": "v"},
            "paths": {"/p": {"get": {"responses": {"200": {"description": "OK"}}}}},
            "definitions": {"a": {"type": "string", "x-keep": 1}}
        }));
        assert_eq!(with, without);
    }

    #[test]
    fn wrong_shapes_are_errors_with_a_pointer() {
        let cases = [
            (json!([]), ""),
            (
                json!({"definitions": {"a/b": {"properties": []}}}),
                "/definitions/a~1b/properties",
            ),
            (
                json!({"definitions": {"a": {"properties": {"p": "string"}}}}),
                "/definitions/a/properties/p",
            ),
            (
                json!({"definitions": {"a": {"items": [{"type": "string"}]}}}),
                "/definitions/a/items",
            ),
            (
                json!({"definitions": {"a": {"type": {"x": 1}}}}),
                "/definitions/a/type",
            ),
            (
                json!({"definitions": {"a": {"description": true}}}),
                "/definitions/a/description",
            ),
            (
                json!({"definitions": {"a": {"maxLength": 1.5}}}),
                "/definitions/a/maxLength",
            ),
            (
                json!({"definitions": {"a": {"additionalProperties": "no"}}}),
                "/definitions/a/additionalProperties",
            ),
            (
                json!({"definitions": {"a": {"required": "name"}}}),
                "/definitions/a/required",
            ),
            (
                json!({"paths": {"/p": {"parameters": [{"name": "x"}]}}}),
                "/paths/~1p/parameters/0",
            ),
            (
                json!({"paths": {"/p": {"get": {"parameters": {}}}}}),
                "/paths/~1p/get/parameters",
            ),
            (
                json!({"securityDefinitions": {"s": {"type": "openIdConnect"}}}),
                "/securityDefinitions/s",
            ),
        ];
        for (swagger, pointer) in cases {
            match encode_document(&swagger) {
                Err(OpenApiV2Error::UnexpectedType { pointer: at, .. })
                | Err(OpenApiV2Error::Invalid { pointer: at, .. }) => {
                    assert_eq!(at, pointer, "{swagger}");
                }
                other => panic!("{swagger}: expected an error, got {other:?}"),
            }
        }
        let cookie =
            json!({"paths": {"/p": {"get": {"parameters": [{"name": "c", "in": "cookie"}]}}}});
        let error = encode_document(&cookie).unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid OpenAPI v2 document at \"/paths/~1p/get/parameters/0/in\": parameter location \"cookie\" is not one of body, query, path, header, formData"
        );
    }

    /// Replaces every value of the golden document, one at a time, with values of every JSON
    /// type: the encoder answers with bytes or an error, never a panic.
    #[test]
    fn any_value_anywhere_never_panics() {
        fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
            out.push(at.clone());
            match value {
                Value::Object(map) => {
                    for (key, item) in map {
                        let token = key.replace('~', "~0").replace('/', "~1");
                        pointers(item, format!("{at}/{token}"), out);
                    }
                }
                Value::Array(items) => {
                    for (index, item) in items.iter().enumerate() {
                        pointers(item, format!("{at}/{index}"), out);
                    }
                }
                _ => {}
            }
        }
        let golden: Value = serde_json::from_str(GOLDEN_JSON).unwrap();
        let mut all_pointers = Vec::new();
        pointers(&golden, String::new(), &mut all_pointers);
        let replacements = [
            json!(null),
            json!(true),
            json!(-7),
            json!(2.5),
            json!(""),
            json!([null, {}, []]),
            json!({}),
            json!({"$ref": 1, "in": "body", "type": "file", "x-": [{}]}),
        ];
        for pointer in &all_pointers {
            for replacement in &replacements {
                let mut swagger = golden.clone();
                *swagger.pointer_mut(pointer).unwrap() = replacement.clone();
                let _ = encode_document(&swagger);
            }
        }
    }

    // --- Any.yaml: expected texts produced by gnostic's compiler.Marshal (yaml.v3) --------

    #[test]
    fn yaml_matches_yaml_v3() {
        let cases: &[(&str, &str)] = &[
            ("\"\"", "\"\"\n"),
            ("\"abc\"", "abc\n"),
            ("\"true\"", "\"true\"\n"),
            ("\"null\"", "\"null\"\n"),
            ("\"~\"", "\"~\"\n"),
            ("\"yes\"", "yes\n"),
            ("\"123\"", "\"123\"\n"),
            ("\"0x1F\"", "\"0x1F\"\n"),
            ("\"0b\"", "0b\n"),
            ("\"1_000\"", "\"1_000\"\n"),
            ("\".5\"", "\".5\"\n"),
            ("\"1e3\"", "\"1e3\"\n"),
            ("\"1e400\"", "1e400\n"),
            ("\"---\"", "'---'\n"),
            ("\"2001-12-14\"", "\"2001-12-14\"\n"),
            (
                "\"2001-12-14T21:59:43.10-05:00\"",
                "\"2001-12-14T21:59:43.10-05:00\"\n",
            ),
            ("\"2001-12-14 21:59:43.10\"", "\"2001-12-14 21:59:43.10\"\n"),
            ("\"2001-02-30\"", "2001-02-30\n"),
            ("\"a: b\"", "'a: b'\n"),
            ("\"a:b\"", "a:b\n"),
            ("\"- a\"", "'- a'\n"),
            ("\"-a\"", "-a\n"),
            ("\"#a\"", "'#a'\n"),
            ("\"a #b\"", "'a #b'\n"),
            ("\"a#b\"", "a#b\n"),
            ("\"'a\"", "'''a'\n"),
            ("\"a'b\"", "a'b\n"),
            ("\" a\"", "' a'\n"),
            ("\"a \"", "'a '\n"),
            ("\"a\\tb\"", "\"a\\tb\"\n"),
            ("\"a\\nb\"", "|-\n    a\n    b\n"),
            ("\"a\\n\"", "|\n    a\n"),
            ("\"a\\n\\n\"", "|+\n    a\n\n"),
            ("\"\\na\"", "|4-\n    a\n"),
            ("\"a \\nb\"", "\"a \\nb\"\n"),
            ("\"a\\rb\"", "\"a\\rb\"\n"),
            ("\"caf\\u00e9\"", "caf\u{e9}\n"),
            ("\"a\\u2028b\"", "'a\u{2028}    b'\n"),
            ("\"\\ufeffab\"", "\"\\uFEFF\\x61\\x62\"\n"),
            ("\"emoji \\ud83d\\ude00\"", "\"emoji \\U0001F600\"\n"),
            ("\"\\u0007bell\"", "\"\\abell\"\n"),
            ("\"<<\"", "<<\n"),
            (
                "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"",
                "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
            ),
            ("\"v1\"", "v1\n"),
            ("\"9223372036854775808\"", "\"9223372036854775808\"\n"),
            ("\"0x10000000000000000\"", "0x10000000000000000\n"),
            ("0", "0\n"),
            ("1", "1\n"),
            ("-1", "-1\n"),
            ("1.5", "1.5\n"),
            ("1e+20", "1e+20\n"),
            ("1e-07", "1e-7\n"),
            ("12345678901234567890", "12345678901234567890\n"),
            ("-0.0", "-0.0\n"),
            ("true", "true\n"),
            ("false", "false\n"),
            ("null", "null\n"),
            ("{}", "{}\n"),
            ("[]", "[]\n"),
            ("{\"a\": {}}", "a: {}\n"),
            ("{\"a\": []}", "a: []\n"),
            ("[[]]", "- []\n"),
            ("[{}]", "- {}\n"),
            (
                "[{\"group\": \"\", \"kind\": \"ConfigMap\", \"version\": \"v1\"}]",
                "- group: \"\"\n  kind: ConfigMap\n  version: v1\n",
            ),
            (
                "{\"a\": 1, \"b\": [1, 2, {\"c\": \"d\"}], \"e\": {\"f\": {\"g\": null}}}",
                "a: 1\nb:\n    - 1\n    - 2\n    - c: d\ne:\n    f:\n        g: null\n",
            ),
            (
                "[[1, 2], [3, [4, 5]]]",
                "- - 1\n  - 2\n- - 3\n  - - 4\n    - 5\n",
            ),
            (
                "{\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\": 1}",
                "? xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n: 1\n",
            ),
            ("{\"multi\\nline\": 2}", "? |-\n    multi\n    line\n: 2\n"),
            ("{\"\": 1}", "\"\": 1\n"),
            (
                "{\"true\": 1, \"1\": 2, \"a b\": 3, \"a: b\": 4}",
                "\"true\": 1\n\"1\": 2\na b: 3\n'a: b': 4\n",
            ),
            ("[\"a\\nb\", \"c\"]", "- |-\n  a\n  b\n- c\n"),
            ("{\"k\": \"a\\nb\"}", "k: |-\n    a\n    b\n"),
            ("{\"k\": [\"a\\nb\"]}", "k:\n    - |-\n      a\n      b\n"),
            (
                "[{\"a\": \"x\\ny\", \"b\": [{\"c\": \"d\"}]}]",
                "- a: |-\n    x\n    y\n  b:\n    - c: d\n",
            ),
            ("{\"k\": \"  lead\"}", "k: '  lead'\n"),
            ("{\"k\": \"\\nlead break\"}", "k: |4-\n    lead break\n"),
            ("[\"\\n\", \"a\\n\"]", "- |4+\n- |\n  a\n"),
            (
                "{\"list\": [{}, [], \"\", null]}",
                "list:\n    - {}\n    - []\n    - \"\"\n    - null\n",
            ),
        ];
        for (json_text, expected) in cases {
            let value: Value = serde_json::from_str(json_text).unwrap();
            assert_eq!(yaml::to_yaml(&value), *expected, "value {json_text}");
        }
    }

    // --- OpenAPI v3 → Swagger 2.0 ---------------------------------------------------------

    fn v3_document() -> Value {
        json!({
            "openapi": "3.0.0",
            "info": {"title": "Wasmgate", "version": "v1.32.0"},
            "paths": {
                "/api/v1/namespaces/{namespace}/configmaps/{name}": {
                    "parameters": [
                        {"name": "name", "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}},
                        {"name": "namespace", "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}}
                    ],
                    "patch": {
                        "operationId": "patchConfigMap",
                        "x-kubernetes-action": "patch",
                        "x-kubernetes-group-version-kind": {"version": "v1", "kind": "ConfigMap", "group": ""},
                        "parameters": [
                            {"name": "fieldValidation", "in": "query", "description": "fv", "schema": {"type": "string", "uniqueItems": true}},
                            {"name": "labels", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}},
                            {"name": "session", "in": "cookie", "schema": {"type": "string"}}
                        ],
                        "requestBody": {
                            "content": {
                                "application/json-patch+json": {"schema": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}},
                                "application/strategic-merge-patch+json": {"schema": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}}
                            },
                            "required": true
                        },
                        "responses": {
                            "201": {"description": "Created", "content": {"application/yaml": {"schema": {"$ref": "#/components/schemas/io.k8s.api.core.v1.ConfigMap"}}}},
                            "200": {"description": "OK", "content": {
                                "application/json": {"schema": {"$ref": "#/components/schemas/io.k8s.api.core.v1.ConfigMap"}},
                                "application/yaml": {"schema": {"$ref": "#/components/schemas/io.k8s.api.core.v1.ConfigMap"}}
                            }}
                        }
                    },
                    "trace": {"responses": {}}
                }
            },
            "components": {
                "schemas": {
                    "io.k8s.api.core.v1.ConfigMap": {
                        "type": "object",
                        "description": "ConfigMap holds configuration data for pods to consume.",
                        "properties": {
                            "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}], "default": {}, "description": "md"},
                            "data": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
                            "both": {"allOf": [{"$ref": "#/components/schemas/A"}, {"$ref": "#/components/schemas/B"}]},
                            "maybe": {"type": "string", "nullable": true, "anyOf": [{"type": "string"}], "x-kubernetes-int-or-string": true}
                        },
                        "x-kubernetes-group-version-kind": [{"version": "v1", "kind": "ConfigMap", "group": ""}]
                    },
                    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {"name": {"type": "string"}}},
                    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch": {"type": "object"},
                    "A": {"type": "object"}
                },
                "securitySchemes": {"BearerToken": {"type": "http", "scheme": "bearer", "description": "Bearer Token authentication"}}
            },
            "security": [{"BearerToken": []}],
            "x-kubernetes-top": {"b": 1, "a": 2}
        })
    }

    #[test]
    fn v3_documents_become_kube_apiserver_style_swagger() {
        let lease_document = json!({
            "openapi": "3.0.0",
            "paths": {"/apis/coordination.k8s.io/v1/leases": {"get": {"responses": {}}}},
            "components": {"schemas": {
                "io.k8s.api.coordination.v1.Lease": {"type": "object"},
                "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"description": "second copy, ignored"}
            }},
            "x-kubernetes-top": "ignored: the first document's wins"
        });
        let swagger = swagger_from_v3(&[v3_document(), lease_document], "Kubernetes", "v1.32.0");
        let expected = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": {
                "/api/v1/namespaces/{namespace}/configmaps/{name}": {
                    "patch": {
                        "consumes": ["application/json-patch+json", "application/strategic-merge-patch+json"],
                        "produces": ["application/yaml", "application/json"],
                        "operationId": "patchConfigMap",
                        "parameters": [
                            {"name": "body", "in": "body", "required": true,
                             "schema": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}},
                            {"type": "string", "uniqueItems": true, "description": "fv", "name": "fieldValidation", "in": "query"},
                            {"type": "array", "items": {"type": "string"}, "collectionFormat": "multi", "name": "labels", "in": "query"}
                        ],
                        "responses": {
                            "200": {"description": "OK", "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.ConfigMap"}},
                            "201": {"description": "Created", "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.ConfigMap"}}
                        },
                        "x-kubernetes-action": "patch",
                        "x-kubernetes-group-version-kind": {"group": "", "kind": "ConfigMap", "version": "v1"}
                    },
                    "parameters": [
                        {"type": "string", "uniqueItems": true, "name": "name", "in": "path", "required": true},
                        {"type": "string", "uniqueItems": true, "name": "namespace", "in": "path", "required": true}
                    ]
                },
                "/apis/coordination.k8s.io/v1/leases": {"get": {"consumes": ["*/*"], "responses": {}}}
            },
            "definitions": {
                "A": {"type": "object"},
                "io.k8s.api.coordination.v1.Lease": {"type": "object"},
                "io.k8s.api.core.v1.ConfigMap": {
                    "type": "object",
                    "description": "ConfigMap holds configuration data for pods to consume.",
                    "properties": {
                        // B is not defined: its reference is dropped.
                        "both": {"allOf": [{"$ref": "#/definitions/A"}, {}]},
                        "data": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
                        // nullable: no type (what kube-apiserver publishes for CRDs).
                        "maybe": {"x-kubernetes-int-or-string": true},
                        "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "default": {}, "description": "md"}
                    },
                    "x-kubernetes-group-version-kind": [{"group": "", "kind": "ConfigMap", "version": "v1"}]
                },
                "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {"name": {"type": "string"}}},
                "io.k8s.apimachinery.pkg.apis.meta.v1.Patch": {"type": "object"}
            },
            "securityDefinitions": {
                "BearerToken": {"type": "apiKey", "name": "authorization", "in": "header", "description": "Bearer Token authentication"}
            },
            "security": [{"BearerToken": []}],
            "x-kubernetes-top": {"a": 2, "b": 1}
        });
        assert_eq!(swagger, expected);
        // Same keys in the same order (serde_json's Value equality ignores order).
        assert_eq!(
            serde_json::to_string(&swagger).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
    }

    /// What kubectl 1.28 looks for to choose server-side field validation: a `patch` operation
    /// whose `x-kubernetes-group-version-kind` extension names the kind and whose parameters
    /// include the query parameter `fieldValidation`.
    #[test]
    fn converted_patch_operation_carries_what_kubectl_checks() {
        let swagger = swagger_from_v3(&[v3_document()], "Kubernetes", "v1.32.0");
        let doc = encode_document(&swagger).unwrap();
        let path_items = named(one(&doc, 8), 2);
        let item = lookup(
            &path_items,
            "/api/v1/namespaces/{namespace}/configmaps/{name}",
        );
        let patch = one(item, 8);
        assert_eq!(
            extension_yaml(patch, 13, "x-kubernetes-group-version-kind"),
            "group: \"\"\nkind: ConfigMap\nversion: v1\n"
        );
        let query_names: Vec<String> = all(patch, 8)
            .into_iter()
            .filter_map(|item| {
                let parameter = one(item, 1);
                let non_body = all(parameter, 2);
                let query = all(non_body.first()?, 3);
                Some(text(query.first()?, 4))
            })
            .collect();
        assert_eq!(query_names, ["fieldValidation", "labels"]);
        assert_eq!(
            texts(patch, 7),
            [
                "application/json-patch+json",
                "application/strategic-merge-patch+json"
            ]
        );

        let definitions = named(one(&doc, 9), 1);
        let config_map = lookup(&definitions, "io.k8s.api.core.v1.ConfigMap");
        let metadata = lookup(&named(one(config_map, 25), 1), "metadata");
        assert_eq!(
            text(metadata, 1),
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
    }

    /// kube-apiserver's v2 rules for CRD schemas, which also keep kubectl's v2 model from
    /// rejecting the whole document.
    #[test]
    fn schemas_are_made_parseable_by_kubectl() {
        let document = json!({"components": {"schemas": {"W": {
            "type": "object",
            "required": ["spec", "maybe", "ref"],
            "properties": {
                "maybe": {"type": "object", "nullable": true, "properties": {"a": {"type": "string"}}, "description": "n"},
                "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"a": {}}},
                "list": {"type": "array", "x-kubernetes-preserve-unknown-fields": true, "items": {"type": "string"}},
                "bare": {"type": "array"},
                "ref": {"$ref": "#/components/schemas/W", "type": "object", "properties": {"x": {}}, "format": "f", "description": "d"},
                "away": {"$ref": "other.json#/W", "description": "kept"},
                "odd": {"type": "null"},
                "many": {"type": ["string", "integer"]},
                "spec": {"type": "object", "additionalProperties": {"type": "string", "nullable": true}, "required": ["k"]}
            }
        }}}});
        let swagger = swagger_from_v3(&[document], "t", "v");
        assert_eq!(
            swagger["definitions"]["W"],
            json!({
                "type": "object",
                "required": ["spec", "ref"],
                "properties": {
                    "away": {"description": "kept"},
                    "bare": {},
                    "list": {"x-kubernetes-preserve-unknown-fields": true},
                    "many": {},
                    "maybe": {"description": "n"},
                    "odd": {},
                    "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "ref": {"$ref": "#/definitions/W", "description": "d"},
                    "spec": {"type": "object", "additionalProperties": {}}
                }
            })
        );
        encode_document(&swagger).unwrap();
    }

    #[test]
    fn v3_odd_shapes_are_dropped_not_propagated() {
        let document = json!({
            "paths": {
                "x-not-a-path": {},
                "/p": {"get": {"parameters": [{"$ref": "#/components/parameters/P"}, "junk", {"in": "query", "name": "q", "schema": {"type": "object"}}],
                               "responses": {"200": {"$ref": "#/components/responses/R"}, "2XX": {"description": "range"}}}}
            },
            "components": {"schemas": {"S": {"properties": [], "items": [1], "additionalProperties": "x", "enum": 3,
                                              "discriminator": {"propertyName": "kind"}}}}
        });
        let swagger = swagger_from_v3(&[document, json!("not an object")], "t", "v");
        assert_eq!(
            swagger["paths"],
            json!({"/p": {"get": {
                "consumes": ["*/*"],
                "parameters": [{"$ref": "#/parameters/P"}, {"type": "string", "name": "q", "in": "query"}],
                "responses": {"200": {"$ref": "#/responses/R"}}
            }}})
        );
        assert_eq!(
            swagger["definitions"],
            json!({"S": {"discriminator": "kind"}})
        );
        encode_document(&swagger).unwrap();
    }
}
