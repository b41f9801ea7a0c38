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
