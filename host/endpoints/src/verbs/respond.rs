//! Responses: one object, a Status, a list, in the negotiated encoding (JSON, YAML,
//! Protobuf, Table, PartialObjectMetadata), gzipped when the client takes it.

use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Map, Value, json};
use wasmgate_apimachinery::json::{self as wjson};
use wasmgate_apimachinery::media::{Encoding, Output};
use wasmgate_apimachinery::status::Status;
use wasmgate_apimachinery::table;

use super::{Ctx, protobuf_response};
use crate::body::Body;
use crate::error::ApiResult;
use crate::kinds::Obj;
use crate::object::{meta, meta_str};
use crate::response::bytes_response as response;

impl Ctx {
    /// Renders one object.
    pub(crate) async fn respond_object(
        &self,
        code: StatusCode,
        obj: Obj,
    ) -> ApiResult<Response<Body>> {
        let out = self.encoding.output()?;
        match out {
            Output::Json => {
                let bytes = match (&obj, self.encoding.pretty()) {
                    (Obj::Raw(b), false) => b.clone(),
                    _ => Bytes::from(encode_json(&*obj.value()?, self.encoding.pretty())),
                };
                Ok(response(code, "application/json", bytes))
            }
            Output::Yaml => Ok(response(
                code,
                "application/yaml",
                wjson::to_yaml(&*obj.value()?),
            )),
            Output::Protobuf => {
                let (api_version, kind) = self.response_kind();
                protobuf_response::stored_response(code, &api_version, kind, &obj)
            }
            Output::Table(v) => {
                let value = obj.value()?;
                let rv = meta_str(&value, "resourceVersion").unwrap_or("").to_owned();
                let (columns, rows) = self.table_parts(std::slice::from_ref(&*value), v).await?;
                let t = table::Table {
                    api_version: v.api_version().into(),
                    metadata: table::list_metadata(&rv, "", None),
                    column_definitions: columns,
                    rows,
                };
                Ok(response(
                    code,
                    "application/json",
                    encode_json(&t.to_json(), self.encoding.pretty()),
                ))
            }
            Output::PartialObjectMetadata(v, encoding) => {
                let value = obj.value()?;
                let p = json!({"kind": "PartialObjectMetadata", "apiVersion": v.api_version(), "metadata": meta(&value)});
                if encoding == Encoding::Protobuf {
                    return protobuf_response::object_response(
                        code,
                        v.api_version(),
                        "PartialObjectMetadata",
                        &p,
                    );
                }
                Ok(response(
                    code,
                    "application/json",
                    encode_json(&p, self.encoding.pretty()),
                ))
            }
        }
    }

    /// A `Status` as the body of a success (a delete), in the encoding the request
    /// negotiated: protobuf for a protobuf request, else JSON (`ENC-04`).
    pub(crate) fn respond_status(&self, code: StatusCode, status: &Status) -> Response<Body> {
        let protobuf = self.encoding.output().is_ok_and(Output::is_protobuf);
        crate::response::status_body_response(code, status, protobuf)
    }

    /// Renders a list.
    pub(crate) async fn respond_list(
        &self,
        items: Vec<Obj>,
        revision: u64,
        continue_token: &str,
        remaining: Option<u64>,
    ) -> ApiResult<Response<Body>> {
        let out = self.encoding.output()?;
        let rv = revision.to_string();
        let mut list_meta = Map::new();
        list_meta.insert("resourceVersion".into(), json!(rv));
        if !continue_token.is_empty() {
            list_meta.insert("continue".into(), json!(continue_token));
        }
        if let Some(n) = remaining {
            list_meta.insert("remainingItemCount".into(), json!(n));
        }
        match out {
            Output::Json if !self.encoding.pretty() => {
                // Stored bytes go out untouched: no decode, no re-encode, no copy into
                // one buffer the size of the list.
                let mut head = BytesMut::with_capacity(128);
                head.put_slice(br#"{"kind":"#);
                head.put_slice(&serde_json::to_vec(&self.rt.list_kind).unwrap_or_default());
                head.put_slice(br#","apiVersion":"#);
                head.put_slice(&serde_json::to_vec(&self.api_version()).unwrap_or_default());
                head.put_slice(br#","metadata":"#);
                head.put_slice(&serde_json::to_vec(&list_meta).unwrap_or_default());
                head.put_slice(br#","items":["#);
                let items = items
                    .into_iter()
                    .map(|i| match i {
                        Obj::Raw(r) => r,
                        Obj::Value(v) => Bytes::from(serde_json::to_vec(&v).unwrap_or_default()),
                    })
                    .collect();
                let mut resp =
                    Response::new(crate::body::joined(head.freeze(), items, b",", b"]}"));
                resp.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                Ok(resp)
            }
            Output::Json | Output::Yaml => {
                let values: Vec<Value> = items
                    .iter()
                    .map(|i| i.value().map(|v| v.into_owned()))
                    .collect::<ApiResult<_>>()?;
                let list = json!({"kind": self.rt.list_kind, "apiVersion": self.api_version(), "metadata": list_meta, "items": values});
                if matches!(out, Output::Yaml) {
                    Ok(response(
                        StatusCode::OK,
                        "application/yaml",
                        wjson::to_yaml(&list),
                    ))
                } else {
                    Ok(response(
                        StatusCode::OK,
                        "application/json",
                        encode_json(&list, true),
                    ))
                }
            }
            Output::Table(v) => {
                let values: Vec<Value> = items
                    .iter()
                    .map(|i| i.value().map(|v| v.into_owned()))
                    .collect::<ApiResult<_>>()?;
                let (columns, rows) = self.table_parts(&values, v).await?;
                let t = table::Table {
                    api_version: v.api_version().into(),
                    metadata: Value::Object(list_meta),
                    column_definitions: columns,
                    rows,
                };
                Ok(response(
                    StatusCode::OK,
                    "application/json",
                    encode_json(&t.to_json(), self.encoding.pretty()),
                ))
            }
            Output::Protobuf => {
                let api_version = self.api_version();
                protobuf_response::list_response(
                    &api_version,
                    &self.rt.list_kind,
                    &list_meta,
                    items,
                )
                .await
            }
            Output::PartialObjectMetadata(v, Encoding::Protobuf) => {
                protobuf_response::list_response(
                    v.api_version(),
                    "PartialObjectMetadataList",
                    &list_meta,
                    items,
                )
                .await
            }
            Output::PartialObjectMetadata(v, Encoding::Json) => {
                let metas: Vec<Value> = items
                    .iter()
                    .map(|i| {
                        i.value().map(|o| {
                            json!({"kind": "PartialObjectMetadata", "apiVersion": v.api_version(), "metadata": meta(&o)})
                        })
                    })
                    .collect::<ApiResult<_>>()?;
                let list = json!({"kind": "PartialObjectMetadataList", "apiVersion": v.api_version(), "metadata": list_meta, "items": metas});
                Ok(response(
                    StatusCode::OK,
                    "application/json",
                    encode_json(&list, self.encoding.pretty()),
                ))
            }
        }
    }
}

pub(crate) fn encode_json(v: &Value, pretty: bool) -> Vec<u8> {
    if pretty {
        serde_json::to_vec_pretty(v).unwrap_or_default()
    } else {
        serde_json::to_vec(v).unwrap_or_default()
    }
}
