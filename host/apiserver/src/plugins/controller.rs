//! The plugin controller: from `WasmPlugin` objects to served bindings.
//!
//! It lists and watches the objects, and polls the module files every 250 ms (a changed
//! size or modification time, then a changed digest). A new spec or module is loaded off
//! the request path: compiled (or found compiled), linked against the contract, run once
//! as a self-test, and only then swapped in. A module that fails leaves the previous
//! version serving; the reason goes to `status.conditions[Ready]`.
//!
//! Files are polled rather than watched with inotify: a module is replaced by a copy or a
//! rename, often on volumes where inotify says nothing (bind mounts, network file
//! systems), and what decides is the content digest, which a poll reads anyway.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use http::Method;
use serde_json::{Value, json};
use wasmgate_apimachinery::selectors::LabelSelector;
use wasmgate_plugin_runtime::{Hooks, Limits, LoadError};
use wasmgate_storage::{EventKind, ReadAt};

use super::crd::{KEY_PREFIX, PATH};
use super::{Binding, FailurePolicy};
use crate::Inner;
use crate::internal::system_user;
use crate::object;

/// How often module files are checked for a new content.
const POLL: Duration = Duration::from_millis(250);
/// Digests kept in `status.previousDigests`.
const KEEP_PREVIOUS: usize = 5;

/// What is known of one `WasmPlugin`.
struct Known {
    obj: Value,
    generation: i64,
    uid: String,
    /// Size and modification time of the module file when last read.
    file: Option<(u64, SystemTime)>,
    /// The digest served (`None`: nothing loaded yet).
    digest: Option<String>,
    /// The digest of the last attempt, served or not.
    tried: Option<String>,
    previous: Vec<String>,
}

