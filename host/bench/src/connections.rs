//! The `connections` scenario (issue 24): connections that hold the server's sockets, and
//! whether clients with credentials still get in.
//!
//! First WATCHERS watches are opened through `--watch-kubeconfig` (typically a user with a
//! bearer token), each on an HTTP/1.1 connection of its own, and every one must be
//! answered `200`; then `--idle-connections` TLS connections without credentials that
//! send nothing, and as many TCP connections that never start a handshake, are held.
//! While all of them are open, every 50 ms for the measured time a fresh connection of the
//! `--kubeconfig` user (connect, TLS handshake, `GET /api/v1/namespaces/default`) and one
//! of the watchers' user are timed.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use http::Method;
use serde::Serialize;

use crate::bench::Bench;
use crate::client::{Endpoint, Failure, describe_failure};
use crate::kubeconfig;
use crate::stats::{Errors, Latency, Summary};

/// What the scenario measured.
#[derive(Debug, Clone, Serialize)]
pub struct ConnectionsReport {
    /// Always `connections`.
    pub scenario: &'static str,
    /// Watches opened.
    pub watchers: u32,
    /// Of those, answered `200`.
    pub answered: u32,
    /// Seconds to open and get an answer to all of them.
    pub open_s: f64,
    /// Idle TLS connections without credentials held, and as many silent TCP sockets.
    pub idle_connections: u32,
    /// Fresh connections of the `--kubeconfig` user (connect + TLS + one GET).
    pub fresh: Summary,
    /// Fresh connections of the watchers' user.
    pub fresh_watch_user: Summary,
    /// Failed watches and fresh requests.
    pub errors: Errors,
}

impl ConnectionsReport {
    /// Whether every watch was answered and every fresh request succeeded.
    pub fn correct(&self) -> bool {
        self.answered == self.watchers && self.errors.total == 0
    }
}

impl std::fmt::Display for ConnectionsReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "connections  {}/{} watches answered in {:.1} s, {} idle TLS + {} silent TCP held; \
             fresh connection: {}; watchers' user: {}; failed {}",
            self.answered,
            self.watchers,
            self.open_s,
            self.idle_connections,
            self.idle_connections,
            self.fresh,
            self.fresh_watch_user,
            self.errors.total
        )
    }
}

/// One fresh connection and `GET path`: its time, or why it failed.
async fn fresh(ep: &std::sync::Arc<Endpoint>, path: &str) -> Result<Duration, String> {
    let start = Instant::now();
    let mut client = ep.client(None).await.map_err(|e| format!("{e:#}"))?;
    let req = ep.request(
        Method::GET,
        ep.uri(path).map_err(|e| e.to_string())?,
        Default::default(),
    );
    match client.exchange(req, false).await {
        Ok(r) if r.status.is_success() => Ok(start.elapsed()),
        Ok(r) => Err(describe_failure(&Method::GET, path, &r)),
        Err(Failure::Timeout) => Err(format!("GET {path}: timed out")),
        Err(Failure::Transport(e)) => Err(format!("GET {path}: {e}")),
    }
}

impl Bench {
    /// Runs the scenario.
    pub async fn connections(&self) -> anyhow::Result<ConnectionsReport> {
        let ns = format!("{}-conn", self.args.namespace);
        let mut admin = self.ep.client(None).await?;
        self.ensure_namespace(&mut admin, &ns).await?;
        let mut errors = Errors::default();
        let path = format!("/api/v1/namespaces/{ns}/configmaps?watch=1&allowWatchBookmarks=true");
        let started = Instant::now();
        let mut watches = Vec::with_capacity(self.args.watchers as usize);
        let mut answered = 0;
        for _ in 0..self.args.watchers {
            let opened = async {
                let mut c = self.watch_ep.client(None).await?;
                let req = self.watch_ep.request(
                    Method::GET,
                    self.watch_ep.uri(&path)?,
                    Default::default(),
                );
                let resp = c.send(req).await.map_err(|e| anyhow::anyhow!("{e}"))?;
                anyhow::Ok((c, resp))
            };
            match opened.await {
                Ok((c, resp)) if resp.status().is_success() => {
                    answered += 1;
                    watches.push((c, resp));
                }
                Ok((_, resp)) => {
                    let code = resp.status().as_u16();
                    errors.status(code, || format!("watch answered {code}"));
                }
                Err(e) => errors.transport(|| format!("opening a watch: {e:#}")),
            }
        }
        let open_s = started.elapsed().as_secs_f64();
        let creds = kubeconfig::load(self.args.kubeconfig())?;
        let anonymous = Endpoint::new(&creds.anonymous(), false, self.args.timeout).await?;
        let mut idle = Vec::new();
        for _ in 0..self.args.idle_connections {
            let tls = anonymous.tls().await.context("an idle TLS connection")?;
            let tcp = anonymous.tcp().await.context("a silent TCP connection")?;
            idle.push((tls, tcp));
        }
        let (mut own, mut theirs) = (Latency::new()?, Latency::new()?);
        let probe = "/api/v1/namespaces/default";
        let end = Instant::now() + self.args.duration;
        while Instant::now() < end {
            let tick = Instant::now() + Duration::from_millis(50);
            for (ep, hist) in [(&self.ep, &mut own), (&self.watch_ep, &mut theirs)] {
                match fresh(ep, probe).await {
                    Ok(d) => hist.record(d),
                    Err(e) => errors.transport(|| e),
                }
            }
            crate::bench::sleep_until(tick).await;
        }
        drop((idle, watches));
        Ok(ConnectionsReport {
            scenario: "connections",
            watchers: self.args.watchers,
            answered,
            open_s: crate::stats::round3(open_s),
            idle_connections: self.args.idle_connections,
            fresh: own.summary(),
            fresh_watch_user: theirs.summary(),
            errors,
        })
    }
}
