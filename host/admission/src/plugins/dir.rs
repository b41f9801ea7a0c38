//! `--plugin-dir`: a directory of `WasmPlugin` manifests (`*.yaml`, `*.yml`), each naming
//! its `.wasm` file (a relative `spec.module.path` is taken from the manifest's directory).
//! Every second the manifests are read and applied through the API, as the gateway: new
//! ones are created, changed ones updated, and objects whose manifest is gone deleted.
//! The controller then loads the modules and follows their files.
//!
//! Manifests are applied as `kubectl apply` applies them, with strict field validation:
//! a field the `WasmPlugin` type does not have (a typo, `hoks: [validate]`) refuses the
//! manifest with kube's `strict decoding error: unknown field "spec.hoks"`, and an invalid
//! spec with its `422` causes, instead of loading a plugin that does something else.
//!
//! Each problem of a manifest (not YAML, no name, refused by the API) is logged once for
//! each content of the file: fixed and broken again, it is logged again; left as it is, it
//! is not logged every second. A manifest the API refused is not sent again until it
//! changes. A directory that does not exist is warned about once (at start, or when it
//! goes away) and read again when it appears.

use std::collections::HashMap;
use std::hash::{Hash as _, Hasher as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use http::Method;
use serde_json::{Value, json};

use super::crd::PATH;
use crate::Context;
use crate::client::Client as _;
use crate::client::system_user;

/// The label on objects that come from the plugin directory.
pub const FROM_DIR_LABEL: &str = "wasmgate.dev/plugin-dir";
const SCAN: Duration = Duration::from_secs(1);

/// Metadata the server sets: a manifest's copy (an exported object) is not applied.
const SERVER_SET: [&str; 8] = [
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// What the directory's reader remembers between scans.
#[derive(Default)]
struct State {
    /// The objects applied, by name.
    applied: HashMap<String, Value>,
    /// Objects the API refused (400, 422), by name: not sent again until they change.
    refused: HashMap<String, Value>,
    /// Problems logged, by manifest file (or object name): logged again only when the
    /// file's content or the problem changes.
    reported: Reported,
    /// Whether the directory existed at the last scan (`None`: before the first).
    present: Option<bool>,
}

pub async fn run(weak: Weak<dyn Context>, dir: PathBuf) {
    let mut state = State::default();
    loop {
        let Some(inner) = weak.upgrade() else { return };
        let mut shutdown = inner.shutdown();
        if *shutdown.borrow() {
            return;
        }
        scan(&inner, &dir, &mut state).await;
        drop(inner);
        tokio::select! {
            _ = shutdown.wait_for(|s| *s) => return,
            _ = tokio::time::sleep(SCAN) => {}
        }
    }
}

/// One manifest file, read.
struct Manifest {
    path: PathBuf,
    /// A hash of the file's bytes: a problem is logged once per content.
    content: u64,
    /// The object to apply and its name, or why there is none.
    object: Result<(String, Value), String>,
}

/// The manifests in `dir` (`None`: the directory cannot be read), in file-name order.
fn read_manifests(dir: &Path) -> Option<Vec<Manifest>> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| matches!(p.extension().and_then(|x| x.to_str()), Some("yaml" | "yml")))
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let Ok(text) = std::fs::read(&path) else {
            continue;
        };
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        let object = manifest_object(dir, &text);
        if object.as_ref().is_err_and(String::is_empty) {
            continue; // Another kind: not ours.
        }
        out.push(Manifest {
            path,
            content: h.finish(),
            object,
        });
    }
    Some(out)
}

/// The `WasmPlugin` of a manifest, labelled as the directory's, its relative module path
/// made absolute; `Err("")` for a manifest of another kind.
fn manifest_object(dir: &Path, text: &[u8]) -> Result<(String, Value), String> {
    let mut obj = match wasmgate_apimachinery::json::from_yaml(text) {
        Ok(d) if d.value["kind"] == "WasmPlugin" => d.value,
        Ok(_) => return Err(String::new()),
        Err(e) => return Err(format!("not YAML: {e}")),
    };
    if !obj["metadata"].is_object() {
        return Err("metadata.name: Required value: name or generateName is required".into());
    }
    let name = match obj["metadata"]["name"].as_str() {
        Some(n) if !n.is_empty() => n.to_owned(),
        _ => return Err("metadata.name: Required value: name is required".into()),
    };
    if let Some(p) = obj["spec"]["module"]["path"].as_str() {
        let p = Path::new(p);
        if p.is_relative() {
            let abs = dir.join(p);
            let abs = abs.canonicalize().unwrap_or(abs);
            obj["spec"]["module"]["path"] = json!(abs.to_string_lossy());
        }
    }
    if !obj["metadata"]["labels"].is_object() {
        obj["metadata"]["labels"] = json!({});
    }
    obj["metadata"]["labels"][FROM_DIR_LABEL] = json!("true");
    Ok((name, obj))
}

