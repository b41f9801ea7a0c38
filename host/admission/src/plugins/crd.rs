//! The `WasmPlugin` type: a CRD the gateway installs at start through its own API, and
//! puts back as shipped if its spec was changed.

use serde_json::Value;

use crate::client::Client;

const MANIFEST: &str = include_str!("wasmplugins.crd.yaml");
const NAME: &str = "wasmplugins.wasmgate.dev";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// The group of `WasmPlugin`.
pub const GROUP: &str = "wasmgate.dev";
/// Where `WasmPlugin` objects are stored.
pub const KEY_PREFIX: &str = "wasmgate.dev/wasmplugins/";
/// Their API path.
pub const PATH: &str = "/apis/wasmgate.dev/v1alpha1/wasmplugins";

/// Whether `rt` is the `WasmPlugin` type.
pub fn is_wasmplugins(rt: &crate::registry::ResourceType) -> bool {
    rt.group == GROUP && rt.resource == "wasmplugins"
}

fn manifest() -> Result<Value, String> {
    wasmgate_apimachinery::json::from_yaml(MANIFEST.as_bytes())
        .map(|d| d.value)
        .map_err(|e| format!("the WasmPlugin CRD manifest: {e}"))
}

/// Creates the CRD, or restores its spec; returns when the type is served.
pub async fn ensure(inner: &dyn Client) -> Result<(), String> {
    crate::client::apply(
        inner,
        crate::client::system_user(),
        CRDS,
        NAME,
        &manifest()?,
    )
    .await
    .map_err(|e| format!("installing the WasmPlugin type: {e}"))
}
