//! The CRD controller (`CRD-02`, `DISC-02`, `DEL-08`): registers the custom types of stored
//! CRDs (at start, so a restart keeps every CRD, and on every change), marks them
//! `NamesAccepted` and `Established`, and deletes a CRD's objects before the CRD itself.
//!
//! Handlers that write CRDs wait until [`Inner::crd_synced`] reaches their revision, so
//! that a CRD is served as soon as its create returns.

use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::{Value, json};
use wasmgate_storage::{Precondition, ReadAt, StorageError, Write, WriteOp};

use crate::Inner;
use crate::custom::{self, CLEANUP_FINALIZER};
use crate::object::{self, meta_mut, meta_str};

/// Where CRDs are stored.
pub(crate) const PREFIX: &str = "apiextensions.k8s.io/customresourcedefinitions//";

/// The CRD controller.
pub(crate) async fn run(inner: Weak<Inner>) {
    crate::controller::run(inner, "customresourcedefinitions", PREFIX, |i| async move {
        let (pending, revision) = sync(&i).await?;
        Ok(crate::controller::Reconciled { pending, revision })
    })
    .await;
}

/// Registers every stored CRD and reconciles their status. Returns whether cleanup work
/// remains, and the revision the registry now reflects.
pub(crate) async fn sync(inner: &Arc<Inner>) -> Result<(bool, u64), String> {
    let page = inner
        .store
        .list(PREFIX, ReadAt::Latest, None, 0, false)
        .await
        .map_err(|e| crate::error::error_chain(&e))?;
    let mut types = Vec::new();
    let mut pending = false;
    for item in &page.items {
        let Ok(crd) = object::from_stored(&item.value) else {
            continue;
        };
        let name = meta_str(&crd, "name").unwrap_or("").to_owned();
        match custom::resource_type(&crd) {
            Ok(t) => types.push(t),
            Err(e) => {
                tracing::warn!(crd = %name, error = %e, "CRD cannot be served");
                continue;
            }
        }
    }
    inner.registry.set_custom(types);
    inner.crd_synced.send_replace(page.revision);
    for item in page.items {
        let Ok(crd) = object::from_stored(&item.value) else {
            continue;
        };
        let name = meta_str(&crd, "name").unwrap_or("").to_owned();
        let result = if object::is_deleting(&crd) {
            cleanup(inner, &item.key, item.revision, crd).await
        } else {
            establish(inner, &item.key, item.revision, crd)
                .await
                .map(|()| true)
        };
        match result {
            Ok(true) => {}
            Ok(false) => pending = true,
            Err(e) => {
                pending = true;
                tracing::debug!(crd = %name, error = %e, "CRD not reconciled yet");
            }
        }
    }
    Ok((pending, page.revision))
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

/// Sets `acceptedNames`, `NamesAccepted` and `Established` (`CRD-01`, `CRD-02`).
async fn establish(inner: &Inner, key: &str, rev: u64, crd: Value) -> Result<(), String> {
    let mut new = crd.clone();
    let names = crd
        .get("spec")
        .and_then(|s| s.get("names"))
        .cloned()
        .unwrap_or(json!({}));
    new["status"]["acceptedNames"] = names;
    new["status"]["conditions"] = json!([
        condition(
            "NamesAccepted",
            "True",
            "NoConflicts",
            "no conflicts found",
            &crd
        ),
        condition(
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
            &crd
        ),
    ]);
    write_if_changed(inner, key, rev, &crd, new).await
}

/// Deletes the CRD's objects, then lets the CRD go (`DEL-08`). `Ok(true)` when finished.
async fn cleanup(inner: &Inner, key: &str, rev: u64, crd: Value) -> Result<bool, String> {
    let err = |e: StorageError| crate::error::error_chain(&e);
    let spec = crd.get("spec").cloned().unwrap_or(json!({}));
    let group = spec.get("group").and_then(Value::as_str).unwrap_or("");
    let plural = spec
        .get("names")
        .and_then(|n| n.get("plural"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let prefix = format!("{group}/{plural}/");
    let mut remaining = 0;
    if !group.is_empty() && !plural.is_empty() {
        let page = inner
            .store
            .list(&prefix, ReadAt::Latest, None, 0, false)
            .await
            .map_err(err)?;
        for item in page.items {
            let Ok(mut obj) = object::from_stored(&item.value) else {
                continue;
            };
            let op = if object::finalizers(&obj).is_empty() {
                WriteOp::Delete(object::to_stored(&obj))
            } else {
                remaining += 1;
                if object::is_deleting(&obj) {
                    continue;
                }
                let m = meta_mut(&mut obj);
                m.insert("deletionTimestamp".into(), json!(object::now_rfc3339()));
                m.insert("deletionGracePeriodSeconds".into(), json!(0));
                WriteOp::Put(object::to_stored(&obj))
            };
            let w = Write {
                key: item.key,
                precondition: Precondition::Revision(item.revision),
                op,
            };
            match inner.store.write(w).await {
                Ok(_) => {}
                Err(StorageError::Conflict { .. } | StorageError::NotFound { .. }) => {
                    remaining += 1
                }
                Err(e) => return Err(err(e)),
            }
        }
    }
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
    if remaining > 0 {
        write_if_changed(inner, key, rev, &crd, new).await?;
        return Ok(false);
    }
    // All instances gone: drop our finalizer; without finalizers the CRD is removed.
    if let Some(f) = new["metadata"]["finalizers"].as_array_mut() {
        f.retain(|x| x != CLEANUP_FINALIZER);
    }
    let op = if object::finalizers(&new).is_empty() {
        WriteOp::Delete(object::to_stored(&new))
    } else {
        WriteOp::Put(object::to_stored(&new))
    };
    match inner
        .store
        .write(Write {
            key: key.to_owned(),
            precondition: Precondition::Revision(rev),
            op,
        })
        .await
    {
        Ok(_) => Ok(true),
        Err(StorageError::Conflict { .. } | StorageError::NotFound { .. }) => Ok(false),
        Err(e) => Err(err(e)),
    }
}

async fn write_if_changed(
    inner: &Inner,
    key: &str,
    rev: u64,
    old: &Value,
    new: Value,
) -> Result<(), String> {
    if object::same_content(old, &new) {
        return Ok(());
    }
    match inner
        .store
        .write(Write {
            key: key.to_owned(),
            precondition: Precondition::Revision(rev),
            op: WriteOp::Put(object::to_stored(&new)),
        })
        .await
    {
        Ok(_) | Err(StorageError::Conflict { .. } | StorageError::NotFound { .. }) => Ok(()),
        Err(e) => Err(crate::error::error_chain(&e)),
    }
}

/// Waits (briefly) until the registry reflects revision `rev`.
pub(crate) async fn wait_synced(inner: &Inner, rev: u64) {
    let mut rx = inner.crd_synced.subscribe();
    let _ = tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|r| *r >= rev)).await;
}
