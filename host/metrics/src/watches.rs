//! kube-apiserver's watch metrics: `apiserver_registered_watchers`,
//! `apiserver_watch_events_total` and `apiserver_watch_events_sizes`, by the group,
//! version and kind a watch streams.
//!
//! Each watch resolves its series once when it starts ([`Watches::start`]); each batch
//! of events it hands to its connection then costs a few atomic adds
//! ([`WatchMetrics::sent`]), whatever the number of watchers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric as _};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use super::buckets::Buckets;

/// kube's `apiserver_watch_events_sizes` buckets: 1 KiB to 128 KiB, doubling.
const SIZE_BOUNDS: [f64; 8] = [
    1024.0, 2048.0, 4096.0, 8192.0, 16384.0, 32768.0, 65536.0, 131072.0,
];

#[derive(Debug)]
struct WatchSeries {
    group: String,
    version: String,
    kind: String,
    registered: AtomicI64,
    events: AtomicU64,
    sizes: Buckets,
}

/// Every watch series.
#[derive(Debug, Default)]
pub struct Watches {
    by_kind: Mutex<HashMap<(String, String, String), Arc<WatchSeries>>>,
}

impl Watches {
    /// A watch of `kind` in `group`/`version` starts: registered until the returned
    /// handle is dropped.
    pub fn start(&self, group: &str, version: &str, kind: &str) -> WatchMetrics {
        let series = self
            .by_kind
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry((group.to_owned(), version.to_owned(), kind.to_owned()))
            .or_insert_with(|| {
                Arc::new(WatchSeries {
                    group: group.to_owned(),
                    version: version.to_owned(),
                    kind: kind.to_owned(),
                    registered: AtomicI64::new(0),
                    events: AtomicU64::new(0),
                    sizes: Buckets::new(&SIZE_BOUNDS, 1.0),
                })
            })
            .clone();
        series.registered.fetch_add(1, Ordering::Relaxed);
        WatchMetrics { series }
    }
}

/// One watch's series; the watch counts as registered while this lives.
#[derive(Debug)]
pub struct WatchMetrics {
    series: Arc<WatchSeries>,
}

impl WatchMetrics {
    /// `frames` (one event each: objects, bookmarks, errors) go to the client.
    pub fn sent(&self, frames: &[Bytes]) {
        self.series
            .events
            .fetch_add(frames.len() as u64, Ordering::Relaxed);
        self.series
            .sizes
            .observe_all(frames.iter().map(|f| f.len() as u64));
    }
}

impl Drop for WatchMetrics {
    fn drop(&mut self) {
        self.series.registered.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Writes the watch metrics at each scrape.
#[derive(Debug)]
pub struct WatchesCollector(pub Arc<Watches>);

impl Collector for WatchesCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut all: Vec<Arc<WatchSeries>> = self
            .0
            .by_kind
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        all.sort_by(|a, b| (&a.group, &a.version, &a.kind).cmp(&(&b.group, &b.version, &b.kind)));
        let labels = |s: &WatchSeries| -> [(&'static str, String); 3] {
            [
                ("group", s.group.clone()),
                ("version", s.version.clone()),
                ("kind", s.kind.clone()),
            ]
        };
        let mut e = encoder.encode_descriptor(
            "apiserver_registered_watchers",
            "[ALPHA] Number of currently registered watchers for a given resources",
            None,
            MetricType::Gauge,
        )?;
        for s in &all {
            ConstGauge::new(s.registered.load(Ordering::Relaxed))
                .encode(e.encode_family(&labels(s))?)?;
        }
        let mut e = encoder.encode_descriptor(
            "apiserver_watch_events",
            "[ALPHA] Number of events sent in watch clients",
            None,
            MetricType::Counter,
        )?;
        for s in &all {
            ConstCounter::new(s.events.load(Ordering::Relaxed))
                .encode(e.encode_family(&labels(s))?)?;
        }
        let mut e = encoder.encode_descriptor(
            "apiserver_watch_events_sizes",
            "[ALPHA] Watch event size distribution in bytes",
            None,
            MetricType::Histogram,
        )?;
        for s in &all {
            s.sizes.encode(&mut e, &labels(s))?;
        }
        Ok(())
    }
}
