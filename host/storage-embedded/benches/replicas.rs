//! Creates per second through one store and through several stores (replicas) over one
//! engine whose commits take a network round trip, as TiKV's do (issue 28: "the
//! aggregate creates/s of two gateways >= that of one on the same store"). The engine is
//! the embedded one in memory, optimistic as TiKV's, behind a wrapper that delays every
//! commit; revisions are handed out the way the TiKV engine hands them out (a small
//! transaction on `m/next`, itself delayed), so this measures the store's write path as
//! replicas over TiKV run it, with the network's latency and without its variance. Rounds
//! alternate one store and several.
//!
//! `cargo bench -p wasmgate-storage-embedded --bench replicas -- [--delay-ms 2]
//! [--get-delay-us 0] [--writers 8] [--secs 5] [--rounds 3] [--stores 2]`

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use wasmgate_storage::{
    Engine, EngineError, Precondition, Snapshot, Store, StoreOptions, Transaction, Value, Write,
    WriteOp,
};
use wasmgate_storage_embedded::EmbeddedEngine;

/// An engine whose commits take `delay` longer, and reads in a transaction `get_delay`.
struct Delayed {
    inner: EmbeddedEngine,
    delay: Duration,
    get_delay: Duration,
}

#[async_trait::async_trait]
impl Engine for Delayed {
    fn name(&self) -> &'static str {
        "delayed"
    }
    async fn snapshot(&self) -> Result<Box<dyn Snapshot>, EngineError> {
        self.inner.snapshot().await
    }
    async fn begin(&self) -> Result<Box<dyn Transaction>, EngineError> {
        Ok(Box::new(DelayedTxn {
            inner: self.inner.begin().await?,
            delay: self.delay,
            get_delay: self.get_delay,
        }))
    }
}

struct DelayedTxn {
    inner: Box<dyn Transaction>,
    delay: Duration,
    get_delay: Duration,
}

#[async_trait::async_trait]
impl Transaction for DelayedTxn {
    async fn get(&mut self, key: &[u8]) -> Result<Option<Bytes>, EngineError> {
        if !self.get_delay.is_zero() {
            tokio::time::sleep(self.get_delay).await;
        }
        self.inner.get(key).await
    }
    fn put(&mut self, key: Vec<u8>, value: Bytes) {
        self.inner.put(key, value);
    }
    fn delete(&mut self, key: Vec<u8>) {
        self.inner.delete(key);
    }
    async fn commit(self: Box<Self>) -> Result<(), EngineError> {
        tokio::time::sleep(self.delay).await;
        self.inner.commit().await
    }
}

struct Args {
    delay: Duration,
    get_delay: Duration,
    writers: usize,
    secs: u64,
    rounds: usize,
    stores: usize,
}

fn args() -> Args {
    let mut a = Args {
        delay: Duration::from_millis(2),
        get_delay: Duration::ZERO,
        writers: 8,
        secs: 5,
        rounds: 3,
        stores: 2,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        let mut value = || -> u64 {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{flag} takes a number"))
        };
        match flag.as_str() {
            "--delay-ms" => a.delay = Duration::from_millis(value()),
            "--get-delay-us" => a.get_delay = Duration::from_micros(value()),
            "--writers" => a.writers = value() as usize,
            "--secs" => a.secs = value(),
            "--rounds" => a.rounds = value() as usize,
            "--stores" => a.stores = value() as usize,
            // `cargo bench` passes `--bench`.
            _ => {}
        }
    }
    a
}

/// Creates through `stores` stores over one engine, `writers` at a time on each, for
/// `secs`: each store's creates, the failures, the conflicts the committers retried.
async fn run(a: &Args, stores: usize) -> (Vec<u64>, u64, u64) {
    let engine: Arc<dyn Engine> = Arc::new(Delayed {
        inner: EmbeddedEngine::in_memory().expect("an engine in memory"),
        delay: a.delay,
        get_delay: a.get_delay,
    });
    let opts = StoreOptions {
        follow_every: Some(Duration::from_millis(20)),
        ..StoreOptions::default()
    };
    let mut opened = Vec::new();
    for _ in 0..stores {
        opened.push(
            Store::open(engine.clone(), opts.clone())
                .await
                .expect("open"),
        );
    }
    let deadline = Instant::now() + Duration::from_secs(a.secs);
    let failed = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for (s, store) in opened.iter().enumerate() {
        for w in 0..a.writers {
            let (store, failed) = (store.clone(), failed.clone());
            tasks.spawn(async move {
                let mut ok = 0u64;
                let mut i = 0u64;
                while Instant::now() < deadline {
                    i += 1;
                    let key = format!("core/configmaps/bench/s{s}-w{w}-{i}");
                    let value = Value::new(vec![b'x'; 1024]);
                    match store
                        .write(Write::new(key, Precondition::Absent, WriteOp::Put(value)))
                        .await
                    {
                        Ok(_) => ok += 1,
                        Err(_) => {
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                (s, ok)
            });
        }
    }
    let mut per = vec![0u64; stores];
    for (s, ok) in tasks.join_all().await {
        per[s] += ok;
    }
    let conflicts = opened.iter().map(|s| s.stats().conflicts).sum();
    (per, failed.load(Ordering::Relaxed), conflicts)
}

fn main() {
    let a = args();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    println!(
        "commits delayed {:?}, reads in a transaction {:?}, {} writers per store, {} s per run",
        a.delay, a.get_delay, a.writers, a.secs
    );
    let mut totals: Vec<(usize, Vec<f64>)> = vec![(1, Vec::new()), (a.stores, Vec::new())];
    for round in 0..a.rounds {
        for (stores, seen) in &mut totals {
            let (per, failed, conflicts) = runtime.block_on(run(&a, *stores));
            let rate = |n: u64| n as f64 / a.secs as f64;
            let total = rate(per.iter().sum());
            let each: Vec<String> = per.iter().map(|n| format!("{:.0}", rate(*n))).collect();
            println!(
                "round {round} stores {stores}: {total:7.0} creates/s ({}), {failed} failed, {conflicts} conflicts retried",
                each.join(" + ")
            );
            seen.push(total);
        }
    }
    for (stores, mut seen) in totals {
        seen.sort_by(f64::total_cmp);
        println!(
            "median stores {stores}: {:.0} creates/s",
            seen[seen.len() / 2]
        );
    }
}
