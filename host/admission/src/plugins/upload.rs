//! Modules uploaded through the API, kept in the store so that every replica serving
//! this store loads the same bytes:
//!
//! - `PUT /apis/wasmgate.dev/v1alpha1/wasmplugins/NAME/module` with the component as the
//!   body (`kubectl replace --raw …/module -f my.wasm`): the bytes are checked to be a
//!   WebAssembly component (422 otherwise), stored under their sha256, and the plugin's
//!   `spec.module` becomes `{digest: SHA256}` (a change of spec: the controller loads it).
//!   Answers the updated `WasmPlugin`.
//! - `GET` of the same path: the module the spec names, as `application/wasm`.
//!
//! The last few uploads of a plugin are kept, so that `spec.module.digest` can be set
//! back to an earlier one (a roll-back) without uploading again.

use base64::Engine as _;
use bytes::Bytes;
use http::{Method, Response, StatusCode};
use serde_json::{Value, json};
use wasmgate_apimachinery::status::{Status, Target};
use wasmgate_storage::{Precondition, ReadAt, Write, WriteOp};

use super::crd::PATH;
use crate::body::Body;
use crate::error::{ApiError, ApiResult, storage_error};
use crate::{Context, User};

/// Where uploaded modules are stored: `PREFIX/NAME/DIGEST`.
const PREFIX: &str = "wasmgate.dev/wasmpluginmodules/";
/// Uploads kept per plugin.
const KEEP: usize = 5;

/// `/apis/wasmgate.dev/v1alpha1/wasmplugins/NAME/module` → `NAME`.
pub fn module_path(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(PATH)?.strip_prefix('/')?;
    let name = rest.strip_suffix("/module")?;
    (!name.is_empty() && !name.contains('/')).then_some(name)
}

fn key(name: &str, digest: &str) -> String {
    format!("{PREFIX}{name}/{digest}")
}

fn target(name: &str) -> Target<'_> {
    Target {
        group: "wasmgate.dev",
        resource: "wasmplugins",
        name,
    }
}

/// Whether `bytes` start as a WebAssembly component (not a core module).
fn is_component(bytes: &[u8]) -> bool {
    // `\0asm`, then the component layer's version 0x0d and layer 1.
    bytes.len() >= 8 && bytes[..4] == *b"\0asm" && bytes[4..8] == [0x0d, 0x00, 0x01, 0x00]
}

/// The bytes of an uploaded module, checked against their digest.
pub async fn load(inner: &dyn Context, name: &str, digest: &str) -> Result<Vec<u8>, String> {
    let (_, found) = inner
        .store()
        .get(&key(name, digest), ReadAt::Latest)
        .await
        .map_err(|e| e.to_string())?;
    let found = found.ok_or_else(|| format!("no uploaded module with digest {digest}"))?;
    let v: Value = serde_json::from_slice(&found.value).map_err(|e| e.to_string())?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v["data"].as_str().unwrap_or(""))
        .map_err(|e| e.to_string())?;
    if wasmgate_plugin_runtime::digest(&bytes) != digest {
        return Err(format!(
            "the stored module does not match its digest {digest}"
        ));
    }
    Ok(bytes)
}

pub async fn handle(
    inner: &dyn Context,
    user: User,
    method: &Method,
    name: &str,
    body: Bytes,
) -> ApiResult<Response<Body>> {
    let current = inner
        .call(
            user.clone(),
            Method::GET,
            &format!("{PATH}/{name}"),
            "application/json",
            None,
        )
        .await
        .map_err(ApiError::internal)?;
    match current.0 {
        200 => {}
        404 => return Err(Status::not_found(target(name)).into()),
        // Not allowed to read the plugin (or another failure): nothing is stored.
        code => {
            let mut st: Status = serde_json::from_value(current.1.clone()).unwrap_or_else(|_| {
                Status::failure(code, "InternalError", "reading the plugin failed")
            });
            st.code = code;
            return Err(st.into());
        }
    }
    match *method {
        Method::GET | Method::HEAD => {
            let digest = current.1["spec"]["module"]["digest"].as_str().unwrap_or("");
            if digest.is_empty() {
                return Err(Status::not_found(target(name)).into());
            }
            let bytes = load(inner, name, digest)
                .await
                .map_err(ApiError::internal)?;
            Ok(crate::response::bytes_response(
                StatusCode::OK,
                "application/wasm",
                Bytes::from(bytes),
            ))
        }
        Method::PUT | Method::POST => upload(inner, user, name, body).await,
        _ => Err(Status::failure(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .into()),
    }
}

async fn upload(
    inner: &dyn Context,
    user: User,
    name: &str,
    body: Bytes,
) -> ApiResult<Response<Body>> {
    if !is_component(&body) {
        let s = Status::invalid(
            "WasmPlugin",
            "wasmgate.dev",
            name,
            &[wasmgate_apimachinery::validation::FieldError::invalid(
                "module",
                "<bytes>",
                "not a WebAssembly component (a component starts with \\0asm and version 0x0d 0x00 0x01 0x00; build it for wasm32-wasip2)",
            )],
        );
        return Err(s.into());
    }
    let digest = wasmgate_plugin_runtime::digest(&body);
    let stored = json!({
        "apiVersion": "wasmgate.dev/v1alpha1",
        "kind": "WasmPluginModule",
        "metadata": {"name": format!("{name}.{digest}")},
        "digest": digest,
        "data": base64::engine::general_purpose::STANDARD.encode(&body),
    });
    let write = Write::new(
        key(name, &digest),
        Precondition::None,
        WriteOp::Put(crate::object::to_stored(&stored)),
    );
    inner
        .store()
        .write(write)
        .await
        .map_err(|e| storage_error(e, target(name)))?;
    prune(inner, name, &digest).await;
    let patch = json!({"spec": {"module": {"path": null, "digest": digest}}});
    let (code, obj) = inner
        .call(
            user,
            Method::PATCH,
            &format!("{PATH}/{name}"),
            "application/merge-patch+json",
            Some(&patch),
        )
        .await
        .map_err(ApiError::internal)?;
    Ok(crate::response::bytes_response(
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        "application/json",
        Bytes::from(obj.to_string()),
    ))
}

/// Keeps the newest [`KEEP`] uploads of a plugin (and the one just written).
async fn prune(inner: &dyn Context, name: &str, keep_digest: &str) {
    let prefix = format!("{PREFIX}{name}/");
    let Ok(listed) = inner
        .store()
        .list(&prefix, ReadAt::Latest, None, usize::MAX, false)
        .await
    else {
        return;
    };
    let mut items: Vec<_> = listed
        .items
        .into_iter()
        .filter(|kv| !kv.key.ends_with(keep_digest))
        .collect();
    if items.len() < KEEP {
        return;
    }
    items.sort_by_key(|kv| kv.revision);
    for kv in &items[..items.len() + 1 - KEEP] {
        let w = Write::new(
            kv.key.clone(),
            Precondition::Revision(kv.revision),
            WriteOp::Delete(wasmgate_storage::store::Value::new(kv.value.clone())),
        );
        if let Err(e) = inner.store().write(w).await {
            tracing::debug!(key = %kv.key, "old plugin module not pruned: {e}");
        }
    }
}
