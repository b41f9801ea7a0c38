//! What the store measures about itself, for an API server's metrics: how long its
//! requests take, by operation and object type (what kube-apiserver exports as
//! `etcd_request_duration_seconds`), and how many objects each type has
//! (`apiserver_storage_objects`). Plain atomics read on demand: this crate exports no
//! metrics format, the API server turns these into its own.
//!
//! An object type is the first two segments of an object key, `<group>/<resource>`
//! (`core/configmaps`, `apps/deployments`): the layout the API server gives its keys.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
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

/// A latency histogram updated with atomics only (two adds per observation: its bucket
/// and the sum; the count is what the buckets add up to).
#[derive(Debug, Default)]
pub(crate) struct Latency {
    /// Observations per bucket, not cumulative; the last is above every bound.
    buckets: [AtomicU64; LATENCY_BOUNDS.len() + 1],
    sum_nanos: AtomicU64,
    errors: AtomicU64,
}

impl Latency {
    fn observe(&self, took: Duration, failed: bool) {
        let secs = took.as_secs_f64();
        let i = LATENCY_BOUNDS.partition_point(|b| *b < secs);
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
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
#[derive(Debug)]
pub(crate) struct TypeStats {
    object_type: Box<str>,
    hash: u64,
    ops: [Latency; Operation::ALL.len()],
}

impl TypeStats {
    pub(crate) fn observe(&self, op: Operation, took: Duration, failed: bool) {
        self.ops[op.index()].observe(took, failed);
    }
}

/// FxHash (rustc's): a rotate, xor and multiply per word, for the few object types.
struct FxHasher(u64);

impl FxHasher {
    fn add(&mut self, word: [u8; 8]) {
        self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word))
            .wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.add(b);
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(b);
        }
    }
}

/// Slots of the type table (a power of two): object types are the resources the API
/// server stores (tens) and the prefixes it lists (a few more).
const SLOTS_BITS: u32 = 10;
const SLOTS: usize = 1 << SLOTS_BITS;

/// Every object type's latencies, in an open-addressing table (linear probing) whose
/// slots are filled once and never emptied: a call finds its type's entry without a lock
/// or an allocation (a short hash, atomic loads while probing).
#[derive(Debug)]
pub(crate) struct RequestStats {
    slots: Box<[OnceLock<Box<TypeStats>>]>,
    /// Held while filling a slot.
    adding: Mutex<()>,
    /// Whether the table was found full (logged once).
    full: AtomicBool,
}

impl Default for RequestStats {
    fn default() -> RequestStats {
        RequestStats {
            slots: (0..SLOTS).map(|_| OnceLock::new()).collect(),
            adding: Mutex::new(()),
            full: AtomicBool::new(false),
        }
    }
}

impl RequestStats {
    /// The entry of the object type of `key` (`None` once the table is full).
    pub(crate) fn of(&self, key: &str) -> Option<&TypeStats> {
        let ty = object_type(key);
        let mut h = FxHasher(0);
        ty.hash(&mut h);
        let hash = h.finish();
        if let Ok(found) = self.find(hash, ty) {
            return Some(found);
        }
        let _adding = self
            .adding
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match self.find(hash, ty) {
            Ok(found) => Some(found),
            Err(Some(slot)) => {
                let _ = self.slots[slot].set(Box::new(TypeStats {
                    object_type: ty.into(),
                    hash,
                    ops: Default::default(),
                }));
                self.slots[slot].get().map(|b| &**b)
            }
            Err(None) => {
                if !self.full.swap(true, Ordering::Relaxed) {
                    tracing::warn!("{SLOTS} object types timed: the others are not");
                }
                None
            }
        }
    }

    /// The slot holding `ty`, else the first empty slot of its probe sequence (`None`:
    /// the table is full).
    fn find(&self, hash: u64, ty: &str) -> Result<&TypeStats, Option<usize>> {
        let mut i = (hash >> (64 - SLOTS_BITS)) as usize;
        for _ in 0..SLOTS {
            match self.slots[i].get() {
                Some(s) if s.hash == hash && *s.object_type == *ty => return Ok(s),
                Some(_) => i = (i + 1) & (SLOTS - 1),
                None => return Err(Some(i)),
            }
        }
        Err(None)
    }

    /// Every (type, operation) that saw a request.
    pub(crate) fn snapshot(&self) -> Vec<RequestStat> {
        let mut out = Vec::new();
        for stats in self.slots.iter().filter_map(OnceLock::get) {
            for op in Operation::ALL {
                let latency = stats.ops[op.index()].snapshot();
                if latency.count > 0 {
                    out.push(RequestStat {
                        operation: op,
                        object_type: stats.object_type.to_string(),
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
    e.failure_cause().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Not a check, a measurement: what timing one store call costs (two clock reads,
    /// the type's entry found, the observation), on one thread and on two at once
    /// (`cargo test --release -p wasmgate-storage --lib stats::tests::cost -- --ignored
    /// --nocapture`).
    #[test]
    #[ignore = "a measurement, meaningful in release builds"]
    fn cost_per_call() {
        let s = RequestStats::default();
        let run = |n: u32| {
            let all = tokio::time::Instant::now();
            for _ in 0..n {
                let started = tokio::time::Instant::now();
                if let Some(t) = s.of("core/configmaps/bench/x") {
                    t.observe(Operation::Get, started.elapsed(), false);
                }
            }
            all.elapsed().as_nanos() as f64 / f64::from(n)
        };
        let n = 2_000_000;
        run(n / 10);
        eprintln!("one thread: {:.0} ns per call", run(n));
        let (a, b) = std::thread::scope(|sc| {
            let a = sc.spawn(|| run(n));
            let b = sc.spawn(|| run(n));
            (a.join().unwrap_or(0.0), b.join().unwrap_or(0.0))
        });
        eprintln!("two threads: {a:.0} and {b:.0} ns per call");
    }

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
        let t = s.of("core/configmaps/a/b").unwrap();
        t.observe(Operation::Get, Duration::from_micros(40), false);
        t.observe(Operation::Get, Duration::from_millis(5), false);
        t.observe(Operation::Get, Duration::from_millis(30), true);
        t.observe(Operation::Get, Duration::from_secs(61), false);
        s.of("core/configmaps/")
            .unwrap()
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
