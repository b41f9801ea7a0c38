//! The watch fan-out scenario.
//!
//! W watchers open `GET …/configmaps?watch=1&resourceVersion=<rv>` (each its own HTTP/1.1
//! connection, or an HTTP/2 stream over a few connections). Writers then create ConfigMaps
//! on a fixed schedule (open loop, `--rate` per second), each stamped with its send time.
//! Every watcher checks that it sees every successful create exactly once, with strictly
//! increasing resourceVersions, and records delivery latency (receive − send).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use http::{Method, StatusCode};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use serde::Serialize;
use tokio::sync::watch;

use crate::bench::{Bench, sleep_until, unix_nanos};
use crate::client::{Client, Failure, describe_failure, read_body};
use crate::stats::{CpuMeter, CpuUse, Errors, Latency, Summary, Ticker, round3};
use crate::watchline::{LineSplitter, parse_event, parse_object};

/// The result of the watch scenario.
#[derive(Debug, Clone, Serialize)]
pub struct WatchReport {
    /// `watch`.
    pub scenario: &'static str,
    /// Watchers.
    pub watchers: u32,
    /// Target creates per second.
    pub rate_target: f64,
    /// Creates per second actually completed (successful ones, whole run).
    pub rate_achieved: f64,
    /// Successful creates (each must reach every watcher).
    pub writes_ok: u64,
    /// Failed creates.
    pub writes_failed: u64,
    /// Create latency (measured window).
    pub write_latency: Summary,
    /// Failed creates by kind.
    pub write_errors: Errors,
    /// Largest delay of a create behind its schedule, in ms (the writers' own lag).
    pub writer_lag_max_ms: f64,
    /// Delivery latency, receive − send, over all watchers (measured window).
    pub delivery: Summary,
    /// Events delivered over all watchers (each counted once).
    pub events_delivered: u64,
    /// watchers × successful creates.
    pub events_expected: u64,
    /// Successful creates some watcher never received (summed over watchers).
    pub missing: u64,
    /// Events received more than once.
    pub duplicates: u64,
    /// Events (duplicates aside) whose resourceVersion was not above the previous one.
    pub out_of_order: u64,
    /// Events for creates the writer saw fail (the write landed anyway, e.g. a timeout).
    pub unacknowledged: u64,
    /// Other events (other objects, other types, unparsable lines).
    pub unexpected: u64,
    /// Watchers whose stream failed or ended early.
    pub watchers_failed: u64,
    /// The first watcher failure, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watcher_failure: Option<String>,
    /// Time from the last write's response to the last watcher having everything, in ms.
    pub drain_ms: f64,
    /// Measured seconds (after the warm-up).
    pub duration_s: f64,
    /// CPU used while writing (measured window).
    pub cpu: CpuUse,
    /// Server CPU per delivered event, in µs: from the first write to the end of the
    /// drain, over every event delivered (the writes' own cost included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_us_per_event: Option<f64>,
}

impl WatchReport {
    /// Whether every watcher got every event exactly once and in order.
    pub fn correct(&self) -> bool {
        self.missing == 0
            && self.duplicates == 0
            && self.out_of_order == 0
            && self.watchers_failed == 0
    }
}

impl std::fmt::Display for WatchReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "watch   {} watchers, {:.0}/{:.0} writes/s: delivery {}  delivered {}/{}  missing {}  duplicates {}  out-of-order {}  watchers failed {}  | writes ok {} failed {} p99 {:.2} ms  ({}{})",
            self.watchers,
            self.rate_achieved,
            self.rate_target,
            self.delivery,
            self.events_delivered,
            self.events_expected,
            self.missing,
            self.duplicates,
            self.out_of_order,
            self.watchers_failed,
            self.writes_ok,
            self.write_errors,
            self.write_latency.p99_ms,
            self.cpu,
            self.server_us_per_event
                .map(|us| format!("; server {us:.2} µs per delivered event"))
                .unwrap_or_default()
        )
    }
}

/// What every watcher needs to know.
struct WatchSpec {
    /// Name prefix of this run's watch objects: `w-<run>-`.
    prefix: String,
    /// Writes scheduled (sequence numbers 0..total).
    total: u64,
    /// Writes before this sequence number are warm-up: checked, but not timed.
    warm: u64,
    /// The watch starts after this revision.
    start_rv: u64,
    /// Per-second progress counters (`--progress`).
    ticker: Option<Arc<Ticker>>,
}

/// What one watcher saw.
struct WatcherOut {
    /// Bit per sequence number: received. Shared with the drain, which polls it; only
    /// this watcher sets bits.
    seen: Arc<[AtomicU64]>,
    delivered: u64,
    duplicates: u64,
    out_of_order: u64,
    unexpected: u64,
    lat: Latency,
    last_rv: u64,
    failure: Option<String>,
}

