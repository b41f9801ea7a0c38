//! Each plugin's share of the instances: one plugin's calls can hold at most
//! [`INSTANCES_PER_PLUGIN`](crate::INSTANCES_PER_PLUGIN) instances at once, so a plugin
//! whose calls sleep or spin exhausts only its own share and its neighbours keep theirs.
//! A call waits for one of its plugin's instances (and then for one of the runtime's,
//! the global bound) at most until its own deadline: the wait counts against the
//! plugin's timeout, in FIFO order (tokio's semaphore is fair).
//!
//! Shares are per plugin *name*: the versions of a plugin during a hot reload share one.
//! A share also carries what is measured of it ([`InstanceStats`]) and the plugin's log
//! budget (`output`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::CallError;
use crate::output::LogBudget;

/// Upper bounds (seconds) of the buckets of [`WaitHistogram`]; the last bucket is
/// unbounded.
pub const INSTANCE_WAIT_BOUNDS: [f64; 9] = [0.0001, 0.001, 0.005, 0.025, 0.1, 0.25, 1.0, 2.5, 10.0];

/// One plugin's instances and what is measured of them.
pub(crate) struct Share {
    name: Arc<str>,
    size: usize,
    instances: Arc<Semaphore>,
    waiting: AtomicUsize,
    waits: Waits,
    pub(crate) log: Mutex<LogBudget>,
    pub(crate) lines_dropped: AtomicU64,
}

/// The instances a call holds: its plugin's and the runtime's. Dropped after the call's
/// store (which gives the pooled instance back).
pub(crate) struct Permits {
    _own: OwnedSemaphorePermit,
    _global: OwnedSemaphorePermit,
}

