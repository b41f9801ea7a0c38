//! The admission configuration in force: the webhooks' and the policies' indexes, rebuilt
//! from the store on every change of a webhook configuration, a policy or a binding (kube's
//! `pkg/admission/configuration` managers), and the policies' `status.typeChecking`.

use std::sync::{Arc, Weak};

use serde_json::Value;
use wasmgate_storage::ReadAt;

use crate::Context;
use crate::webhooks::{GROUP, Index, PREFIX};

/// Reads every configuration, policy and binding and rebuilds the indexes (the policies'
/// first: a writer waiting for the webhooks' revision then sees both); then brings the
/// policies' `status.typeChecking` up to date.
pub async fn sync(inner: &dyn Context) -> Result<u64, String> {
    let page = inner
        .store()
        .list(PREFIX, ReadAt::Latest, None, 0, false)
        .await
        .map_err(|e| crate::error::error_chain(&e))?;
    let mut configs = Vec::new();
    let mut policies = Vec::new();
    let mut bindings = Vec::new();
    for item in &page.items {
        let Some(rest) = item.key.strip_prefix(PREFIX) else {
            continue;
        };
        let Ok(obj) = crate::object::from_stored(&item.value) else {
            continue;
        };
        match rest.split('/').next() {
            Some("mutatingwebhookconfigurations") => configs.push((true, obj)),
            Some("validatingwebhookconfigurations") => configs.push((false, obj)),
            Some("validatingadmissionpolicies") => policies.push(obj),
            Some("validatingadmissionpolicybindings") => bindings.push(obj),
            _ => {}
        }
    }
    let policy_index = crate::policies::Index::build(policies.iter(), bindings.iter());
    let statuses: Vec<(Value, Value)> = policies
        .iter()
        .filter_map(|o| {
            let name = crate::object::meta_str(o, "name")?;
            let desired = crate::policies::status_of(policy_index.policy(name)?, None);
            (o.pointer("/status/typeChecking") != desired.get("typeChecking"))
                .then(|| (o.clone(), desired))
        })
        .collect();
    inner.policies().send_replace(Arc::new(policy_index));
    let ix = Index::build(page.revision, configs.into_iter());
    let revision = ix.revision;
    inner.webhooks().send_replace(Arc::new(ix));
    for (mut obj, status) in statuses {
        let name = crate::object::meta_str(&obj, "name")
            .unwrap_or("")
            .to_owned();
        obj["status"] = status;
        let path = format!("/apis/{GROUP}/v1/validatingadmissionpolicies/{name}/status");
        if let Err(e) = crate::client::put(inner, crate::client::system_user(), &path, &obj).await {
            // A newer version of the policy wins; the next pass writes its status.
            tracing::debug!(policy = %name, error = %e, "writing the type checking status");
        }
    }
    Ok(revision)
}

/// Keeps the index current.
pub async fn run(inner: Weak<dyn Context>) {
    crate::controller::run(inner, "webhooks", PREFIX, |i| async move {
        sync(&i).await.map(crate::controller::Reconciled::settled)
    })
    .await;
}

/// Waits (briefly) until the index includes `revision`, after a write of a configuration:
/// the next request is admitted with it.
pub async fn wait_for(inner: &dyn Context, revision: u64) {
    crate::controller::wait_for_index(inner.webhooks(), revision, |ix| ix.revision).await;
}
