//! Latency histograms, percentile summaries, error tallies and CPU accounting.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Largest latency a histogram tracks exactly (longer ones are clamped to it): 10 minutes.
const MAX_MICROS: u64 = 600_000_000;

/// A latency histogram with microsecond resolution and three significant digits.
#[derive(Debug, Clone)]
pub struct Latency {
    hist: Histogram<u64>,
}

impl Latency {
    /// An empty histogram.
    pub fn new() -> anyhow::Result<Self> {
        Ok(Latency {
            hist: Histogram::new_with_bounds(1, MAX_MICROS, 3)
                .context("creating a latency histogram")?,
        })
    }

    /// Records one latency.
    pub fn record(&mut self, d: Duration) {
        self.record_micros(u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    }

    /// Records one latency given in microseconds (clamped to the tracked range).
    pub fn record_micros(&mut self, us: u64) {
        self.hist.saturating_record(us.clamp(1, MAX_MICROS));
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &Latency) -> anyhow::Result<()> {
        self.hist
            .add(&other.hist)
            .context("merging latency histograms")
    }

    /// Percentiles in milliseconds.
    pub fn summary(&self) -> Summary {
        let ms = |us: u64| round3(us as f64 / 1000.0);
        if self.hist.is_empty() {
            return Summary::default();
        }
        Summary {
            count: self.hist.len(),
            mean_ms: round3(self.hist.mean() / 1000.0),
            p50_ms: ms(self.hist.value_at_quantile(0.50)),
            p90_ms: ms(self.hist.value_at_quantile(0.90)),
            p99_ms: ms(self.hist.value_at_quantile(0.99)),
            p999_ms: ms(self.hist.value_at_quantile(0.999)),
            max_ms: ms(self.hist.max()),
        }
    }
}

/// Rounds to three decimals (microseconds, when the unit is milliseconds).
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Latency percentiles of one scenario, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Samples.
    pub count: u64,
    /// Arithmetic mean.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// 99.9th percentile.
    pub p999_ms: f64,
    /// Largest sample.
    pub max_ms: f64,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "p50 {:.2} ms  p90 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
            self.p50_ms, self.p90_ms, self.p99_ms, self.max_ms
        )
    }
}

/// Failed requests, by kind. Nothing that failed is dropped from the count.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Errors {
    /// Every failed request.
    pub total: u64,
    /// Non-2xx responses by status code.
    pub by_status: BTreeMap<u16, u64>,
    /// Connection, TLS or protocol failures (the connection is re-established).
    pub transport: u64,
    /// Requests that got no complete response within the request timeout.
    pub timeout: u64,
    /// The first failure's description, for the log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
}

impl Errors {
    /// Counts a non-2xx response.
    pub fn status(&mut self, code: u16, detail: impl FnOnce() -> String) {
        self.total += 1;
        *self.by_status.entry(code).or_default() += 1;
        self.note(detail);
    }

    /// Counts a transport failure.
    pub fn transport(&mut self, detail: impl FnOnce() -> String) {
        self.total += 1;
        self.transport += 1;
        self.note(detail);
    }

    /// Counts a timeout.
    pub fn timeout(&mut self, detail: impl FnOnce() -> String) {
        self.total += 1;
        self.timeout += 1;
        self.note(detail);
    }

    fn note(&mut self, detail: impl FnOnce() -> String) {
        if self.first.is_none() {
            self.first = Some(detail());
        }
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &Errors) {
        self.total += other.total;
        self.transport += other.transport;
        self.timeout += other.timeout;
        for (k, v) in &other.by_status {
            *self.by_status.entry(*k).or_default() += v;
        }
        if self.first.is_none() {
            self.first.clone_from(&other.first);
        }
    }
}

