//! Garbage collection of dependents named by `ownerReferences`, with the semantics of
//! kube-controller-manager's garbage collector (seed 001, "Garbage Collection"; kube's
//! `pkg/controller/garbagecollector` is the reference):
//!
//! * `Background` (the default): the owner goes at once; its dependents are deleted after.
//! * `Foreground`: the delete verb gives the owner a `deletionTimestamp` and the
//!   `foregroundDeletion` finalizer; the collector deletes the dependents and removes the
//!   finalizer once no dependent with `blockOwnerDeletion: true` is left.
//! * `Orphan`: the owner gets the `orphan` finalizer; the collector removes the owner's
//!   reference from every dependent, then the finalizer.
//!
//! A reference matches by uid: a dependent whose owners are all gone (absent, or replaced by
//! an object of the same name with another uid) is collected; one that still has a live
//! owner only loses the references to the gone ones. A namespaced owner is looked up in the
//! dependent's namespace; a cluster-scoped dependent cannot have a namespaced owner — such a
//! reference is reported with a `Warning` event (`OwnerRefInvalidNamespace`), as kube does,
//! and the dependent is left alone.
//!
//! The collector keeps an index of dependents by owner uid, rebuilt from a scan of the store
//! at start (so it survives restarts) and kept current by a watch of every key; it holds
//! only the objects that have owner references. Its writes are API requests through
//! the loopback [`client::Client`] as the garbage collector's service account, so they pass the
//! same write path (validation, finalizers, admission once plugins exist) as a client's.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use http::Method;
use serde::Deserialize;
use serde_json::{Value, json};
use wasmgate_apimachinery::options::{
    FINALIZER_DELETE_DEPENDENTS as FOREGROUND, FINALIZER_ORPHAN_DEPENDENTS as ORPHAN,
};
use wasmgate_storage::{Event, EventKind, ReadAt, StorageError, Store};

use wasmgate_apiserver_core::client::{self, Client as _};
use wasmgate_apiserver_core::{User, error, object};
use wasmgate_registry::{Catalog, ResourceType};

use crate::Context;

/// Work items run at once (their writes batch in the store's group commit).
const CONCURRENCY: usize = 64;
/// Keys read per page while scanning the store.
const SCAN_PAGE: usize = 1000;
/// Longest wait before a failed item is tried again.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The identity the collector's requests carry (kube's controller service account).
fn collector_user() -> User {
    User {
        name: "system:serviceaccount:kube-system:generic-garbage-collector".into(),
        groups: vec![
            "system:serviceaccounts".into(),
            "system:serviceaccounts:kube-system".into(),
            "system:authenticated".into(),
        ],
    }
}

// ---------------------------------------------------------------------------------------
// What the collector reads of an object.

/// The metadata the collector needs, decoded without the rest of the object.
#[derive(Debug, Default, Deserialize)]
struct Partial {
    #[serde(default, rename = "apiVersion")]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: Meta,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    uid: String,
    #[serde(default)]
    owner_references: Option<Vec<OwnerRef>>,
    #[serde(default)]
    finalizers: Option<Vec<String>>,
    #[serde(default)]
    deletion_timestamp: Option<String>,
}

impl Partial {
    fn decode(bytes: &[u8]) -> Option<Partial> {
        serde_json::from_slice(bytes).ok()
    }
    fn owners(&self) -> &[OwnerRef] {
        self.metadata.owner_references.as_deref().unwrap_or(&[])
    }
    fn has_finalizer(&self, f: &str) -> bool {
        self.metadata
            .finalizers
            .as_deref()
            .is_some_and(|fs| fs.iter().any(|x| x == f))
    }
    fn deleting(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }
    fn namespace(&self) -> &str {
        self.metadata.namespace.as_deref().unwrap_or("")
    }
}

/// One entry of `metadata.ownerReferences`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OwnerRef {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    uid: String,
    #[serde(default)]
    block_owner_deletion: Option<bool>,
}

/// Whether a stored object may matter to the collector: it names owners or is being
/// deleted (a cheap filter before decoding).
fn is_relevant(value: &[u8]) -> bool {
    contains(value, b"\"ownerReferences\"") || contains(value, b"\"deletionTimestamp\"")
}