pub(crate) async fn run(weak: Weak<Inner>) {
    let mut known: HashMap<String, Known> = HashMap::new();
    loop {
        let Some(inner) = weak.upgrade() else { return };
        let mut shutdown = inner.shutdown.subscribe();
        if *shutdown.borrow() {
            return;
        }
        let listed = inner
            .store
            .list(KEY_PREFIX, ReadAt::Latest, None, usize::MAX, false)
            .await;
        let (rev, items) = match listed {
            Ok(l) => (l.revision, l.items),
            Err(e) => {
                tracing::warn!(error = %crate::error::error_chain(&e), "plugin controller: list failed");
                drop(inner);
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let mut present = std::collections::HashSet::new();
        for kv in items {
            if let Ok(obj) = object::from_stored(&kv.value) {
                let name = object::meta_str(&obj, "name").unwrap_or("").to_owned();
                present.insert(name);
                observe(&inner, &mut known, obj).await;
            }
        }
        for gone in known
            .keys()
            .filter(|k| !present.contains(*k))
            .cloned()
            .collect::<Vec<_>>()
        {
            known.remove(&gone);
            inner.plugins.remove(&gone);
        }
        let mut watcher = match inner.store.watch(KEY_PREFIX, rev) {
            Ok(w) => w,
            Err(_) => continue,
        };
        drop(inner);
        let mut tick = tokio::time::interval(POLL);
        loop {
            // Work happens outside `select!`: its futures (one holds the shutdown flag's
            // read guard) must not live across the loads' awaits.
            let ev = tokio::select! {
                _ = shutdown.wait_for(|s| *s) => return,
                ev = watcher.next() => Some(ev),
                _ = tick.tick() => None,
            };
            let Some(inner) = weak.upgrade() else { return };
            match ev {
                None => poll_files(&inner, &mut known).await,
                Some(Err(_)) => break,
                Some(Ok(ev)) => {
                    let Ok(obj) = object::from_stored(&ev.value) else {
                        continue;
                    };
                    match ev.kind {
                        EventKind::Put => observe(&inner, &mut known, obj).await,
                        EventKind::Delete => {
                            let name = object::meta_str(&obj, "name").unwrap_or("");
                            known.remove(name);
                            inner.plugins.remove(name);
                        }
                    }
                }
            }
        }
    }
}

/// A new version of an object: load it when its spec changed.
async fn observe(inner: &Arc<Inner>, known: &mut HashMap<String, Known>, obj: Value) {
    let name = object::meta_str(&obj, "name").unwrap_or("").to_owned();
    let generation = object::meta(&obj)
        .get("generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let uid = object::meta_str(&obj, "uid").unwrap_or("").to_owned();
    if let Some(k) = known.get_mut(&name) {
        if k.uid == uid && k.generation == generation {
            k.obj = obj;
            return;
        }
        if k.uid != uid {
            // Deleted and created again under the same name: a new plugin.
            known.remove(&name);
            inner.plugins.remove(&name);
        }
    }
    let k = known.entry(name.clone()).or_insert_with(|| Known {
        obj: Value::Null,
        generation,
        uid,
        file: None,
        digest: None,
        tried: None,
        previous: Vec::new(),
    });
    k.obj = obj;
    k.generation = generation;
    reconcile(inner, &name, k, true).await;
}

/// Re-reads module files whose size or modification time changed.
async fn poll_files(inner: &Arc<Inner>, known: &mut HashMap<String, Known>) {
    for (name, k) in known.iter_mut() {
        let Some(path) = k.obj["spec"]["module"]["path"].as_str() else {
            continue;
        };
        let sig = file_sig(path).await;
        if sig.is_some() && sig != k.file {
            reconcile(inner, name, k, false).await;
        }
    }
}

async fn file_sig(path: &str) -> Option<(u64, SystemTime)> {
    let m = tokio::fs::metadata(path).await.ok()?;
    Some((m.len(), m.modified().ok()?))
}

/// Why a `WasmPlugin` is not served: a `Ready=False` reason and a message.
struct NotReady(&'static str, String);

impl From<LoadError> for NotReady {
    fn from(e: LoadError) -> NotReady {
        let reason = match &e {
            LoadError::NotAComponent(_) => "InvalidModule",
            LoadError::WrongContract(_) => "WrongContract",
            LoadError::SelfTest(_) => "SelfTestFailed",
            LoadError::Limits(_) => "InvalidSpec",
        };
        NotReady(reason, e.to_string())
    }
}

/// Loads the module of `k` when it changed (`spec_changed`: the object did) and serves it.
async fn reconcile(inner: &Arc<Inner>, name: &str, k: &mut Known, spec_changed: bool) {
    let module = &k.obj["spec"]["module"];
    let read = match (module["path"].as_str(), module["digest"].as_str()) {
        (Some(path), _) => {
            k.file = file_sig(path).await;
            tokio::fs::read(path)
                .await
                .map_err(|e| format!("reading {path}: {e}"))
        }
        (None, Some(digest)) => {
            k.file = None;
            super::upload::load(inner, name, digest).await
        }
        (None, None) => Err("spec.module names neither a path nor an uploaded digest".into()),
    };
    let bytes = match read {
        Ok(b) => b,
        Err(e) => {
            report(inner, name, k, Err(NotReady("ModuleNotFound", e))).await;
            return;
        }
    };
    let digest = wasmgate_plugin_runtime::digest(&bytes);
    if !spec_changed && k.tried.as_deref() == Some(digest.as_str()) {
        return;
    }
    k.tried = Some(digest.clone());
    let started = std::time::Instant::now();
    let result = load(inner, name, &k.obj, &bytes).await;
    match &result {
        Ok(b) => {
            tracing::info!(plugin = name, digest = %b.plugin.digest(), took = ?started.elapsed(), "plugin loaded")
        }
        Err(NotReady(reason, msg)) => {
            tracing::warn!(plugin = name, reason, "plugin not loaded: {msg}")
        }
    }
    match result {
        Ok(binding) => {
            let hooks = binding.hooks;
            inner.plugins.put(binding);
            if let Some(old) = k.digest.replace(digest.clone())
                && old != digest
            {
                k.previous.retain(|d| *d != old);
                k.previous.insert(0, old);
                k.previous.truncate(KEEP_PREVIOUS);
            }
            report(inner, name, k, Ok(hooks)).await;
        }
        Err(nr) => report(inner, name, k, Err(nr)).await,
    }
}

/// Reads the spec, loads the module and builds the binding.
async fn load(
    inner: &Arc<Inner>,
    name: &str,
    obj: &Value,
    bytes: &[u8],
) -> Result<Binding, NotReady> {
    let spec = &obj["spec"];
    let strings = |field: &str| -> Vec<String> {
        spec[field]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let selector = |field: &str| -> Result<Option<LabelSelector>, NotReady> {
        match spec.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => LabelSelector::from_label_selector(v)
                .map(Some)
                .map_err(|e| NotReady("InvalidSpec", format!("spec.{field}: {e}"))),
        }
    };
    let namespace_selector = selector("namespaceSelector")?;
    let object_selector = selector("objectSelector")?;
    let limits = Limits {
        timeout: Duration::from_millis(spec["timeoutMilliseconds"].as_u64().unwrap_or(100)),
        memory_bytes: spec["memoryLimitMiB"].as_u64().unwrap_or(64) << 20,
    };
    let config = match spec.get("config") {
        Some(c @ Value::Object(_)) => c.to_string(),
        _ => "{}".to_owned(),
    };
    let runtime = inner
        .plugins
        .runtime()
        .map_err(|e| NotReady("RuntimeUnavailable", e))?;
    let plugin = runtime.load(name, bytes, limits, &config).await?;
    let implemented = plugin.hooks();
    let asked = strings("hooks");
    let hooks = if asked.is_empty() {
        implemented
    } else {
        let mut h = Hooks::default();
        for a in &asked {
            let (on, has) = match a.as_str() {
                "mutate" => (&mut h.mutate, implemented.mutate),
                "validate" => (&mut h.validate, implemented.validate),
                "convert" => (&mut h.convert, implemented.convert),
                "print" => (&mut h.print, implemented.print),
                other => {
                    return Err(NotReady("InvalidSpec", format!("unknown hook {other:?}")));
                }
            };
            if !has {
                return Err(NotReady(
                    "HookNotImplemented",
                    format!(
                        "the module does not implement {a:?} (it implements: {})",
                        implemented.names().join(", ")
                    ),
                ));
            }
            *on = true;
        }
        h
    };
    Ok(Binding {
        name: name.to_owned(),
        groups: strings("groups"),
        resources: strings("resources"),
        operations: strings("operations"),
        namespace_selector,
        object_selector,
        hooks,
        order: spec["order"].as_i64().unwrap_or(0),
        failure_policy: match spec["failurePolicy"].as_str() {
            Some("Ignore") => FailurePolicy::Ignore,
            _ => FailurePolicy::Fail,
        },
        plugin: Arc::new(plugin),
    })
}

/// Writes the outcome to `status` (through the API, as the gateway).
async fn report(inner: &Arc<Inner>, name: &str, k: &Known, outcome: Result<Hooks, NotReady>) {
    let now = object::now_rfc3339();
    let prev_cond = k.obj["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .cloned()
        .unwrap_or(Value::Null);
    let (status, reason, message) = match &outcome {
        Ok(_) => ("True", "Loaded", "the module is served".to_owned()),
        Err(NotReady(r, m)) if k.digest.is_some() => (
            "False",
            *r,
            format!("{m}; the previous module keeps serving"),
        ),
        Err(NotReady(r, m)) => ("False", *r, m.clone()),
    };
    let since = if prev_cond["status"] == status {
        prev_cond["lastTransitionTime"].clone()
    } else {
        json!(now)
    };
    let mut st = json!({
        "conditions": [{
            "type": "Ready",
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": since,
            "observedGeneration": k.generation,
        }],
        "previousDigests": k.previous,
    });
    if let Ok(hooks) = &outcome {
        st["digest"] = json!(k.digest);
        st["hooks"] = json!(hooks.names().join(","));
        st["loadedAt"] = json!(now);
    }
    let patch = json!({ "status": st });
    if let Err(e) = crate::internal::call_ok(
        inner,
        system_user(),
        Method::PATCH,
        &format!("{PATH}/{name}/status"),
        "application/merge-patch+json",
        Some(&patch),
    )
    .await
    {
        tracing::warn!(plugin = name, "plugin status not written: {e}");
    }
}
