//! The loop every controller shares: reconcile, then wait for a change under its key
//! prefix (or, while work is pending, for the resync period), until shutdown or until the
//! server is dropped. Controllers hold the server weakly so they never keep it alive.

use std::future::Future;
use std::sync::{Arc, Weak};

use wasmgate_apiserver_core::{User, error, object};
use wasmgate_registry::ResourceType;

use crate::Context;

/// What one reconcile pass did.
pub struct Reconciled {
    /// Work remains (objects held by finalizers): run again after the resync period.
    pub pending: bool,
    /// The store revision the pass saw; changes after it wake the next pass.
    pub revision: u64,
}

impl Reconciled {
    /// A pass that left nothing pending (a controller that rebuilds an index).
    pub fn settled(revision: u64) -> Reconciled {
        Reconciled {
            pending: false,
            revision,
        }
    }
}

/// Runs `reconcile` for the keys under `prefix`, as described above.
pub async fn run<C, F, Fut>(inner: Weak<C>, name: &'static str, prefix: &'static str, reconcile: F)
where
    C: Context + ?Sized,
    F: Fn(Arc<C>) -> Fut,
    Fut: Future<Output = Result<Reconciled, String>>,
{
    loop {
        let Some(i) = inner.upgrade() else { return };
        let mut shutdown = i.shutdown();
        if *shutdown.borrow() {
            return;
        }
        let resync = i.resync();
        let store = i.store().clone();
        let before = store.revision();
        let done = match reconcile(i).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(controller = name, error = %e, "reconcile failed");
                Reconciled {
                    pending: true,
                    revision: before,
                }
            }
        };
        let Ok(mut watcher) = store.watch(prefix, done.revision) else {
            continue;
        };
        let wait_resync = async {
            if done.pending {
                tokio::time::sleep(resync).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            _ = shutdown.wait_for(|s| *s) => return,
            _ = watcher.next() => {}
            _ = wait_resync => {}
        }
    }
}

/// What [`delete_contents`] left behind.
#[derive(Debug, Default)]
pub struct Remaining {
    /// Objects still there (held by finalizers, or changed meanwhile).
    pub count: usize,
    /// The finalizers holding them.
    pub finalizers: Vec<String>,
}

/// Deletes every object of `rt` (in `namespace`, or in all of them) through the API, as
/// `user`, as kube's namespace controller and CRD finalizer do: each delete goes through
/// the write path (validating admission included), objects with finalizers get a
/// `deletionTimestamp` and stay. At most 32 deletes run at once.
pub async fn delete_contents(
    inner: &dyn Context,
    rt: &ResourceType,
    namespace: Option<&str>,
    user: &User,
) -> Result<Remaining, String> {
    use futures_util::StreamExt as _;
    use serde_json::json;
    use wasmgate_storage::ReadAt;

    let page = inner
        .store()
        .list(
            &rt.namespace_prefix(namespace),
            ReadAt::Latest,
            None,
            0,
            false,
        )
        .await
        .map_err(|e| error::error_chain(&e))?;
    // Objects are addressed at the storage version: no conversion on the way.
    let version = if rt.versions.contains(&rt.storage_version) {
        rt.storage_version.clone()
    } else {
        rt.versions.first().cloned().unwrap_or_default()
    };
    let base = if rt.group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{}/{version}", rt.group)
    };
    let mut remaining = Remaining::default();
    let mut deletes = Vec::new();
    for item in page.items {
        let Ok(obj) = object::from_stored(&item.value) else {
            continue;
        };
        let fins = object::finalizers(&obj);
        if !fins.is_empty() {
            remaining.count += 1;
            for f in fins {
                if !remaining.finalizers.contains(&f) {
                    remaining.finalizers.push(f);
                }
            }
            if object::is_deleting(&obj) {
                continue;
            }
        }
        let name = object::meta_str(&obj, "name").unwrap_or("").to_owned();
        let path = match object::meta_str(&obj, "namespace") {
            Some(ns) if rt.namespaced && !ns.is_empty() => {
                format!("{base}/namespaces/{ns}/{}/{name}", rt.resource)
            }
            _ => format!("{base}/{}/{name}", rt.resource),
        };
        let uid = object::meta_str(&obj, "uid").unwrap_or("").to_owned();
        let has_finalizers = !object::finalizers(&obj).is_empty();
        deletes.push((path, uid, has_finalizers));
    }
    let results: Vec<_> = futures_util::stream::iter(deletes)
        .map(|(path, uid, has_finalizers)| async move {
            let opts =
                json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": uid}});
            let r = inner
                .call(
                    user.clone(),
                    http::Method::DELETE,
                    &path,
                    "application/json",
                    Some(&opts),
                )
                .await;
            (path, has_finalizers, r)
        })
        .buffer_unordered(32)
        .collect()
        .await;
    for (path, has_finalizers, r) in results {
        match r {
            // Gone, or changed meanwhile (the uid precondition): either way, seen again
            // on the next pass if it is still there.
            Ok((200..=299 | 404, _)) => {}
            Ok((code, body)) => {
                if !has_finalizers {
                    remaining.count += 1;
                }
                tracing::debug!(%path, code, message = %body["message"].as_str().unwrap_or(""), "delete refused");
            }
            Err(e) => return Err(e),
        }
    }
    Ok(remaining)
}

/// Waits (at most 5 s) until the index a controller keeps in `index` reflects store
/// revision `revision` (`seen`: the revision an index was built at): a write of what an
/// index is built from returns once it is in force.
pub async fn wait_for_index<T>(
    index: &tokio::sync::watch::Sender<Arc<T>>,
    revision: u64,
    seen: impl Fn(&T) -> u64,
) {
    let mut rx = index.subscribe();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        rx.wait_for(|ix| seen(ix) >= revision),
    )
    .await;
}
