//! The CRD controller (`CRD-02`, `DISC-02`, `DEL-08`): registers the custom types of stored
//! CRDs (at start, so a restart keeps every CRD, and on every change), marks them
//! `NamesAccepted` and `Established`, and deletes a CRD's objects before the CRD itself.
//!
//! Registration is quick and never waits for cleanup: each terminating CRD's objects are
//! deleted by a task of its own. Handlers that write CRDs wait until
//! [`crate::Context::crd_synced`] reaches their revision, so a CRD is served as soon as its
//! create returns.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::{Value, json};
use wasmgate_storage::{ReadAt, StorageError};

use crate::Context;
use crate::controllers::{Reconciled, delete_contents};
use crate::custom::{self, CLEANUP_FINALIZER};
use crate::object::{self, meta_str};
use crate::registry::ResourceType;

/// Where CRDs are stored.
pub const PREFIX: &str = "apiextensions.k8s.io/customresourcedefinitions//";

/// The CRD controller.
pub async fn run(inner: Weak<dyn Context>) {
    crate::controllers::run(inner, "customresourcedefinitions", PREFIX, |i| async move {
        sync(&i).await.map(Reconciled::settled)
    })
    .await;
}

/// One stored CRD and its resource type (`None` until built).
struct Entry {
    key: String,
    revision: u64,
    crd: Value,
    built: Option<Result<ResourceType, String>>,
}

/// Registers every stored CRD, reconciles their status, and starts the cleanup of
/// terminating ones. Returns the revision the registry now reflects.
///
/// A CRD whose spec did not change since the current catalog was built (same uid and
/// generation, e.g. after a status write) keeps its compiled versions; the others have
/// their schemas parsed and CEL rules compiled, on a blocking thread.
pub async fn sync(inner: &Arc<dyn Context>) -> Result<u64, String> {
    let page = inner
        .store()
        .list(PREFIX, ReadAt::Latest, None, 0, false)
        .await
        .map_err(|e| crate::error::error_chain(&e))?;
    let mut entries = Vec::new();
    {
        let current = inner.types().snapshot();
        let previous: HashMap<&str, &ResourceType> = current
            .types()
            .iter()
            .filter_map(|t| Some((t.custom()?.crd_key.as_str(), &**t)))
            .collect();
        for item in page.items {
            let Ok(crd) = object::from_stored(&item.value) else {
                continue;
            };
            let built = previous
                .get(item.key.as_str())
                .and_then(|prev| custom::reuse(prev, &crd, &item.key, item.revision))
                .map(Ok);
            entries.push(Entry {
                key: item.key,
                revision: item.revision,
                crd,
                built,
            });
        }
    }
    if entries.iter().any(|e| e.built.is_none()) {
        entries = tokio::task::spawn_blocking(move || {
            for e in &mut entries {
                if e.built.is_none() {
                    e.built = Some(custom::resource_type(&e.crd, &e.key, e.revision));
                }
            }
            entries
        })
        .await
        .map_err(|e| format!("building the custom types failed: {e}"))?;
    }
    let mut types = Vec::new();
    let mut crds = Vec::new();
    for e in entries {
        let built = e
            .built
            .unwrap_or_else(|| custom::resource_type(&e.crd, &e.key, e.revision));
        let served = match built {
            Ok(t) => {
                types.push(t);
                Ok(())
            }
            Err(err) => {
                tracing::warn!(crd = %meta_str(&e.crd, "name").unwrap_or(""), error = %err, "CRD cannot be served");
                Err(err)
            }
        };
        crds.push((e.key, e.revision, e.crd, served));
    }
    inner.types().set_custom(types);
    inner.crd_synced().send_replace(page.revision);
    for (key, rev, crd, served) in crds {
        if object::is_deleting(&crd) {
            start_cleanup(inner, key);
        } else if let Err(e) = establish(inner, rev, crd, served).await {
            tracing::debug!(error = %e, "CRD status not written yet");
        }
    }
    Ok(page.revision)
}

fn condition(ty: &str, status: &str, reason: &str, message: &str, old: &Value) -> Value {
    let prev = old
        .get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .and_then(|a| a.iter().find(|c| c["type"] == ty && c["status"] == status));
    let time = prev
        .and_then(|p| p.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(object::now_rfc3339()));
    json!({"type": ty, "status": status, "lastTransitionTime": time, "reason": reason, "message": message})
}

/// Sets `acceptedNames`, `NamesAccepted` and `Established` (`CRD-01`, `CRD-02`); a CRD
/// that cannot be served says why instead.
async fn establish(
    inner: &Arc<dyn Context>,
    rev: u64,
    crd: Value,
    served: Result<(), String>,
) -> Result<(), String> {
    let mut new = crd.clone();
    let names_accepted = condition(
        "NamesAccepted",
        "True",
        "NoConflicts",
        "no conflicts found",
        &crd,
    );
    let established = match served {
        Ok(()) => {
            let names = crd
                .get("spec")
                .and_then(|s| s.get("names"))
                .cloned()
                .unwrap_or(json!({}));
            new["status"]["acceptedNames"] = names;
            condition(
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
                &crd,
            )
        }
        Err(e) => condition("Established", "False", "NotServable", &e, &crd),
    };
    new["status"]["conditions"] = json!([names_accepted, established]);
    write_status(inner, rev, &crd, new).await.map(drop)
}

