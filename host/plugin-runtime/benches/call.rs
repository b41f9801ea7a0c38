//! The cost of one plugin call (issue 8's target: `validate` with a fresh instance, p50 at
//! most 50 µs), beside the same logic compiled natively.
//!
//!     bash plugins/build.sh && cargo bench -p wasmgate-plugin-runtime
//!
//! Calls the widgets plugin's `validate` (plugins/widgets, built into plugins/dist/) with
//! a ~1.7 KB Widget (1 KiB of notes, managed fields: what `wasmgate-bench --kind widget`
//! creates), one call at a time, each in a new instance as the gateway does;
//! then a plugin that returns at once (what an instance costs by itself); then the same
//! `Widgets::validate` natively, with the JSON parse the guest does too. Issue 26: a
//! request's `mutate` and `validate` in an instance each and in one session, and
//! `validate` in a reused instance (`Isolation::Reused`), alone and with 64 in flight.
//!
//! Containment (issue 25 item 2): what the runtime's pool costs at start (time, address
//! space, memory), and the widgets plugin's `validate` latency quiet, then while 200 calls
//! of another plugin sleep in a WASI sleep (holding its whole share of instances, the
//! rest queued): the neighbour's p99 should stay within 2x of its quiet figure.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use hdrhistogram::Histogram;
use wasmgate_plugin_runtime::{Limits, Runtime, RuntimeConfig};
use wasmgate_sdk::Admission as _;

#[path = "../tests/common/mod.rs"]
mod common;

const WARMUP: usize = 2_000;
const CALLS: usize = 20_000;
const CONCURRENCY: usize = 64;
/// Calls of the sleeping plugin in flight while the neighbour is measured.
const SLEEPERS: usize = 200;

/// `VmSize` and `VmRSS` of this process, in KiB (Linux; 0 elsewhere).
fn vm_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok())
            .unwrap_or(0)
    };
    (field("VmSize:"), field("VmRSS:"))
}

fn report(what: &str, h: &Histogram<u64>) {
    let us = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    println!(
        "{what:<40} p50 {:>7.1} µs  p90 {:>7.1} µs  p99 {:>7.1} µs  max {:>8.1} µs  ({} calls)",
        us(0.5),
        us(0.9),
        us(0.99),
        h.max() as f64 / 1000.0,
        h.len()
    );
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 10_000_000_000, 3).expect("histogram")
}

