//! The loop every controller shares: reconcile, then wait for a change under its key
//! prefix (or, while work is pending, for the resync period), until shutdown or until the
//! server is dropped. Controllers hold the server weakly so they never keep it alive.

use std::future::Future;
use std::sync::{Arc, Weak};

use crate::Inner;

/// What one reconcile pass did.
pub(crate) struct Reconciled {
    /// Work remains (objects held by finalizers): run again after the resync period.
    pub(crate) pending: bool,
    /// The store revision the pass saw; changes after it wake the next pass.
    pub(crate) revision: u64,
}

/// Runs `reconcile` for the keys under `prefix`, as described above.
pub(crate) async fn run<F, Fut>(
    inner: Weak<Inner>,
    name: &'static str,
    prefix: &'static str,
    reconcile: F,
) where
    F: Fn(Arc<Inner>) -> Fut,
    Fut: Future<Output = Result<Reconciled, String>>,
{
    loop {
        let Some(i) = inner.upgrade() else { return };
        let mut shutdown = i.shutdown.subscribe();
        if *shutdown.borrow() {
            return;
        }
        let resync = i.options.namespace_resync;
        let store = i.store.clone();
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
pub(crate) struct Remaining {
    /// Objects still there (held by finalizers, or changed meanwhile).
    pub(crate) count: usize,
    /// The finalizers holding them.
    pub(crate) finalizers: Vec<String>,
}

/// Deletes every object under `prefix`, as a delete request would (objects with
/// finalizers get a `deletionTimestamp` and stay). The deletes run concurrently, so the
/// store's group commit batches them.
pub(crate) async fn delete_contents(inner: &Inner, prefix: &str) -> Result<Remaining, String> {
    use futures_util::StreamExt as _;
    use serde_json::json;
    use wasmgate_storage::{Precondition, ReadAt, StorageError, Write, WriteOp};

    use crate::object::{self, meta_mut};

    let err = |e: StorageError| crate::error::error_chain(&e);
    let page = inner
        .store
        .list(prefix, ReadAt::Latest, None, 0, false)
        .await
        .map_err(err)?;
    let mut remaining = Remaining::default();
    let mut writes = Vec::new();
    for item in page.items {
        let Ok(mut obj) = object::from_stored(&item.value) else {
            continue;
        };
        let fins = object::finalizers(&obj);
        let op = if fins.is_empty() {
            WriteOp::Delete(object::to_stored(&obj))
        } else {
            remaining.count += 1;
            for f in fins {
                if !remaining.finalizers.contains(&f) {
                    remaining.finalizers.push(f);
                }
            }
            if object::is_deleting(&obj) {
                continue;
            }
            let m = meta_mut(&mut obj);
            m.insert("deletionTimestamp".into(), json!(object::now_rfc3339()));
            m.insert("deletionGracePeriodSeconds".into(), json!(0));
            WriteOp::Put(object::to_stored(&obj))
        };
        writes.push(Write::new(
            item.key,
            Precondition::Revision(item.revision),
            op,
        ));
    }
    let results: Vec<_> = futures_util::stream::iter(writes)
        .map(|w| inner.store.write(w))
        .buffer_unordered(128)
        .collect()
        .await;
    for r in results {
        match r {
            Ok(_) | Err(StorageError::NotFound { .. }) => {}
            Err(StorageError::Conflict { .. }) => remaining.count += 1,
            Err(e) => return Err(err(e)),
        }
    }
    Ok(remaining)
}