impl std::fmt::Display for Errors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.total)?;
        if self.total > 0 {
            let mut parts: Vec<String> = self
                .by_status
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect();
            if self.transport > 0 {
                parts.push(format!("transport: {}", self.transport));
            }
            if self.timeout > 0 {
                parts.push(format!("timeout: {}", self.timeout));
            }
            write!(f, " ({})", parts.join(", "))?;
        }
        Ok(())
    }
}

/// CPU time (user + system) a process has used so far, from `/proc/<pid>/stat`; `None`
/// off Linux or when the process is gone. `pid` `None` means this process.
pub fn process_cpu(pid: Option<u32>) -> Option<Duration> {
    let path = match pid {
        Some(p) => format!("/proc/{p}/stat"),
        None => "/proc/self/stat".to_owned(),
    };
    let text = std::fs::read_to_string(path).ok()?;
    cpu_from_stat(&text)
}

/// utime + stime of a `/proc/<pid>/stat` line, at the usual 100 clock ticks per second.
fn cpu_from_stat(stat: &str) -> Option<Duration> {
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    // After the name: state(3) ... utime(14) stime(15); `rest` starts at field 3.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

/// Busy CPU time of the whole machine so far (all CPUs: user, nice, system, irq, softirq,
/// steal), from `/proc/stat`.
pub fn machine_busy() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    busy_from_proc_stat(&text)
}

fn busy_from_proc_stat(text: &str) -> Option<Duration> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_ascii_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal (guest is already in user).
    let busy = [0, 1, 2, 5, 6, 7]
        .iter()
        .map(|&i| f.get(i).copied().unwrap_or(0))
        .sum::<u64>();
    Some(Duration::from_millis(busy * 10))
}

/// CPU used by this process, the server (when known) and the whole machine over a
/// measured interval.
#[derive(Debug, Clone)]
pub struct CpuMeter {
    wall: std::time::Instant,
    client: Option<Duration>,
    server: Option<Duration>,
    machine: Option<Duration>,
    server_pid: Option<u32>,
    server_rss: Option<u64>,
    data_dir: Option<std::path::PathBuf>,
    store_bytes: Option<FileSize>,
}

/// CPU use over an interval, in cores (1.0 = one core busy the whole time).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CpuUse {
    /// The benchmark process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_cores: Option<f64>,
    /// The server process (with `--server-pid`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cores: Option<f64>,
    /// Everything else on the machine (busy CPU not used by client or server): other
    /// processes competing for the same cores make the numbers noisy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_cores: Option<f64>,
    /// The server's resident memory when the interval started, in KiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_rss_before_kib: Option<u64>,
    /// The server's resident memory when it ended, in KiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_rss_after_kib: Option<u64>,
    /// The length of the server's store files (the database and its write-ahead log)
    /// when the interval started (with `--server-data-dir`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store_bytes_before: Option<u64>,
    /// Their length when it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store_bytes_after: Option<u64>,
    /// The disk space the store files used when the interval started (their allocated
    /// blocks: less than the length when a file has holes, as redb's grown files do).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store_disk_bytes_before: Option<u64>,
    /// The disk space it used when the interval ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store_disk_bytes_after: Option<u64>,
}

/// A file's length and the disk space it uses.
#[derive(Debug, Clone, Copy)]
struct FileSize {
    len: u64,
    disk: u64,
}

/// The size of the embedded store in a data directory: `store.redb` and its write-ahead
/// log `store.wal` (`None` without the database).
fn store_size(data_dir: Option<&std::path::Path>) -> Option<FileSize> {
    use std::os::unix::fs::MetadataExt as _;
    let dir = data_dir?;
    let size = |name: &str| {
        std::fs::metadata(dir.join(name)).ok().map(|m| FileSize {
            len: m.len(),
            // `st_blocks` counts 512-byte units whatever the file system's block size.
            disk: m.blocks() * 512,
        })
    };
    let db = size("store.redb")?;
    let wal = size("store.wal").unwrap_or(FileSize { len: 0, disk: 0 });
    Some(FileSize {
        len: db.len + wal.len,
        disk: db.disk + wal.disk,
    })
}