fn main() {
    let wasm = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("../../plugins/dist/widgets.wasm");
    let bytes = std::fs::read(&wasm)
        .unwrap_or_else(|e| panic!("{}: {e}; run bash plugins/build.sh first", wasm.display()));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let req = common::widget_request();
    rt.block_on(async {
        let (vm0, rss0) = vm_kib();
        let started = Instant::now();
        let runtime = Runtime::new(RuntimeConfig::default()).expect("runtime");
        let (vm1, rss1) = vm_kib();
        println!(
            "Runtime::new (pool of {} instances): {:?}, +{:.1} GiB address space, +{:.1} MiB resident",
            wasmgate_plugin_runtime::MAX_INSTANCES,
            started.elapsed(),
            (vm1.saturating_sub(vm0)) as f64 / (1 << 20) as f64,
            (rss1.saturating_sub(rss0)) as f64 / 1024.0,
        );
        let started = Instant::now();
        let plugin = runtime
            .load("widgets", &bytes, Limits::default(), "{}")
            .await
            .expect("load");
        println!(
            "compile + link + self-test of widgets.wasm ({} bytes): {:?}",
            bytes.len(),
            started.elapsed()
        );
        for _ in 0..WARMUP {
            black_box(plugin.validate(&req).await.expect("call"));
        }
        let mut h = histogram();
        let all = Instant::now();
        for _ in 0..CALLS {
            let t = Instant::now();
            let r = plugin.validate(&req).await.expect("call");
            h.record(t.elapsed().as_nanos() as u64).ok();
            // Size 9 with 4 replicas: allowed (the common case).
            assert!(r.allowed);
        }
        let took = all.elapsed();
        report("wasm validate, fresh instance per call", &h);
        println!(
            "{:<40} {:.0} calls/s on one task",
            "",
            CALLS as f64 / took.as_secs_f64()
        );

        // The fixed cost: a plugin whose `validate` returns at once (the hostile fixture
        // with no mode), same request, fresh instance per call.
        let noop = wasm.with_file_name("hostile.wasm");
        let noop_bytes = std::fs::read(&noop)
            .unwrap_or_else(|e| panic!("{}: {e}; run bash plugins/build.sh first", noop.display()));
        let noop = runtime
            .load("noop", &noop_bytes, Limits::default(), "{}")
            .await
            .expect("load");
        for _ in 0..WARMUP {
            black_box(noop.validate(&req).await.expect("call"));
        }
        let mut h = histogram();
        for _ in 0..CALLS {
            let t = Instant::now();
            let r = noop.validate(&req).await.expect("call");
            h.record(t.elapsed().as_nanos() as u64).ok();
            assert!(r.allowed);
        }
        report("wasm no-op validate (instance alone)", &h);

        // Issue 26: a request's mutate and validate in one instance (its session), against
        // two calls of their own; then `isolation: Reused` (no instantiation per call).
        let plugin = std::sync::Arc::new(plugin);
        let mut h = histogram();
        for _ in 0..CALLS / 2 {
            let t = Instant::now();
            black_box(plugin.mutate(&req).await.expect("call"));
            black_box(plugin.validate(&req).await.expect("call"));
            h.record(t.elapsed().as_nanos() as u64).ok();
        }
        report("mutate + validate, an instance each", &h);
        let mut h = histogram();
        for _ in 0..CALLS / 2 {
            let t = Instant::now();
            let mut session = plugin.session();
            black_box(session.mutate(&req).await.expect("call"));
            black_box(session.validate(&req).await.expect("call"));
            h.record(t.elapsed().as_nanos() as u64).ok();
        }
        report("mutate + validate, one session", &h);
        let reused = runtime
            .load(
                "widgets-reused",
                &bytes,
                Limits {
                    isolation: wasmgate_plugin_runtime::Isolation::Reused,
                    ..Limits::default()
                },
                "{}",
            )
            .await
            .expect("load");
        let reused = std::sync::Arc::new(reused);
        let mut h = histogram();
        for _ in 0..CALLS {
            let t = Instant::now();
            black_box(reused.validate(&req).await.expect("call"));
            h.record(t.elapsed().as_nanos() as u64).ok();
        }
        report("wasm validate, reused instance", &h);

        // Under load, as in the gateway: 64 calls in flight on the two workers. What
        // matters here is CPU per call (the machine is saturated), not latency.
        let req = std::sync::Arc::new(req.clone());
        for (label, plugin) in [
            ("wasm validate under load", &plugin),
            ("reused validate under load", &reused),
        ] {
            let cpu = cpu_time::ProcessTime::now();
            let all = Instant::now();
            let tasks: Vec<_> = (0..CONCURRENCY)
                .map(|_| {
                    let (plugin, req) = (plugin.clone(), req.clone());
                    tokio::spawn(async move {
                        for _ in 0..CALLS / CONCURRENCY {
                            black_box(plugin.validate(&req).await.expect("call"));
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.expect("task");
            }
            let took = all.elapsed();
            let cpu = cpu.elapsed().as_secs_f64();
            println!(
                "{label:<40} {:.0} calls/s, {:.1} µs of CPU per call ({CONCURRENCY} in flight)",
                CALLS as f64 / took.as_secs_f64(),
                cpu * 1e6 / CALLS as f64,
            );
        }

        // A neighbour of a sleeping plugin: the widgets plugin's calls, one at a time, quiet
        // and then with 200 calls of a plugin blocked in a 10 s WASI sleep in flight.
        let neighbour = |label: &'static str| {
            let (plugin, req) = (plugin.clone(), req.clone());
            async move {
                let mut h = histogram();
                for _ in 0..CALLS / 4 {
                    let t = Instant::now();
                    black_box(plugin.validate(&req).await.expect("call"));
                    h.record(t.elapsed().as_nanos() as u64).ok();
                }
                report(label, &h);
                h.value_at_quantile(0.99)
            }
        };
        let quiet = neighbour("neighbour validate, quiet").await;
        let sleeper = runtime
            .load(
                "sleeper",
                &noop_bytes,
                Limits {
                    timeout: std::time::Duration::from_secs(30),
                    ..Limits::default()
                },
                r#"{"mode": "sleep"}"#,
            )
            .await
            .expect("load");
        let sleeper = std::sync::Arc::new(sleeper);
        let sleeping: Vec<_> = (0..SLEEPERS)
            .map(|_| {
                let (sleeper, req) = (sleeper.clone(), req.clone());
                tokio::spawn(async move { sleeper.validate(&req).await })
            })
            .collect();
        while sleeper.instance_stats().in_use < wasmgate_plugin_runtime::INSTANCES_PER_PLUGIN {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let busy = neighbour("neighbour validate, 200 sleeping calls").await;
        let stats = sleeper.instance_stats();
        println!(
            "{:<40} p99 {:.2}x quiet; the sleeper holds {} of its {} instances, {} calls wait",
            "",
            busy as f64 / quiet.max(1) as f64,
            stats.in_use,
            stats.instances,
            stats.waiting,
        );
        for s in sleeping {
            s.abort();
        }
    });

    // The same logic natively, from the same JSON text: the request keeps the object as
    // text, as the guest's does, and the hook parses what it reads of it on every call.
    let raw = req.object.clone().unwrap_or_default();
    let native = wasmgate_sdk::testing::create(serde_json::from_str(&raw).expect("json"));
    let mut h = histogram();
    for i in 0..WARMUP + CALLS {
        let t = Instant::now();
        let r = widgets::Widgets::validate(black_box(&native));
        black_box(r);
        if i >= WARMUP {
            h.record(t.elapsed().as_nanos().max(1) as u64).ok();
        }
    }
    report("native validate (same crate, same JSON)", &h);
}
