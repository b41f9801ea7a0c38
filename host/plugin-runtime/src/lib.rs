//! Runs Wasmgate plugins: WebAssembly components of the `wasmgate:plugin` world (`wit/`).
//!
//! This is the only crate that names wasmtime. A [`Runtime`] owns the engine (Cranelift,
//! component model, a pooling allocator, epoch interruption) and compiles modules once per
//! content digest, keeping the compiled artifacts on disk when given a cache directory. A
//! [`Runtime::load`] of a module checks it against the contract and runs it once (the
//! self-test) before the caller may serve it; every request then gets a fresh `Store` and
//! instance for its calls (a [`Session`]: its `mutate` and `validate` share one; with
//! [`Isolation::Reused`], chosen per plugin, instances are reused across requests), a
//! wall-clock deadline and a memory limit per call, and a sandbox with no files,
//! network, environment, real clock or real randomness. Whatever a plugin does, a call
//! ends in a result or a typed [`CallError`].
//!
//! ## Containment
//!
//! One plugin can slow or break only its own calls:
//! - its timeout bounds the whole call: the wait for an instance, instantiation, its
//!   code and its host calls (a WASI sleep ends with the call);
//! - its calls hold at most [`INSTANCES_PER_PLUGIN`] instances at once (a share per
//!   plugin name, versions included), under the runtime's bound of [`MAX_INSTANCES`];
//!   a call that gets none before its deadline is the plugin's timeout
//!   ([`CallError::NoInstance`]); [`Plugin::instance_stats`] tells how long calls waited;
//! - its answers are held to the [`caps`] before a caller sees them
//!   ([`CallError::TooLarge`]);
//! - its stdout and stderr go to the gateway's log, cut, counted and rate-limited,
//!   never trapping (`output`);
//! - a failure is described in one line that names the cause (`failure`).
//!
//! ## Layout
//! - `plugin`: loading a version and calling its hooks; `share`: instances per plugin;
//! - `lease`: which instance a call runs in (isolation, a request's session);
//! - `host`: what an instance imports (WASI, empty, and the `host` interface);
//! - `output`: stdout, stderr and `host.log` to the log; `failure`: error messages;
//! - [`caps`]: what an answer may hold; `cache`: compiled components.

mod cache;
pub mod caps;
mod failure;
mod host;
mod lease;
mod output;
mod plugin;
mod share;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Semaphore;
use wasmtime::component::Linker;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

pub use lease::{Isolation, MAX_CALLS_PER_INSTANCE, Session};
pub use plugin::{Hooks, Limits, Plugin};
pub use share::{INSTANCE_WAIT_BOUNDS, InstanceStats, WaitHistogram};

/// The WIT types as plain Rust values (generated from `wit/plugin.wit`).
pub mod wit {
    pub use crate::bindings::exports::wasmgate::plugin::metadata::{Hook, PluginInfo};
    pub use crate::bindings::wasmgate::plugin::types::{
        AdmissionRequest, AdmissionResponse, ColumnDefinition, ConversionRequest, GroupVersionKind,
        GroupVersionResource, Mutation, Operation, Status, StatusCause, UserInfo,
    };
}

mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "plugin",
        exports: { default: async },
    });
}

/// How long one epoch tick is: the granularity of deadlines, and the longest a running
/// plugin keeps an async worker before it yields.
const TICK: Duration = Duration::from_millis(5);

/// Most plugin instances alive at once, of all plugins (the pool's size, in slots of one
/// linear memory and [`TABLES_PER_SLOT`] tables: a Rust plugin's instance takes one);
/// further calls wait for one to end, until their deadline. A slot costs address space
/// only until used: the pool reserves 4 GiB and a guard per memory (4.1 TiB for 1024,
/// wasmtime's default pool size), ~4 MiB of RAM, ~10 ms at start.
pub const MAX_INSTANCES: u32 = 1024;

/// Tables per slot of the pool.
pub const TABLES_PER_SLOT: u32 = 4;

/// Most slots one instance may take (its memories, its tables in fours).
pub const MAX_WEIGHT: u32 = 8;

/// Most instances one plugin's calls hold at once (its share, shared by its versions);
/// further calls wait for one of them, until their deadline. 32 shares fill the pool.
pub const INSTANCES_PER_PLUGIN: usize = 32;

/// Bytes of each linear memory kept mapped between calls (reset in place).
const KEEP_RESIDENT: usize = 4 << 20;

/// The largest memory limit a plugin may be given.
pub const MAX_MEMORY_BYTES: u64 = 1 << 30;

/// What the runtime is built with.
#[derive(Debug, Clone, Default)]
pub struct RuntimeConfig {
    /// Where compiled artifacts are kept across restarts (`None`: memory only).
    pub cache_dir: Option<PathBuf>,
}

/// Why a module cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The bytes are not a WebAssembly component (a core module, or not Wasm at all).
    #[error("not a WebAssembly component: {0}")]
    NotAComponent(String),
    /// The component does not fit the `wasmgate:plugin@0.1.0` world: it imports something
    /// the host does not provide (another WIT version, a WASI interface the sandbox lacks)
    /// or does not export the world's interfaces.
    #[error("does not implement wasmgate:plugin@0.1.0: {0}")]
    WrongContract(String),
    /// The self-test (instantiate, `metadata.info`) failed.
    #[error("self-test failed: {0}")]
    SelfTest(CallError),
    /// A limit outside what the runtime allows.
    #[error("{0}")]
    Limits(String),
}