/// Whether `hay` contains `needle`.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

// ---------------------------------------------------------------------------------------
// The dependency index.

/// An object that has owner references.
#[derive(Debug)]
struct Dependent {
    key: String,
    owners: Vec<OwnerRef>,
}

#[derive(Debug, Default)]
struct Owned {
    /// Uids of the dependents that name this owner.
    dependents: HashSet<String>,
    /// How many of them name it with `blockOwnerDeletion: true`.
    blocking: usize,
}

/// Dependents by uid, and by owner uid.
#[derive(Debug, Default)]
struct Graph {
    dependents: HashMap<String, Dependent>,
    owners: HashMap<String, Owned>,
}

impl Graph {
    /// Records `uid`'s owner references (none: forgets it). Returns whether they changed.
    fn set(&mut self, uid: &str, dep: Option<Dependent>) -> bool {
        let old = self.remove(uid);
        let changed = old.as_ref().map(|d| &d.owners) != dep.as_ref().map(|d| &d.owners);
        if let Some(d) = dep {
            for (owner, blocks) in distinct_owners(&d.owners) {
                let o = self.owners.entry(owner.to_owned()).or_default();
                if o.dependents.insert(uid.to_owned()) && blocks {
                    o.blocking += 1;
                }
            }
            self.dependents.insert(uid.to_owned(), d);
        }
        changed
    }

    fn remove(&mut self, uid: &str) -> Option<Dependent> {
        let d = self.dependents.remove(uid)?;
        for (owner, blocks) in distinct_owners(&d.owners) {
            if let Some(o) = self.owners.get_mut(owner) {
                if o.dependents.remove(uid) && blocks {
                    o.blocking -= 1;
                }
                if o.dependents.is_empty() {
                    self.owners.remove(owner);
                }
            }
        }
        Some(d)
    }

