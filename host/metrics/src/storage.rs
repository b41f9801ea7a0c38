//! The store's metrics, under kube-apiserver's names: `etcd_request_duration_seconds`,
//! `etcd_requests_total`, `etcd_request_errors_total` (kube 1.32's labels `operation`
//! and `type`, `type` being kube's group-resource string: `configmaps`,
//! `deployments.apps`) and `apiserver_storage_objects` (`resource`, the same string).
//! The store measures itself with atomics (`wasmgate_storage::stats`); a scrape reads
//! them ([`StorageCollector::refresh`]) and writes them out.

use std::sync::Mutex;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric as _, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use wasmgate_storage::stats::{LATENCY_BOUNDS, RequestStat};

use wasmgate_registry::Catalog;

/// kube's name of an object type (`core/configmaps` → `configmaps`, `apps/deployments`
/// → `deployments.apps`).
pub fn kube_type(object_type: &str) -> String {
    match object_type.split_once('/') {
        Some(("core", resource)) => resource.to_owned(),
        Some((group, resource)) => format!("{resource}.{group}"),
        None => object_type.to_owned(),
    }
}

#[derive(Debug, Default)]
struct Snapshot {
    requests: Vec<RequestStat>,
    /// (kube's resource string, objects; -1 when they could not be counted).
    objects: Vec<(String, i64)>,
    /// The store's commit counters (conflicts, failed writes by cause).
    store: wasmgate_storage::StoreStats,
}

/// What the last [`StorageCollector::refresh`] read, written out by the next encoding.
#[derive(Debug, Default)]
pub struct StorageCollector {
    snapshot: Mutex<Snapshot>,
}

impl StorageCollector {
    /// Reads the store's counters. Objects are counted for every resource type the
    /// registry serves (0 when it has none, as kube reports each resource it stores):
    /// from the object cache, or by the engine when the cache is off.
    pub async fn refresh(&self, store: &wasmgate_storage::Store, catalog: &Catalog) {
        let cached = store.object_counts();
        let mut objects = Vec::new();
        // Each stored resource once: not the reviews (nothing stored), not a resource
        // that shows another's objects (events.k8s.io Events are core Events).
        for rt in catalog
            .types()
            .iter()
            .filter(|rt| rt.is_stored() && !rt.shares_storage())
        {
            let prefix = rt.key_prefix();
            let object_type = prefix.trim_end_matches('/');
            let n = match &cached {
                Some(counts) => counts
                    .iter()
                    .find(|(t, _)| t == object_type)
                    .map_or(0, |(_, n)| i64::try_from(*n).unwrap_or(i64::MAX)),
                None => match store.count(&prefix).await {
                    Ok(n) => i64::try_from(n).unwrap_or(i64::MAX),
                    Err(e) => {
                        tracing::debug!(error = %e, %prefix, "counting objects failed");
                        -1
                    }
                },
            };
            objects.push((kube_type(object_type), n));
        }
        objects.sort();
        objects.dedup_by(|a, b| a.0 == b.0);
        let requests = store.request_stats();
        *self
            .snapshot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Snapshot {
            requests,
            objects,
            store: store.stats(),
        };
    }
}

impl Collector for StorageCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let snap = self
            .snapshot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let labels = |r: &RequestStat| {
            [
                ("operation", r.operation.as_str().to_owned()),
                ("type", kube_type(&r.object_type)),
            ]
        };
        let mut e = encoder.encode_descriptor(
            "etcd_request_duration_seconds",
            "[ALPHA] Etcd request latency in seconds for each operation and object type. Wasmgate has no etcd: this is its own store (the embedded engine, or TiKV), every read and write the API server asks of it, whether the in-memory object cache or the engine answers.",
            None,
            MetricType::Histogram,
        )?;
        for r in &snap.requests {
            let buckets: Vec<(f64, u64)> = LATENCY_BOUNDS
                .iter()
                .copied()
                .chain(std::iter::once(f64::INFINITY))
                .zip(r.latency.buckets.iter().copied())
                .collect();
            e.encode_family(&labels(r))?
                .encode_histogram::<NoLabelSet>(
                    r.latency.sum_seconds,
                    r.latency.count,
                    &buckets,
                    None,
                )?;
        }
        let mut e = encoder.encode_descriptor(
            "etcd_requests",
            "[ALPHA] Etcd request counts for each operation and object type. Wasmgate: its own store (embedded or TiKV).",
            None,
            MetricType::Counter,
        )?;
        for r in &snap.requests {
            ConstCounter::new(r.latency.count).encode(e.encode_family(&labels(r))?)?;
        }
        let mut e = encoder.encode_descriptor(
            "etcd_request_errors",
            "[ALPHA] Etcd failed request counts for each operation and object type. Wasmgate: its own store (embedded or TiKV), failures of the engine (not a missing key or a conflict).",
            None,
            MetricType::Counter,
        )?;
        // Made on the first error, as kube's.
        for r in snap.requests.iter().filter(|r| r.latency.errors > 0) {
            ConstCounter::new(r.latency.errors).encode(e.encode_family(&labels(r))?)?;
        }
        // Issue 28: what replicas writing at once cost, and why writes failed.
        let e = encoder.encode_descriptor(
            "wasmgate_storage_commit_conflicts",
            "Engine conflicts the store's committer met and retried: another writer of the engine (a replica over the same TiKV) committed a write to one of the same objects meanwhile.",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(snap.store.conflicts).encode(e)?;
        let mut e = encoder.encode_descriptor(
            "wasmgate_storage_failed_writes",
            "Writes that failed in the store rather than on their keys, by cause: contended (conflicts with other writers for the whole retry budget; answered 429), conflict, undetermined, unavailable (TiKV region errors, timeouts), engine, corrupt, closed.",
            None,
            MetricType::Counter,
        )?;
        for (cause, n) in wasmgate_storage::FailureCause::ALL
            .iter()
            .zip(snap.store.failed_writes)
        {
            ConstCounter::new(n).encode(e.encode_family(&[("cause", cause.as_str())])?)?;
        }
        let mut e = encoder.encode_descriptor(
            "apiserver_storage_objects",
            "[STABLE] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
            None,
            MetricType::Gauge,
        )?;
        for (resource, n) in &snap.objects {
            ConstGauge::new(*n).encode(e.encode_family(&[("resource", resource.as_str())])?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_types() {
        assert_eq!(kube_type("core/configmaps"), "configmaps");
        assert_eq!(kube_type("apps/deployments"), "deployments.apps");
        assert_eq!(kube_type("example.com/widgets"), "widgets.example.com");
    }
}
