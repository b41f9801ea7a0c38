//! The plugin controller: from `WasmPlugin` objects to served bindings.
//!
//! It lists and watches the objects, and follows their module files. A new spec or module
//! is loaded off the request path: compiled (or found compiled), linked against the
//! contract, run once as a self-test, and only then swapped in. A module that fails leaves
//! the previous version serving; the reason goes to `status.conditions[Ready]`.
//!
//! # What triggers a reload
//!
//! - **A change of the `WasmPlugin`'s spec** (a new `metadata.generation`): the module is
//!   loaded again with the new spec, whatever its content. Status and metadata updates
//!   reload nothing.
//! - **A change of the content of the module file** (`spec.module.path`): a reload
//!   happens when the file's content digest (sha256) differs from the digest of the last
//!   module tried (the one served, or one that was refused). The file is read and hashed
//!   again when
//!   - a file-system event (inotify on Linux, the `notify` crate) names the file, the
//!     file its path resolves to through symlinks, or their directories (a rename over
//!     the file, a write in place, the file's own symlink swapped to another store path);
//!     events are acted on once the files were quiet for [`SETTLE`] (a copy in progress
//!     is not read half written), at most [`SETTLE_MAX`] after the first one: a new
//!     module is noticed within about a second (and then compiled);
//!   - or, as a fallback where events say nothing (network file systems, some bind
//!     mounts, a watch that could not be set, a symlink swapped higher up the path such as
//!     a profile's directory link), a poll every [`POLL`] finds the file's size,
//!     modification time, change time, inode or resolved path (symlink targets) changed.
//!
//!   So a new module with the same size and modification time as the old one (a
//!   reproducible build, `cp -p`, another Nix store path) is reloaded, and a file touched
//!   or rewritten with the same bytes is not. A module file that disappears leaves the
//!   served module as it is.
//! - A module uploaded through the API (`spec.module.digest`) changes only with the spec.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};

use http::Method;
use serde_json::{Value, json};
use wasmgate_apimachinery::selectors::LabelSelector;
use wasmgate_plugin_runtime::{Hooks, Isolation, Limits, LoadError};
use wasmgate_storage::{EventKind, ReadAt};

use super::crd::{KEY_PREFIX, PATH};
use super::{Binding, FailurePolicy};
use crate::Context;
use crate::client::system_user;
use crate::object;

/// How often module files are checked without an event (the fallback for file systems
/// that send none): a stat and a canonicalization per plugin, the content read only when
/// they changed.
const POLL: Duration = Duration::from_secs(2);
/// How long the files must be quiet after an event before they are read.
const SETTLE: Duration = Duration::from_millis(50);
/// The longest wait after the first event of a burst (a file written to without pause).
const SETTLE_MAX: Duration = Duration::from_secs(1);
/// Paths remembered between two checks; more, and every file is checked.
const MAX_PENDING: usize = 1024;
/// Digests kept in `status.previousDigests`.
const KEEP_PREVIOUS: usize = 5;

/// What is known of one `WasmPlugin`.
struct Known {
    obj: Value,
    generation: i64,
    uid: String,
    /// What the module file looked like when last read.
    file: Option<FileSig>,
    /// The digest served (`None`: nothing loaded yet).
    digest: Option<String>,
    /// The digest of the last attempt, served or not.
    tried: Option<String>,
    previous: Vec<String>,
}

pub async fn run(weak: Weak<dyn Context>) {
    let mut known: HashMap<String, Known> = HashMap::new();
    let mut files = FileEvents::new();
    loop {
        let Some(inner) = weak.upgrade() else { return };
        let mut shutdown = inner.shutdown();
        if *shutdown.borrow() {
            return;
        }
        let listed = inner
            .store()
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
            inner.plugins().remove(&gone);
        }
        let mut watcher = match inner.store().watch(KEY_PREFIX, rev) {
            Ok(w) => w,
            Err(_) => continue,
        };
        drop(inner);
        files.follow(&known);
        let mut tick = tokio::time::interval(POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            // Work happens outside `select!`: its futures (one holds the shutdown flag's
            // read guard) must not live across the loads' awaits.
            let wake = tokio::select! {
                _ = shutdown.wait_for(|s| *s) => return,
                ev = watcher.next() => Wake::Object(ev),
                _ = tick.tick() => Wake::Poll,
                _ = files.wait() => Wake::Files,
            };
            let Some(inner) = weak.upgrade() else { return };
            match wake {
                Wake::Poll => poll_files(&inner, &mut known).await,
                Wake::Files => {
                    files.settle().await;
                    let changed = files.take();
                    check_files(&inner, &mut known, &changed).await;
                }
                Wake::Object(Err(_)) => break,
                Wake::Object(Ok(ev)) => {
                    let Ok(obj) = object::from_stored(&ev.value) else {
                        continue;
                    };
                    match ev.kind {
                        EventKind::Put => observe(&inner, &mut known, obj).await,
                        EventKind::Delete => {
                            let name = object::meta_str(&obj, "name").unwrap_or("");
                            known.remove(name);
                            inner.plugins().remove(name);
                        }
                    }
                }
            }
            files.follow(&known);
        }
    }
}