/// A process's resident set size (`VmRSS`), in KiB; `None` off Linux or when it is gone.
pub fn process_rss_kib(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    rss_from_status(&text)
}

fn rss_from_status(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_ascii_whitespace().nth(1)?.parse().ok()
}

impl CpuMeter {
    /// Starts measuring now (`data_dir`: the server's, whose `store.redb` and `store.wal`
    /// are measured).
    pub fn start(server_pid: Option<u32>, data_dir: Option<&std::path::Path>) -> Self {
        CpuMeter {
            store_bytes: store_size(data_dir),
            data_dir: data_dir.map(std::path::Path::to_path_buf),
            wall: std::time::Instant::now(),
            client: process_cpu(None),
            server: server_pid.and_then(|p| process_cpu(Some(p))),
            machine: machine_busy(),
            server_pid,
            server_rss: server_pid.and_then(process_rss_kib),
        }
    }

    /// CPU used since [`CpuMeter::start`].
    pub fn stop(&self) -> CpuUse {
        let wall = self.wall.elapsed().as_secs_f64().max(1e-9);
        let cores = |before: Option<Duration>, after: Option<Duration>| match (before, after) {
            (Some(b), Some(a)) => Some(round3(a.saturating_sub(b).as_secs_f64() / wall)),
            _ => None,
        };
        let client_cores = cores(self.client, process_cpu(None));
        let server_cores = cores(
            self.server,
            self.server_pid.and_then(|p| process_cpu(Some(p))),
        );
        let other_cores = cores(self.machine, machine_busy()).map(|m| {
            round3((m - client_cores.unwrap_or(0.0) - server_cores.unwrap_or(0.0)).max(0.0))
        });
        let after = store_size(self.data_dir.as_deref());
        CpuUse {
            client_cores,
            server_cores,
            other_cores,
            server_rss_before_kib: self.server_rss,
            server_rss_after_kib: self.server_pid.and_then(process_rss_kib),
            store_bytes_before: self.store_bytes.map(|s| s.len),
            store_bytes_after: after.map(|s| s.len),
            store_disk_bytes_before: self.store_bytes.map(|s| s.disk),
            store_disk_bytes_after: after.map(|s| s.disk),
        }
    }
}

impl std::fmt::Display for CpuUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: Option<f64>| v.map_or_else(|| "?".to_owned(), |c| format!("{c:.2}"));
        write!(f, "cpu cores: client {}", show(self.client_cores))?;
        if self.server_cores.is_some() {
            write!(f, ", server {}", show(self.server_cores))?;
        }
        if self.other_cores.is_some() {
            write!(f, ", other {}", show(self.other_cores))?;
        }
        if let (Some(b), Some(a)) = (self.server_rss_before_kib, self.server_rss_after_kib) {
            write!(f, "; server RSS {} -> {} MiB", b / 1024, a / 1024)?;
        }
        if let (Some(b), Some(a)) = (self.store_bytes_before, self.store_bytes_after) {
            write!(f, "; store {} -> {} MiB", b >> 20, a >> 20)?;
        }
        if let (Some(b), Some(a)) = (self.store_disk_bytes_before, self.store_disk_bytes_after) {
            write!(f, " (on disk {} -> {} MiB)", b >> 20, a >> 20)?;
        }
        Ok(())
    }
}

/// Per-second counters behind `--progress`.
#[derive(Debug, Default)]
pub struct Ticker {
    ok: AtomicU64,
    failed: AtomicU64,
    max_us: AtomicU64,
    events: AtomicU64,
}

impl Ticker {
    /// A request succeeded after `latency`.
    pub fn ok(&self, latency: Duration) {
        self.ok.fetch_add(1, Ordering::Relaxed);
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.max_us.fetch_max(us, Ordering::Relaxed);
    }

    /// A request failed.
    pub fn failed(&self) {
        self.failed.fetch_add(1, Ordering::Relaxed);
    }

