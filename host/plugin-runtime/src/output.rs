//! A plugin's stdout and stderr, and its `host.log` lines: to the gateway's log, with
//! the fields `plugin` and `uid` (the request's uid, or the hook's name when the call has
//! no request), stdout at info and stderr at warn.
//!
//! Output is cut into lines; a line longer than [`MAX_LINE_BYTES`] is cut there. A call
//! logs at most [`LINES_PER_CALL`] lines, and a plugin (all its calls, all its versions)
//! at most [`LINES_PER_SECOND`] a second; further lines are dropped and counted, and the
//! call says so in one line at its end ("N lines dropped", itself within the per-second
//! budget, or told by a later call). Writing never fails, never blocks and never traps:
//! the streams always accept everything.
//!
//! The first [`STDERR_KEPT_BYTES`] of a call's stderr are kept for the error of a call
//! that fails (a panic's message).

use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::time::Instant;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use crate::bindings::wasmgate::plugin::host::Level;
use crate::share::Share;

/// Longest line logged; longer ones are cut.
pub(crate) const MAX_LINE_BYTES: usize = 4096;
/// Most lines one call logs.
pub(crate) const LINES_PER_CALL: u32 = 20;
/// Most lines one plugin logs a second (and in a burst).
pub(crate) const LINES_PER_SECOND: u32 = 100;
/// How much of a call's stderr is kept for the error of a failed call.
pub(crate) const STDERR_KEPT_BYTES: usize = 4096;

/// What the guest may write in one `write` (what `check-write` grants).
const WRITE_PERMIT: usize = 64 << 10;

/// A plugin's token bucket of log lines.
pub(crate) struct LogBudget {
    tokens: f64,
    refilled: Instant,
    /// Lines dropped by calls that could not say so yet.
    untold: u64,
}

impl LogBudget {
    pub(crate) fn new() -> LogBudget {
        LogBudget {
            tokens: f64::from(LINES_PER_SECOND),
            refilled: Instant::now(),
            untold: 0,
        }
    }

    fn take(&mut self) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.refilled).as_secs_f64() * f64::from(LINES_PER_SECOND);
        self.tokens = (self.tokens + refill).min(f64::from(LINES_PER_SECOND));
        self.refilled = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Where a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Stdout,
    Stderr,
    /// `host.log`, at the level the plugin gave.
    Log(Level),
}

/// The output of one call: both streams' partial lines, the call's line count, the kept
/// stderr. Shared by the call's streams; its drop (with the call's store) logs what is
/// left.
pub(crate) struct CallLog {
    share: Arc<Share>,
    uid: Arc<str>,
    partial: [Partial; 2],
    logged: u32,
    dropped: u64,
    stderr: Vec<u8>,
}

#[derive(Default)]
struct Partial {
    line: Vec<u8>,
    cut: bool,
}

impl CallLog {
    pub(crate) fn new(share: Arc<Share>, uid: Arc<str>) -> Arc<Mutex<CallLog>> {
        Arc::new(Mutex::new(CallLog {
            share,
            uid,
            partial: [Partial::default(), Partial::default()],
            logged: 0,
            dropped: 0,
            stderr: Vec::new(),
        }))
    }

    /// Starts the log of another call of the same instance (request `uid`): what is left
    /// of the last one is logged first, as at a drop.
    pub(crate) fn restart(&mut self, uid: Arc<str>) {
        let fresh = CallLog {
            share: self.share.clone(),
            uid,
            partial: [Partial::default(), Partial::default()],
            logged: 0,
            dropped: 0,
            stderr: Vec::new(),
        };
        drop(std::mem::replace(self, fresh));
    }

    /// The first bytes the call wrote to stderr.
    pub(crate) fn stderr(&self) -> &[u8] {
        &self.stderr
    }