/// What woke the controller.
enum Wake {
    Object(Result<Arc<wasmgate_storage::Event>, wasmgate_storage::StorageError>),
    Poll,
    Files,
}

/// A new version of an object: load it when its spec changed.
async fn observe(inner: &Arc<dyn Context>, known: &mut HashMap<String, Known>, obj: Value) {
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
            inner.plugins().remove(&name);
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

/// The fallback poll: re-reads module files whose size, times, inode or resolved path
/// changed.
async fn poll_files(inner: &Arc<dyn Context>, known: &mut HashMap<String, Known>) {
    for (name, k) in known.iter_mut() {
        let Some(path) = k.obj["spec"]["module"]["path"].as_str().map(PathBuf::from) else {
            continue;
        };
        let sig = blocking(move || FileSig::of(&path)).await;
        if sig.is_some() && sig != k.file {
            reconcile(inner, name, k, false).await;
        }
    }
}

/// After file-system events: re-reads the module files they name (`None`: all of them).
async fn check_files(
    inner: &Arc<dyn Context>,
    known: &mut HashMap<String, Known>,
    changed: &Option<HashSet<PathBuf>>,
) {
    for (name, k) in known.iter_mut() {
        let Some(path) = k.obj["spec"]["module"]["path"].as_str() else {
            continue;
        };
        let named = match changed {
            None => true,
            Some(paths) => k
                .followed(Path::new(path))
                .iter()
                .any(|p| paths.iter().any(|c| c == p || p.parent() == Some(c))),
        };
        if named {
            reconcile(inner, name, k, false).await;
        }
    }
}

/// Runs blocking file-system work off the async workers.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(t) => t,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// What a module file looks like without reading it: what the fallback poll compares.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileSig {
    len: u64,
    modified: Option<SystemTime>,
    /// The inode's change time (seconds, nanoseconds): any write, rename or `touch`.
    changed: (i64, i64),
    /// Device and inode: another file renamed over the path.
    inode: (u64, u64),
    /// The path with every symlink resolved: a swapped symlink (Nix profiles).
    resolved: PathBuf,
}

impl FileSig {
    /// The signature of the file at `path` (following symlinks); `None` when it cannot be
    /// read.
    fn of(path: &Path) -> Option<FileSig> {
        let resolved = std::fs::canonicalize(path).ok()?;
        let m = std::fs::metadata(&resolved).ok()?;
        #[cfg(unix)]
        let (changed, inode) = {
            use std::os::unix::fs::MetadataExt as _;
            ((m.ctime(), m.ctime_nsec()), (m.dev(), m.ino()))
        };
        #[cfg(not(unix))]
        let (changed, inode) = ((0, 0), (0, 0));
        Some(FileSig {
            len: m.len(),
            modified: m.modified().ok(),
            changed,
            inode,
            resolved,
        })
    }
}

/// Reads a module file, with its signature taken first (a change while it is read is
/// seen by the next check).
fn read_module(path: &Path) -> (Option<FileSig>, Result<Vec<u8>, String>) {
    let sig = FileSig::of(path);
    let bytes = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()));
    (sig, bytes)
}

impl Known {
    /// The paths whose events concern this plugin's module file: the path, and the file
    /// it resolves to through symlinks.
    fn followed(&self, path: &Path) -> Vec<PathBuf> {
        let mut paths = vec![path.to_owned()];
        if let Some(sig) = &self.file
            && sig.resolved != path
        {
            paths.push(sig.resolved.clone());
        }
        paths
    }
}

/// Whether an event of `kind` may mean a file's content changed. Opening, reading and
/// closing a file read-only do not: the controller's own read of a module is such an
/// event, and taking it for a change read and hashed every module again, ~15 times a
/// second, for ever (issue 26: ~14 ms of CPU a second on an idle gateway).
fn may_change_content(kind: &notify::EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode};
    match kind {
        notify::EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        notify::EventKind::Access(_) => false,
        _ => true,
    }
}