async fn scan(inner: &Arc<dyn Context>, dir: &Path, state: &mut State) {
    let dir2 = dir.to_owned();
    let Ok(read) = tokio::task::spawn_blocking(move || read_manifests(&dir2)).await else {
        return;
    };
    let present = read.is_some();
    if state.present != Some(present) {
        match (state.present, present) {
            (_, false) => tracing::warn!(
                dir = %dir.display(),
                "the plugin directory does not exist (or cannot be read): no WasmPlugin manifests are applied from it until it does"
            ),
            (Some(false), true) => {
                tracing::info!(dir = %dir.display(), "the plugin directory exists now")
            }
            _ => {}
        }
        state.present = Some(present);
    }
    let manifests = read.unwrap_or_default();
    let mut objects: HashMap<String, (PathBuf, u64, Value)> = HashMap::new();
    let mut seen_files = Vec::new();
    for m in manifests {
        seen_files.push(m.path.clone());
        let problem = match m.object {
            Err(e) => Some(e),
            Ok((name, obj)) => match objects.get(&name) {
                Some((first, _, _)) => Some(format!(
                    "WasmPlugin {name:?} is also in {}; this one is ignored",
                    first.display()
                )),
                None => {
                    objects.insert(name, (m.path.clone(), m.content, obj));
                    None
                }
            },
        };
        match problem {
            Some(p) => {
                if state.reported.first_time(&m.path, m.content, &p) {
                    tracing::warn!(manifest = %m.path.display(), "plugin manifest not applied: {p}");
                }
            }
            None => state.reported.clear_file(&m.path),
        }
    }
    state.reported.retain_files(&seen_files);
    for (name, (file, content, obj)) in &objects {
        if state.applied.get(name) == Some(obj) || state.refused.get(name) == Some(obj) {
            continue;
        }
        match apply(inner, name, obj).await {
            Ok(()) => {
                state.refused.remove(name);
                state.reported.clear_file(file);
                state.applied.insert(name.clone(), obj.clone());
            }
            Err((code, e)) => {
                // Refused as written (strict decoding, an invalid spec): until it changes.
                // What was applied before under this name stays applied (and is deleted
                // with the manifest).
                if matches!(code, 400 | 422) {
                    state.refused.insert(name.clone(), obj.clone());
                }
                if state.reported.first_time(file, *content, &e) {
                    tracing::warn!(manifest = %file.display(), plugin = %name, "plugin manifest not applied: {e}");
                }
            }
        }
    }
    state.refused.retain(|n, _| objects.contains_key(n));
    let gone: Vec<String> = state
        .applied
        .keys()
        .filter(|n| !objects.contains_key(*n))
        .cloned()
        .collect();
    for name in gone {
        state.applied.remove(&name);
        let path = format!("{PATH}/{name}");
        let r = inner
            .call(
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

/// Creates the object, or replaces it (its spec, labels and the metadata the manifest
/// sets), with strict field validation (`kubectl apply`'s): fields the type does not
/// have are a `400`. Errors are the code and kube's message.
async fn apply(inner: &Arc<dyn Context>, name: &str, obj: &Value) -> Result<(), (u16, String)> {
    let path = format!("{PATH}/{name}");
    let call = |method, path: String, body: Option<Value>| async move {
        let r = inner
            .call(
                system_user(),
                method,
                &path,
                "application/json",
                body.as_ref(),
            )
            .await;
        match r {
            Ok((code, v)) if code >= 300 => Err((code, crate::client::failure(code, &v))),
            Ok((code, v)) => Ok((code, v)),
            Err(e) => Err((500, e)),
        }
    };
    let current = match call(Method::GET, path.clone(), None).await {
        Ok((_, v)) => v,
        Err((404, _)) => {
            let created = format!("{PATH}?fieldValidation=Strict");
            return call(Method::POST, created, Some(obj.clone()))
                .await
                .map(drop);
        }
        Err(e) => return Err(e),
    };
    call(
        Method::PUT,
        format!("{path}?fieldValidation=Strict"),
        Some(replacement(&current, obj)),
    )
    .await
    .map(drop)
}

/// The update of `current` to the manifest `obj`: the manifest whole (so that strict
/// decoding sees every field it has), with the current metadata under the manifest's
/// (the server's own fields kept: `resourceVersion` is the update's precondition).
fn replacement(current: &Value, obj: &Value) -> Value {
    let mut put = obj.clone();
    let mut meta = current["metadata"].as_object().cloned().unwrap_or_default();
    if let Some(m) = obj["metadata"].as_object() {
        for (k, v) in m {
            if !SERVER_SET.contains(&k.as_str()) {
                meta.insert(k.clone(), v.clone());
            }
        }
    }
    put["metadata"] = Value::Object(meta);
    put
}

/// The problems already logged, so that each is logged once per content of its file.
#[derive(Default)]
struct Reported(HashMap<PathBuf, (u64, String)>);

impl Reported {
    /// Whether `problem` of the file at `path` (its content hashed to `content`) is new:
    /// the file changed, or its problem did, since it was last logged.
    fn first_time(&mut self, path: &Path, content: u64, problem: &str) -> bool {
        let now = (content, problem.to_owned());
        if self.0.get(path) == Some(&now) {
            return false;
        }
        self.0.insert(path.to_owned(), now);
        true
    }

    /// The file has no problem (any more): a new one is logged.
    fn clear_file(&mut self, path: &Path) {
        self.0.remove(path);
    }

    /// Forgets the files that are gone.
    fn retain_files(&mut self, files: &[PathBuf]) {
        self.0.retain(|p, _| files.contains(p));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    /// Issue 25 item 7: a manifest's problem is logged once for each content of the file
    /// (not every second), again when the file or the problem changes, and again after
    /// the file was fixed and broken anew.
    #[test]
    fn each_problem_is_logged_once_per_content() {
        let mut r = Reported::default();
        let f = Path::new("/d/a.yaml");
        assert!(r.first_time(f, 1, "not YAML: x"));
        assert!(!r.first_time(f, 1, "not YAML: x"));
        assert!(!r.first_time(f, 1, "not YAML: x"));
        assert!(r.first_time(f, 2, "not YAML: x"), "the file changed");
        assert!(
            r.first_time(f, 2, "400 unknown field"),
            "the problem changed"
        );
        assert!(r.first_time(Path::new("/d/b.yaml"), 2, "400 unknown field"));
        r.clear_file(f);
        assert!(
            r.first_time(f, 2, "400 unknown field"),
            "fixed, then broken"
        );
        r.retain_files(&[]);
        assert!(
            r.first_time(f, 2, "400 unknown field"),
            "removed, then back"
        );
    }

    /// Issue 25 item 7: what is applied from a manifest: a WasmPlugin, labelled, its
    /// module path made absolute; other kinds are skipped, a manifest without a name or
    /// that is not YAML is a problem.
    #[test]
    fn manifests_become_objects() {
        let dir = Path::new("/plugins");
        let (name, obj) = manifest_object(
            dir,
            b"apiVersion: wasmgate.dev/v1alpha1\nkind: WasmPlugin\nmetadata: {name: p}\nspec: {module: {path: p.wasm}, groups: ['']}\n",
        )
        .unwrap();
        assert_eq!(name, "p");
        assert_eq!(obj["spec"]["module"]["path"], "/plugins/p.wasm");
        assert_eq!(obj["metadata"]["labels"][FROM_DIR_LABEL], "true");
        assert_eq!(
            manifest_object(dir, b"apiVersion: v1\nkind: ConfigMap\n"),
            Err(String::new())
        );
        assert!(
            manifest_object(dir, b"kind: WasmPlugin\nspec: {}\n")
                .unwrap_err()
                .starts_with("metadata.name: Required value")
        );
        assert!(
            manifest_object(dir, b"kind: [WasmPlugin\n")
                .unwrap_err()
                .starts_with("not YAML: ")
        );
    }

    /// An update carries the whole manifest (strict decoding sees its typos) over the
    /// current metadata, the server's fields kept.
    #[test]
    fn an_update_replaces_with_the_manifest() {
        let current = json!({"metadata": {"name": "p", "uid": "u", "resourceVersion": "7",
                             "labels": {"old": "x"}, "annotations": {"a": "b"}},
                             "spec": {"groups": ["x"], "hooks": ["validate"]}, "status": {"digest": "d"}});
        let manifest = json!({"apiVersion": "wasmgate.dev/v1alpha1", "kind": "WasmPlugin",
                              "metadata": {"name": "p", "resourceVersion": "1", "labels": {"new": "y"}},
                              "spec": {"groups": ["y"], "hoks": ["validate"]}});
        let put = replacement(&current, &manifest);
        assert_eq!(
            put,
            json!({"apiVersion": "wasmgate.dev/v1alpha1", "kind": "WasmPlugin",
                   "metadata": {"name": "p", "uid": "u", "resourceVersion": "7",
                                "labels": {"new": "y"}, "annotations": {"a": "b"}},
                   "spec": {"groups": ["y"], "hoks": ["validate"]}})
        );
    }
}
