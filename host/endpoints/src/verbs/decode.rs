//! Request bodies: decoding (JSON, YAML, Protobuf), the type checks of `apiVersion` and
//! `kind`, unknown and duplicate fields (`FV-*`), with kube-apiserver's wording.

use bytes::Bytes;
use http::header;
use serde_json::Value;
use wasmgate_apimachinery::json::{self as wjson, Decoded};
use wasmgate_apimachinery::media::{self, BodyType};
use wasmgate_apimachinery::options::FieldValidation;
use wasmgate_apimachinery::protobuf;
use wasmgate_apimachinery::status::Status;

use super::Ctx;
use crate::error::ApiResult;
use crate::response::header_str;

impl Ctx {
    /// Decodes a request body of a create or update.
    pub(crate) fn decode_body(&self, body: &Bytes) -> ApiResult<Decoded> {
        let ct = header_str(&self.headers, header::CONTENT_TYPE);
        let ty = media::body_type(ct).map_err(Status::from)?;
        let decoded = match ty {
            BodyType::Json => wjson::from_slice(body).map_err(|e| {
                Status::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
            })?,
            BodyType::Yaml => wjson::from_yaml(body)
                .map_err(|e| Status::bad_request(format!("error converting YAML to JSON: {e}")))?,
            BodyType::Protobuf if self.kind().is_custom() && !self.serves_protobuf() => {
                // ENC-05: no protobuf for custom resources (their Scale has one).
                return Err(Status::from(media::UnsupportedMediaType {
                    accepted: "application/json, application/yaml",
                })
                .into());
            }
            BodyType::Protobuf => {
                let value = protobuf::decode(body).map_err(|e| match e {
                    protobuf::ProtobufError::UnsupportedKind { .. } => {
                        Status::failure(415, "UnsupportedMediaType", e.to_string())
                    }
                    other => {
                        Status::bad_request(format!("unable to decode protobuf body: {other}"))
                    }
                })?;
                Decoded {
                    value,
                    duplicates: Vec::new(),
                }
            }
        };
        if !decoded.value.is_object() {
            // What Go's decoder says when it reads the type fields of something that is
            // not an object.
            let found = wasmgate_apimachinery::schema::json_kind(&decoded.value);
            return Err(Status::bad_request(format!(
                "couldn't get version/kind; json parse error: json: cannot unmarshal {found} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}"
            ))
            .into());
        }
        Ok(decoded)
    }

    /// Decodes the body of a create or update: [`Ctx::decode_body`], with decoding errors
    /// worded as kube-apiserver's `transformDecodeError` words them for an object whose
    /// kind could not be read.
    pub(crate) fn decode_object(&self, body: &Bytes) -> ApiResult<Decoded> {
        self.decode_body(body).map_err(|mut e| {
            if e.status.code == 400 {
                e.status.message = self.unrecognized(&e.status.message, body);
            }
            e
        })
    }

    /// `the object provided is unrecognized (must be of type Kind): <cause> (<summary>)`.
    fn unrecognized(&self, cause: &str, body: &[u8]) -> String {
        format!(
            "the object provided is unrecognized (must be of type {}): {cause} ({})",
            self.rt.kind,
            summarize_body(body)
        )
    }

    /// The type of a body (`body`: its bytes as sent, for messages) must be this resource's.
    /// A missing `kind` or `apiVersion` is filled from the URL for built-in types, as
    /// kube-apiserver's decoder does (`gvkWithDefaults`): the Python client and typed
    /// clients often send neither. Custom resources are decoded as unstructured objects,
    /// which need a `kind` in the data; a missing `apiVersion` then fails the version check.
    pub(crate) fn check_type_meta(&self, obj: &mut Value, body: &[u8]) -> ApiResult<()> {
        let want_av = self.api_version();
        let has = |field: &str| {
            obj.get(field)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
        };
        let (has_kind, has_av) = (has("kind"), has("apiVersion"));
        if let Some(m) = obj.as_object_mut()
            && !self.kind().is_custom()
        {
            if !has_kind {
                m.insert("kind".into(), Value::String(self.rt.kind.clone()));
            }
            if !has_av {
                m.insert("apiVersion".into(), Value::String(want_av.clone()));
            }
        } else if !has_kind {
            let cause = format!(
                "Object 'Kind' is missing in '{}'",
                String::from_utf8_lossy(body)
            );
            return Err(Status::bad_request(self.unrecognized(&cause, body)).into());
        }
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
        let av = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        if av != want_av {
            return Err(Status::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({want_av})"
            ))
            .into());
        }
        if kind != self.rt.kind {
            return Err(Status::bad_request(format!(
                "{kind} in version {:?} cannot be handled as a {}: no kind {kind:?} is registered for version {want_av:?}",
                self.req.version, self.rt.kind
            ))
            .into());
        }
        Ok(())
    }

    /// [`Ctx::check_fields_into`], with the warnings going to the response.
    pub(crate) fn check_fields(
        &mut self,
        obj: &mut Value,
        duplicates: &[String],
        mode: FieldValidation,
    ) -> ApiResult<()> {
        let mut warnings = Vec::new();
        self.kind()
            .check_fields_into(obj, duplicates, mode, &mut warnings)?;
        self.warnings.extend(warnings);
        Ok(())
    }
}

/// kube-apiserver's `summarizeData`: a body that looks like JSON shows its first 30 bytes
/// as text, anything else in hex.
fn summarize_body(body: &[u8]) -> String {
    const MAX: usize = 30;
    let (head, more) = if body.len() > MAX {
        (&body[..MAX], " ...")
    } else {
        (body, "")
    };
    match body.first() {
        None => "<empty>".into(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(head)),
        Some(_) => {
            let hex: String = head.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}
