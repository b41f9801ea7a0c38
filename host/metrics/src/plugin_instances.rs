//! Each Wasm plugin's share of instances, as the plugin runtime measures it
//! (`Plugin::instance_stats`): `wasmgate_plugin_instances` (its share),
//! `wasmgate_plugin_instances_in_use`, `wasmgate_plugin_instance_waiting` (calls waiting
//! for one), `wasmgate_plugin_instance_wait_seconds` (how long calls waited, every call
//! counted) and `wasmgate_plugin_log_lines_dropped` (stdout/stderr lines over its log
//! budget). A scrape reads them for the plugins served ([`PluginInstancesCollector::refresh`])
//! and writes them out.

use std::sync::Mutex;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric as _, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use wasmgate_plugin_runtime::{INSTANCE_WAIT_BOUNDS, InstanceStats};

/// What the last refresh read, written out by the next encoding.
#[derive(Debug, Default)]
pub struct PluginInstancesCollector {
    snapshot: Mutex<Vec<InstanceStats>>,
}

impl PluginInstancesCollector {
    /// Takes the instance stats of every plugin served (once per plugin name: its
    /// versions share them).
    pub fn refresh(&self, mut stats: Vec<InstanceStats>) {
        stats.sort_by(|a, b| a.plugin.cmp(&b.plugin));
        stats.dedup_by(|a, b| a.plugin == b.plugin);
        *self
            .snapshot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = stats;
    }
}

fn gauge(n: usize) -> ConstGauge<i64> {
    ConstGauge::new(i64::try_from(n).unwrap_or(i64::MAX))
}

impl Collector for PluginInstancesCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let snap = self
            .snapshot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let labels = |s: &InstanceStats| [("plugin", s.plugin.clone())];
        let mut e = encoder.encode_descriptor(
            "plugin_instances",
            "Instances a Wasm plugin's calls may hold at once (its share; its versions share it)",
            None,
            MetricType::Gauge,
        )?;
        for s in snap.iter() {
            gauge(s.instances).encode(e.encode_family(&labels(s))?)?;
        }
        let mut e = encoder.encode_descriptor(
            "plugin_instances_in_use",
            "Instances a Wasm plugin's calls hold now",
            None,
            MetricType::Gauge,
        )?;
        for s in snap.iter() {
            gauge(s.in_use).encode(e.encode_family(&labels(s))?)?;
        }
        let mut e = encoder.encode_descriptor(
            "plugin_instance_waiting",
            "Calls of a Wasm plugin waiting for one of its instances now",
            None,
            MetricType::Gauge,
        )?;
        for s in snap.iter() {
            gauge(s.waiting).encode(e.encode_family(&labels(s))?)?;
        }
        let mut e = encoder.encode_descriptor(
            "plugin_instance_wait_seconds",
            "How long calls of a Wasm plugin waited for one of its instances (counted against its timeout)",
            None,
            MetricType::Histogram,
        )?;
        for s in snap.iter() {
            let buckets: Vec<(f64, u64)> = INSTANCE_WAIT_BOUNDS
                .iter()
                .copied()
                .chain(std::iter::once(f64::INFINITY))
                .zip(s.wait.buckets.iter().copied())
                .collect();
            e.encode_family(&labels(s))?
                .encode_histogram::<NoLabelSet>(s.wait.sum_seconds, s.wait.count, &buckets, None)?;
        }
        let mut e = encoder.encode_descriptor(
            "plugin_log_lines_dropped",
            "Lines of a Wasm plugin's stdout, stderr and host log not logged (over 20 a call or 100 a second)",
            None,
            MetricType::Counter,
        )?;
        for s in snap.iter() {
            ConstCounter::new(s.log_lines_dropped).encode(e.encode_family(&labels(s))?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;
    use wasmgate_plugin_runtime::WaitHistogram;

    /// issue 25 item 2: a plugin's instances and its waits, under `wasmgate_`.
    #[test]
    fn instances_and_waits_are_written_per_plugin() {
        let collector = std::sync::Arc::new(PluginInstancesCollector::default());
        let mut buckets = vec![0; INSTANCE_WAIT_BOUNDS.len() + 1];
        buckets[0] = 3;
        *buckets.last_mut().unwrap() = 1;
        *collector.snapshot.lock().unwrap() = vec![InstanceStats {
            plugin: "sleeper".into(),
            instances: 32,
            in_use: 32,
            waiting: 168,
            wait: WaitHistogram {
                buckets,
                count: 4,
                sum_seconds: 12.5,
            },
            log_lines_dropped: 7,
        }];
        let mut root = prometheus_client::registry::Registry::default();
        root.sub_registry_with_prefix("wasmgate")
            .register_collector(Box::new(collector));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &root).unwrap();
        for line in [
            "wasmgate_plugin_instances{plugin=\"sleeper\"} 32",
            "wasmgate_plugin_instances_in_use{plugin=\"sleeper\"} 32",
            "wasmgate_plugin_instance_waiting{plugin=\"sleeper\"} 168",
            "wasmgate_plugin_instance_wait_seconds_sum{plugin=\"sleeper\"} 12.5",
            "wasmgate_plugin_instance_wait_seconds_count{plugin=\"sleeper\"} 4",
            "wasmgate_plugin_instance_wait_seconds_bucket{le=\"0.0001\",plugin=\"sleeper\"} 3",
            "wasmgate_plugin_instance_wait_seconds_bucket{le=\"10.0\",plugin=\"sleeper\"} 3",
            "wasmgate_plugin_instance_wait_seconds_bucket{le=\"+Inf\",plugin=\"sleeper\"} 4",
            "wasmgate_plugin_log_lines_dropped_total{plugin=\"sleeper\"} 7",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} in\n{out}");
        }
    }
}
