//! Responses in Kubernetes protobuf (`ENC-04`): objects, lists and Status of built-in kinds,
//! and `PartialObjectMetadata` of every kind. Custom resources have no protobuf form
//! (`ENC-05`): [`Ctx::serves_protobuf`] is false for them, so negotiation answers JSON or
//! 406; their `scale` subresource speaks `autoscaling/v1` Scale, which has one.
//!
//! Stored objects are encoded from their JSON text without decoding it into a
//! `serde_json::Value` first (`protobuf::encode_stored`), several times faster.
//!
//! A protobuf list is length-prefixed (the envelope's `raw` field comes before the
//! items), so unlike the JSON list it cannot go out before its last item is encoded: its
//! items are read (their stored bytes, shared with the object cache), then encoded a
//! page at a time, yielding between pages so that one large list does not hold a runtime
//! thread, and sent as one body.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Map, Value};
use wasmgate_apimachinery::protobuf::{self, ListEncoder};

use super::pages::PAGE;
use super::{Ctx, Obj};
use crate::body::{self, Body};
use crate::error::{ApiError, ApiResult};
use crate::registry::ResourceType;

impl Ctx {
    /// The apiVersion and kind of the objects the request answers with: the resource's,
    /// or its subresource's (`scale`: `autoscaling/v1` Scale; `token`: TokenRequest).
    pub(crate) fn response_kind(&self) -> (String, &str) {
        response_kind(&self.rt, self.req.subresource.as_deref(), &self.req.version)
    }

    /// Whether the response may be protobuf ([`serves_protobuf`]).
    pub(crate) fn serves_protobuf(&self) -> bool {
        serves_protobuf(&self.rt, self.req.subresource.as_deref(), &self.req.version)
    }
}

/// The apiVersion and kind a request for `rt` (its `subresource`, at `version`) answers
/// with.
fn response_kind<'a>(
    rt: &'a ResourceType,
    subresource: Option<&str>,
    version: &str,
) -> (String, &'a str) {
    match subresource {
        Some("scale") => ("autoscaling/v1".to_owned(), "Scale"),
        Some("token") => ("authentication.k8s.io/v1".to_owned(), "TokenRequest"),
        _ => (rt.group_version(version), rt.kind.as_str()),
    }
}

/// Whether the response may be protobuf: a built-in kind with a protobuf form, or
/// a custom resource's Scale (kube's scale handler serves it with the built-in
/// codecs); never a custom resource itself (`ENC-05`).
pub(crate) fn serves_protobuf(rt: &ResourceType, subresource: Option<&str>, version: &str) -> bool {
    let (api_version, kind) = response_kind(rt, subresource, version);
    let custom_object = rt.custom().is_some() && subresource != Some("scale");
    !custom_object && protobuf::can_encode(&api_version, kind)
}

/// The Content-Type of protobuf responses.
const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// One object as a protobuf response.
pub(crate) fn object_response(
    code: StatusCode,
    api_version: &str,
    kind: &str,
    obj: &Value,
) -> ApiResult<Response<Body>> {
    let bytes = protobuf::encode(api_version, kind, obj).map_err(ApiError::internal)?;
    Ok(crate::response::bytes_response(code, CONTENT_TYPE, bytes))
}

/// A stored object (its bytes as they are, or decoded) as a protobuf response. For
/// `PartialObjectMetadata`, the whole object: only its metadata is encoded.
pub(crate) fn stored_response(
    code: StatusCode,
    api_version: &str,
    kind: &str,
    obj: &Obj,
) -> ApiResult<Response<Body>> {
    let bytes = match obj {
        Obj::Raw(raw) => protobuf::encode_stored(api_version, kind, raw),
        Obj::Value(v) => protobuf::encode(api_version, kind, v),
    }
    .map_err(ApiError::internal)?;
    Ok(crate::response::bytes_response(code, CONTENT_TYPE, bytes))
}