    /// A watch event arrived.
    pub fn event(&self) {
        self.events.fetch_add(1, Ordering::Relaxed);
    }

    /// Prints one line per second to stderr until the returned task is aborted.
    pub fn spawn_printer(
        self: &Arc<Self>,
        label: &'static str,
        start: Instant,
    ) -> tokio::task::JoinHandle<()> {
        let t = self.clone();
        tokio::spawn(async move {
            let every = Duration::from_secs(1);
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            loop {
                tick.tick().await;
                let ok = t.ok.swap(0, Ordering::Relaxed);
                let failed = t.failed.swap(0, Ordering::Relaxed);
                let max = t.max_us.swap(0, Ordering::Relaxed) as f64 / 1000.0;
                let events = t.events.swap(0, Ordering::Relaxed);
                let mut line = format!(
                    "  {label} t={:>6.1}s  ok/s {ok:>6}  failed {failed}  slowest {max:.1} ms",
                    start.elapsed().as_secs_f64()
                );
                if events > 0 {
                    line.push_str(&format!("  events/s {events}"));
                }
                eprintln!("{line}");
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_uniform_distribution() {
        let mut l = Latency::new().unwrap();
        for ms in 1..=1000u64 {
            l.record(Duration::from_millis(ms));
        }
        let s = l.summary();
        assert_eq!(s.count, 1000);
        // Three significant digits: within 0.1 %.
        let close = |got: f64, want: f64| (got - want).abs() <= want * 0.001 + 0.001;
        assert!(close(s.p50_ms, 500.0), "{s:?}");
        assert!(close(s.p90_ms, 900.0), "{s:?}");
        assert!(close(s.p99_ms, 990.0), "{s:?}");
        assert!(close(s.max_ms, 1000.0), "{s:?}");
        assert!(close(s.mean_ms, 500.5), "{s:?}");
    }

    #[test]
    fn merge_and_clamping() {
        let mut a = Latency::new().unwrap();
        let mut b = Latency::new().unwrap();
        a.record(Duration::from_micros(250));
        b.record(Duration::from_secs(100_000)); // clamped, not lost
        b.record(Duration::ZERO); // recorded as 1 µs
        a.merge(&b).unwrap();
        let s = a.summary();
        assert_eq!(s.count, 3);
        assert!(s.max_ms >= 599_000.0, "{s:?}");
        assert_eq!(Latency::new().unwrap().summary(), Summary::default());
    }

    #[test]
    fn errors_are_tallied() {
        let mut e = Errors::default();
        e.status(409, || "conflict".into());
        e.status(409, || "second".into());
        let mut f = Errors::default();
        f.transport(|| "reset".into());
        f.timeout(|| "slow".into());
        e.merge(&f);
        assert_eq!(e.total, 4);
        assert_eq!(e.by_status.get(&409), Some(&2));
        assert_eq!(e.first.as_deref(), Some("conflict"));
        assert_eq!(e.to_string(), "4 (409: 2, transport: 1, timeout: 1)");
    }

    #[test]
    fn stat_line_parsing() {
        let line = "1234 (my (odd) name) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0";
        assert_eq!(cpu_from_stat(line), Some(Duration::from_millis(3000)));
        assert_eq!(cpu_from_stat("garbage"), None);
        let stat = "cpu  100 5 20 9999 7 1 2 3 0 0\ncpu0 1 1 1 1 1 1 1 1 0 0\n";
        assert_eq!(busy_from_proc_stat(stat), Some(Duration::from_millis(1310)));
    }

    #[test]
    fn status_rss_parsing() {
        let status = "Name:\twasmgate\nVmPeak:\t  900 kB\nVmRSS:\t  123456 kB\nVmHWM:\t 2 kB\n";
        assert_eq!(rss_from_status(status), Some(123_456));
        assert_eq!(rss_from_status("Name:\tx\n"), None);
    }
}