    fn dependents_of(&self, owner: &str) -> Vec<String> {
        self.owners
            .get(owner)
            .map(|o| o.dependents.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn blocking(&self, owner: &str) -> usize {
        self.owners.get(owner).map_or(0, |o| o.blocking)
    }

    fn has_dependents(&self, uid: &str) -> bool {
        self.owners.contains_key(uid)
    }
}

/// Each owner uid once, with whether any reference to it blocks its deletion.
fn distinct_owners(refs: &[OwnerRef]) -> Vec<(&str, bool)> {
    let mut out: Vec<(&str, bool)> = Vec::with_capacity(refs.len());
    for r in refs {
        let blocks = r.block_owner_deletion == Some(true);
        match out.iter_mut().find(|(u, _)| *u == r.uid) {
            Some(e) => e.1 |= blocks,
            None => out.push((&r.uid, blocks)),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Work.

/// One thing to look at.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Work {
    /// Decide whether a dependent (by uid) stays, loses references, or goes.
    Dependent(String),
    /// An owner that is being deleted with the `orphan` or `foregroundDeletion` finalizer.
    Owner { key: String, uid: String },
}

/// Why a work item did not finish.
#[derive(Debug)]
enum Failure {
    /// Try again after a growing delay.
    Retry(String),
    /// An owner reference names a kind that is not served: try again when the served
    /// types change (a CRD is created), not on a timer.
    UnknownKind(String),
}

impl From<String> for Failure {
    fn from(e: String) -> Failure {
        Failure::Retry(e)
    }
}

type Running = Pin<Box<dyn Future<Output = (Work, Result<(), Failure>)> + Send>>;
type Delayed = Pin<Box<dyn Future<Output = Work> + Send>>;

/// The collector's state between events.
#[derive(Default)]
struct Collector {
    graph: Graph,
    /// Owners being deleted with a GC finalizer: uid -> key.
    deleting: HashMap<String, String>,
    queue: VecDeque<Work>,
    queued: HashSet<Work>,
    failures: HashMap<Work, u32>,
    /// Work waiting for the served types to change.
    unresolved: HashSet<Work>,
}

impl Collector {
    fn enqueue(&mut self, w: Work) {
        if self.queued.insert(w.clone()) {
            self.queue.push_back(w);
        }
    }

    fn next_work(&mut self) -> Option<Work> {
        let w = self.queue.pop_front()?;
        self.queued.remove(&w);
        Some(w)
    }

    /// Loads the index from the store at one revision; returns that revision. Every
    /// dependent found is looked at once: its owners may have gone while no collector ran
    /// (a crash between an owner's delete and its dependents').
    async fn scan(&mut self, store: &Store) -> Result<u64, StorageError> {
        let mut at = ReadAt::Latest;
        let mut after: Option<String> = None;
        let revision = loop {
            let page = store
                .list("", at, after.as_deref(), SCAN_PAGE, false)
                .await?;
            for item in &page.items {
                if is_relevant(&item.value)
                    && let Some(p) = Partial::decode(&item.value)
                {
                    self.observe_object(&item.key, &p);
                }
            }
            after = page.items.last().map(|i| i.key.clone());
            at = ReadAt::Exact(page.revision);
            if !page.more {
                break page.revision;
            }
        };
        Ok(revision)
    }

    /// Takes in one stored object (from the scan or a put event).
    fn observe_object(&mut self, key: &str, p: &Partial) {
        let uid = &p.metadata.uid;
        let dep = (!p.owners().is_empty()).then(|| Dependent {
            key: key.to_owned(),
            owners: p.owners().to_vec(),
        });
        let has_owners = dep.is_some();
        if self.graph.set(uid, dep) && has_owners {
            self.enqueue(Work::Dependent(uid.clone()));
        }
        let orphan = p.has_finalizer(ORPHAN);
        let foreground = p.has_finalizer(FOREGROUND);
        if p.deleting() && (orphan || foreground) {
            self.deleting.insert(uid.clone(), key.to_owned());
            if foreground {
                // Every dependent is looked at again: each is now waiting on a deleting owner.
                for d in self.graph.dependents_of(uid) {
                    self.enqueue(Work::Dependent(d));
                }
            }
            self.enqueue(Work::Owner {
                key: key.to_owned(),
                uid: uid.clone(),
            });
        } else {
            self.deleting.remove(uid);
        }
    }

    /// Takes in one watch event.
    fn observe(&mut self, ev: &Event) {
        match ev.kind {
            EventKind::Put => {
                let relevant = is_relevant(&ev.value)
                    || ev
                        .prev
                        .as_ref()
                        .is_some_and(|p| contains(&p.value, b"\"ownerReferences\""));
                if !relevant {
                    return;
                }
                if let Some(p) = Partial::decode(&ev.value) {
                    self.observe_object(&ev.key, &p);
                }
            }
            EventKind::Delete => {
                let Some(p) = Partial::decode(&ev.value) else {
                    return;
                };
                let uid = &p.metadata.uid;
                self.deleting.remove(uid);
                if let Some(dep) = self.graph.remove(uid) {
                    // An owner waiting on its dependents may now be done.
                    for (owner, _) in distinct_owners(&dep.owners) {
                        if let Some(key) = self.deleting.get(owner) {
                            let w = Work::Owner {
                                key: key.clone(),
                                uid: owner.to_owned(),
                            };
                            self.enqueue(w);
                        }
                    }
                }
                for d in self.graph.dependents_of(uid) {
                    self.enqueue(Work::Dependent(d));
                }
            }
        }
    }

    /// Starts a work item; `None` when there is nothing to do for it any more.
    fn start(&self, inner: Arc<dyn Context>, w: Work) -> Option<Running> {
        match &w {
            Work::Dependent(uid) => {
                let dep = self.graph.dependents.get(uid)?;
                let key = dep.key.clone();
                let uid = uid.clone();
                let has_dependents = self.graph.has_dependents(&uid);
                Some(Box::pin(async move {
                    let r = attempt_to_delete(&inner, &key, &uid, has_dependents).await;
                    (w, r)
                }))
            }
            Work::Owner { key, uid } => {
                let key = key.clone();
                let uid = uid.clone();
                let dependents: Vec<String> = self
                    .graph
                    .dependents_of(&uid)
                    .iter()
                    .filter_map(|d| self.graph.dependents.get(d).map(|d| d.key.clone()))
                    .collect();
                let blocking = self.graph.blocking(&uid);
                Some(Box::pin(async move {
                    let r = process_owner(&inner, &key, &uid, dependents, blocking).await;
                    (w, r.map_err(Failure::Retry))
                }))
            }
        }
    }

    /// Records how a work item ended; a failure comes back after a growing delay.
    fn finish(&mut self, w: Work, r: Result<(), Failure>) -> Option<Delayed> {
        match r {
            Ok(()) => {
                self.failures.remove(&w);
                None
            }
            Err(Failure::UnknownKind(e)) => {
                tracing::debug!(work = ?w, error = %e, "garbage collection waits for the type");
                self.failures.remove(&w);
                self.unresolved.insert(w);
                None
            }
            Err(Failure::Retry(e)) => {
                let n = self.failures.entry(w.clone()).or_insert(0);
                *n += 1;
                let delay = Duration::from_millis(100)
                    .saturating_mul(1u32 << (*n).min(12))
                    .min(MAX_BACKOFF);
                tracing::debug!(work = ?w, error = %e, ?delay, "garbage collection retries");
                Some(Box::pin(async move {
                    tokio::time::sleep(delay).await;
                    w
                }))
            }
        }
    }
}

/// The garbage collector: scan, then follow every change until shutdown; a lost watch
/// (compacted history, a store error) starts over with a new scan.
pub async fn run(weak: Weak<dyn Context>) {
    loop {
        let Some(i) = weak.upgrade() else { return };
        let mut shutdown = i.shutdown();
        if *shutdown.borrow() {
            return;
        }
        let store = i.store().clone();
        drop(i);
        let mut c = Collector::default();
        let watcher = match c.scan(&store).await {
            Ok(rev) => store.watch("", rev),
            Err(e) => Err(e),
        };
        let mut watcher = match watcher {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(error = %error::error_chain(&e), "garbage collector: scan failed");
                tokio::select! {
                    _ = shutdown.wait_for(|s| *s) => return,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                }
            }
        };
        let mut types = match weak.upgrade() {
            Some(i) => i.types().subscribe(),
            None => return,
        };
        let mut running: FuturesUnordered<Running> = FuturesUnordered::new();
        let mut delayed: FuturesUnordered<Delayed> = FuturesUnordered::new();
        loop {
            while running.len() < CONCURRENCY {
                let Some(w) = c.next_work() else { break };
                let Some(i) = weak.upgrade() else { return };
                if let Some(f) = c.start(i, w) {
                    running.push(f);
                }
            }
            tokio::select! {
                _ = shutdown.wait_for(|s| *s) => return,
                ev = watcher.next() => match ev {
                    Ok(ev) => {
                        c.observe(&ev);
                        // Take in what is already buffered before starting work.
                        while let Some(ev) = watcher.next_buffered() {
                            c.observe(&ev);
                        }
                    }
                    Err(e) => {
                        tracing::info!(error = %error::error_chain(&e), "garbage collector: watch lost, rescanning");
                        break;
                    }
                },
                Some((w, r)) = running.next(), if !running.is_empty() => {
                    if let Some(d) = c.finish(w, r) {
                        delayed.push(d);
                    }
                }
                Some(w) = delayed.next(), if !delayed.is_empty() => c.enqueue(w),
                changed = types.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    for w in std::mem::take(&mut c.unresolved) {
                        c.enqueue(w);
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The decisions, each as kube's collector makes them.

/// How an owner reference stands.
enum Standing {
    /// The owner exists with that uid and is not waiting on its dependents.
    Solid,
    /// The owner is gone (absent, or another object of that name).
    Dangling,
    /// The owner is being deleted in the foreground.
    Waiting,
}

/// Why a reference cannot be looked at.
enum Unresolved {
    /// The kind is not served (yet): try again later.
    UnknownKind(String),
    /// A cluster-scoped dependent names a namespaced owner: reported, never retried.
    NamespacedOwnerOfClusterScoped,
}

/// kube's `attemptToDeleteItem`.
async fn attempt_to_delete(
    inner: &Arc<dyn Context>,
    key: &str,
    uid: &str,
    has_dependents: bool,
) -> Result<(), Failure> {
    let Some(dep) = read(inner, key).await? else {
        return Ok(());
    };
    let p = &dep.p;
    if p.metadata.uid != uid {
        return Ok(());
    }
    if p.deleting() {
        // Its own deletion is under way; a foreground one is the owner side's job.
        return Ok(());
    }
    let catalog = inner.types().snapshot();
    let mut solid = false;
    let mut gone: Vec<&str> = Vec::new();
    let mut waiting = false;
    for r in p.owners() {
        match standing(inner, &catalog, p, r).await? {
            Ok(Standing::Solid) => solid = true,
            Ok(Standing::Dangling) => gone.push(&r.uid),
            Ok(Standing::Waiting) => {
                waiting = true;
                gone.push(&r.uid);
            }
            Err(Unresolved::UnknownKind(e)) => return Err(Failure::UnknownKind(e)),
            Err(Unresolved::NamespacedOwnerOfClusterScoped) => {
                report_invalid_namespace(inner, p, r).await;
                return Ok(());
            }
        }
    }
    if solid {
        if gone.is_empty() {
            return Ok(());
        }
        // Keep the object; drop only the references to owners that are gone or going.
        let kept: Vec<Value> = dep.obj["metadata"]["ownerReferences"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|r| !gone.contains(&r["uid"].as_str().unwrap_or("")))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let fields = json!({"ownerReferences": list_or_null(kept)});
        return Ok(patch_metadata(inner, key, &dep, fields).await?);
    }
    let policy = if waiting && has_dependents {
        "Foreground"
    } else if p.has_finalizer(ORPHAN) {
        "Orphan"
    } else if p.has_finalizer(FOREGROUND) {
        "Foreground"
    } else {
        "Background"
    };
    Ok(delete(inner, key, p, policy).await?)
}

/// Looks up the owner a reference names.
async fn standing(
    inner: &Arc<dyn Context>,
    catalog: &Catalog,
    dep: &Partial,
    r: &OwnerRef,
) -> Result<Result<Standing, Unresolved>, String> {
    let Some(t) = owner_type(catalog, &r.api_version, &r.kind) else {
        return Ok(Err(Unresolved::UnknownKind(format!(
            "owner kind {} {} is not served",
            r.api_version, r.kind
        ))));
    };
    let ns = dep.namespace();
    if t.namespaced && ns.is_empty() {
        return Ok(Err(Unresolved::NamespacedOwnerOfClusterScoped));
    }
    let key = t.key(Some(ns), &r.name);
    let Some(Read { p: owner, .. }) = read(inner, &key).await? else {
        return Ok(Ok(Standing::Dangling));
    };
    Ok(Ok(if owner.metadata.uid != r.uid {
        Standing::Dangling
    } else if owner.deleting() && owner.has_finalizer(FOREGROUND) {
        Standing::Waiting
    } else {
        Standing::Solid
    }))
}

/// The served type of an owner reference's `apiVersion` and `kind`.
fn owner_type<'a>(catalog: &'a Catalog, api_version: &str, kind: &str) -> Option<&'a ResourceType> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    catalog
        .types()
        .iter()
        .map(Arc::as_ref)
        .find(|t| t.group == group && t.kind == kind && t.versions.iter().any(|v| v == version))
}

/// kube's `processDeletingDependentsItem` and `orphanDependents`.
async fn process_owner(
    inner: &Arc<dyn Context>,
    key: &str,
    uid: &str,
    dependents: Vec<String>,
    blocking: usize,
) -> Result<(), String> {
    let Some(Read { p, .. }) = read(inner, key).await? else {
        return Ok(());
    };
    if p.metadata.uid != uid || !p.deleting() {
        return Ok(());
    }
    if p.has_finalizer(ORPHAN) {
        let results: Vec<Result<(), String>> = futures_util::stream::iter(dependents)
            .map(|dep| async move { drop_reference(inner, &dep, uid).await })
            .buffer_unordered(32)
            .collect()
            .await;
        results.into_iter().collect::<Result<(), String>>()?;
        return remove_finalizer(inner, key, uid, ORPHAN).await;
    }
    if p.has_finalizer(FOREGROUND) && blocking == 0 {
        return remove_finalizer(inner, key, uid, FOREGROUND).await;
    }
    Ok(())
}

/// Removes every reference to `owner` from the dependent at `key`.
async fn drop_reference(inner: &Arc<dyn Context>, key: &str, owner: &str) -> Result<(), String> {
    for _ in 0..16 {
        let Some(dep) = read(inner, key).await? else {
            return Ok(());
        };
        let refs = dep.obj["metadata"]["ownerReferences"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let kept: Vec<Value> = refs
            .iter()
            .filter(|r| r["uid"].as_str() != Some(owner))
            .cloned()
            .collect();
        if kept.len() == refs.len() {
            return Ok(());
        }
        let fields = json!({"ownerReferences": list_or_null(kept)});
        match patch_metadata(inner, key, &dep, fields).await {
            Err(e) if e.starts_with("409") => continue,
            r => return r,
        }
    }
    Err(format!("{key}: kept changing"))
}

/// Removes finalizer `f` from the owner at `key`.
async fn remove_finalizer(
    inner: &Arc<dyn Context>,
    key: &str,
    uid: &str,
    f: &str,
) -> Result<(), String> {
    for _ in 0..16 {
        let Some(owner) = read(inner, key).await? else {
            return Ok(());
        };
        if owner.p.metadata.uid != uid || !owner.p.has_finalizer(f) {
            return Ok(());
        }
        let rest: Vec<Value> = owner
            .p
            .metadata
            .finalizers
            .iter()
            .flatten()
            .filter(|x| *x != f)
            .map(|x| json!(x))
            .collect();
        let fields = json!({"finalizers": list_or_null(rest)});
        match patch_metadata(inner, key, &owner, fields).await {
            Err(e) if e.starts_with("409") => continue,
            r => return r,
        }
    }
    Err(format!("{key}: kept changing"))
}

/// An object as read: the whole of it, what the collector uses of it, and its revision.
struct Read {
    obj: Value,
    p: Partial,
    revision: u64,
}

/// A list for a merge patch: an empty one removes the field, as Go's `omitempty` leaves
/// empty lists out of kube's objects.
fn list_or_null(items: Vec<Value>) -> Value {
    if items.is_empty() {
        Value::Null
    } else {
        Value::Array(items)
    }
}

/// Reads an object at the latest revision.
async fn read(inner: &dyn Context, key: &str) -> Result<Option<Read>, String> {
    let (_, found) = inner
        .store()
        .get(key, ReadAt::Latest)
        .await
        .map_err(|e| error::error_chain(&e))?;
    let Some(found) = found else { return Ok(None) };
    let obj = object::from_stored(&found.value).map_err(|e| e.to_string())?;
    let p = Partial::deserialize(&obj).map_err(|e| e.to_string())?;
    Ok(Some(Read {
        obj,
        p,
        revision: found.revision,
    }))
}

// ---------------------------------------------------------------------------------------
// The collector's writes: API requests, like a controller's.

/// The path of an object (`/api/v1/namespaces/ns/configmaps/name`).
fn object_path(inner: &dyn Context, key: &str, p: &Partial) -> Option<String> {
    let catalog = inner.types().snapshot();
    let t = owner_type(&catalog, &p.api_version, &p.kind)?;
    // The key says where the object is stored; it must be this type's.
    if !key.starts_with(&t.key_prefix()) {
        return None;
    }
    let (group, version) = p
        .api_version
        .rsplit_once('/')
        .unwrap_or(("", &p.api_version));
    let base = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    Some(match p.metadata.namespace.as_deref() {
        Some(ns) if t.namespaced && !ns.is_empty() => {
            format!("{base}/namespaces/{ns}/{}/{}", t.resource, p.metadata.name)
        }
        _ => format!("{base}/{}/{}", t.resource, p.metadata.name),
    })
}

/// One request through the server's own handler. Errors read `"<code> <message>"`.
async fn call(
    inner: &Arc<dyn Context>,
    method: Method,
    path: &str,
    content_type: &str,
    body: &Value,
) -> Result<u16, String> {
    let (code, v) = inner
        .call(collector_user(), method, path, content_type, Some(body))
        .await?;
    if code < 300 {
        return Ok(code);
    }
    Err(client::failure(code, &v))
}

/// Deletes the object, guarded by its uid.
async fn delete(
    inner: &Arc<dyn Context>,
    key: &str,
    p: &Partial,
    policy: &str,
) -> Result<(), String> {
    let Some(path) = object_path(inner, key, p) else {
        return Err(format!(
            "{key}: no served type for {} {}",
            p.api_version, p.kind
        ));
    };
    let body = json!({
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "propagationPolicy": policy,
        "preconditions": {"uid": p.metadata.uid},
    });
    match call(inner, Method::DELETE, &path, "application/json", &body).await {
        Ok(_) => Ok(()),
        // Gone already, or replaced by another object of that name: nothing to collect.
        Err(e) if e.starts_with("404") || e.starts_with("409") => Ok(()),
        Err(e) => Err(e),
    }
}

/// A merge patch of `metadata`, guarded by the object's uid and resourceVersion.
async fn patch_metadata(
    inner: &Arc<dyn Context>,
    key: &str,
    read: &Read,
    mut fields: Value,
) -> Result<(), String> {
    let p = &read.p;
    let Some(path) = object_path(inner, key, p) else {
        return Err(format!(
            "{key}: no served type for {} {}",
            p.api_version, p.kind
        ));
    };
    fields["uid"] = json!(p.metadata.uid);
    fields["resourceVersion"] = json!(read.revision.to_string());
    let body = json!({ "metadata": fields });
    match call(
        inner,
        Method::PATCH,
        &path,
        "application/merge-patch+json",
        &body,
    )
    .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.starts_with("404") => Ok(()),
        Err(e) => Err(e),
    }
}

/// The `Warning` event kube's collector records for a cluster-scoped dependent that names
/// a namespaced owner. Events of cluster-scoped objects live in `default`, as kube's.
async fn report_invalid_namespace(inner: &Arc<dyn Context>, dep: &Partial, r: &OwnerRef) {
    let now = object::now_rfc3339();
    let ns = dep.namespace();
    let message = format!(
        "ownerRef [{}/{}, namespace: {ns}, name: {}, uid: {}] does not exist in namespace {ns:?}",
        r.api_version, r.kind, r.name, r.uid
    );
    let event = json!({
        "apiVersion": "v1",
        "kind": "Event",
        // Named as kube's event recorder names events: object name, then the time in hex.
        "metadata": {"name": event_name(&dep.metadata.name), "namespace": "default"},
        "involvedObject": {
            "apiVersion": dep.api_version,
            "kind": dep.kind,
            "name": dep.metadata.name,
            "uid": dep.metadata.uid,
        },
        "reason": "OwnerRefInvalidNamespace",
        "message": message,
        "type": "Warning",
        "source": {"component": "garbage-collector-controller"},
        "reportingComponent": "garbage-collector-controller",
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    });
    tracing::info!(dependent = %dep.metadata.name, %message, "invalid owner reference");
    if let Err(e) = call(
        inner,
        Method::POST,
        "/api/v1/namespaces/default/events",
        "application/json",
        &event,
    )
    .await
    {
        tracing::warn!(error = %e, "could not record the owner-reference event");
    }
}

fn event_name(object: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{object}.{nanos:x}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    fn dep(key: &str, owners: &[(&str, bool)]) -> Dependent {
        Dependent {
            key: key.into(),
            owners: owners
                .iter()
                .map(|(u, b)| OwnerRef {
                    api_version: "v1".into(),
                    kind: "ConfigMap".into(),
                    name: "o".into(),
                    uid: (*u).into(),
                    block_owner_deletion: Some(*b),
                })
                .collect(),
        }
    }

    /// The index counts blocking dependents per owner and forgets empty owners.
    #[test]
    fn graph_tracks_blocking_dependents() {
        let mut g = Graph::default();
        assert!(g.set("d1", Some(dep("k1", &[("o1", true), ("o2", false)]))));
        assert!(g.set("d2", Some(dep("k2", &[("o1", false)]))));
        assert!(!g.set("d2", Some(dep("k2", &[("o1", false)]))));
        assert_eq!(g.blocking("o1"), 1);
        assert_eq!(g.dependents_of("o1").len(), 2);
        assert!(g.set("d1", Some(dep("k1", &[("o2", true)]))));
        assert_eq!(g.blocking("o1"), 0);
        assert_eq!(g.blocking("o2"), 1);
        g.remove("d1");
        g.set("d2", None);
        assert!(g.owners.is_empty() && g.dependents.is_empty());
    }
}
