//! What a plugin's instance sees of the host: the two `host` imports of the WIT (logging,
//! its configuration) and a WASI context with nothing in it: no preopened directories, no
//! network, no environment or arguments, a clock stopped at the Unix epoch and a fixed
//! random stream. Rust's standard library imports WASI whether or not a plugin uses it,
//! so it is linked, but empty.

//!
//! Its stdout and stderr go to the gateway's log (`output`), as its `host.log` lines do.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{ResourceLimiter, Result};
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxView, WasiView};

use crate::bindings::wasmgate::plugin::host::{self, Level};
use crate::output::{CallLog, LogStream, MAX_LINE_BYTES, Source};
use crate::share::Share;

/// The data of one call's `Store`.
pub(crate) struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limiter: Limiter,
    config: Arc<str>,
    /// The call's output: its log lines, the first KiB of its stderr (a panic's message).
    pub(crate) log: Arc<Mutex<CallLog>>,
}

impl State {
    /// The store data of one call of a plugin of `share`, for the request `uid` (the
    /// hook's name when there is no request).
    pub(crate) fn new(
        share: Arc<Share>,
        uid: Arc<str>,
        config: Arc<str>,
        memory_limit: u64,
    ) -> State {
        let log = CallLog::new(share, uid);
        let wasi = WasiCtx::builder()
            .stdout(LogStream::new(&log, Source::Stdout))
            .stderr(LogStream::new(&log, Source::Stderr))
            .wall_clock(Stopped)
            .monotonic_clock(Stopped)
            .secure_random(wasmtime_wasi::Deterministic::new(FIXED_RANDOM.to_vec()))
            .insecure_random(wasmtime_wasi::Deterministic::new(FIXED_RANDOM.to_vec()))
            .insecure_random_seed(0)
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        State {
            wasi,
            table: ResourceTable::new(),
            limiter: Limiter {
                limit: memory_limit,
                exceeded: false,
                grown: 0,
            },
            config,
            log,
        }
    }

    /// Readies the store for another call of its instance (request `uid`): a fresh log
    /// and memory-limit verdict; what the guest keeps in its memory stays.
    pub(crate) fn begin_call(&mut self, uid: Arc<str>) {
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        log.restart(uid);
        self.limiter.exceeded = false;
    }

    /// The first bytes the call wrote to stderr.
    pub(crate) fn stderr(&self) -> Vec<u8> {
        let log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        log.stderr().to_vec()
    }
}

/// What `wasi:random` returns: always the same bytes, so that a plugin's answers depend
/// on its input only.
const FIXED_RANDOM: [u8; 16] = *b"wasmgate-fixed!!";

/// `wasi:clocks`: the Unix epoch, for ever.
struct Stopped;

impl HostWallClock for Stopped {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl HostMonotonicClock for Stopped {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl host::Host for State {
    /// One line, within the call's and the plugin's log budget (`output`), cut at
    /// 4 KiB.
    fn log(&mut self, level: Level, message: String) {
        let bytes = message.as_bytes();
        let mut cut = bytes.len().min(MAX_LINE_BYTES);
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        log.line(Source::Log(level), &bytes[..cut], cut < bytes.len());
    }

    fn config(&mut self) -> String {
        self.config.to_string()
    }
}

impl crate::bindings::wasmgate::plugin::types::Host for State {}

/// Memory (and table) growth within the plugin's limit; remembers a refusal so that the
/// trap that follows is reported as out-of-memory.
pub(crate) struct Limiter {
    limit: u64,
    pub(crate) exceeded: bool,
    /// The largest size a memory was allowed to grow to.
    grown: u64,
}

impl Limiter {
    /// The largest size a memory of the instance was allowed to grow to, in bytes.
    pub(crate) fn grown(&self) -> u64 {
        self.grown
    }
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> Result<bool> {
        let ok = desired as u64 <= self.limit;
        if ok {
            self.grown = self.grown.max(desired as u64);
        } else {
            self.exceeded = true;
        }
        Ok(ok)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> Result<bool> {
        // Tables hold function references; a million is far past any real plugin.
        let ok = desired <= 1_000_000;
        if !ok {
            self.exceeded = true;
        }
        Ok(ok)
    }
}

pub(crate) fn add_to_linker(linker: &mut Linker<State>) -> Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    crate::bindings::Plugin::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
}