impl WatcherOut {
    fn handle(&mut self, line: &[u8], now_ns: u64, spec: &WatchSpec, progress: &AtomicU64) {
        let ev = match parse_event(line) {
            Ok(ev) => ev,
            Err(e) => {
                self.unexpected += 1;
                self.failure
                    .get_or_insert_with(|| format!("unparsable watch line: {e}"));
                return;
            }
        };
        match ev.kind.as_ref() {
            "BOOKMARK" => return,
            "ERROR" => {
                self.failure.get_or_insert_with(|| {
                    format!(
                        "ERROR event: {}",
                        ev.object.message.as_deref().unwrap_or("(no message)")
                    )
                });
                return;
            }
            _ => {}
        }
        let meta = &ev.object.metadata;
        let seq = meta
            .name
            .strip_prefix(spec.prefix.as_str())
            .and_then(|s| s.parse::<u64>().ok())
            .filter(|&s| s < spec.total);
        // The create's slot in `seen` (None: not one of this run's creates).
        let slot = match (seq, ev.kind.as_ref()) {
            (Some(seq), "ADDED") => self
                .seen
                .get((seq / 64) as usize)
                .map(|w| (seq, w, 1u64 << (seq % 64))),
            _ => None,
        };
        // A repeat counts as a duplicate only, not also as out of order.
        if let Some((_, w, bit)) = slot
            && w.load(Ordering::Relaxed) & bit != 0
        {
            self.duplicates += 1;
            return;
        }
        match meta.revision() {
            Some(rv) if rv > self.last_rv => self.last_rv = rv,
            _ => self.out_of_order += 1,
        }
        let Some((seq, w, bit)) = slot else {
            self.unexpected += 1;
            return;
        };
        w.fetch_or(bit, Ordering::Relaxed);
        self.delivered += 1;
        progress.fetch_add(1, Ordering::Relaxed);
        if let Some(t) = &spec.ticker {
            t.event();
        }
        if seq >= spec.warm
            && let Some(sent) = meta.sent_unix_nanos()
        {
            self.lat.record_micros(now_ns.saturating_sub(sent) / 1000);
        }
    }
}

async fn watcher(
    mut body: Incoming,
    client: Client,
    spec: Arc<WatchSpec>,
    progress: Arc<AtomicU64>,
    seen: Arc<[AtomicU64]>,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<WatcherOut> {
    let mut out = WatcherOut {
        seen,
        delivered: 0,
        duplicates: 0,
        out_of_order: 0,
        unexpected: 0,
        lat: Latency::new()?,
        last_rv: spec.start_rv,
        failure: None,
    };
    let mut lines = LineSplitter::default();
    loop {
        let frame = tokio::select! {
            biased;
            f = body.frame() => f,
            _ = stop.wait_for(|s| *s) => break,
        };
        match frame {
            None => {
                out.failure = Some("the watch stream ended early".into());
                break;
            }
            Some(Err(e)) => {
                out.failure = Some(format!(
                    "watch stream failed: {}",
                    crate::client::error_chain(&e)
                ));
                break;
            }
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                // One clock reading per chunk: every line in it arrived at the same time.
                let now = unix_nanos();
                lines.feed(&data, |line| out.handle(line, now, &spec, &progress));
                if out.failure.is_some() {
                    break;
                }
            }
        }
    }
    drop(client);
    Ok(out)
}

/// What one writer did.
struct WriterOut {
    ok: Vec<u64>,
    lat: Latency,
    errors: Errors,
    lag_max: Duration,
}

#[allow(
    clippy::too_many_arguments,
    reason = "one call site; the parts of one writer"
)]
async fn writer(
    mut client: Client,
    bench_tpl: crate::objects::ObjectTemplate,
    uri: http::Uri,
    spec: Arc<WatchSpec>,
    first: u64,
    step: u64,
    t0: Instant,
    rate: f64,
) -> anyhow::Result<WriterOut> {
    let mut out = WriterOut {
        ok: Vec::new(),
        lat: Latency::new()?,
        errors: Errors::default(),
        lag_max: Duration::ZERO,
    };
    let mut name = String::with_capacity(spec.prefix.len() + 12);
    let mut seq = first;
    while seq < spec.total {
        let due = t0 + Duration::from_secs_f64(seq as f64 / rate);
        sleep_until(due).await;
        let start = Instant::now();
        out.lag_max = out.lag_max.max(start.saturating_duration_since(due));
        name.clear();
        name.push_str(&spec.prefix);
        {
            use std::fmt::Write as _;
            let _ = write!(name, "{seq:09}");
        }
        let req = client.endpoint().request(
            Method::POST,
            uri.clone(),
            bench_tpl.create(&name, unix_nanos()),
        );
        let failed_before = out.errors.total;
        match client.exchange(req, false).await {
            Ok(r) if r.status.is_success() => {
                let took = start.elapsed();
                out.ok.push(seq);
                if let Some(t) = &spec.ticker {
                    t.ok(took);
                }
                if seq >= spec.warm {
                    out.lat.record(took);
                }
            }
            Ok(r) => out.errors.status(r.status.as_u16(), || {
                describe_failure(&Method::POST, &name, &r)
            }),
            Err(Failure::Timeout) => out.errors.timeout(|| format!("POST {name}: timed out")),
            Err(Failure::Transport(e)) => out.errors.transport(|| format!("POST {name}: {e}")),
        }
        if let Some(t) = &spec.ticker
            && out.errors.total > failed_before
        {
            t.failed();
        }
        seq += step;
    }
    Ok(out)
}

