//! `--plugin-dir`: a directory of `WasmPlugin` manifests (`*.yaml`), each naming its
//! `.wasm` file (a relative `spec.module.path` is taken from the manifest's directory).
//! Every second the manifests are read and applied through the API, as the gateway: new
//! ones are created, changed ones updated, and objects whose manifest is gone deleted.
//! The controller then loads the modules and follows their files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use http::Method;
use serde_json::{Value, json};

use super::crd::PATH;
use crate::Inner;
use crate::internal::system_user;

/// The label on objects that come from the plugin directory.
pub const FROM_DIR_LABEL: &str = "wasmgate.dev/plugin-dir";
const SCAN: Duration = Duration::from_secs(1);

pub(crate) async fn run(weak: Weak<Inner>, dir: PathBuf) {
    let mut applied: HashMap<String, Value> = HashMap::new();
    loop {
        let Some(inner) = weak.upgrade() else { return };
        let mut shutdown = inner.shutdown.subscribe();
        if *shutdown.borrow() {
            return;
        }
        scan(&inner, &dir, &mut applied).await;
        drop(inner);
        tokio::select! {
            _ = shutdown.wait_for(|s| *s) => return,
            _ = tokio::time::sleep(SCAN) => {}
        }
    }
}

/// The manifests in `dir`, by object name.
fn read_manifests(dir: &Path) -> HashMap<String, Value> {
    let mut out = HashMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let path = e.path();
        if !matches!(
            path.extension().and_then(|x| x.to_str()),
            Some("yaml" | "yml")
        ) {
            continue;
        }
        let Ok(text) = std::fs::read(&path) else {
            continue;
        };
        let mut obj = match wasmgate_apimachinery::json::from_yaml(&text) {
            Ok(d) if d.value["kind"] == "WasmPlugin" => d.value,
            Ok(_) => continue,
            Err(e) => {
                tracing::warn!(manifest = %path.display(), "plugin manifest is not YAML: {e}");
                continue;
            }
        };
        let Some(name) = obj["metadata"]["name"].as_str().map(str::to_owned) else {
            continue;
        };
        if let Some(p) = obj["spec"]["module"]["path"].as_str() {
            let p = Path::new(p);
            if p.is_relative() {
                let abs = dir.join(p);
                let abs = abs.canonicalize().unwrap_or(abs);
                obj["spec"]["module"]["path"] = json!(abs.to_string_lossy());
            }
        }
        obj["metadata"]["labels"][FROM_DIR_LABEL] = json!("true");
        out.insert(name, obj);
    }
    out
}

async fn scan(inner: &Arc<Inner>, dir: &Path, applied: &mut HashMap<String, Value>) {
    let dir2 = dir.to_owned();
    let Ok(manifests) = tokio::task::spawn_blocking(move || read_manifests(&dir2)).await else {
        return;
    };
    for (name, obj) in &manifests {
        if applied.get(name) == Some(obj) {
            continue;
        }
        match apply(inner, name, obj).await {
            Ok(()) => {
                applied.insert(name.clone(), obj.clone());
            }
            Err(e) => tracing::warn!(plugin = %name, "plugin manifest not applied: {e}"),
        }
    }
    let gone: Vec<String> = applied
        .keys()
        .filter(|n| !manifests.contains_key(*n))
        .cloned()
        .collect();
    for name in gone {
        applied.remove(&name);
        let path = format!("{PATH}/{name}");
        let r = crate::internal::call(
            inner,
            system_user(),
            Method::DELETE,
            &path,
            "application/json",
            None,
        )
        .await;
        if let Err(e) = r {
            tracing::warn!(plugin = %name, "plugin not deleted: {e}");
        }
    }
}

/// Creates the object, or updates its spec and labels.
async fn apply(inner: &Arc<Inner>, name: &str, obj: &Value) -> Result<(), String> {
    crate::internal::apply(inner, system_user(), PATH, name, obj).await
}