/// A list of stored objects as a protobuf response, encoded a page at a time (for a
/// `PartialObjectMetadataList`, only the objects' metadata).
pub(crate) async fn list_response(
    api_version: &str,
    list_kind: &str,
    list_meta: &Map<String, Value>,
    items: Vec<Obj>,
) -> ApiResult<Response<Body>> {
    let encoder = ListEncoder::new(api_version, list_kind).ok_or_else(|| {
        ApiError::internal(format!("no protobuf form for {api_version} {list_kind}"))
    })?;
    let mut pages = Vec::with_capacity(items.len() / PAGE + 3);
    // The head goes first once the items' length is known.
    pages.push(Bytes::new());
    let mut len = 0;
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        let batch: Vec<Obj> = items.by_ref().take(PAGE).collect();
        // The protobuf form of an object is smaller than its JSON: no growing (and
        // copying) of the page as it fills.
        let json_len: usize = batch
            .iter()
            .map(|o| match o {
                Obj::Raw(raw) => raw.len() + 8,
                Obj::Value(_) => 1024,
            })
            .sum();
        let mut page = Vec::with_capacity(json_len);
        for obj in &batch {
            match obj {
                Obj::Raw(raw) => encoder.item_stored(raw, &mut page),
                Obj::Value(v) => encoder.item(v, &mut page),
            }
            .map_err(ApiError::internal)?;
        }
        len += page.len();
        pages.push(Bytes::from(page));
        if items.peek().is_some() {
            tokio::task::yield_now().await;
        }
    }
    let (head, tail) = encoder
        .finish(&Value::Object(list_meta.clone()), len)
        .map_err(ApiError::internal)?;
    pages[0] = Bytes::from(head);
    pages.push(Bytes::from(tail));
    let mut resp = Response::new(body::chunks(pages));
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    Ok(resp)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use serde_json::{Map, Value};
    use wasmgate_apimachinery::protobuf;

    use crate::openapi::builtin_definitions;
    use crate::registry::builtin_types;

    /// How deep the trees are compared (JSON schemas nest without end).
    const DEPTH: usize = 7;

    /// An OpenAPI schema as the tree [`protobuf::describe`] makes of a protobuf table.
    fn openapi_tree(defs: &Map<String, Value>, schema: &Value, depth: usize) -> Value {
        let mut schema = schema;
        loop {
            if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
                let name = r.rsplit('/').next().unwrap_or("");
                schema = defs.get(name).unwrap_or(&Value::Null);
            } else if let Some([one]) = schema
                .get("allOf")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
            {
                schema = one;
            } else {
                break;
            }
        }
        if depth == 0 {
            return Value::Null;
        }
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            return Value::Object(
                props
                    .iter()
                    .map(|(k, v)| (k.clone(), openapi_tree(defs, v, depth - 1)))
                    .collect(),
            );
        }
        if let Some(items) = schema.get("items") {
            return openapi_tree(defs, items, depth);
        }
        match schema.get("additionalProperties") {
            Some(inner @ Value::Object(_)) => openapi_tree(defs, inner, depth),
            _ => Value::Null,
        }
    }

    fn differences(path: &str, table: &Value, openapi: &Value, out: &mut Vec<String>) {
        match (table, openapi) {
            (Value::Object(t), Value::Object(o)) => {
                for k in t.keys().filter(|k| !o.contains_key(*k)) {
                    out.push(format!("{path}.{k}: only in the protobuf table"));
                }
                for k in o.keys().filter(|k| !t.contains_key(*k)) {
                    out.push(format!("{path}.{k}: not in the protobuf table"));
                }
                for (k, tv) in t {
                    if let Some(ov) = o.get(k) {
                        differences(&format!("{path}.{k}"), tv, ov, out);
                    }
                }
            }
            (Value::Null, Value::Null) => {}
            // A message without fields (`CustomResourceSubresourceStatus`): `{}` either way.
            (Value::Object(t), Value::Null) if t.is_empty() => {}
            (t, o) => out.push(format!(
                "{path}: {} in the table, {} in OpenAPI",
                if t.is_null() { "a value" } else { "an object" },
                if o.is_null() { "a value" } else { "an object" },
            )),
        }
    }

    /// ENC-04: every built-in kind the gateway serves has a protobuf form, and its table
    /// has exactly the fields of the kind's OpenAPI schema, at every level (so no stored
    /// field is dropped from a protobuf response, and none is invented).
    #[test]
    fn enc04_every_builtin_kind_has_a_complete_protobuf_table() {
        let defs = builtin_definitions();
        let mut problems = Vec::new();
        let mut kinds: Vec<(String, String, String)> = builtin_types()
            .iter()
            .map(|t| (t.group_version("v1"), t.kind.clone(), t.schema_name.clone()))
            .collect();
        kinds.push((
            "autoscaling/v1".into(),
            "Scale".into(),
            "io.k8s.api.autoscaling.v1.Scale".into(),
        ));
        kinds.push((
            "v1".into(),
            "Status".into(),
            "io.k8s.apimachinery.pkg.apis.meta.v1.Status".into(),
        ));
        for (api_version, kind, schema_name) in kinds {
            let table = protobuf::describe(&api_version, &kind, DEPTH)
                .unwrap_or_else(|| panic!("{api_version} {kind} has no protobuf form"));
            let schema = defs
                .get(&schema_name)
                .unwrap_or_else(|| panic!("no schema {schema_name}"));
            let mut openapi = openapi_tree(defs, schema, DEPTH);
            if let Some(o) = openapi.as_object_mut() {
                o.remove("apiVersion");
                o.remove("kind");
            }
            differences(&kind, &table, &openapi, &mut problems);
        }
        assert!(problems.is_empty(), "{problems:#?}");
    }
}