/// Starts the cleanup task of a terminating CRD, unless one runs already.
fn start_cleanup(inner: &Arc<dyn Context>, key: String) {
    let mut running = match inner.crd_cleanups().lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    if !running.insert(key.clone()) {
        return;
    }
    drop(running);
    let weak = Arc::downgrade(inner);
    tokio::spawn(async move {
        cleanup_loop(&weak, &key).await;
        if let Some(i) = weak.upgrade() {
            let mut running = match i.crd_cleanups().lock() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            running.remove(&key);
        }
    });
}

/// Deletes a CRD's objects until none is left, then lets the CRD go (`DEL-08`).
async fn cleanup_loop(weak: &Weak<dyn Context>, key: &str) {
    loop {
        let Some(inner) = weak.upgrade() else { return };
        if *inner.shutdown().borrow() {
            return;
        }
        let resync = inner.resync();
        match cleanup(&inner, key).await {
            Ok(true) => return,
            Ok(false) => {}
            Err(e) => tracing::debug!(crd = %key, error = %e, "CRD cleanup not finished"),
        }
        drop(inner);
        tokio::time::sleep(resync.min(Duration::from_secs(2))).await;
    }
}

/// One cleanup pass. `Ok(true)` when the CRD is gone (or no longer terminating).
async fn cleanup(inner: &Arc<dyn Context>, key: &str) -> Result<bool, String> {
    let err = |e: StorageError| crate::error::error_chain(&e);
    let (_, cur) = inner.store().get(key, ReadAt::Latest).await.map_err(err)?;
    let Some(cur) = cur else { return Ok(true) };
    let crd = object::from_stored(&cur.value).map_err(|e| e.to_string())?;
    if !object::is_deleting(&crd) {
        return Ok(true);
    }
    let spec = crd.get("spec").cloned().unwrap_or(json!({}));
    let group = spec.get("group").and_then(Value::as_str).unwrap_or("");
    let plural = spec
        .get("names")
        .and_then(|n| n.get("plural"))
        .and_then(Value::as_str)
        .unwrap_or("");
    // The type is still served while its CRD terminates: its objects are deleted
    // through the API, as the gateway.
    let rt = inner
        .types()
        .snapshot()
        .types()
        .iter()
        .find(|t| t.group == group && t.resource == plural && t.custom().is_some())
        .cloned();
    let remaining = match rt {
        Some(rt) if !group.is_empty() && !plural.is_empty() => {
            delete_contents(inner, &rt, None, &crate::client::system_user())
                .await?
                .count
        }
        _ => 0,
    };
    let mut new = crd.clone();
    let mut conds: Vec<Value> = crd["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c["type"] != "Terminating" && c["type"] != "Established")
        .collect();
    conds.push(condition(
        "Established",
        "False",
        "Terminating",
        "the CRD is being deleted",
        &crd,
    ));
    conds.push(if remaining > 0 {
        condition(
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            &format!("CustomResource deletion is in progress: {remaining} instances remain"),
            &crd,
        )
    } else {
        condition(
            "Terminating",
            "True",
            "InstanceDeletionCompleted",
            "removed all instances",
            &crd,
        )
    });
    new["status"]["conditions"] = Value::Array(conds);
    let Some(current) = write_status(inner, cur.revision, &crd, new).await? else {
        return Ok(false);
    };
    if remaining > 0 {
        return Ok(false);
    }
    // All instances gone: drop our finalizer; without finalizers the update removes the
    // CRD. Someone else's finalizer keeps it until they drop theirs.
    let mut next = current.clone();
    if let Some(f) = next["metadata"]["finalizers"].as_array_mut() {
        f.retain(|x| x != CLEANUP_FINALIZER);
    }
    if object::same_content(&next, &current) {
        return Ok(false);
    }
    let gone = object::finalizers(&next).is_empty();
    let path = crd_path(&next);
    let written = crate::client::put(inner, crate::client::system_user(), &path, &next).await?;
    Ok(gone && written.is_some())
}

/// The API path of a CRD.
fn crd_path(crd: &Value) -> String {
    format!(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{}",
        meta_str(crd, "name").unwrap_or("")
    )
}

/// Writes the status of `new` through the API (the CRD read at revision `rev` was `old`),
/// unless it is what is stored, so that reconciling never loops on its own writes.
/// Returns the CRD as it now is; `None` when it changed or went away since it was read.
async fn write_status(
    inner: &Arc<dyn Context>,
    rev: u64,
    old: &Value,
    mut new: Value,
) -> Result<Option<Value>, String> {
    object::set_resource_version(&mut new, rev);
    if object::same_content(old, &new) {
        return Ok(Some(new));
    }
    let path = format!("{}/status", crd_path(&new));
    crate::client::put(inner, crate::client::system_user(), &path, &new).await
}

/// Waits (briefly) until the registry reflects revision `rev`.
pub async fn wait_synced(inner: &dyn Context, rev: u64) {
    let mut rx = inner.crd_synced().subscribe();
    let waited = tokio::time::timeout(Duration::from_secs(10), rx.wait_for(|r| *r >= rev)).await;
    if waited.is_err() {
        tracing::warn!(
            revision = rev,
            "the CRD registry did not catch up within 10 s"
        );
    }
}
