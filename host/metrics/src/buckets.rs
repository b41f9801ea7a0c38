//! A histogram updated with atomics only, for the metrics recorded on every request or
//! watch event (prometheus-client's `Histogram` takes a lock per observation).

use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::encoding::{EncodeLabelSet, MetricEncoder, NoLabelSet};

/// Observations per bucket of `bounds` (not cumulative; the last one is above every
/// bound), and their sum in integer units (nanoseconds, bytes) that `scale` turns into
/// the metric's unit.
#[derive(Debug)]
pub struct Buckets {
    bounds: &'static [f64],
    counts: Box<[AtomicU64]>,
    sum: AtomicU64,
    scale: f64,
}

impl Buckets {
    /// Buckets of `bounds` (in the metric's unit) for values in units of `scale`.
    pub fn new(bounds: &'static [f64], scale: f64) -> Buckets {
        Buckets {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
            scale,
        }
    }

    /// The bucket of a value in units.
    fn bucket(&self, units: u64) -> usize {
        let v = units as f64 * self.scale;
        self.bounds.partition_point(|b| *b < v)
    }

    /// One observation: two atomic adds.
    pub fn observe(&self, units: u64) {
        self.counts[self.bucket(units)].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(units, Ordering::Relaxed);
    }

    /// Several observations at once (a batch of watch events): one add per bucket used.
    pub fn observe_all(&self, values: impl Iterator<Item = u64>) {
        let mut run: Option<(usize, u64)> = None;
        let mut sum = 0u64;
        for units in values {
            sum = sum.saturating_add(units);
            let b = self.bucket(units);
            match &mut run {
                Some((at, n)) if *at == b => *n += 1,
                _ => {
                    if let Some((at, n)) = run.replace((b, 1)) {
                        self.counts[at].fetch_add(n, Ordering::Relaxed);
                    }
                }
            }
        }
        if let Some((at, n)) = run {
            self.counts[at].fetch_add(n, Ordering::Relaxed);
            self.sum.fetch_add(sum, Ordering::Relaxed);
        }
    }

    /// Writes the histogram with `labels` (its `_count` is what its buckets add up to, so
    /// that a scrape never disagrees with itself).
    pub fn encode(
        &self,
        encoder: &mut MetricEncoder,
        labels: &impl EncodeLabelSet,
    ) -> Result<(), std::fmt::Error> {
        let buckets: Vec<(f64, u64)> = self
            .bounds
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY))
            .zip(self.counts.iter().map(|c| c.load(Ordering::Relaxed)))
            .collect();
        let count = buckets.iter().map(|(_, n)| n).sum();
        let sum = self.sum.load(Ordering::Relaxed) as f64 * self.scale;
        encoder
            .encode_family(labels)?
            .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upper_bounds_are_inclusive() {
        static BOUNDS: [f64; 3] = [1.0, 2.0, 4.0];
        let b = Buckets::new(&BOUNDS, 1.0);
        for v in [0, 1, 2, 3, 9] {
            b.observe(v);
        }
        b.observe_all([2, 2, 5, 1].into_iter());
        let counts: Vec<u64> = b.counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        assert_eq!(counts, [3, 3, 1, 2]);
        assert_eq!(b.sum.load(Ordering::Relaxed), 25);
    }
}