/// Why one call of a plugin failed. Each is the plugin's failure, never the gateway's;
/// callers handle every one under the binding's `failurePolicy`. Messages are one line.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    /// The plugin trapped or stopped: `panicked: MESSAGE (at FILE:LINE:COL)`,
    /// `stack overflow (...)`, `exited with code N`, or the trap (`unreachable`, an
    /// out-of-bounds access, ...) with the first of its stderr.
    #[error("trapped: {0}")]
    Trap(String),
    /// The call ran past its deadline (its code, or a host call it waited in).
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// No instance came free before the call's deadline: the plugin's other calls held
    /// all of its share (`shared: false`), or every plugin's calls held all of the
    /// runtime's (`shared: true`). The plugin's timeout: cause `timeout`.
    #[error("timed out after {timeout:?} waiting for one of {} {instances} instances", whose(*.shared))]
    NoInstance {
        timeout: Duration,
        instances: usize,
        shared: bool,
    },
    /// The plugin's answer is over one of the [`caps`] (which, its size and the limit).
    #[error("returned too much: {0}")]
    TooLarge(String),
    /// The plugin asked for more memory than its limit.
    #[error("ran out of memory (limit {0} bytes)")]
    OutOfMemory(u64),
    /// The plugin's answer is unusable (invalid JSON, too large, the wrong shape).
    #[error("returned a malformed result: {0}")]
    Malformed(String),
}

impl CallError {
    /// A short machine-readable cause (for metrics and `Status` reasons).
    pub fn cause(&self) -> &'static str {
        match self {
            CallError::Trap(_) => "trap",
            CallError::Timeout(_) | CallError::NoInstance { .. } => "timeout",
            CallError::OutOfMemory(_) => "out_of_memory",
            CallError::Malformed(_) => "malformed",
            CallError::TooLarge(_) => "output_too_large",
        }
    }

    /// Whether the call ran out of time (running, or waiting for an instance).
    pub fn is_timeout(&self) -> bool {
        self.cause() == "timeout"
    }
}

fn whose(shared: bool) -> &'static str {
    if shared { "the runtime's" } else { "its" }
}

/// The engine, its epoch clock and the compiled-module cache.
pub struct Runtime {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<host::State>,
    pub(crate) cache: Arc<cache::Cache>,
    /// The global bound on instances (the pool's size).
    pub(crate) instances: Arc<Semaphore>,
    /// Each plugin's share of them.
    pub(crate) shares: share::Shares,
    ticker_stop: Arc<AtomicBool>,
}

impl Runtime {
    /// Builds the engine and starts its epoch clock (a thread that ticks every 5 ms).
    pub fn new(config: RuntimeConfig) -> Result<Runtime, String> {
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(MAX_INSTANCES)
            .total_core_instances(MAX_INSTANCES * 8)
            .total_memories(MAX_INSTANCES)
            .total_tables(MAX_INSTANCES * TABLES_PER_SLOT)
            .total_stacks(MAX_INSTANCES)
            .max_memory_size(MAX_MEMORY_BYTES as usize)
            // A fresh instance per call must not cost a page-table change per call: the
            // low pages a plugin touches stay mapped and are reset in place (only the
            // resident ones, where the kernel can tell); only what a plugin used beyond
            // that is unmapped, at once (batching it kept a memory bomb's pages resident).
            // Without this, every call's madvise flushed the TLB of every core (measured:
            // creates with two plugins at 40 % of none).
            .linear_memory_keep_resident(KEEP_RESIDENT)
            .table_keep_resident(64 << 10)
            .async_stack_keep_resident(64 << 10)
            .pagemap_scan(wasmtime::Enabled::Auto);
        let mut cfg = Config::new();
        cfg.wasm_component_model(true)
            .epoch_interruption(true)
            // Data segments are copied into the kept-resident pages at instantiation
            // rather than mapped copy-on-write: no mapping changes, no write faults.
            .memory_init_cow(false)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&cfg).map_err(|e| format!("wasm engine: {e:#}"))?;
        let mut linker = Linker::new(&engine);
        host::add_to_linker(&mut linker).map_err(|e| format!("wasm linker: {e:#}"))?;
        let ticker_stop = Arc::new(AtomicBool::new(false));
        {
            let engine = engine.weak();
            let stop = ticker_stop.clone();
            std::thread::Builder::new()
                .name("wasm-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(TICK);
                        match engine.upgrade() {
                            Some(e) => e.increment_epoch(),
                            None => return,
                        }
                    }
                })
                .map_err(|e| format!("epoch thread: {e}"))?;
        }
        let cache = Arc::new(cache::Cache::new(config.cache_dir, &engine));
        Ok(Runtime {
            engine,
            linker,
            cache,
            instances: Arc::new(Semaphore::new(MAX_INSTANCES as usize)),
            shares: share::Shares::default(),
            ticker_stop,
        })
    }

    /// The instances of every plugin loaded (by name), and what was measured of them.
    pub fn instance_stats(&self) -> Vec<InstanceStats> {
        self.shares.stats()
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

/// The sha256 of a module, in hex: what identifies a plugin version.
pub fn digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in d {
        use std::fmt::Write;
        let _ = write!(s, "{b:02x}");
    }
    s
}
