//! Namespace lifecycle (`URL-10`, `DEL-07`): the bootstrap namespaces, and the controller
//! that empties a terminating namespace and then finalizes it.
//!
//! Deleting a namespace sets its `deletionTimestamp` and phase `Terminating` (the delete
//! verb does that). The controller then deletes every namespaced object in it, waits for
//! objects held by finalizers, removes the `kubernetes` finalizer from `spec.finalizers`,
//! and, when no finalizer remains, removes the namespace. It reacts to namespace events
//! and re-checks terminating namespaces every `namespace_resync`.

use std::sync::{Arc, Weak};

use serde_json::{Value, json};
use wasmgate_storage::ReadAt;

use wasmgate_apiserver_core::client::{self, Client as _};
use wasmgate_apiserver_core::object::{self, NAMESPACE_FINALIZER, meta_str};
use wasmgate_apiserver_core::{User, error};

use crate::Context;

const PREFIX: &str = "core/namespaces//";

/// Namespaces created at start.
pub const BOOTSTRAP_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Creates `default`, `kube-system`, `kube-public` and `kube-node-lease` if missing, through
/// the API (kube's system-namespaces controller): the create path names, labels and
/// finalizes them as any namespace.
pub async fn bootstrap(inner: &dyn client::Client) -> Result<(), String> {
    for name in BOOTSTRAP_NAMESPACES {
        let obj = json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name},
        });
        let (code, v) = inner
            .call(
                client::system_user(),
                http::Method::POST,
                "/api/v1/namespaces",
                "application/json",
                Some(&obj),
            )
            .await?;
        if code >= 300 && code != 409 {
            let why = client::failure(code, &v);
            return Err(format!("creating namespace {name}: {why}"));
        }
    }
    Ok(())
}

/// Who the namespace controller's deletes are from (kube's service account of it).
fn controller_user() -> User {
    User {
        name: "system:serviceaccount:kube-system:namespace-controller".into(),
        groups: vec![
            "system:serviceaccounts".into(),
            "system:serviceaccounts:kube-system".into(),
            "system:authenticated".into(),
        ],
    }
}

/// The namespace controller.
pub async fn run(inner: Weak<dyn Context>) {
    crate::run(inner, "namespaces", PREFIX, |i| async move {
        let revision = i.store().revision();
        let pending = sweep(&i).await?;
        Ok(crate::Reconciled { pending, revision })
    })
    .await;
}

/// Finalizes every terminating namespace. Returns whether some are still pending.
async fn sweep(inner: &Arc<dyn Context>) -> Result<bool, String> {
    let page = inner
        .store()
        .list(PREFIX, ReadAt::Latest, None, 0, false)
        .await
        .map_err(|e| error::error_chain(&e))?;
    let mut pending = false;
    for item in page.items {
        let Ok(ns) = object::from_stored(&item.value) else {
            continue;
        };
        if object::is_deleting(&ns) {
            let name = meta_str(&ns, "name").unwrap_or("").to_owned();
            match finalize(inner, &name).await {
                Ok(true) => {}
                Ok(false) => pending = true,
                Err(e) => {
                    pending = true;
                    tracing::debug!(namespace = %name, error = %e, "namespace not finalized yet");
                }
            }
        }
    }
    Ok(pending)
}

/// One pass over a terminating namespace. `Ok(true)` when the namespace is gone.
async fn finalize(inner: &Arc<dyn Context>, ns: &str) -> Result<bool, String> {
    let catalog = inner.types().snapshot();
    let mut remaining: Vec<(String, usize)> = Vec::new();
    let mut finalizers_left: Vec<String> = Vec::new();
    // Each stored resource once: not the reviews, nor a second view of the same objects
    // (events.k8s.io events are the core events).
    for rt in catalog
        .types()
        .iter()
        .filter(|t| t.namespaced && t.is_stored() && !t.shares_storage())
    {
        let left = crate::delete_contents(inner, rt, Some(ns), &controller_user()).await?;
        if left.count > 0 {
            remaining.push((rt.qualified_resource(), left.count));
            for f in left.finalizers {
                if !finalizers_left.contains(&f) {
                    finalizers_left.push(f);
                }
            }
        }
    }
    // The namespace's own writes go through the API too, as kube's controller makes them:
    // conditions through `status`, the finalizer's removal through `finalize` (the write
    // that removes a deleted namespace without finalizers).
    let path = format!("/api/v1/namespaces/{ns}");
    let (code, stored) = inner
        .call(
            controller_user(),
            http::Method::GET,
            &path,
            "application/json",
            None,
        )
        .await?;
    match code {
        404 => return Ok(true),
        200 => {}
        _ => {
            let why = client::failure(code, &stored);
            return Err(format!("reading namespace {ns}: {why}"));
        }
    }
    let mut obj = stored.clone();
    let (subresource, done) = if remaining.is_empty() {
        // Content gone: drop our finalizer; without finalizers the namespace goes too.
        if let Some(f) = obj
            .get_mut("spec")
            .and_then(|s| s.get_mut("finalizers"))
            .and_then(Value::as_array_mut)
        {
            f.retain(|x| x != NAMESPACE_FINALIZER);
        }
        ("finalize", object::removal_due(&obj))
    } else {
        set_conditions(&mut obj, &remaining, &finalizers_left);
        ("status", false)
    };
    if object::same_content(&obj, &stored) {
        // Nothing to write: never wake ourselves with our own writes.
        return Ok(false);
    }
    let written = client::put(
        inner,
        controller_user(),
        &format!("{path}/{subresource}"),
        &obj,
    )
    .await?;
    Ok(done && written.is_some())
}

/// `NamespaceContentRemaining` / `NamespaceFinalizersRemaining`, as kube's controller
/// reports them (what `kubectl describe ns` shows while a namespace is stuck).
fn set_conditions(ns: &mut Value, remaining: &[(String, usize)], finalizers: &[String]) {
    let content: Vec<String> = remaining
        .iter()
        .map(|(r, n)| format!("{r} has {n} resource instances"))
        .collect();
    let mut conds = vec![json!({
        "type": "NamespaceContentRemaining",
        "status": "True",
        "reason": "SomeResourcesRemain",
        "message": format!("Some resources are remaining: {}", content.join(", ")),
    })];
    if !finalizers.is_empty() {
        let total: usize = remaining.iter().map(|(_, n)| n).sum();
        conds.push(json!({
            "type": "NamespaceFinalizersRemaining",
            "status": "True",
            "reason": "SomeFinalizersRemain",
            "message": format!("Some content in the namespace has finalizers remaining: {} in {total} resource instances", finalizers.join(", ")),
        }));
    }
    // Keep transition times stable when nothing changed.
    let old = ns["status"]["conditions"].clone();
    for c in conds.iter_mut() {
        let prev = old.as_array().and_then(|a| {
            a.iter()
                .find(|o| o["type"] == c["type"] && o["message"] == c["message"])
        });
        c["lastTransitionTime"] = prev
            .and_then(|p| p.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| json!(object::now_rfc3339()));
    }
    ns["status"]["conditions"] = Value::Array(conds);
}
