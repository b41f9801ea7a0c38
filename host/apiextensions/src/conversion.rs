//! Conversion of custom resources between their versions (kube's
//! `apiextensions-apiserver/pkg/apiserver/conversion`): by what the CRD names, a Wasm
//! plugin's `convert` hook or an HTTPS conversion webhook (a `ConversionReview` round trip,
//! with kube's checks of the answer and its wording when it fails), or else by rewriting
//! `apiVersion` alone (strategy `None`).

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use wasmgate_apimachinery::status::Status;

use wasmgate_admission::chain::Converted;

use crate::custom::Conversion;
use crate::error::{ApiError, ApiResult};

/// A custom resource's request version and storage version, and how an object moves
/// between them: by the CRD's conversion (a Wasm plugin or webhook), or else only
/// `apiVersion` changes (`CONV-02`). Admission plugins see objects at the storage version.
#[derive(Clone)]
pub struct Versions {
    /// `group/version` of the request.
    request: String,
    /// `group/version` the objects are stored at.
    storage: String,
    /// The storage version alone.
    storage_version: String,
    converter: Option<Converter>,
}

impl Versions {
    /// `group`'s objects asked for at `request_version`, stored at `storage_version`.
    pub fn new(
        group: &str,
        request_version: &str,
        storage_version: &str,
        converter: Option<Converter>,
    ) -> Versions {
        Versions {
            request: format!("{group}/{request_version}"),
            storage: format!("{group}/{storage_version}"),
            storage_version: storage_version.to_owned(),
            converter,
        }
    }

    /// `obj` (at the request's version) at the storage version.
    pub async fn to_storage(&self, obj: Value) -> ApiResult<Value> {
        self.convert(obj, &self.storage).await
    }

    /// `obj` (at the storage version) at the request's version.
    pub async fn to_request(&self, obj: Value) -> ApiResult<Value> {
        self.convert(obj, &self.request).await
    }

    async fn convert(&self, mut obj: Value, desired: &str) -> ApiResult<Value> {
        match &self.converter {
            Some(conv) => Ok(conv
                .convert(vec![obj], desired)
                .await?
                .into_iter()
                .next()
                .unwrap_or(Value::Null)),
            None => {
                if let Some(m) = obj.as_object_mut() {
                    m.insert("apiVersion".into(), Value::String(desired.to_owned()));
                }
                Ok(obj)
            }
        }
    }
}

/// Admission plugins see a custom resource at its storage version.
impl wasmgate_admission::chain::VersionConverter for Versions {
    fn storage_version(&self) -> &str {
        &self.storage_version
    }

    fn to_storage(&self, obj: Value) -> Converted<'_> {
        Box::pin(Versions::to_storage(self, obj))
    }

    fn to_request(&self, obj: Value) -> Converted<'_> {
        Box::pin(Versions::to_request(self, obj))
    }
}

/// Conversion of custom resources by what their CRD names: a `WasmPlugin` or an HTTPS
/// conversion webhook.
#[derive(Clone)]
pub struct Converter {
    inner: Arc<dyn crate::Context>,
    conversion: Conversion,
    kind: String,
}

/// How long a conversion webhook may take (kube's conversion webhook client's timeout).
const CONVERSION_WEBHOOK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

impl Converter {
    /// The conversion of `kind` that its CRD names, run by `inner`'s plugins or outbound
    /// client.
    pub fn new(inner: Arc<dyn crate::Context>, conversion: Conversion, kind: &str) -> Converter {
        Converter {
            inner,
            conversion,
            kind: kind.to_owned(),
        }
    }