impl Share {
    /// A call's instance: one of its plugin's, and `weight` slots of the runtime's pool.
    /// Waits until `deadline` at most.
    pub(crate) async fn acquire(
        &self,
        global: &Arc<Semaphore>,
        weight: u32,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Permits, CallError> {
        // The common case: an instance is free, nothing to wait for or measure.
        if let Ok(own) = self.instances.clone().try_acquire_owned()
            && let Ok(global) = global.clone().try_acquire_many_owned(weight)
        {
            self.waits.record(Duration::ZERO);
            return Ok(Permits {
                _own: own,
                _global: global,
            });
        }
        let started = Instant::now();
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let r = self.wait(global, weight, deadline, timeout).await;
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        self.waits.record(started.elapsed());
        if r.is_err() {
            tracing::debug!(plugin = %self.name, instances = self.size, "no instance before the deadline");
        }
        r
    }

    async fn wait(
        &self,
        global: &Arc<Semaphore>,
        weight: u32,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Permits, CallError> {
        let closed = |_| CallError::Trap("the plugin runtime is shutting down".into());
        let own =
            match tokio::time::timeout_at(deadline, self.instances.clone().acquire_owned()).await {
                Ok(p) => p.map_err(closed)?,
                Err(_) => {
                    return Err(CallError::NoInstance {
                        timeout,
                        instances: self.size,
                        shared: false,
                    });
                }
            };
        let global_size = crate::MAX_INSTANCES as usize;
        let global = match tokio::time::timeout_at(
            deadline,
            global.clone().acquire_many_owned(weight),
        )
        .await
        {
            Ok(p) => p.map_err(closed)?,
            Err(_) => {
                return Err(CallError::NoInstance {
                    timeout,
                    instances: global_size,
                    shared: true,
                });
            }
        };
        Ok(Permits {
            _own: own,
            _global: global,
        })
    }

    pub(crate) fn stats(&self) -> InstanceStats {
        InstanceStats {
            plugin: self.name.to_string(),
            instances: self.size,
            in_use: self.size - self.instances.available_permits(),
            waiting: self.waiting.load(Ordering::Relaxed),
            wait: self.waits.snapshot(),
            log_lines_dropped: self.lines_dropped.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn name(&self) -> &Arc<str> {
        &self.name
    }
}

/// The shares of the plugins loaded, by name; a share lives as long as a version of its
/// plugin does.
#[derive(Default)]
pub(crate) struct Shares(Mutex<Vec<Weak<Share>>>);

impl Shares {
    /// The share of plugin `name`, made with `size` instances when it has none.
    pub(crate) fn get(&self, name: &str, size: usize) -> Arc<Share> {
        let mut all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        all.retain(|w| w.strong_count() > 0);
        if let Some(s) = all
            .iter()
            .filter_map(Weak::upgrade)
            .find(|s| &*s.name == name)
        {
            return s;
        }
        let share = Arc::new(Share {
            name: name.into(),
            size,
            instances: Arc::new(Semaphore::new(size)),
            waiting: AtomicUsize::new(0),
            waits: Waits::default(),
            log: Mutex::new(LogBudget::new()),
            lines_dropped: AtomicU64::new(0),
        });
        all.push(Arc::downgrade(&share));
        share
    }

    pub(crate) fn stats(&self) -> Vec<InstanceStats> {
        let all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut stats: Vec<_> = all
            .iter()
            .filter_map(Weak::upgrade)
            .map(|s| s.stats())
            .collect();
        stats.sort_by(|a, b| a.plugin.cmp(&b.plugin));
        stats
    }
}

/// What is measured of one plugin's instances (for the gateway's metrics).
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceStats {
    /// The plugin's name (its versions share these instances).
    pub plugin: String,
    /// Its share: at most this many of its calls run at once.
    pub instances: usize,
    /// How many of them are held now: by calls, by requests between their hooks (a
    /// `Session`), or idle for reuse (`Isolation::Reused`).
    pub in_use: usize,
    /// How many of its calls wait for one now.
    pub waiting: usize,
    /// How long its calls waited for an instance (every call counted, most with no wait).
    pub wait: WaitHistogram,
    /// Lines of its stdout and stderr not logged (over a call's or the per-second budget).
    pub log_lines_dropped: u64,
}

/// A cumulative histogram of waits, in Prometheus' shape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WaitHistogram {
    /// Counts per bucket (not cumulative): the waits of more than
    /// `INSTANCE_WAIT_BOUNDS[i - 1]` and at most `INSTANCE_WAIT_BOUNDS[i]` seconds; the
    /// last entry (one more than the bounds), those over the last bound.
    pub buckets: Vec<u64>,
    pub count: u64,
    pub sum_seconds: f64,
}

#[derive(Default)]
struct Waits {
    buckets: [AtomicU64; INSTANCE_WAIT_BOUNDS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Waits {
    fn record(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let i = INSTANCE_WAIT_BOUNDS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(INSTANCE_WAIT_BOUNDS.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        if !d.is_zero() {
            let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        }
    }

    fn snapshot(&self) -> WaitHistogram {
        let buckets: Vec<u64> = (self.buckets.iter())
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        WaitHistogram {
            count: buckets.iter().sum(),
            buckets,
            sum_seconds: self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_are_counted_per_bucket() {
        let w = Waits::default();
        w.record(Duration::ZERO);
        w.record(Duration::from_millis(3));
        w.record(Duration::from_secs(60));
        let h = w.snapshot();
        assert_eq!(h.buckets, [1, 0, 1, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(h.count, 3);
        assert!((h.sum_seconds - 60.003).abs() < 1e-6);
    }

    #[tokio::test]
    async fn a_share_is_per_name_and_bounds_its_calls() {
        let shares = Shares::default();
        let a = shares.get("a", 1);
        assert!(Arc::ptr_eq(&a, &shares.get("a", 1)));
        let global = Arc::new(Semaphore::new(8));
        let far = Instant::now() + Duration::from_secs(5);
        let held = a
            .acquire(&global, 1, far, Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(a.stats().in_use, 1);
        let soon = Instant::now() + Duration::from_millis(20);
        let err = a
            .acquire(&global, 1, soon, Duration::from_millis(20))
            .await
            .err()
            .unwrap();
        assert_eq!(err.cause(), "timeout");
        assert_eq!(
            err.to_string(),
            "timed out after 20ms waiting for one of its 1 instances"
        );
        // Another plugin is not held up.
        let b = shares.get("b", 1);
        b.acquire(&global, 1, soon, Duration::from_millis(20))
            .await
            .unwrap();
        drop(held);
        assert_eq!(a.stats().in_use, 0);
        assert_eq!(a.stats().wait.count, 2);
        drop(a);
        drop(b);
        assert!(shares.stats().is_empty());
    }
}
