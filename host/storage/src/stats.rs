//! What the store measures about itself, for an API server's metrics: how long its
//! requests take, by operation and object type (what kube-apiserver exports as
//! `etcd_request_duration_seconds`), and how many objects each type has
//! (`apiserver_storage_objects`). Plain atomics read on demand: this crate exports no
//! metrics format, the API server turns these into its own.
//!
//! An object type is the first two segments of an object key, `<group>/<resource>`
//! (`core/configmaps`, `apps/deployments`): the layout the API server gives its keys.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Upper bounds (seconds) of the latency buckets: kube-apiserver's for
/// `etcd_request_duration_seconds` (the same as `apiserver_request_duration_seconds`'), so
/// that dashboards and SLO queries read the same buckets.
pub const LATENCY_BOUNDS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// A store request, as kube-apiserver's etcd3 store names its operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// A read of one key.
    Get,
    /// A read of a range of keys.
    List,
    /// A put that requires the key to be absent.
    Create,
    /// Any other put.
    Update,
    /// A delete.
    Delete,
}

impl Operation {
    const ALL: [Operation; 5] = [
        Operation::Get,
        Operation::List,
        Operation::Create,
        Operation::Update,
        Operation::Delete,
    ];

    /// The operation as kube names it (`get`, `list`, `create`, `update`, `delete`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Get => "get",
            Operation::List => "list",
            Operation::Create => "create",
            Operation::Update => "update",
            Operation::Delete => "delete",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The object type of `key` (or of a key prefix): up to its second `/`, e.g.
/// `core/configmaps` for `core/configmaps/demo/app`.
pub fn object_type(key: &str) -> &str {
    let mut slashes = key.match_indices('/').map(|(i, _)| i);
    match (slashes.next(), slashes.next()) {
        (Some(_), Some(end)) => &key[..end],
        _ => key.trim_end_matches('/'),
    }
}

/// A latency histogram updated with atomics only (three adds per observation).
#[derive(Debug, Default)]
pub(crate) struct Latency {
    /// Observations per bucket, not cumulative; the last is above every bound.
    buckets: [AtomicU64; LATENCY_BOUNDS.len() + 1],
    count: AtomicU64,
    sum_nanos: AtomicU64,
    errors: AtomicU64,
}

impl Latency {
    fn observe(&self, took: Duration, failed: bool) {
        let secs = took.as_secs_f64();
        let i = LATENCY_BOUNDS.partition_point(|b| *b < secs);
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        if failed {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn snapshot(&self) -> LatencySnapshot {
        let mut buckets = [0u64; LATENCY_BOUNDS.len() + 1];
        for (out, b) in buckets.iter_mut().zip(&self.buckets) {
            *out = b.load(Ordering::Relaxed);
        }
        LatencySnapshot {
            // The count as the buckets add up, so that a scrape never shows a `+Inf`
            // bucket that disagrees with `_count`.
            count: buckets.iter().sum(),
            buckets,
            sum_seconds: self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            errors: self.errors.load(Ordering::Relaxed),
        }
    }
}

/// A histogram read at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencySnapshot {
    /// Observations per bucket of [`LATENCY_BOUNDS`], not cumulative; the last one counts
    /// those above every bound.
    pub buckets: [u64; LATENCY_BOUNDS.len() + 1],
    /// Observations.
    pub count: u64,
    /// Their sum, in seconds.
    pub sum_seconds: f64,
    /// Requests that failed in the engine (not a missing key, a conflict or an existing
    /// key: those are answers).
    pub errors: u64,
}

/// Latencies of one operation on one object type.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestStat {
    /// The operation.
    pub operation: Operation,
    /// The object type (`core/configmaps`).
    pub object_type: String,
    /// Its latencies.
    pub latency: LatencySnapshot,
}

/// The latencies of one object type, one histogram per operation.
#[derive(Debug, Default)]
pub(crate) struct TypeStats {
    ops: [Latency; Operation::ALL.len()],
}

impl TypeStats {
    pub(crate) fn observe(&self, op: Operation, took: Duration, failed: bool) {
        self.ops[op.index()].observe(took, failed);
    }
}

/// Every object type's latencies. A type's entry is made once; afterwards a request
/// finds it under a read lock, without allocating.
#[derive(Debug, Default)]
pub(crate) struct RequestStats {
    by_type: RwLock<HashMap<Box<str>, Arc<TypeStats>>>,
}

impl RequestStats {
    /// The entry of the object type of `key`.
    pub(crate) fn of(&self, key: &str) -> Arc<TypeStats> {
        let ty = object_type(key);
        if let Some(s) = self
            .by_type
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(ty)
        {
            return s.clone();
        }
        self.by_type
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(ty.into())
            .or_default()
            .clone()
    }

    /// Every (type, operation) that saw a request.
    pub(crate) fn snapshot(&self) -> Vec<RequestStat> {
        let by_type = self
            .by_type
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out = Vec::new();
        for (ty, stats) in by_type.iter() {
            for op in Operation::ALL {
                let latency = stats.ops[op.index()].snapshot();
                if latency.count > 0 {
                    out.push(RequestStat {
                        operation: op,
                        object_type: ty.to_string(),
                        latency,
                    });
                }
            }
        }
        out.sort_by(|a, b| {
            (a.object_type.as_str(), a.operation.index())
                .cmp(&(b.object_type.as_str(), b.operation.index()))
        });
        out
    }
}

/// Whether `e` is the engine failing rather than an answer about the keys.
pub(crate) fn is_failure(e: &crate::StorageError) -> bool {
    use crate::StorageError as E;
    matches!(
        e,
        E::Undetermined(_) | E::Engine(_) | E::Corrupt { .. } | E::Closed
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_types() {
        assert_eq!(object_type("core/configmaps/demo/app"), "core/configmaps");
        assert_eq!(object_type("core/namespaces//demo"), "core/namespaces");
        assert_eq!(object_type("apps/deployments/"), "apps/deployments");
        assert_eq!(object_type("core/configmaps"), "core/configmaps");
        assert_eq!(object_type(""), "");
    }

    /// Observations land in kube's buckets (an upper bound is inclusive, as Prometheus
    /// has it) and failures are counted apart.
    #[test]
    fn buckets_and_failures() {
        let s = RequestStats::default();
        let t = s.of("core/configmaps/a/b");
        t.observe(Operation::Get, Duration::from_micros(40), false);
        t.observe(Operation::Get, Duration::from_millis(5), false);
        t.observe(Operation::Get, Duration::from_millis(30), true);
        t.observe(Operation::Get, Duration::from_secs(61), false);
        s.of("core/configmaps/")
            .observe(Operation::Create, Duration::ZERO, false);
        let snap = s.snapshot();
        assert_eq!(snap.len(), 2);
        let get = &snap[0];
        assert_eq!(
            (get.operation, get.object_type.as_str()),
            (Operation::Get, "core/configmaps")
        );
        assert_eq!(get.latency.count, 4);
        assert_eq!(get.latency.errors, 1);
        assert_eq!(&get.latency.buckets[..3], &[2, 0, 1]);
        assert_eq!(get.latency.buckets[LATENCY_BOUNDS.len()], 1);
        assert!((get.latency.sum_seconds - 61.03504).abs() < 1e-9);
        assert_eq!(snap[1].operation, Operation::Create);
    }
}