    /// `objs` at `desired` (`group/version`), in order. What kube-apiserver answers when
    /// a conversion webhook fails: 500, `conversion webhook for GV, Kind=K failed: ...`.
    pub async fn convert(&self, objs: Vec<Value>, desired: &str) -> ApiResult<Vec<Value>> {
        let from = objs
            .first()
            .and_then(|o| o.get("apiVersion"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let fail = |why: String| -> ApiError {
            Status::failure(
                500,
                "InternalError",
                format!(
                    "conversion webhook for {from}, Kind={} failed: {why}",
                    self.kind
                ),
            )
            .into()
        };
        let n = objs.len();
        let uid = crate::object::new_uid();
        let (who, out): (String, Vec<Value>) = match &self.conversion {
            Conversion::Plugin(plugin) => {
                let binding = self
                    .inner
                    .plugins()
                    .named(plugin)
                    .filter(|b| b.hooks.convert)
                    .ok_or_else(|| {
                        fail(format!(
                            "WasmPlugin {plugin:?} is not loaded with the convert hook"
                        ))
                    })?;
                let req = wasmgate_plugin_runtime::wit::ConversionRequest {
                    uid,
                    desired_api_version: desired.to_owned(),
                    objects: objs.iter().map(Value::to_string).collect(),
                };
                let call = binding.plugin.convert(&req);
                let raw = match binding.call(self.inner.metrics(), "convert", call).await {
                    Ok(Ok(out)) => out,
                    Ok(Err(status)) => return Err(fail(status.message)),
                    Err(e) => return Err(fail(format!("plugin {plugin:?}: {e}"))),
                };
                let who = format!("plugin {plugin:?}");
                let mut out = Vec::with_capacity(raw.len());
                for r in raw {
                    out.push(
                        serde_json::from_str(&r)
                            .map_err(|e| fail(format!("{who} returned invalid JSON: {e}")))?,
                    );
                }
                (who, out)
            }
            Conversion::Webhook(target) => {
                let target = target.clone().map_err(&fail)?;
                let out = self
                    .by_webhook(&target, &uid, &objs, desired)
                    .await
                    .map_err(fail)?;
                ("the webhook".to_owned(), out)
            }
        };
        if out.len() != n {
            return Err(fail(format!(
                "{who} returned {} objects, expected {n}",
                out.len()
            )));
        }
        let mut converted = Vec::with_capacity(n);
        for (before, after) in objs.iter().zip(out) {
            // kube's checks of a webhook's answer: the version asked for, and the same
            // object (kind, name, namespace, uid, labels and annotations may not change).
            if after.get("apiVersion").and_then(Value::as_str) != Some(desired) {
                return Err(fail(format!(
                    "{who} returned an object of {:?}, not {desired:?}",
                    after
                        .get("apiVersion")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                )));
            }
            let same = |f: &str| before.pointer(f) == after.pointer(f);
            if !same("/kind")
                || !same("/metadata/name")
                || !same("/metadata/namespace")
                || !same("/metadata/uid")
            {
                return Err(fail(format!(
                    "{who} changed the kind, name, namespace or uid of an object"
                )));
            }
            converted.push(after);
        }
        Ok(converted)
    }

    /// One `ConversionReview` (`apiextensions.k8s.io/v1`) round trip: the converted
    /// objects, or why there are none (kube's wording).
    async fn by_webhook(
        &self,
        target: &crate::outbound::Target,
        uid: &str,
        objs: &[Value],
        desired: &str,
    ) -> Result<Vec<Value>, String> {
        let review = serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objs},
        });
        let body = serde_json::to_vec(&review).map_err(|e| e.to_string())?;
        let max = self.inner.max_request_body_bytes().saturating_mul(2);
        let reply = self
            .inner
            .outbound()
            .post(
                target,
                "application/json",
                Bytes::from(body),
                CONVERSION_WEBHOOK_TIMEOUT,
                max,
            )
            .await
            .map_err(|e| e.to_string())?;
        if !reply.status.is_success() {
            return Err(format!(
                "the server responded with the status code {} but did not return a ConversionReview",
                reply.status.as_u16()
            ));
        }
        let review: Value = serde_json::from_slice(&reply.body)
            .map_err(|e| format!("the response is not JSON: {e}"))?;
        let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let (api_version, kind) = (s(&review, "apiVersion"), s(&review, "kind"));
        if api_version != "apiextensions.k8s.io/v1" || kind != "ConversionReview" {
            return Err(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {api_version}, Kind={kind}"
            ));
        }
        let resp = review
            .get("response")
            .filter(|r| r.is_object())
            .ok_or("no response provided")?;
        if s(resp, "uid") != uid {
            return Err(format!(
                "expected response.uid={uid:?}, got {:?}",
                s(resp, "uid")
            ));
        }
        let result = resp.get("result").unwrap_or(&Value::Null);
        if s(result, "status") != "Success" {
            let msg = s(result, "message");
            return Err(if msg.is_empty() {
                "the webhook did not answer Success".to_owned()
            } else {
                msg
            });
        }
        match resp.get("convertedObjects") {
            Some(Value::Array(objects)) => Ok(objects.clone()),
            _ => Err("response.convertedObjects is not a list".to_owned()),
        }
    }
}