    fn write(&mut self, source: Source, mut bytes: &[u8]) {
        let i = match source {
            Source::Stdout => 0,
            _ => 1,
        };
        if i == 1 && self.stderr.len() < STDERR_KEPT_BYTES {
            let n = bytes.len().min(STDERR_KEPT_BYTES - self.stderr.len());
            self.stderr.extend_from_slice(&bytes[..n]);
        }
        while !bytes.is_empty() {
            let (chunk, rest, end) = match bytes.iter().position(|b| *b == b'\n') {
                Some(n) => (&bytes[..n], &bytes[n + 1..], true),
                None => (bytes, &[][..], false),
            };
            let p = &mut self.partial[i];
            let room = MAX_LINE_BYTES - p.line.len();
            p.line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            p.cut |= chunk.len() > room;
            if end {
                let line = std::mem::take(&mut p.line);
                let cut = std::mem::take(&mut p.cut);
                self.line(source, &line, cut);
            }
            bytes = rest;
        }
    }

    /// Logs one line, if the call's and the plugin's budgets allow.
    pub(crate) fn line(&mut self, source: Source, line: &[u8], cut: bool) {
        if self.logged >= LINES_PER_CALL || !self.budget().take() {
            self.dropped += 1;
            return;
        }
        self.logged += 1;
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end_matches('\r');
        let cut = if cut { " [cut]" } else { "" };
        let (plugin, uid) = (&**self.share.name(), &*self.uid);
        match source {
            Source::Stdout => tracing::info!(plugin, uid, stream = "stdout", "{text}{cut}"),
            Source::Stderr => tracing::warn!(plugin, uid, stream = "stderr", "{text}{cut}"),
            Source::Log(level) => match level {
                Level::Trace => tracing::trace!(plugin, uid, "{text}{cut}"),
                Level::Debug => tracing::debug!(plugin, uid, "{text}{cut}"),
                Level::Info => tracing::info!(plugin, uid, "{text}{cut}"),
                Level::Warn => tracing::warn!(plugin, uid, "{text}{cut}"),
                Level::Error => tracing::error!(plugin, uid, "{text}{cut}"),
            },
        }
    }

    fn budget(&self) -> std::sync::MutexGuard<'_, LogBudget> {
        self.share.log.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for CallLog {
    fn drop(&mut self) {
        for (i, source) in [(0, Source::Stdout), (1, Source::Stderr)] {
            let p = std::mem::take(&mut self.partial[i]);
            if !p.line.is_empty() {
                self.line(source, &p.line, p.cut);
            }
        }
        if self.dropped == 0 {
            return;
        }
        let dropped = self.dropped;
        self.share
            .lines_dropped
            .fetch_add(dropped, Ordering::Relaxed);
        let untold = {
            let mut budget = self.budget();
            budget.untold += dropped;
            if !budget.take() {
                return;
            }
            std::mem::take(&mut budget.untold)
        };
        let (plugin, uid) = (&**self.share.name(), &*self.uid);
        tracing::warn!(
            plugin,
            uid,
            dropped = untold,
            "{untold} lines dropped (a call logs at most {LINES_PER_CALL} lines, a plugin {LINES_PER_SECOND} a second)"
        );
    }
}

/// One of a call's output streams (stdout or stderr) as WASI sees it.
#[derive(Clone)]
pub(crate) struct LogStream {
    log: Arc<Mutex<CallLog>>,
    source: Source,
}

impl LogStream {
    pub(crate) fn new(log: &Arc<Mutex<CallLog>>, source: Source) -> LogStream {
        LogStream {
            log: log.clone(),
            source,
        }
    }

    fn write_bytes(&self, bytes: &[u8]) {
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        log.write(self.source, bytes);
    }
}

impl IsTerminal for LogStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogStream {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for LogStream {
    async fn ready(&mut self) {}
}

#[wasmtime_wasi::async_trait]
impl OutputStream for LogStream {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        self.write_bytes(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_PERMIT)
    }
}

impl tokio::io::AsyncWrite for LogStream {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.write_bytes(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