impl Bench {
    /// `watch`: fan-out latency and exactly-once, in-order delivery.
    pub async fn watch(&self) -> anyhow::Result<WatchReport> {
        let a = &self.args;
        let ns = &a.namespace;
        let coll = self.collection(ns);
        let mut ctl = self.ep.client(None).await?;

        // The watch starts after a marker object's revision.
        let marker = format!("wm-{}", self.run_id);
        let r = self
            .call(
                &mut ctl,
                Method::POST,
                &coll,
                Some(self.tpl.create(&marker, unix_nanos())),
            )
            .await?;
        if !r.status.is_success() {
            bail!("{}", describe_failure(&Method::POST, &coll, &r));
        }
        let start_rv = parse_object(&r.body)
            .ok()
            .and_then(|o| o.metadata.revision())
            .ok_or_else(|| anyhow!("marker create response has no resourceVersion"))?;

        let total = (a.rate * (a.warmup + a.duration).as_secs_f64()).round() as u64;
        let warm = (a.rate * a.warmup.as_secs_f64()).round() as u64;
        let spec = Arc::new(WatchSpec {
            prefix: format!("w-{}-", self.run_id),
            total,
            warm,
            start_rv,
            ticker: a.progress.then(|| Arc::new(Ticker::default())),
        });

        // Words of the per-watcher bitmaps of received creates.
        let words = total.div_ceil(64) as usize;

        // Open every watch before the first write.
        let timeout_s = (a.warmup + a.duration + a.drain).as_secs() + 120;
        let watch_uri = self.watch_ep.uri(&format!(
            "{coll}?watch=1&resourceVersion={start_rv}&timeoutSeconds={timeout_s}"
        ))?;
        let wpool = self.watch_ep.h2_pool(a.connections as usize).await?;
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut watchers = Vec::with_capacity(a.watchers as usize);
        let mut progress = Vec::with_capacity(a.watchers as usize);
        let mut seen = Vec::with_capacity(a.watchers as usize);
        for i in 0..a.watchers as usize {
            let mut c = self
                .watch_ep
                .client(wpool.get(i % wpool.len().max(1)))
                .await
                .with_context(|| format!("watcher {i}: connecting"))?;
            let req = self
                .watch_ep
                .request(Method::GET, watch_uri.clone(), bytes::Bytes::new());
            let resp = c.send(req).await.map_err(|e| anyhow!("watcher {i}: {e}"))?;
            if resp.status() != StatusCode::OK {
                let status = resp.status();
                let (body, len) = read_body(resp.into_body(), true).await.unwrap_or_default();
                let reply = crate::client::Reply {
                    status,
                    body,
                    body_len: len,
                };
                bail!(
                    "watcher {i}: {}",
                    describe_failure(&Method::GET, "watch", &reply)
                );
            }
            let p = Arc::new(AtomicU64::new(0));
            progress.push(p.clone());
            let bits: Arc<[AtomicU64]> = (0..words).map(|_| AtomicU64::new(0)).collect();
            seen.push(bits.clone());
            watchers.push(tokio::spawn(watcher(
                resp.into_body(),
                c,
                spec.clone(),
                p,
                bits,
                stop_rx.clone(),
            )));
        }

        // Server CPU from the first write to the end of the drain: every delivery of the
        // run (and the writes) in it.
        let whole_run = CpuMeter::start(a.server_pid, a.server_data_dir.as_deref());
        let whole_start = Instant::now();
        // Writers: sequence numbers are dealt round-robin; each is sent at its due time.
        let k = u64::from(a.watch_writers.max(1)).min(total.max(1));
        let gpool = self.ep.h2_pool(a.connections as usize).await?;
        let uri = self.ep.uri(&coll)?;
        let mut clients = Vec::new();
        for i in 0..k as usize {
            clients.push(self.ep.client(gpool.get(i % gpool.len().max(1))).await?);
        }
        let t0 = Instant::now() + Duration::from_millis(20);
        let printer = spec.ticker.as_ref().map(|t| t.spawn_printer("watch", t0));
        let writers: Vec<_> = clients
            .into_iter()
            .zip(0..k)
            .map(|(c, first)| {
                tokio::spawn(writer(
                    c,
                    self.tpl.clone(),
                    uri.clone(),
                    spec.clone(),
                    first,
                    k,
                    t0,
                    a.rate,
                ))
            })
            .collect();
        sleep_until(t0 + a.warmup).await;
        let cpu = CpuMeter::start(a.server_pid, a.server_data_dir.as_deref());
        let mut acked = vec![false; total as usize];
        let mut write_lat = Latency::new()?;
        let mut write_errors = Errors::default();
        let mut lag_max = Duration::ZERO;
        for w in writers {
            let w = w.await.context("writer task")??;
            for s in w.ok {
                if let Some(slot) = acked.get_mut(s as usize) {
                    *slot = true;
                }
            }
            write_lat.merge(&w.lat)?;
            write_errors.merge(&w.errors);
            lag_max = lag_max.max(w.lag_max);
        }
        let cpu = cpu.stop();
        let writes_done = Instant::now();
        let writes_ok = acked.iter().filter(|&&b| b).count() as u64;
        let mut want = vec![0u64; words];
        for (seq, _) in acked.iter().enumerate().filter(|(_, ok)| **ok) {
            want[seq / 64] |= 1 << (seq % 64);
        }

        // Drain: wait until every watcher has every acknowledged event, or give up. The
        // counts are a cheap first test (they include events of unacknowledged creates);
        // the bitmaps decide.
        let drain_deadline = writes_done + a.drain;
        let mut drained_at = None;
        while Instant::now() < drain_deadline {
            if progress
                .iter()
                .all(|p| p.load(Ordering::Relaxed) >= writes_ok)
                && seen.iter().all(|bits| {
                    bits.iter()
                        .zip(&want)
                        .all(|(b, w)| b.load(Ordering::Relaxed) & w == *w)
                })
            {
                drained_at = Some(Instant::now());
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let whole_cpu = whole_run.stop();
        let whole_s = whole_start.elapsed().as_secs_f64();
        let _ = stop_tx.send(true);
        if let Some(p) = printer {
            p.abort();
        }

        let mut report = WatchReport {
            scenario: "watch",
            watchers: a.watchers,
            rate_target: a.rate,
            rate_achieved: round3(
                writes_ok as f64 / writes_done.duration_since(t0).as_secs_f64().max(1e-9),
            ),
            writes_ok,
            writes_failed: write_errors.total,
            write_latency: write_lat.summary(),
            write_errors,
            writer_lag_max_ms: round3(lag_max.as_secs_f64() * 1000.0),
            delivery: Summary::default(),
            events_delivered: 0,
            events_expected: writes_ok * u64::from(a.watchers),
            missing: 0,
            duplicates: 0,
            out_of_order: 0,
            unacknowledged: 0,
            unexpected: 0,
            watchers_failed: 0,
            watcher_failure: None,
            drain_ms: round3(
                drained_at
                    .unwrap_or_else(Instant::now)
                    .duration_since(writes_done)
                    .as_secs_f64()
                    * 1000.0,
            ),
            duration_s: a.duration.as_secs_f64(),
            cpu,
            server_us_per_event: None,
        };
        let mut delivery = Latency::new()?;
        for w in watchers {
            let w = w.await.context("watcher task")??;
            delivery.merge(&w.lat)?;
            report.events_delivered += w.delivered;
            report.duplicates += w.duplicates;
            report.out_of_order += w.out_of_order;
            report.unexpected += w.unexpected;
            for (seq, &ok) in acked.iter().enumerate() {
                let got = w
                    .seen
                    .get(seq / 64)
                    .is_some_and(|word| word.load(Ordering::Relaxed) & (1 << (seq % 64)) != 0);
                match (ok, got) {
                    (true, false) => report.missing += 1,
                    (false, true) => report.unacknowledged += 1,
                    _ => {}
                }
            }
            if let Some(f) = w.failure {
                report.watchers_failed += 1;
                report.watcher_failure.get_or_insert(f);
            }
        }
        report.delivery = delivery.summary();
        if report.events_delivered > 0 {
            report.server_us_per_event = whole_cpu
                .server_cores
                .map(|c| round3(c * whole_s * 1e6 / report.events_delivered as f64));
        }
        Ok(report)
    }
}