/// File-system events on the module files' directories (inotify on Linux), gathered
/// between two checks. Without a watcher (the platform has none, or inotify's limits are
/// reached) only the poll sees changes.
struct FileEvents {
    /// Created with the first module file to follow (a gateway without plugins has no
    /// inotify instance); `Err` when it could not be (only the poll sees changes then).
    watcher: Option<Result<notify::RecommendedWatcher, ()>>,
    /// Directories watched now.
    watched: HashSet<PathBuf>,
    pending: Arc<Mutex<Pending>>,
    woken: Arc<tokio::sync::Notify>,
}

/// Events not yet acted on.
#[derive(Default)]
struct Pending {
    paths: HashSet<PathBuf>,
    /// Events were lost (the kernel's queue overflowed, or too many paths): check all.
    everything: bool,
    /// Bumped by every event, to tell when the files went quiet.
    generation: u64,
}

impl FileEvents {
    fn new() -> FileEvents {
        FileEvents {
            watcher: None,
            watched: HashSet::new(),
            pending: Default::default(),
            woken: Default::default(),
        }
    }

    /// A watcher whose events go to `pending`, waking `woken`.
    fn watcher(
        pending: &Arc<Mutex<Pending>>,
        woken: &Arc<tokio::sync::Notify>,
    ) -> Result<notify::RecommendedWatcher, ()> {
        let (pending, woken) = (pending.clone(), woken.clone());
        notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
            if let Ok(e) = &ev
                && !may_change_content(&e.kind)
            {
                return;
            }
            let mut p = pending.lock().unwrap_or_else(|p| p.into_inner());
            p.generation += 1;
            match ev {
                Ok(ev) if !ev.need_rescan() && p.paths.len() < MAX_PENDING => {
                    p.paths.extend(ev.paths);
                }
                _ => {
                    p.everything = true;
                    p.paths.clear();
                }
            }
            drop(p);
            woken.notify_one();
        })
        .map_err(|e| {
            tracing::warn!(
                "plugin module files: no file-system events ({e}); polling every {POLL:?}"
            );
        })
    }

    /// Watches the directories of the module files of `known` (and of the files their
    /// paths resolve to), and no others.
    fn follow(&mut self, known: &HashMap<String, Known>) {
        let mut wanted = HashSet::new();
        for k in known.values() {
            if let Some(path) = k.obj["spec"]["module"]["path"].as_str() {
                for p in k.followed(Path::new(path)) {
                    if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                        wanted.insert(dir.to_owned());
                    }
                }
            }
        }
        if wanted.is_empty() && self.watched.is_empty() {
            return;
        }
        let watcher = self
            .watcher
            .get_or_insert_with(|| FileEvents::watcher(&self.pending, &self.woken));
        let Ok(watcher) = watcher else {
            return;
        };
        use notify::Watcher as _;
        for gone in self.watched.difference(&wanted) {
            let _ = watcher.unwatch(gone);
        }
        self.watched.retain(|d| wanted.contains(d));
        for dir in wanted {
            if self.watched.contains(&dir) {
                continue;
            }
            match watcher.watch(&dir, notify::RecursiveMode::NonRecursive) {
                Ok(()) => {
                    self.watched.insert(dir);
                }
                // Tried again at the next change; the poll covers it meanwhile.
                Err(e) => tracing::debug!(dir = %dir.display(), "not watched: {e}"),
            }
        }
    }

    /// Returns when an event came (at once if one came since the last [`FileEvents::take`]).
    async fn wait(&self) {
        self.woken.notified().await;
    }

    /// Waits until no event came for [`SETTLE`], at most [`SETTLE_MAX`].
    async fn settle(&self) {
        let started = tokio::time::Instant::now();
        loop {
            let before = self.generation();
            tokio::time::sleep(SETTLE).await;
            if self.generation() == before || started.elapsed() >= SETTLE_MAX {
                return;
            }
        }
    }

    fn generation(&self) -> u64 {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .generation
    }

    /// The paths events named since the last call (`None`: check every file).
    fn take(&self) -> Option<HashSet<PathBuf>> {
        let mut p = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        if std::mem::take(&mut p.everything) {
            p.paths.clear();
            return None;
        }
        Some(std::mem::take(&mut p.paths))
    }
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
async fn reconcile(inner: &Arc<dyn Context>, name: &str, k: &mut Known, spec_changed: bool) {
    let module = &k.obj["spec"]["module"];
    let read = match (module["path"].as_str(), module["digest"].as_str()) {
        (Some(path), _) => {
            let path = PathBuf::from(path);
            let (sig, read) = blocking(move || read_module(&path)).await;
            k.file = sig;
            if read.is_err() && !spec_changed {
                // Gone (or unreadable) since it was loaded: what serves stays.
                return;
            }
            read
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
    let (bytes, digest) = blocking(move || {
        let d = wasmgate_plugin_runtime::digest(&bytes);
        (bytes, d)
    })
    .await;
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
            inner.plugins().put(binding);
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
    inner: &Arc<dyn Context>,
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
        isolation: spec["isolation"]
            .as_str()
            .and_then(Isolation::parse)
            .unwrap_or_default(),
    };
    let config = match spec.get("config") {
        Some(c @ Value::Object(_)) => c.to_string(),
        _ => "{}".to_owned(),
    };
    let runtime = inner
        .plugins()
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
async fn report(inner: &Arc<dyn Context>, name: &str, k: &Known, outcome: Result<Hooks, NotReady>) {
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
    if let Err(e) = crate::client::call_ok(
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    fn known(path: &Path) -> Known {
        Known {
            obj: json!({"spec": {"module": {"path": path}}}),
            generation: 1,
            uid: "u".into(),
            file: FileSig::of(path),
            digest: None,
            tried: None,
            previous: Vec::new(),
        }
    }

    /// Issue 26: reading a module (the controller's own read) is no change; writing one
    /// is, as are creating, renaming and removing.
    #[test]
    fn reads_are_not_changes() {
        use notify::EventKind as K;
        use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind, RemoveKind};
        for kind in [
            K::Access(AccessKind::Open(AccessMode::Read)),
            K::Access(AccessKind::Read),
            K::Access(AccessKind::Close(AccessMode::Read)),
            K::Access(AccessKind::Any),
        ] {
            assert!(!may_change_content(&kind), "{kind:?}");
        }
        for kind in [
            K::Access(AccessKind::Close(AccessMode::Write)),
            K::Create(CreateKind::File),
            K::Modify(ModifyKind::Any),
            K::Remove(RemoveKind::File),
            K::Any,
        ] {
            assert!(may_change_content(&kind), "{kind:?}");
        }
    }

    /// Issue 25 item 6: a module file renamed over, written in place or behind a swapped
    /// symlink is an event naming the path the plugin follows, well within a second (the
    /// poll, every 2 s, is only the fallback).
    #[tokio::test]
    async fn module_file_changes_are_events() {
        let dir = tempfile::tempdir().unwrap();
        let (file, link) = (dir.path().join("m.wasm"), dir.path().join("link.wasm"));
        std::fs::write(&file, b"one").unwrap();
        std::fs::write(dir.path().join("other.wasm"), b"two").unwrap();
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let mut events = FileEvents::new();
        let known: HashMap<String, Known> = [("f", &file), ("l", &link)]
            .into_iter()
            .map(|(n, p)| (n.to_owned(), known(p)))
            .collect();
        events.follow(&known);
        assert_eq!(events.watched, HashSet::from([dir.path().to_owned()]));
        let changes = [
            // Renamed over.
            Box::new(|| {
                std::fs::write(dir.path().join("m.tmp"), b"ONE").unwrap();
                std::fs::rename(dir.path().join("m.tmp"), &file).unwrap();
            }) as Box<dyn Fn()>,
            // Written in place.
            Box::new(|| std::fs::write(&file, b"uno").unwrap()),
            // The link swapped.
            Box::new(|| {
                let tmp = dir.path().join("link.tmp");
                std::os::unix::fs::symlink(dir.path().join("other.wasm"), &tmp).unwrap();
                std::fs::rename(&tmp, &link).unwrap();
            }),
        ];
        for (i, change) in changes.iter().enumerate() {
            events.take();
            change();
            tokio::time::timeout(Duration::from_secs(1), events.wait())
                .await
                .unwrap_or_else(|_| panic!("no event for change {i}"));
            events.settle().await;
            let named = events.take().unwrap();
            let want = if i == 2 { &link } else { &file };
            assert!(named.contains(want), "change {i}: {named:?}");
        }
        // Nothing followed: nothing watched.
        events.follow(&HashMap::new());
        assert!(events.watched.is_empty());
    }

    /// Issue 25 item 6: the fallback poll's signature changes with the content's inode,
    /// change time or symlink target even when size and modification time stay.
    #[test]
    fn the_signature_sees_more_than_size_and_time() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, link) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("l"),
        );
        std::fs::write(&a, b"aaa").unwrap();
        std::fs::write(&b, b"bbb").unwrap();
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        for p in [&a, &b] {
            std::fs::File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let (sa, sb, sl) = (
            FileSig::of(&a).unwrap(),
            FileSig::of(&b).unwrap(),
            FileSig::of(&link).unwrap(),
        );
        assert_eq!((sa.len, sa.modified), (sb.len, sb.modified));
        assert_ne!(sa, sb);
        assert_eq!(sl, sa, "a link's signature is its target's");
        assert_eq!(sl.resolved, a.canonicalize().unwrap());
        assert!(FileSig::of(&dir.path().join("missing")).is_none());
    }
}
